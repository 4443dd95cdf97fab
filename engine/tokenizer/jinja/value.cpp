// Value construction, Python printing, truthiness, equality, ordering, iteration and JSON conversion.
#include "tokenizer/jinja/value.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "tokenizer/jinja/py_text.h"
#include "tokenizer/jinja/template_limits.h"

namespace loradesk::jinja {

void fail(std::string message) { throw Failure{std::move(message)}; }

const Value* Dict::find(const Value& key) const {
    for (auto& [k, v] : items)
        if (values_equal(k, key)) return &v;
    return nullptr;
}

const Value* Dict::find(std::string_view key) const {
    for (auto& [k, v] : items)
        if (k.is_string() && k.str() == key) return &v;
    return nullptr;
}

void Dict::set(Value key, Value value) {
    for (auto& [k, v] : items)
        if (values_equal(k, key)) {
            v = std::move(value);
            return;
        }
    items.emplace_back(std::move(key), std::move(value));
}

const std::string& Value::str() const {
    static const std::string empty;
    return m_str ? *m_str : empty;
}

Value Value::undefined(std::string hint) {
    Value v;
    if (!hint.empty()) v.set_str(std::move(hint));
    return v;
}
Value Value::none() {
    Value v;
    v.m_kind = Kind::none;
    return v;
}
Value Value::boolean(bool b) {
    Value v;
    v.m_kind = Kind::boolean;
    v.m_bool = b;
    return v;
}
Value Value::integer(std::int64_t i) {
    Value v;
    v.m_kind = Kind::integer;
    v.m_int = i;
    return v;
}
Value Value::floating(double d) {
    Value v;
    v.m_kind = Kind::floating;
    v.m_float = d;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.m_kind = Kind::string;
    v.set_str(std::move(s));
    return v;
}
Value Value::list(ValueList items) {
    Value v;
    v.m_kind = Kind::list;
    v.m_obj = std::make_shared<ValueList>(std::move(items));
    return v;
}
Value Value::tuple(ValueList items) {
    Value v = list(std::move(items));
    v.m_kind = Kind::tuple;
    return v;
}
Value Value::generator(ValueList items, std::string type_name) {
    Value v = list(std::move(items));
    v.m_kind = Kind::generator;
    v.set_str(std::move(type_name));
    return v;
}
Value Value::dict(Dict d) {
    Value v;
    v.m_kind = Kind::dict;
    v.m_obj = std::make_shared<Dict>(std::move(d));
    return v;
}
Value Value::ns(Dict attrs) {
    Value v = dict(std::move(attrs));
    v.m_kind = Kind::ns;
    return v;
}
Value Value::callable(std::string name, NativeFn fn) {
    Value v;
    v.m_kind = Kind::callable;
    v.m_obj = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

namespace {

template <class Json>
Value value_from_json(const Json& j) {
    switch (j.type()) {
        case Json::value_t::null:
            return Value::none();
        case Json::value_t::boolean:
            return Value::boolean(j.template get<bool>());
        case Json::value_t::number_integer:
            return Value::integer(j.template get<std::int64_t>());
        case Json::value_t::number_unsigned: {
            auto u = j.template get<std::uint64_t>();
            return u > static_cast<std::uint64_t>(INT64_MAX) ? Value::floating(static_cast<double>(u))
                                                             : Value::integer(static_cast<std::int64_t>(u));
        }
        case Json::value_t::number_float:
            return Value::floating(j.template get<double>());
        case Json::value_t::string:
            return Value::string(j.template get<std::string>());
        case Json::value_t::array: {
            ValueList items;
            items.reserve(j.size());
            for (auto& e : j) items.push_back(value_from_json(e));
            return Value::list(std::move(items));
        }
        case Json::value_t::object: {
            Dict d;
            d.items.reserve(j.size());
            for (auto it = j.begin(); it != j.end(); ++it)
                d.items.emplace_back(Value::string(it.key()), value_from_json(it.value()));
            return Value::dict(std::move(d));
        }
        default:
            return Value::none();
    }
}

}  // namespace

Value Value::from_json(const nlohmann::json& j) { return value_from_json(j); }
Value Value::from_json(const nlohmann::ordered_json& j) { return value_from_json(j); }

double Value::as_double() const {
    switch (m_kind) {
        case Kind::floating:
            return m_float;
        case Kind::integer:
            return static_cast<double>(m_int);
        case Kind::boolean:
            return m_bool ? 1.0 : 0.0;
        default:
            return 0.0;
    }
}

bool Value::truthy() const {
    switch (m_kind) {
        case Kind::undefined:
        case Kind::none:
            return false;
        case Kind::boolean:
            return m_bool;
        case Kind::integer:
            return m_int != 0;
        case Kind::floating:
            return m_float != 0.0;
        case Kind::string:
            return !str().empty();
        case Kind::list:
        case Kind::tuple:
            return !list_ptr()->empty();
        case Kind::dict:
            return !dict_ptr()->items.empty();
        case Kind::ns:
        case Kind::callable:
        case Kind::generator:
            return true;
    }
    return false;
}

std::string Value::to_str() const {
    switch (m_kind) {
        case Kind::undefined:
            return {};
        case Kind::string:
            return str();
        default:
            return repr();
    }
}

std::string Value::repr() const {
    switch (m_kind) {
        case Kind::undefined:
            return "Undefined";
        case Kind::none:
            return "None";
        case Kind::boolean:
            return m_bool ? "True" : "False";
        case Kind::integer:
            return std::to_string(m_int);
        case Kind::floating:
            return float_repr(m_float);
        case Kind::string:
            return string_repr(str());
        case Kind::list:
        case Kind::tuple: {
            bool tuple = m_kind == Kind::tuple;
            std::string out = tuple ? "(" : "[";
            for (std::size_t i = 0; i < list_ptr()->size(); ++i) {
                if (i) out += ", ";
                out += (*list_ptr())[i].repr();
            }
            if (tuple && list_ptr()->size() == 1) out += ",";
            out += tuple ? ")" : "]";
            return out;
        }
        case Kind::dict:
        case Kind::ns: {
            std::string out = m_kind == Kind::ns ? "<Namespace {" : "{";
            bool first = true;
            for (auto& [k, v] : dict_ptr()->items) {
                if (!first) out += ", ";
                first = false;
                out += k.repr() + ": " + v.repr();
            }
            out += m_kind == Kind::ns ? "}>" : "}";
            return out;
        }
        case Kind::callable:
            return "<function " + fn_ptr()->name + ">";
        case Kind::generator:
            return "<" + str() + " object>";
    }
    return {};
}

std::string Value::type_name() const {
    switch (m_kind) {
        case Kind::undefined:
            return "Undefined";
        case Kind::none:
            return "NoneType";
        case Kind::boolean:
            return "bool";
        case Kind::integer:
            return "int";
        case Kind::floating:
            return "float";
        case Kind::string:
            return "str";
        case Kind::list:
            return "list";
        case Kind::tuple:
            return "tuple";
        case Kind::dict:
            return "dict";
        case Kind::ns:
            return "Namespace";
        case Kind::callable:
            return "function";
        case Kind::generator:
            return str();
    }
    return "object";
}

nlohmann::json Value::to_json() const {
    switch (m_kind) {
        case Kind::none:
            return nullptr;
        case Kind::boolean:
            return m_bool;
        case Kind::integer:
            return m_int;
        case Kind::floating:
            return m_float;
        case Kind::string:
            return str();
        case Kind::list:
        case Kind::tuple: {
            auto arr = nlohmann::json::array();
            for (auto& v : *list_ptr()) arr.push_back(v.to_json());
            return arr;
        }
        case Kind::dict: {
            auto obj = nlohmann::json::object();
            for (auto& [k, v] : dict_ptr()->items) obj[k.to_str()] = v.to_json();
            return obj;
        }
        default:
            fail("Object of type " + type_name() + " is not JSON serializable");
    }
}

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.is_list() && b.is_list()) {
        if (a.kind() != b.kind()) return false;  // [1] != (1,) in Python
        auto& x = a.items();
        auto& y = b.items();
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!values_equal(x[i], y[i])) return false;
        return true;
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::undefined:
        case Kind::none:
            return true;
        case Kind::string:
            return a.str() == b.str();
        case Kind::dict: {
            auto& x = a.dict_ref().items;
            if (x.size() != b.dict_ref().items.size()) return false;
            for (auto& [k, v] : x) {
                const Value* other = b.dict_ref().find(k);
                if (!other || !values_equal(v, *other)) return false;
            }
            return true;
        }
        case Kind::ns:
            return &a.ns_ref() == &b.ns_ref();
        case Kind::callable:
            return &a.fn() == &b.fn();
        default:
            return false;
    }
}

