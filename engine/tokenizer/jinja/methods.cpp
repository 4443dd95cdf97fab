// Python methods reachable from templates (str, dict, list/tuple) and the template globals. Mutating
// methods (list.append, dict.update, ...) are refused exactly where ImmutableSandboxedEnvironment refuses them.
#include <chrono>
#include <ctime>
#include <set>
#include <string_view>
#include <unordered_map>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_text.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/jinja/template_limits.h"

namespace loradesk::jinja {

namespace {

using Bound = std::vector<std::optional<Value>>;
using U32 = std::u32string;

std::string enc(const U32& u) { return utf8_encode(u); }

U32 strip_u(const U32& u, const std::optional<Value>& chars, bool left, bool right) {
    bool ws = !chars || chars->is_none();
    U32 set = ws ? U32() : utf8_decode(chars->to_str());
    auto hit = [&](char32_t c) { return ws ? py_isspace(c) : set.find(c) != U32::npos; };
    std::size_t a = 0, e = u.size();
    if (left)
        while (a < e && hit(u[a])) ++a;
    if (right)
        while (e > a && hit(u[e - 1])) --e;
    return u.substr(a, e - a);
}

ValueList split_ws(const U32& u, std::int64_t maxsplit, bool from_right) {
    std::vector<U32> parts;
    if (!from_right) {
        std::size_t i = 0;
        while (i < u.size()) {
            while (i < u.size() && py_isspace(u[i])) ++i;
            if (i >= u.size()) break;
            if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
                U32 rest = u.substr(i);
                std::size_t e = rest.size();
                while (e > 0 && py_isspace(rest[e - 1])) --e;
                parts.push_back(rest.substr(0, e));
                break;
            }
            std::size_t s = i;
            while (i < u.size() && !py_isspace(u[i])) ++i;
            parts.push_back(u.substr(s, i - s));
        }
    } else {
        std::size_t i = u.size();
        while (i > 0) {
            while (i > 0 && py_isspace(u[i - 1])) --i;
            if (i == 0) break;
            if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
                U32 rest = u.substr(0, i);
                std::size_t s = 0;
                while (s < rest.size() && py_isspace(rest[s])) ++s;
                parts.push_back(rest.substr(s));
                break;
            }
            std::size_t e = i;
            while (i > 0 && !py_isspace(u[i - 1])) --i;
            parts.push_back(u.substr(i, e - i));
        }
        std::reverse(parts.begin(), parts.end());
    }
    ValueList out;
    for (auto& p : parts) out.push_back(Value::string(enc(p)));
    return out;
}

ValueList split_sep(const std::string& s, const std::string& sep, std::int64_t maxsplit, bool from_right) {
    if (sep.empty()) fail("empty separator");
    std::vector<std::string> parts;
    if (!from_right) {
        std::size_t pos = 0;
        while (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) {
            std::size_t hit = s.find(sep, pos);
            if (hit == std::string::npos) break;
            parts.push_back(s.substr(pos, hit - pos));
            pos = hit + sep.size();
        }
        parts.push_back(s.substr(pos));
    } else {
        std::size_t end = s.size();
        while (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) {
            if (end < sep.size()) break;
            std::size_t hit = s.rfind(sep, end - sep.size());
            if (hit == std::string::npos) break;
            parts.push_back(s.substr(hit + sep.size(), end - hit - sep.size()));
            end = hit;
        }
        parts.push_back(s.substr(0, end));
        std::reverse(parts.begin(), parts.end());
    }
    ValueList out;
    for (auto& p : parts) out.push_back(Value::string(p));
    return out;
}

Value split(const std::string& s, CallArgs& a, bool from_right) {
    auto b = bind_args(a, from_right ? "rsplit" : "split", {"sep", "maxsplit"});
    std::int64_t maxsplit = b[1] ? b[1]->as_int() : -1;
    if (!b[0] || b[0]->is_none()) return Value::list(split_ws(utf8_decode(s), maxsplit, from_right));
    if (!b[0]->is_string()) fail("must be str or None, not " + b[0]->type_name());
    return Value::list(split_sep(s, b[0]->str(), maxsplit, from_right));
}

