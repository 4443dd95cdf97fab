// The value model of the chat-template interpreter: Python objects as Jinja2 sees them (None, bool, int,
// float, str, list, tuple, dict, namespace, callables, and Jinja2's default Undefined).
// Printing, truthiness, equality and ordering follow Python; lists and dicts are immutable once built
// (the sandbox forbids mutation), namespaces are the one mutable object. Not thread-safe per value;
// values are created per render, so concurrent renders share nothing mutable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace loradesk::jinja {

class Value;
struct CallArgs;
class Interpreter;

// `generator` is a one-shot iterator as Jinja2's map/select/unique/... filters return: iterable and always
// truthy, but without len() or indexing, so templates that rely on those fail exactly as in Python.
enum class Kind { undefined, none, boolean, integer, floating, string, list, tuple, dict, ns, callable, generator };

using ValueList = std::vector<Value>;

// Insertion-ordered like a Python dict. Lookups are linear: template dicts are small.
struct Dict {
    std::vector<std::pair<Value, Value>> items;
    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    void set(Value key, Value value);
};

using NativeFn = std::function<Value(Interpreter&, CallArgs&)>;
struct Callable {
    std::string name;
    NativeFn fn;
};

class Value {
  public:
    Value() = default;  // undefined
    static Value undefined(std::string hint = {});
    static Value none();
    static Value boolean(bool b);
    static Value integer(std::int64_t i);
    static Value floating(double d);
    static Value string(std::string s);
    static Value list(ValueList items);
    static Value tuple(ValueList items);
    static Value generator(ValueList items, std::string type_name = "generator");
    static Value dict(Dict d);
    static Value ns(Dict attrs);
    static Value callable(std::string name, NativeFn fn);
    static Value from_json(const nlohmann::json& j);
    static Value from_json(const nlohmann::ordered_json& j);  // keeps key order, like Python dicts

    Kind kind() const { return m_kind; }
    bool is_undefined() const { return m_kind == Kind::undefined; }
    bool is_none() const { return m_kind == Kind::none; }
    bool is_bool() const { return m_kind == Kind::boolean; }
    bool is_int() const { return m_kind == Kind::integer; }
    bool is_float() const { return m_kind == Kind::floating; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }
    bool is_string() const { return m_kind == Kind::string; }
    bool is_list() const { return m_kind == Kind::list || m_kind == Kind::tuple; }  // any sequence
    bool is_dict() const { return m_kind == Kind::dict; }
    bool is_ns() const { return m_kind == Kind::ns; }
    bool is_callable() const { return m_kind == Kind::callable; }
    bool is_generator() const { return m_kind == Kind::generator; }

    bool as_bool() const { return m_bool; }
    std::int64_t as_int() const { return m_kind == Kind::boolean ? (m_bool ? 1 : 0) : m_int; }
    double as_double() const;        // any number
    const std::string& str() const;  // string payload; undefined hint; generator type name
    const ValueList& items() const { return *list_ptr(); }
    const Dict& dict_ref() const { return *dict_ptr(); }
    Dict& ns_ref() const { return *dict_ptr(); }  // namespaces are mutable through any copy
    const Callable& fn() const { return *fn_ptr(); }

    bool truthy() const;
    std::string to_str() const;      // Python str()
    std::string repr() const;        // Python repr()
    std::string type_name() const;   // Python type name for error messages: 'dict object'
    nlohmann::json to_json() const;  // throws Failure for values JSON cannot hold

  private:
    // Kept small (48 bytes) because values are copied constantly: strings and containers are shared,
    // never copied, and the scalar payloads overlap.
    const ValueList* list_ptr() const { return static_cast<const ValueList*>(m_obj.get()); }
    Dict* dict_ptr() const { return static_cast<Dict*>(m_obj.get()); }
    const Callable* fn_ptr() const { return static_cast<const Callable*>(m_obj.get()); }
    void set_str(std::string s) { m_str = std::make_shared<const std::string>(std::move(s)); }

    Kind m_kind = Kind::undefined;
    union {
        std::int64_t m_int = 0;
        bool m_bool;
        double m_float;
    };
    std::shared_ptr<const std::string> m_str;
    std::shared_ptr<void> m_obj;  // ValueList (list, tuple, generator), Dict (dict, ns) or Callable
};

// A render-time failure without a location; the interpreter adds the template line.
struct Failure {
    std::string message;
};
[[noreturn]] void fail(std::string message);

bool values_equal(const Value& a, const Value& b);
// Python ordering (<); throws Failure for unorderable types ("'<' not supported between ...").
bool value_less(const Value& a, const Value& b);
// Python iteration: list/tuple items, dict keys, string characters; undefined is empty.
ValueList iterate(const Value& v);
// len(); throws Failure for objects without a length.
std::int64_t value_length(const Value& v);

}  // namespace loradesk::jinja