bool value_less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order == code point order
    if (a.is_list() && b.is_list() && a.kind() == b.kind()) {
        auto& x = a.items();
        auto& y = b.items();
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (values_equal(x[i], y[i])) continue;
            return value_less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

ValueList iterate(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return {};
        case Kind::list:
        case Kind::tuple:
        case Kind::generator:
            return v.items();
        case Kind::dict: {
            ValueList keys;
            keys.reserve(v.dict_ref().items.size());
            for (auto& kv : v.dict_ref().items) keys.push_back(kv.first);
            return keys;
        }
        case Kind::string: {
            if (v.str().size() > kMaxIteratedChars)
                fail("a string of " + std::to_string(v.str().size()) +
                     " bytes is too long to iterate (the sandbox allows " + std::to_string(kMaxIteratedChars) + ")");
            ValueList chars;
            for (char32_t c : utf8_decode(v.str())) chars.push_back(Value::string(utf8_encode(std::u32string(1, c))));
            return chars;
        }
        default:
            fail("'" + v.type_name() + "' object is not iterable");
    }
}

std::int64_t value_length(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return 0;
        case Kind::string:
            return is_ascii(v.str()) ? static_cast<std::int64_t>(v.str().size())
                                     : static_cast<std::int64_t>(utf8_decode(v.str()).size());
        case Kind::list:
        case Kind::tuple:
            return static_cast<std::int64_t>(v.items().size());
        case Kind::dict:
            return static_cast<std::int64_t>(v.dict_ref().items.size());
        default:
            fail("object of type '" + v.type_name() + "' has no len()");
    }
}

}  // namespace loradesk::jinja