bool affix(const std::string& s, const Value& arg, bool prefix) {
    auto one = [&](const Value& p) {
        if (!p.is_string())
            fail(std::string(prefix ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " +
                 p.type_name());
        const std::string& x = p.str();
        if (x.size() > s.size()) return false;
        return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
    };
    if (arg.kind() == Kind::tuple) {
        for (auto& p : arg.items())
            if (one(p)) return true;
        return false;
    }
    return one(arg);
}

std::string py_title(const std::string& s) {
    U32 u = utf8_decode(s);
    bool prev_cased = false;
    for (auto& c : u) {
        bool cased = py_isalpha(c);
        if (cased) c = prev_cased ? py_lower(c) : py_upper(c);
        prev_cased = cased;
    }
    return enc(u);
}

std::string pad(const std::string& s, std::int64_t width, const std::string& fill, char align) {
    U32 u = utf8_decode(s);
    auto n = static_cast<std::int64_t>(u.size());
    if (width <= n) return s;
    U32 f = utf8_decode(fill.empty() ? " " : fill);
    std::int64_t total = width - n;
    std::int64_t left = align == '<' ? 0 : align == '>' ? total : total / 2 + (total & width & 1);
    if (align == '^' && fill.empty()) left = total / 2 + (total & width & 1);
    U32 out(static_cast<std::size_t>(left), f[0]);
    out += u;
    out += U32(static_cast<std::size_t>(total - left), f[0]);
    return enc(out);
}

// str.format with positional/named fields, !r/!s conversions and [[fill]align][width][.precision][type].
std::string str_format(const std::string& fmt, CallArgs& a) {
    std::string out;
    std::size_t auto_index = 0;
    for (std::size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}')
                ++i;
            else
                fail("Single '}' encountered in format string");
            out += '}';
            continue;
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        std::size_t close = fmt.find('}', i);
        if (close == std::string::npos) fail("Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        i = close;
        std::string spec, conv;
        if (auto p = field.find(':'); p != std::string::npos) {
            spec = field.substr(p + 1);
            field.resize(p);
        }
        if (auto p = field.find('!'); p != std::string::npos) {
            conv = field.substr(p + 1);
            field.resize(p);
        }
        Value arg;
        if (field.empty()) {
            if (auto_index >= a.positional.size())
                fail("Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
            arg = a.positional[auto_index++];
        } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
            std::size_t k = std::stoul(field);
            if (k >= a.positional.size())
                fail("Replacement index " + field + " out of range for positional args tuple");
            arg = a.positional[k];
        } else {
            auto it = std::find_if(a.keyword.begin(), a.keyword.end(), [&](auto& kv) { return kv.first == field; });
            if (it == a.keyword.end()) fail("KeyError: '" + field + "'");
            arg = it->second;
        }
        std::string text;
        if (conv == "r")
            text = arg.repr();
        else
            text = arg.to_str();
        if (spec.empty()) {
            out += text;
            continue;
        }
        std::string fill;
        char align = arg.is_number() && conv.empty() ? '>' : '<';
        std::size_t k = 0;
        if (spec.size() >= 2 && (spec[1] == '<' || spec[1] == '>' || spec[1] == '^')) {
            fill = spec.substr(0, 1);
            align = spec[1];
            k = 2;
        } else if (!spec.empty() && (spec[0] == '<' || spec[0] == '>' || spec[0] == '^')) {
            align = spec[0];
            k = 1;
        }
        std::int64_t width = 0;
        while (k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k])))
            width = width * 10 + (spec[k++] - '0');
        std::string rest = spec.substr(k);
        if (!rest.empty() && arg.is_number())
            text = percent_format("%" + rest, arg);
        else if (!rest.empty() && rest[0] == '.')
            text = percent_format("%" + rest + (rest.back() == 's' ? "" : "s"), Value::string(text));
        out += pad(text, width, fill, align);
    }
    return out;
}

