// Statement execution: output, if, for (with Jinja2's loop object), set, namespaces, macros, call and
// filter blocks, loop controls. Failures get the statement's line.
#include <cstdint>
#include <optional>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/jinja/template_limits.h"

namespace loradesk::jinja {

namespace {

constexpr int kMaxMacroDepth = 200;

template <class F>
auto at_stmt(int line, F&& f) {
    try {
        return f();
    } catch (const Failure& e) {
        throw TemplateError(e.message, line);
    }
}

void assign(Frame& frame, const std::vector<std::string>& targets, const Value& value) {
    if (targets.size() == 1) {
        frame.set(targets[0], value);
        return;
    }
    ValueList parts = iterate(value);
    if (parts.size() != targets.size())
        fail("cannot unpack " + std::to_string(parts.size()) + " value(s) into " + std::to_string(targets.size()) +
             " names");
    for (std::size_t i = 0; i < targets.size(); ++i) frame.set(targets[i], parts[i]);
}

Value apply_filters(Interpreter& in, const std::vector<std::unique_ptr<FilterExpr>>& filters, Value v) {
    for (auto& f : filters) {
        CallArgs a = eval_args(in, f->args);
        v = in.filter(f->name, v, a);
    }
    return v;
}

// The loop object of iteration i. `cycle`/`changed` are created once per loop; the key strings once per
// process (immutable and shared, so safe across concurrent renders).
Value make_loop(const ValueList& items, std::size_t i, const Value& cycle, const Value& changed) {
    enum Key {
        index0,
        index,
        first,
        last,
        length,
        revindex,
        revindex0,
        depth,
        depth0,
        previtem,
        nextitem,
        cyc,
        chg,
        n_keys
    };
    static const std::vector<Value> keys = [] {
        std::vector<Value> k;
        for (const char* name : {"index0", "index", "first", "last", "length", "revindex", "revindex0", "depth",
                                 "depth0", "previtem", "nextitem", "cycle", "changed"})
            k.push_back(Value::string(name));
        return k;
    }();
    auto n = static_cast<std::int64_t>(items.size());
    auto idx = static_cast<std::int64_t>(i);
    Dict d;
    d.items.reserve(n_keys);
    d.items.emplace_back(keys[index0], Value::integer(idx));
    d.items.emplace_back(keys[index], Value::integer(idx + 1));
    d.items.emplace_back(keys[first], Value::boolean(i == 0));
    d.items.emplace_back(keys[last], Value::boolean(idx == n - 1));
    d.items.emplace_back(keys[length], Value::integer(n));
    d.items.emplace_back(keys[revindex], Value::integer(n - idx));
    d.items.emplace_back(keys[revindex0], Value::integer(n - idx - 1));
    d.items.emplace_back(keys[depth], Value::integer(1));
    d.items.emplace_back(keys[depth0], Value::integer(0));
    if (i > 0) d.items.emplace_back(keys[previtem], items[i - 1]);
    if (idx + 1 < n) d.items.emplace_back(keys[nextitem], items[i + 1]);
    d.items.emplace_back(keys[cyc], cycle);
    d.items.emplace_back(keys[chg], changed);
    return Value::dict(std::move(d));
}

}  // namespace

void Interpreter::step() {
    if (++m_steps > kMaxRenderSteps)
        fail("the template ran more than " + std::to_string(kMaxRenderSteps) +
             " loop iterations and macro calls (a template that never ends?)");
}

Flow Interpreter::render_body(const Body& body, std::string& out) {
    for (auto& s : body) {
        Flow f = s->render(*this, out);
        if (out.size() > kMaxRenderBytes)
            fail("the template printed more than " + std::to_string(kMaxRenderBytes) + " bytes");
        if (f != Flow::normal) return f;
    }
    return Flow::normal;
}

std::string Interpreter::render_to_string(const Body& body) {
    std::string out;
    render_body(body, out);
    return out;
}

Flow TextStmt::render(Interpreter&, std::string& out) const {
    out += text;
    return Flow::normal;
}

Flow PrintStmt::render(Interpreter& in, std::string& out) const {
    at_stmt(line, [&] { out += expr->eval(in).to_str(); });
    return Flow::normal;
}

Flow IfStmt::render(Interpreter& in, std::string& out) const {
    // Named pairs rather than structured bindings: clang before 16 cannot capture a binding in a lambda.
    for (auto& branch : branches)
        if (at_stmt(line, [&] { return branch.first->eval(in).truthy(); })) return in.render_body(branch.second, out);
    return in.render_body(otherwise, out);
}

Flow ForStmt::render(Interpreter& in, std::string& out) const {
    // Lists are iterated in place (the Value keeps them alive); other iterables are materialised.
    Value seq = at_stmt(line, [&] { return iter->eval(in); });
    ValueList materialised;
    if (!seq.is_list()) {
        materialised = at_stmt(line, [&] {
            if (seq.is_none()) fail("'NoneType' object is not iterable");
            return iterate(seq);
        });
    }
    const ValueList* items = seq.is_list() ? &seq.items() : &materialised;
    if (filter) {
        ValueList kept;
        for (auto& item : *items) {
            auto f = std::make_shared<Frame>(in.frame());
            at_stmt(line, [&] {
                in.step();
                assign(*f, targets, item);
            });
            Interpreter::FrameGuard guard(in, f);
            if (at_stmt(line, [&] { return filter->eval(in).truthy(); })) kept.push_back(item);
        }
        materialised = std::move(kept);
        items = &materialised;
    }
    auto position = std::make_shared<std::size_t>(0);
    Value cycle = Value::callable("loop.cycle", [position](Interpreter&, CallArgs& a) {
        if (a.positional.empty()) fail("no items for cycling given");
        return a.positional[*position % a.positional.size()];
    });
    // loop.changed(*values): true when the arguments differ from the previous call's in this loop.
    auto last = std::make_shared<std::optional<Value>>();
    Value changed = Value::callable("loop.changed", [last](Interpreter&, CallArgs& a) {
        Value now = Value::tuple(a.positional);
        if (*last && values_equal(**last, now)) return Value::boolean(false);
        *last = now;
        return Value::boolean(true);
    });
    for (std::size_t i = 0; i < items->size(); ++i) {
        // A fresh frame per iteration: assignments in one iteration are not seen by the next (Jinja2).
        auto f = std::make_shared<Frame>(in.frame());
        at_stmt(line, [&] {
            in.step();
            assign(*f, targets, (*items)[i]);
        });
        *position = i;
        f->set("loop", make_loop(*items, i, cycle, changed));
        Interpreter::FrameGuard guard(in, f);
        Flow flow = in.render_body(body, out);
        if (flow == Flow::break_) break;
    }
    if (items->empty() && !otherwise.empty()) {
        Interpreter::FrameGuard guard(in, std::make_shared<Frame>(in.frame()));
        return in.render_body(otherwise, out);
    }
    return Flow::normal;
}

Flow SetStmt::render(Interpreter& in, std::string&) const {
    at_stmt(line, [&] {
        Value v = value->eval(in);
        if (ns_attr.empty()) {
            assign(*in.frame(), targets, v);
            return;
        }
        Value target = in.lookup(targets[0]);
        if (!target.is_ns()) fail("cannot assign attribute on non-namespace object '" + targets[0] + "'");
        target.ns_ref().set(Value::string(ns_attr), std::move(v));
    });
    return Flow::normal;
}

Flow SetBlockStmt::render(Interpreter& in, std::string&) const {
    std::string text = in.render_to_string(body);
    at_stmt(line, [&] { in.frame()->set(target, apply_filters(in, filters, Value::string(std::move(text)))); });
    return Flow::normal;
}

Flow FilterBlockStmt::render(Interpreter& in, std::string& out) const {
    std::string text = in.render_to_string(body);
    out += at_stmt(line, [&] { return apply_filters(in, filters, Value::string(std::move(text))).to_str(); });
    return Flow::normal;
}

Flow BodyStmt::render(Interpreter& in, std::string& out) const { return in.render_body(body, out); }

Flow WithStmt::render(Interpreter& in, std::string& out) const {
    // All values are computed in the outer scope before any name is bound (Jinja2 semantics).
    auto f = std::make_shared<Frame>(in.frame());
    std::vector<Value> values;
    for (auto& assignment : assignments) values.push_back(at_stmt(line, [&] { return assignment.second->eval(in); }));
    for (std::size_t i = 0; i < assignments.size(); ++i) f->set(assignments[i].first, std::move(values[i]));
    Interpreter::FrameGuard guard(in, f);
    return in.render_body(body, out);
}

Flow LoopControlStmt::render(Interpreter&, std::string&) const { return flow; }

namespace {

// Calls a macro-like body: binds parameters (defaults evaluated at call time in the new scope).
Value invoke_body(Interpreter& in, const FramePtr& scope, const std::string& name,
                  const std::vector<MacroParam>& params, const Body& body, CallArgs& args, const Value* caller) {
    in.step();
    if (in.depth >= kMaxMacroDepth) fail("macro '" + name + "' recursed deeper than " + std::to_string(kMaxMacroDepth));
    if (args.positional.size() > params.size())
        fail("macro '" + name + "' takes not more than " + std::to_string(params.size()) + " argument(s)");
    auto f = std::make_shared<Frame>(scope);
    std::vector<bool> bound(params.size(), false);
    for (std::size_t i = 0; i < args.positional.size(); ++i) {
        f->set(params[i].name, args.positional[i]);
        bound[i] = true;
    }
    Value explicit_caller;
    for (auto& [k, v] : args.keyword) {
        std::size_t i = 0;
        while (i < params.size() && params[i].name != k) ++i;
        if (i == params.size()) {
            if (k == "caller") {
                explicit_caller = v;
                continue;
            }
            fail("macro '" + name + "' takes no keyword argument '" + k + "'");
        }
        if (bound[i]) fail("macro '" + name + "' got multiple values for argument '" + k + "'");
        f->set(k, v);
        bound[i] = true;
    }
    if (caller)
        f->set("caller", *caller);
    else if (!explicit_caller.is_undefined())
        f->set("caller", explicit_caller);
    Interpreter::FrameGuard guard(in, f);
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (bound[i]) continue;
        f->set(params[i].name, params[i].default_value
                                   ? params[i].default_value->eval(in)
                                   : Value::undefined("parameter '" + params[i].name + "' was not provided"));
    }
    ++in.depth;
    std::string out;
    try {
        in.render_body(body, out);
    } catch (...) {
        --in.depth;
        throw;
    }
    --in.depth;
    return Value::string(std::move(out));
}

}  // namespace

Flow MacroStmt::render(Interpreter& in, std::string&) const {
    // The macro lives in the frame it captures, so it holds the frame weakly (no reference cycle).
    std::weak_ptr<Frame> scope = in.frame();
    const MacroStmt* self = this;
    in.frame()->set(name, Value::callable(name, [self, scope](Interpreter& inner, CallArgs& args) {
                        FramePtr frame = scope.lock();
                        if (!frame) fail("macro '" + self->name + "' was called after the scope that defined it ended");
                        return invoke_body(inner, frame, self->name, self->params, self->body, args, nullptr);
                    }));
    return Flow::normal;
}

Flow CallBlockStmt::render(Interpreter& in, std::string& out) const {
    FramePtr scope = in.frame();
    const CallBlockStmt* self = this;
    Value caller = Value::callable("caller", [self, scope](Interpreter& inner, CallArgs& args) {
        return invoke_body(inner, scope, "caller", self->caller_params, self->body, args, nullptr);
    });
    out += at_stmt(line, [&] {
        Value macro = call->callee->eval(in);
        CallArgs a = eval_args(in, call->args);
        a.keyword.emplace_back("caller", caller);
        return in.call(macro, a).to_str();
    });
    return Flow::normal;
}

}  // namespace loradesk::jinja
