// Expression evaluation with Python operator semantics and Jinja2's sandboxed attribute/item rules.
// Statements are in statements.cpp.
#include "tokenizer/jinja/interpreter.h"

#include <cmath>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_text.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/jinja/template_limits.h"

namespace loradesk::jinja {

namespace {

// Using an undefined value where a real one is required raises like jinja2.Undefined does.
[[noreturn]] void undefined_error(const Value& v) { fail(v.str().empty() ? "value is undefined" : v.str()); }

[[noreturn]] void operand_error(const char* op, const Value& a, const Value& b) {
    if (a.is_undefined()) undefined_error(a);
    if (b.is_undefined()) undefined_error(b);
    fail(std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" + b.type_name() +
         "'");
}

// Evaluates `op` (one of the __builtin_*_overflow intrinsics) before reading the result.
template <class Op>
std::int64_t checked(Op op, std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (op(a, b, &r)) fail("integer result out of range (larger than 64 bits)");
    return r;
}
bool add_ovf(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_ovf(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_ovf(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_mul_overflow(a, b, r); }

// Refuses a string or list of `n` bytes or items before it is built (template_limits.h).
void check_size(std::size_t n, const char* what) {
    if (n > kMaxRenderBytes)
        fail(std::string(what) + " too large: " + std::to_string(n) + " bytes or items, the sandbox allows at most " +
             std::to_string(kMaxRenderBytes));
}

Value repeat(const Value& seq, std::int64_t n) {
    const std::size_t unit = seq.is_string() ? seq.str().size() : seq.items().size();
    if (n > 0 && unit > 0 && std::uint64_t(n) > kMaxRenderBytes / unit) check_size(kMaxRenderBytes + 1, "repetition");
    if (seq.is_string()) {
        std::string out;
        for (std::int64_t i = 0; i < n; ++i) out += seq.str();
        return Value::string(std::move(out));
    }
    ValueList out;
    for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    return seq.kind() == Kind::tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

double py_fmod(double a, double b) {
    double m = std::fmod(a, b);
    if (m != 0.0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
    bool nums = a.is_number() && b.is_number();
    bool ints = nums && !a.is_float() && !b.is_float();
    switch (op) {
        case BinaryOp::add:
            if (ints) return Value::integer(checked(add_ovf, a.as_int(), b.as_int()));
            if (nums) return Value::floating(a.as_double() + b.as_double());
            if (a.is_string() && b.is_string()) {
                check_size(a.str().size() + b.str().size(), "string");
                return Value::string(a.str() + b.str());
            }
            if (a.is_list() && b.is_list() && a.kind() == b.kind()) {
                check_size(a.items().size() + b.items().size(), "list");
                ValueList out = a.items();
                out.insert(out.end(), b.items().begin(), b.items().end());
                return a.kind() == Kind::tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
            }
            if (a.is_string() && !b.is_undefined())
                fail("can only concatenate str (not \"" + b.type_name() + "\") to str");
            operand_error("+", a, b);
        case BinaryOp::sub:
            if (ints) return Value::integer(checked(sub_ovf, a.as_int(), b.as_int()));
            if (nums) return Value::floating(a.as_double() - b.as_double());
            operand_error("-", a, b);
        case BinaryOp::mul:
            if (ints) return Value::integer(checked(mul_ovf, a.as_int(), b.as_int()));
            if (nums) return Value::floating(a.as_double() * b.as_double());
            if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
            if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
            operand_error("*", a, b);
        case BinaryOp::div:
            if (!nums) operand_error("/", a, b);
            if (b.as_double() == 0.0) fail("division by zero");
            return Value::floating(a.as_double() / b.as_double());
        case BinaryOp::floordiv:
            if (!nums) operand_error("//", a, b);
            if (b.as_double() == 0.0) fail("integer division or modulo by zero");
            if (ints) {
                std::int64_t x = a.as_int(), y = b.as_int();
                std::int64_t q = x / y;
                if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                return Value::integer(q);
            }
            return Value::floating(std::floor(a.as_double() / b.as_double()));
        case BinaryOp::mod:
            if (a.is_string()) return Value::string(percent_format(a.str(), b));
            if (!nums) operand_error("%", a, b);
            if (b.as_double() == 0.0) fail("integer division or modulo by zero");
            if (ints) {
                std::int64_t m = a.as_int() % b.as_int();
                if (m != 0 && ((m < 0) != (b.as_int() < 0))) m += b.as_int();
                return Value::integer(m);
            }
            return Value::floating(py_fmod(a.as_double(), b.as_double()));
        case BinaryOp::pow:
            if (!nums) operand_error("**", a, b);
            if (ints && b.as_int() >= 0) {
                // Square-and-multiply: a loop of b multiplications never ended for 1 ** 10**18 (no overflow to
                // stop it). Squaring overflows only when a later multiplication by it would overflow too.
                std::int64_t base = a.as_int(), result = 1;
                for (std::int64_t e = b.as_int(); e > 0; e >>= 1) {
                    if (e & 1) result = checked(mul_ovf, result, base);
                    if (e > 1) base = checked(mul_ovf, base, base);
                }
                return Value::integer(result);
            }
            return Value::floating(std::pow(a.as_double(), b.as_double()));
        default:
            break;
    }
    fail("internal: bad arithmetic operator");
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::string:
            if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + item.type_name());
            return container.str().find(item.str()) != std::string::npos;
        case Kind::list:
        case Kind::tuple:
        case Kind::generator:
            for (auto& v : container.items())
                if (values_equal(v, item)) return true;
            return false;
        case Kind::dict:
            return container.dict_ref().find(item) != nullptr;
        case Kind::undefined:
            return false;
        default:
            fail("argument of type '" + container.type_name() + "' is not iterable");
    }
}

std::int64_t slice_index(const Value& v, const char* what) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    fail(std::string("slice ") + what + " must be an integer or None, not " + v.type_name());
}

}  // namespace

std::vector<std::optional<Value>> bind_args(const CallArgs& args, std::string_view fn,
                                            std::initializer_list<std::string_view> names) {
    std::vector<std::string_view> params(names);
    std::vector<std::optional<Value>> out(params.size());
    if (args.positional.size() > params.size())
        fail(std::string(fn) + "() takes at most " + std::to_string(params.size()) + " argument(s) (" +
             std::to_string(args.positional.size()) + " given)");
    for (std::size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
    for (auto& [name, value] : args.keyword) {
        std::size_t i = 0;
        while (i < params.size() && params[i] != name) ++i;
        if (i == params.size()) fail(std::string(fn) + "() got an unexpected keyword argument '" + name + "'");
        if (out[i]) fail(std::string(fn) + "() got multiple values for argument '" + name + "'");
        out[i] = value;
    }
    return out;
}

const Value* Frame::find(std::string_view name) const {
    for (const Frame* f = this; f; f = f->m_parent.get())
        for (auto it = f->m_vars.rbegin(); it != f->m_vars.rend(); ++it)
            if (it->first == name) return &it->second;
    return nullptr;
}

void Frame::set(const std::string& name, Value value) {
    for (auto& [k, v] : m_vars)
        if (k == name) {
            v = std::move(value);
            return;
        }
    m_vars.emplace_back(name, std::move(value));
}

Value Interpreter::lookup(std::string_view name) const {
    if (const Value* v = m_frame->find(name)) return *v;
    return Value::undefined("'" + std::string(name) + "' is undefined");
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
    switch (obj.kind()) {
        case Kind::undefined:
            undefined_error(obj);
        case Kind::ns:
            if (const Value* v = obj.ns_ref().find(name)) return *v;
            break;
        case Kind::dict: {
            Value m = find_method(obj, name);
            if (!m.is_undefined() || !m.str().empty()) return m;
            if (const Value* v = obj.dict_ref().find(name)) return *v;
            break;
        }
        case Kind::string:
        case Kind::list:
        case Kind::tuple: {
            Value m = find_method(obj, name);
            if (!m.is_undefined() || !m.str().empty()) return m;
            break;
        }
        default:
            break;
    }
    return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
    switch (obj.kind()) {
        case Kind::undefined:
            undefined_error(obj);
        case Kind::dict:
            if (const Value* v = obj.dict_ref().find(key)) return *v;
            break;
        case Kind::list:
        case Kind::tuple:
        case Kind::string:
            if (key.is_int() || key.is_bool()) {
                std::int64_t i = key.as_int();
                if (obj.is_string()) {
                    std::u32string u = utf8_decode(obj.str());
                    std::int64_t n = static_cast<std::int64_t>(u.size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return Value::string(utf8_encode(u.substr(static_cast<std::size_t>(i), 1)));
                } else {
                    std::int64_t n = static_cast<std::int64_t>(obj.items().size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return obj.items()[static_cast<std::size_t>(i)];
                }
                return Value::undefined("'" + obj.type_name() + " object' has no element " +
                                        std::to_string(key.as_int()));
            }
            break;
        default:
            break;
    }
    if (key.is_string()) return get_attr(obj, key.str());
    return Value::undefined("'" + obj.type_name() + " object' has no element " + key.repr());
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_callable()) return callee.fn().fn(*this, args);
    if (callee.is_undefined()) undefined_error(callee);
    fail("'" + callee.type_name() + "' object is not callable");
}

Value Interpreter::filter(const std::string& name, const Value& operand, CallArgs& args) {
    FilterFn f = find_filter(name);
    if (!f) fail("unknown filter '" + name + "'");
    return f(*this, operand, args);
}

bool Interpreter::test(const std::string& name, const Value& operand, CallArgs& args) {
    TestFn t = find_test(name);
    if (!t) fail("unknown test '" + name + "'");
    return t(*this, operand, args);
}

CallArgs eval_args(Interpreter& in, const Arguments& args) {
    CallArgs out;
    out.positional.reserve(args.positional.size());
    for (auto& e : args.positional) out.positional.push_back(e->eval(in));
    for (auto& [name, e] : args.keyword) out.keyword.emplace_back(name, e->eval(in));
    return out;
}

namespace {

// Attaches this node's line to failures raised below it (raise_exception keeps its verbatim message).
template <class F>
Value at_line(int line, F&& f) {
    try {
        return f();
    } catch (const Failure& e) {
        throw TemplateError(e.message, line);
    } catch (const TemplateError& e) {
        if (e.line() == 0) throw TemplateError(e.message(), line, 0, e.raised_by_template());
        throw;
    }
}

}  // namespace

Value ConstExpr::eval(Interpreter&) const { return value; }

Value NameExpr::eval(Interpreter& in) const { return in.lookup(name); }

Value ListExpr::eval(Interpreter& in) const {
    ValueList out;
    out.reserve(items.size());
    for (auto& e : items) out.push_back(e->eval(in));
    return tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value DictExpr::eval(Interpreter& in) const {
    Dict d;
    for (auto& [k, v] : items) {
        Value key = k->eval(in);
        if (key.is_list() && key.kind() == Kind::list) throw TemplateError("unhashable type: 'list'", line);
        d.set(std::move(key), v->eval(in));
    }
    return Value::dict(std::move(d));
}

Value AttrExpr::eval(Interpreter& in) const {
    return at_line(line, [&] { return in.get_attr(object->eval(in), name); });
}

Value ItemExpr::eval(Interpreter& in) const {
    return at_line(line, [&] {
        Value obj = object->eval(in);
        return in.get_item(obj, key->eval(in));
    });
}

Value SliceExpr::eval(Interpreter& in) const {
    return at_line(line, [&]() -> Value {
        Value obj = object->eval(in);
        if (obj.is_undefined()) undefined_error(obj);
        std::optional<std::int64_t> a, b, c;
        if (start)
            if (Value v = start->eval(in); !v.is_none()) a = slice_index(v, "indices");
        if (stop)
            if (Value v = stop->eval(in); !v.is_none()) b = slice_index(v, "indices");
        if (step)
            if (Value v = step->eval(in); !v.is_none()) c = slice_index(v, "indices");
        std::int64_t st = c.value_or(1);
        if (st == 0) fail("slice step cannot be zero");
        std::u32string chars;
        std::int64_t n = 0;
        if (obj.is_string()) {
            chars = utf8_decode(obj.str());
            n = static_cast<std::int64_t>(chars.size());
        } else if (obj.is_list()) {
            n = static_cast<std::int64_t>(obj.items().size());
        } else {
            return Value::undefined("'" + obj.type_name() + " object' is not subscriptable");
        }
        // CPython's PySlice_AdjustIndices.
        auto adjust = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
            if (!v) return dflt;
            std::int64_t x = *v;
            if (x < 0) {
                x += n;
                if (x < 0) x = st < 0 ? -1 : 0;
            } else if (x >= n) {
                x = st < 0 ? n - 1 : n;
            }
            return x;
        };
        std::int64_t lo = adjust(a, st < 0 ? n - 1 : 0);
        std::int64_t hi = adjust(b, st < 0 ? -1 : n);
        std::u32string s_out;
        ValueList l_out;
        for (std::int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) {
            if (obj.is_string())
                s_out += chars[static_cast<std::size_t>(i)];
            else
                l_out.push_back(obj.items()[static_cast<std::size_t>(i)]);
        }
        if (obj.is_string()) return Value::string(utf8_encode(s_out));
        return obj.kind() == Kind::tuple ? Value::tuple(std::move(l_out)) : Value::list(std::move(l_out));
    });
}

Value CallExpr::eval(Interpreter& in) const {
    return at_line(line, [&] {
        Value f = callee->eval(in);
        CallArgs a = eval_args(in, args);
        return in.call(f, a);
    });
}

Value FilterExpr::eval(Interpreter& in) const {
    return at_line(line, [&] {
        Value v = operand->eval(in);
        CallArgs a = eval_args(in, args);
        return in.filter(name, v, a);
    });
}

Value TestExpr::eval(Interpreter& in) const {
    return at_line(line, [&] {
        Value v = operand->eval(in);
        CallArgs a = eval_args(in, args);
        return Value::boolean(in.test(name, v, a) != negated);
    });
}

Value UnaryExpr::eval(Interpreter& in) const {
    return at_line(line, [&]() -> Value {
        Value v = operand->eval(in);
        switch (op) {
            case UnaryOp::not_:
                return Value::boolean(!v.truthy());
            case UnaryOp::neg:
                if (v.is_int() || v.is_bool()) return Value::integer(-v.as_int());
                if (v.is_float()) return Value::floating(-v.as_double());
                break;
            case UnaryOp::pos:
                if (v.is_bool()) return Value::integer(v.as_int());
                if (v.is_number()) return v;
                break;
        }
        if (v.is_undefined()) undefined_error(v);
        fail("bad operand type for unary " + std::string(op == UnaryOp::neg ? "-" : "+") + ": '" + v.type_name() + "'");
    });
}

Value BinaryExpr::eval(Interpreter& in) const {
    return at_line(line, [&]() -> Value {
        Value a = left->eval(in);
        if (op == BinaryOp::and_) return a.truthy() ? right->eval(in) : a;
        if (op == BinaryOp::or_) return a.truthy() ? a : right->eval(in);
        Value b = right->eval(in);
        if (op == BinaryOp::concat) {
            std::string s = a.to_str();
            std::string t = b.to_str();
            check_size(s.size() + t.size(), "string");
            return Value::string(s + t);
        }
        return arithmetic(op, a, b);
    });
}

Value CompareExpr::eval(Interpreter& in) const {
    return at_line(line, [&]() -> Value {
        Value a = first->eval(in);
        for (auto& [op, e] : rest) {
            Value b = e->eval(in);
            bool r = false;
            switch (op) {
                case CompareOp::eq:
                    r = values_equal(a, b);
                    break;
                case CompareOp::ne:
                    r = !values_equal(a, b);
                    break;
                case CompareOp::lt:
                    r = value_less(a, b);
                    break;
                case CompareOp::le:
                    r = !value_less(b, a);
                    break;
                case CompareOp::gt:
                    r = value_less(b, a);
                    break;
                case CompareOp::ge:
                    r = !value_less(a, b);
                    break;
                case CompareOp::in:
                    r = contains(b, a);
                    break;
                case CompareOp::not_in:
                    r = !contains(b, a);
                    break;
            }
            if (!r) return Value::boolean(false);
            a = std::move(b);
        }
        return Value::boolean(true);
    });
}

Value CondExpr::eval(Interpreter& in) const {
    if (test->eval(in).truthy()) return then->eval(in);
    if (otherwise) return otherwise->eval(in);
    return Value::undefined("the inline if-expression on line " + std::to_string(line) +
                            " evaluated to false and no else section was defined.");
}

}  // namespace loradesk::jinja