Value string_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& a) {
    const std::string& s = self.str();
    auto no_args = [&] {
        if (!a.positional.empty() || !a.keyword.empty()) fail("str." + name + "() takes no arguments");
    };
    if (name == "startswith" || name == "endswith") {
        if (a.positional.empty()) fail("str." + name + "() takes at least 1 argument");
        return Value::boolean(affix(s, a.positional[0], name == "startswith"));
    }
    if (name == "split") return split(s, a, false);
    if (name == "rsplit") return split(s, a, true);
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        auto b = bind_args(a, name, {"chars"});
        return Value::string(enc(strip_u(utf8_decode(s), b[0], name != "rstrip", name != "lstrip")));
    }
    if (name == "upper") return no_args(), Value::string(str_upper(s));
    if (name == "lower" || name == "casefold") return no_args(), Value::string(str_lower(s));
    if (name == "title") return no_args(), Value::string(py_title(s));
    if (name == "capitalize") {
        no_args();
        U32 u = utf8_decode(s);
        for (std::size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? py_upper(u[i]) : py_lower(u[i]);
        return Value::string(enc(u));
    }
    if (name == "swapcase") {
        U32 u = utf8_decode(s);
        for (auto& c : u) c = py_upper(c) != c ? py_upper(c) : py_lower(c);
        return Value::string(enc(u));
    }
    if (name == "replace") {
        auto b = bind_args(a, "replace", {"old", "new", "count"});
        if (!b[0] || !b[1]) fail("str.replace() needs old and new");
        CallArgs fa;
        fa.positional = {*b[0], *b[1]};
        if (b[2] && b[2]->as_int() >= 0) fa.positional.push_back(*b[2]);
        return find_filter("replace")(in, self, fa);
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
        auto b = bind_args(a, name, {"sub"});
        if (!b[0] || !b[0]->is_string()) fail("str." + name + "() needs a string argument");
        const std::string& sub = b[0]->str();
        if (name == "count") {
            if (sub.empty()) return Value::integer(static_cast<std::int64_t>(utf8_decode(s).size()) + 1);
            std::int64_t n = 0;
            for (std::size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
            return Value::integer(n);
        }
        std::size_t p = (name[0] == 'r') ? s.rfind(sub) : s.find(sub);
        if (p == std::string::npos) {
            if (name == "index" || name == "rindex") fail("substring not found");
            return Value::integer(-1);
        }
        return Value::integer(static_cast<std::int64_t>(utf8_decode(s.substr(0, p)).size()));
    }
    if (name == "join") {
        auto b = bind_args(a, "join", {"iterable"});
        if (!b[0]) fail("str.join() takes exactly one argument");
        std::string out;
        bool first = true;
        for (auto& item : iterate(*b[0])) {
            if (!item.is_string()) fail("sequence item: expected str instance, " + item.type_name() + " found");
            if (!first) append_checked(out, s);
            first = false;
            append_checked(out, item.str());
        }
        return Value::string(std::move(out));
    }
    if (name == "format") return Value::string(str_format(s, a));
    if (name == "splitlines") {
        ValueList out;
        std::size_t start = 0;
        for (std::size_t i = 0; i < s.size(); ++i)
            if (s[i] == '\n' || s[i] == '\r') {
                out.push_back(Value::string(s.substr(start, i - start)));
                if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
                start = i + 1;
            }
        if (start < s.size()) out.push_back(Value::string(s.substr(start)));
        return Value::list(std::move(out));
    }
    auto all = [&](bool (*pred)(char32_t)) {
        U32 u = utf8_decode(s);
        return Value::boolean(!u.empty() && std::all_of(u.begin(), u.end(), pred));
    };
    if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return all(py_isdigit);
    if (name == "isalpha") return all(py_isalpha);
    if (name == "isalnum") return all(py_isalnum);
    if (name == "isspace") return all(py_isspace);
    if (name == "istitle") {
        no_args();
        return Value::boolean(!s.empty() && py_title(s) == s && str_lower(s) != s);
    }
    if (name == "isupper" || name == "islower") {
        bool up = name == "isupper", cased = false;
        for (char32_t c : utf8_decode(s)) {
            if (py_upper(c) == c && py_lower(c) == c) continue;
            cased = true;
            if ((up && py_upper(c) != c) || (!up && py_lower(c) != c)) return Value::boolean(false);
        }
        return Value::boolean(cased);
    }
    if (name == "zfill") {
        auto b = bind_args(a, "zfill", {"width"});
        std::int64_t w = b[0] ? b[0]->as_int() : 0;
        std::string body = s, sign;
        if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
            sign = body.substr(0, 1);
            body.erase(0, 1);
        }
        auto n = static_cast<std::int64_t>(utf8_decode(s).size());
        return Value::string(n >= w ? s : sign + std::string(static_cast<std::size_t>(w - n), '0') + body);
    }
    if (name == "ljust" || name == "rjust" || name == "center") {
        auto b = bind_args(a, name, {"width", "fillchar"});
        std::int64_t w = b[0] ? b[0]->as_int() : 0;
        return Value::string(pad(s, w, b[1] ? b[1]->to_str() : " ",
                                 name == "ljust"   ? '<'
                                 : name == "rjust" ? '>'
                                                   : '^'));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        auto b = bind_args(a, name, {"affix"});
        std::string x = b[0] ? b[0]->to_str() : "";
        if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value::string(s.substr(x.size()));
        if (name == "removesuffix" && !x.empty() && x.size() <= s.size() &&
            s.compare(s.size() - x.size(), x.size(), x) == 0)
            return Value::string(s.substr(0, s.size() - x.size()));
        return self;
    }
    if (name == "partition" || name == "rpartition") {
        auto b = bind_args(a, name, {"sep"});
        std::string sep = b[0] ? b[0]->to_str() : "";
        if (sep.empty()) fail("empty separator");
        std::size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (p == std::string::npos)
            return name == "partition" ? Value::tuple({self, Value::string(""), Value::string("")})
                                       : Value::tuple({Value::string(""), Value::string(""), self});
        return Value::tuple(
            {Value::string(s.substr(0, p)), Value::string(sep), Value::string(s.substr(p + sep.size()))});
    }
    fail("internal: unhandled str method " + name);
}

const std::set<std::string>& string_methods() {
    static const std::set<std::string> names = {
        "startswith", "endswith", "split",   "rsplit",       "strip",        "lstrip",     "rstrip",    "upper",
        "lower",      "casefold", "title",   "capitalize",   "swapcase",     "replace",    "find",      "rfind",
        "index",      "rindex",   "count",   "join",         "format",       "splitlines", "isdigit",   "isnumeric",
        "isdecimal",  "isalpha",  "isalnum", "isspace",      "isupper",      "istitle",    "islower",   "zfill",
        "ljust",      "rjust",    "center",  "removeprefix", "removesuffix", "partition",  "rpartition"};
    return names;
}

Value dict_method(Interpreter&, const Value& self, const std::string& name, CallArgs& a) {
    const Dict& d = self.dict_ref();
    if (name == "get") {
        auto b = bind_args(a, "get", {"key", "default"});
        if (!b[0]) fail("dict.get() takes at least 1 argument");
        const Value* v = d.find(*b[0]);
        return v ? *v : (b[1] ? *b[1] : Value::none());
    }
    bind_args(a, "dict." + name, {});
    ValueList out;
    if (name == "copy") return self;
    for (auto& [k, v] : d.items) {
        if (name == "items")
            out.push_back(Value::tuple({k, v}));
        else
            out.push_back(name == "keys" ? k : v);
    }
    return Value::list(std::move(out));
}

Value list_method(Interpreter&, const Value& self, const std::string& name, CallArgs& a) {
    if (name == "copy") return bind_args(a, "list.copy", {}), self;
    auto b = bind_args(a, name, {"value"});
    if (!b[0]) fail(name + "() takes exactly one argument");
    std::int64_t n = 0, i = 0, first = -1;
    for (auto& v : self.items()) {
        if (values_equal(v, *b[0])) {
            ++n;
            if (first < 0) first = i;
        }
        ++i;
    }
    if (name == "count") return Value::integer(n);
    if (first < 0) fail(b[0]->repr() + " is not in list");
    return Value::integer(first);
}

Value bound(const Value& self, const std::string& name,
            Value (*impl)(Interpreter&, const Value&, const std::string&, CallArgs&)) {
    return Value::callable(self.type_name() + "." + name,
                           [self, name, impl](Interpreter& in, CallArgs& a) { return impl(in, self, name, a); });
}

Value unsafe(const Value& self, const std::string& name) {
    return Value::undefined("access to attribute '" + name + "' of '" + self.type_name() + "' object is unsafe.");
}

std::string strftime_now(const std::string& fmt) {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[512];
    std::size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return std::string(buf, n);
}

Dict kwargs_dict(CallArgs& a, const char* fn) {
    Dict d;
    if (!a.positional.empty()) {
        if (a.positional.size() > 1 || !a.positional[0].is_dict())
            fail(std::string(fn) + "() takes at most one mapping argument");
        d = a.positional[0].dict_ref();
    }
    for (auto& [k, v] : a.keyword) d.set(Value::string(k), v);
    return d;
}

// What an attribute name means on a builtin type: a safe method, a mutating one the sandbox refuses, or
// nothing. One hash lookup per attribute access (this runs for every `message.role`).
enum class MethodKind { none, str, dict, list, list_only, tuple_ok_list, unsafe_str, unsafe_dict, unsafe_list };

MethodKind classify(const Value& self, const std::string& name) {
    static const std::unordered_map<std::string_view, MethodKind> dict_methods = {
        {"get", MethodKind::dict},
        {"items", MethodKind::dict},
        {"keys", MethodKind::dict},
        {"values", MethodKind::dict},
        {"copy", MethodKind::dict},
        {"pop", MethodKind::unsafe_dict},
        {"popitem", MethodKind::unsafe_dict},
        {"setdefault", MethodKind::unsafe_dict},
        {"update", MethodKind::unsafe_dict},
        {"clear", MethodKind::unsafe_dict}};
    static const std::unordered_map<std::string_view, MethodKind> list_methods = {
        {"index", MethodKind::list},         {"count", MethodKind::list},         {"copy", MethodKind::list_only},
        {"append", MethodKind::unsafe_list}, {"extend", MethodKind::unsafe_list}, {"insert", MethodKind::unsafe_list},
        {"pop", MethodKind::unsafe_list},    {"remove", MethodKind::unsafe_list}, {"reverse", MethodKind::unsafe_list},
        {"sort", MethodKind::unsafe_list},   {"clear", MethodKind::unsafe_list}};
    static const std::unordered_map<std::string_view, MethodKind> str_methods = [] {
        std::unordered_map<std::string_view, MethodKind> m;
        for (auto& n : string_methods()) m.emplace(n, MethodKind::str);
        for (const char* n : {"encode", "translate", "format_map"}) m.emplace(n, MethodKind::unsafe_str);
        return m;
    }();
    const auto* table = self.is_string() ? &str_methods
                        : self.is_dict() ? &dict_methods
                        : self.is_list() ? &list_methods
                                         : nullptr;
    if (!table) return MethodKind::none;
    auto it = table->find(name);
    return it == table->end() ? MethodKind::none : it->second;
}

}  // namespace

Value find_method(const Value& self, const std::string& name) {
    switch (classify(self, name)) {
        case MethodKind::str:
            return bound(self, name, string_method);
        case MethodKind::dict:
            return bound(self, name, dict_method);
        case MethodKind::list:
            return bound(self, name, list_method);
        case MethodKind::list_only:
            return self.kind() == Kind::list ? bound(self, name, list_method) : Value();
        case MethodKind::unsafe_list:
            return self.kind() == Kind::list ? unsafe(self, name) : Value();
        case MethodKind::unsafe_str:
        case MethodKind::unsafe_dict:
            return unsafe(self, name);
        default:
            return Value();
    }
}

void install_globals(Frame& g) {
    g.set("raise_exception", Value::callable("raise_exception", [](Interpreter&, CallArgs& a) -> Value {
              std::string msg = a.positional.empty() ? std::string() : a.positional[0].to_str();
              throw TemplateError(msg, 0, 0, true);
          }));
    g.set("strftime_now", Value::callable("strftime_now", [](Interpreter&, CallArgs& a) {
              auto b = bind_args(a, "strftime_now", {"format"});
              if (!b[0]) fail("strftime_now() needs a format string");
              return Value::string(strftime_now(b[0]->to_str()));
          }));
    g.set("range", Value::callable("range", [](Interpreter&, CallArgs& a) {
              if (!a.keyword.empty() || a.positional.empty() || a.positional.size() > 3)
                  fail("range expected 1 to 3 integer arguments");
              for (auto& v : a.positional)
                  if (!v.is_int() && !v.is_bool())
                      fail("'" + v.type_name() + "' object cannot be interpreted as an integer");
              std::int64_t start = a.positional.size() > 1 ? a.positional[0].as_int() : 0;
              std::int64_t stop = a.positional.size() > 1 ? a.positional[1].as_int() : a.positional[0].as_int();
              std::int64_t step = a.positional.size() > 2 ? a.positional[2].as_int() : 1;
              if (step == 0) fail("range() arg 3 must not be zero");
              ValueList out;
              for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                  out.push_back(Value::integer(i));
                  if (out.size() > 100000) fail("range too big (the sandbox allows at most 100000 items)");
              }
              return Value::list(std::move(out));
          }));
    g.set("dict",
          Value::callable("dict", [](Interpreter&, CallArgs& a) { return Value::dict(kwargs_dict(a, "dict")); }));
    g.set("namespace", Value::callable("namespace", [](Interpreter&, CallArgs& a) {
              return Value::ns(kwargs_dict(a, "namespace"));
          }));
    g.set("joiner", Value::callable("joiner", [](Interpreter&, CallArgs& a) {
              auto b = bind_args(a, "joiner", {"sep"});
              std::string sep = b[0] ? b[0]->to_str() : ", ";
              auto used = std::make_shared<bool>(false);
              return Value::callable("joiner", [sep, used](Interpreter&, CallArgs&) {
                  if (!*used) {
                      *used = true;
                      return Value::string("");
                  }
                  return Value::string(sep);
              });
          }));
}

}  // namespace loradesk::jinja
