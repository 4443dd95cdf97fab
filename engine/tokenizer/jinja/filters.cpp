// Jinja2's built-in filters and tests (jinja2/filters.py, jinja2/tests.py, 3.1 semantics) plus
// transformers' tojson override. HTML escaping is plain text here: chat templates run with autoescape off,
// so Markup's escape-on-concatenation is not modelled.
#include <algorithm>
#include <cmath>
#include <map>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_text.h"
#include "tokenizer/jinja/template_limits.h"

namespace loradesk::jinja {

namespace {

using Bound = std::vector<std::optional<Value>>;

Value opt(const Bound& b, std::size_t i, Value fallback) { return b[i] ? *b[i] : std::move(fallback); }

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
    std::u32string u = utf8_decode(s);
    std::u32string set;
    bool ws = chars.is_none() || chars.is_undefined();
    if (!ws) set = utf8_decode(chars.to_str());
    auto strip = [&](char32_t c) { return ws ? py_isspace(c) : set.find(c) != std::u32string::npos; };
    std::size_t a = 0, e = u.size();
    if (left)
        while (a < e && strip(u[a])) ++a;
    if (right)
        while (e > a && strip(u[e - 1])) --e;
    return utf8_encode(u.substr(a, e - a));
}

// Jinja2's make_attrgetter: "a.b.0" walks items/attributes, integer parts index.
Value attr_path(Interpreter& in, const Value& item, const Value& attribute) {
    if (!attribute.is_string()) return in.get_item(item, attribute);
    Value v = item;
    std::string path = attribute.str();
    std::size_t start = 0;
    while (true) {
        std::size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool digits =
            !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        v = digits ? in.get_item(v, Value::integer(std::stoll(part))) : in.get_item(v, Value::string(part));
        if (dot == std::string::npos) return v;
        start = dot + 1;
    }
}

Value lower_if_str(const Value& v, bool case_sensitive) {
    return (!case_sensitive && v.is_string()) ? Value::string(str_lower(v.str())) : v;
}

ValueList sorted_values(Interpreter& in, ValueList items, bool reverse, bool case_sensitive, const Value& attribute) {
    std::vector<std::pair<Value, Value>> keyed;
    keyed.reserve(items.size());
    for (auto& v : items) {
        Value key = attribute.is_none() || attribute.is_undefined() ? v : attr_path(in, v, attribute);
        keyed.emplace_back(lower_if_str(key, case_sensitive), v);
    }
    auto less = [](const Value& x, const Value& y) {
        if (x.is_undefined() || y.is_undefined()) return false;  // Python sorts Undefined keys without failing
        return value_less(x, y);
    };
    std::stable_sort(keyed.begin(), keyed.end(),
                     [&](auto& a, auto& b) { return reverse ? less(b.first, a.first) : less(a.first, b.first); });
    ValueList out;
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return out;
}

Value f_length(Interpreter&, const Value& v, CallArgs&) { return Value::integer(value_length(v)); }

Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "trim", {"chars"});
    return Value::string(strip_chars(v.to_str(), opt(b, 0, Value::none()), true, true));
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions o;
    o.ensure_ascii = opt(b, 0, Value::boolean(false)).truthy();
    Value indent = opt(b, 1, Value::none());
    if (indent.is_int())
        o.indent = std::string(checked_width(indent.as_int(), "tojson indent"), ' ');
    else if (indent.is_string())
        o.indent = indent.str();
    else if (!indent.is_none())
        fail("tojson: indent must be an int, a string or None");
    if (o.indent) o.item_separator = ",";  // json.dumps drops the space after ',' when indenting
    Value seps = opt(b, 2, Value::none());
    if (!seps.is_none()) {
        if (!seps.is_list() || seps.items().size() != 2) fail("tojson: separators must be a pair like (',', ': ')");
        o.item_separator = seps.items()[0].to_str();
        o.key_separator = seps.items()[1].to_str();
    }
    o.sort_keys = opt(b, 3, Value::boolean(false)).truthy();
    return Value::string(json_dumps(v, o));
}

Value f_upper(Interpreter&, const Value& v, CallArgs&) { return Value::string(str_upper(v.to_str())); }
Value f_lower(Interpreter&, const Value& v, CallArgs&) { return Value::string(str_lower(v.to_str())); }

Value f_title(Interpreter&, const Value& v, CallArgs&) {
    // Words start after runs of '-', whitespace or opening brackets (jinja2's _word_beginning_split_re).
    std::u32string u = utf8_decode(v.to_str());
    bool start = true;
    for (auto& c : u) {
        bool sep = c == '-' || py_isspace(c) || c == '(' || c == '{' || c == '[' || c == '<';
        if (sep) {
            start = true;
            continue;
        }
        c = start ? py_upper(c) : py_lower(c);
        start = false;
    }
    return Value::string(utf8_encode(u));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs&) {
    std::u32string u = utf8_decode(v.to_str());
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? py_upper(u[i]) : py_lower(u[i]);
    return Value::string(utf8_encode(u));
}

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "default", {"default_value", "boolean"});
    bool boolean = opt(b, 1, Value::boolean(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return opt(b, 0, Value::string(""));
    return v;
}

Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "join", {"d", "attribute"});
    std::string sep = opt(b, 0, Value::string("")).to_str();
    Value attribute = opt(b, 1, Value::none());
    std::string out;
    bool first = true;
    for (auto& item : iterate(v)) {
        if (!first) append_checked(out, sep);
        first = false;
        append_checked(out, (attribute.is_none() ? item : attr_path(in, item, attribute)).to_str());
    }
    return Value::string(std::move(out));
}

Value f_first(Interpreter&, const Value& v, CallArgs&) {
    ValueList items = iterate(v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}
Value f_last(Interpreter&, const Value& v, CallArgs&) {
    ValueList items = iterate(v);
    if (v.is_generator()) fail("'" + v.type_name() + "' object is not reversible");
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_items(Interpreter&, const Value& v, CallArgs&) {
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    ValueList out;
    for (auto& [k, val] : v.dict_ref().items) out.push_back(Value::tuple({k, val}));
    return Value::generator(std::move(out));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
    ValueList out;
    auto attr_it = std::find_if(a.keyword.begin(), a.keyword.end(), [](auto& kv) { return kv.first == "attribute"; });
    if (a.positional.empty() && attr_it != a.keyword.end()) {
        Value dflt;
        for (auto& [k, val] : a.keyword)
            if (k == "default")
                dflt = val;
            else if (k != "attribute")
                fail("map() got an unexpected keyword argument '" + k + "'");
        for (auto& item : iterate(v)) {
            Value r = attr_path(in, item, attr_it->second);
            out.push_back(r.is_undefined() && !dflt.is_undefined() ? dflt : r);
        }
        return Value::generator(std::move(out));
    }
    if (a.positional.empty()) fail("map requires a filter name or attribute=");
    std::string name = a.positional[0].to_str();
    CallArgs rest;
    rest.positional.assign(a.positional.begin() + 1, a.positional.end());
    rest.keyword = a.keyword;
    for (auto& item : iterate(v)) {
        CallArgs copy = rest;
        out.push_back(in.filter(name, item, copy));
    }
    return Value::generator(std::move(out));
}

Value select_impl(Interpreter& in, const Value& v, CallArgs& a, bool by_attr, bool keep) {
    ValueList out;
    std::size_t k = 0;
    Value attribute;
    if (by_attr) {
        if (a.positional.empty()) fail("selectattr/rejectattr need an attribute name");
        attribute = a.positional[k++];
    }
    std::string test = k < a.positional.size() ? a.positional[k++].to_str() : std::string();
    CallArgs rest;
    rest.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(std::min(k, a.positional.size())),
                           a.positional.end());
    rest.keyword = a.keyword;
    for (auto& item : iterate(v)) {
        Value subject = by_attr ? attr_path(in, item, attribute) : item;
        CallArgs copy = rest;
        bool ok = test.empty() ? subject.truthy() : in.test(test, subject, copy);
        if (ok == keep) out.push_back(item);
    }
    return Value::generator(std::move(out));
}
Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, false); }

Value f_replace(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "replace", {"old", "new", "count"});
    if (!b[0] || !b[1]) fail("replace() needs the old and new strings");
    std::string s = v.to_str(), from = b[0]->to_str(), to = b[1]->to_str();
    std::int64_t count = opt(b, 2, Value::none()).is_none() ? -1 : b[2]->as_int();
    std::string out;
    if (from.empty()) {  // Python inserts `to` around every character
        std::u32string u = utf8_decode(s);
        std::int64_t done = 0;
        for (std::size_t i = 0; i <= u.size(); ++i) {
            if (count < 0 || done < count) {
                append_checked(out, to);
                ++done;
            }
            if (i < u.size()) append_checked(out, utf8_encode(u.substr(i, 1)));
        }
        return Value::string(out);
    }
    std::size_t pos = 0;
    for (std::int64_t done = 0; count < 0 || done < count; ++done) {
        std::size_t hit = s.find(from, pos);
        if (hit == std::string::npos) break;
        append_checked(out, std::string_view(s).substr(pos, hit - pos));
        append_checked(out, to);
        pos = hit + from.size();
    }
    out.append(s, pos);
    return Value::string(std::move(out));
}

Value f_list(Interpreter&, const Value& v, CallArgs&) { return Value::list(iterate(v)); }
Value f_string(Interpreter&, const Value& v, CallArgs&) { return Value::string(v.to_str()); }

std::optional<double> parse_float(const std::string& text) {
    std::string s = strip_chars(text, Value::none(), true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    if (s.empty()) return std::nullopt;
    try {
        std::size_t used = 0;
        double d = std::stod(s, &used);
        if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "int", {"default", "base"});
    Value dflt = opt(b, 0, Value::integer(0));
    int base = static_cast<int>(opt(b, 1, Value::integer(10)).as_int());
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    if (v.is_float())
        return std::isfinite(v.as_double()) ? Value::integer(static_cast<std::int64_t>(v.as_double())) : dflt;
    if (v.is_string()) {
        std::string s = strip_chars(v.str(), Value::none(), true, true);
        s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
        try {
            std::size_t used = 0;
            long long r = std::stoll(s, &used, base);
            if (used == s.size() && !s.empty()) return Value::integer(r);
        } catch (const std::exception&) {
        }
        if (auto d = parse_float(v.str()); d && std::isfinite(*d)) return Value::integer(static_cast<std::int64_t>(*d));
    }
    return dflt;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "float", {"default"});
    if (v.is_number()) return Value::floating(v.as_double());
    if (v.is_string())
        if (auto d = parse_float(v.str())) return Value::floating(*d);
    return opt(b, 0, Value::floating(0.0));
}

Value f_abs(Interpreter&, const Value& v, CallArgs&) {
    if (v.is_int() || v.is_bool()) return Value::integer(std::llabs(v.as_int()));
    if (v.is_float()) return Value::floating(std::fabs(v.as_double()));
    fail("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "round", {"precision", "method"});
    std::int64_t precision = opt(b, 0, Value::integer(0)).as_int();
    std::string method = opt(b, 1, Value::string("common")).to_str();
    if (!v.is_number()) fail("round: a number is required, not " + v.type_name());
    double scale = std::pow(10.0, static_cast<double>(precision));
    if (method == "common") {
        if (!v.is_float()) return Value::integer(v.as_int());  // round(int, n) stays an int
        double x = v.as_double() * scale;
        double r = std::nearbyint(x);  // banker's rounding, like Python's round()
        return Value::floating(r / scale);
    }
    if (method == "ceil") return Value::floating(std::ceil(v.as_double() * scale) / scale);
    if (method == "floor") return Value::floating(std::floor(v.as_double() * scale) / scale);
    fail("method must be common, ceil or floor");
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "sort", {"reverse", "case_sensitive", "attribute"});
    return Value::list(sorted_values(in, iterate(v), opt(b, 0, Value::boolean(false)).truthy(),
                                     opt(b, 1, Value::boolean(false)).truthy(), opt(b, 2, Value::none())));
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "unique", {"case_sensitive", "attribute"});
    bool cs = opt(b, 0, Value::boolean(false)).truthy();
    Value attribute = opt(b, 1, Value::none());
    ValueList out, seen;
    for (auto& item : iterate(v)) {
        Value key = lower_if_str(attribute.is_none() ? item : attr_path(in, item, attribute), cs);
        if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) {
            seen.push_back(key);
            out.push_back(item);
        }
    }
    return Value::generator(std::move(out));
}

Value f_reverse(Interpreter&, const Value& v, CallArgs&) {
    if (v.is_string()) {
        std::u32string u = utf8_decode(v.str());
        std::reverse(u.begin(), u.end());
        return Value::string(utf8_encode(u));
    }
    ValueList items = iterate(v);
    std::reverse(items.begin(), items.end());
    // reversed() gives an iterator for sequences; a generator is not reversible and becomes a list.
    if (v.is_list())
        return Value::generator(std::move(items), v.kind() == Kind::tuple ? "reversed" : "list_reverseiterator");
    return Value::list(std::move(items));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& a, bool want_max) {
    auto b = bind_args(a, want_max ? "max" : "min", {"case_sensitive", "attribute"});
    ValueList items = iterate(v);
    if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
    items =
        sorted_values(in, std::move(items), false, opt(b, 0, Value::boolean(false)).truthy(), opt(b, 1, Value::none()));
    return want_max ? items.back() : items.front();
}
Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "sum", {"attribute", "start"});
    Value attribute = opt(b, 0, Value::none());
    Value total = opt(b, 1, Value::integer(0));
    for (auto& item : iterate(v)) {
        Value x = attribute.is_none() ? item : attr_path(in, item, attribute);
        if (!total.is_number() || !x.is_number())
            fail("unsupported operand type(s) for +: '" + total.type_name() + "' and '" + x.type_name() + "'");
        total = (total.is_float() || x.is_float()) ? Value::floating(total.as_double() + x.as_double())
                                                   : Value::integer(total.as_int() + x.as_int());
    }
    return total;
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "dictsort", {"case_sensitive", "by", "reverse"});
    if (!v.is_dict()) fail("dictsort: expected a mapping, got " + v.type_name());
    bool cs = opt(b, 0, Value::boolean(false)).truthy();
    std::string by = opt(b, 1, Value::string("key")).to_str();
    if (by != "key" && by != "value") fail("You can only sort by either 'key' or 'value'");
    bool reverse = opt(b, 2, Value::boolean(false)).truthy();
    std::vector<std::pair<Value, Value>> items = v.dict_ref().items;
    std::size_t idx = by == "key" ? 0 : 1;
    std::stable_sort(items.begin(), items.end(), [&](auto& x, auto& y) {
        Value kx = lower_if_str(idx ? x.second : x.first, cs), ky = lower_if_str(idx ? y.second : y.first, cs);
        return reverse ? value_less(ky, kx) : value_less(kx, ky);
    });
    ValueList out;
    for (auto& [k, val] : items) out.push_back(Value::tuple({k, val}));
    return Value::list(std::move(out));
}

std::vector<std::string> split_lines(const std::string& s) {  // str.splitlines() on \n, \r\n, \r
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' || s[i] == '\r') {
            lines.push_back(s.substr(start, i - start));
            if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
            start = i + 1;
        }
    }
    if (start < s.size()) lines.push_back(s.substr(start));
    return lines;
}

Value f_indent(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "indent", {"width", "first", "blank"});
    Value width = opt(b, 0, Value::integer(4));
    std::string ind = width.is_string() ? width.str() : std::string(checked_width(width.as_int(), "indent"), ' ');
    bool first = opt(b, 1, Value::boolean(false)).truthy(), blank = opt(b, 2, Value::boolean(false)).truthy();
    std::vector<std::string> lines = split_lines(v.to_str() + "\n");
    std::string rv;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i) append_checked(rv, "\n" + ((blank || !lines[i].empty()) ? ind : std::string()));
        append_checked(rv, lines[i]);
    }
    return Value::string(first ? ind + rv : rv);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs&) {
    std::int64_t n = 0;
    bool in_word = false;
    for (char32_t c : utf8_decode(v.to_str())) {
        bool w = py_isalnum(c) || c == '_';
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value::integer(n);
}

Value f_batch(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "batch", {"linecount", "fill_with"});
    if (!b[0]) fail("batch() needs a line count");
    std::int64_t n = b[0]->as_int();
    if (n <= 0) fail("batch: linecount must be positive");
    ValueList out, cur;
    for (auto& item : iterate(v)) {
        cur.push_back(item);
        if (static_cast<std::int64_t>(cur.size()) == n) out.push_back(Value::list(std::exchange(cur, {})));
    }
    if (!cur.empty()) {
        if (b[1] && !b[1]->is_none())
            while (static_cast<std::int64_t>(cur.size()) < n) cur.push_back(*b[1]);
        out.push_back(Value::list(std::move(cur)));
    }
    return Value::generator(std::move(out));
}

Value f_slice(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "slice", {"slices", "fill_with"});
    if (!b[0]) fail("slice() needs the number of slices");
    std::int64_t slices = b[0]->as_int();
    if (slices <= 0) fail("slice: the number of slices must be positive");
    ValueList seq = iterate(v);
    auto length = static_cast<std::int64_t>(seq.size());
    std::int64_t per = length / slices, extra = length % slices, offset = 0;
    ValueList out;
    for (std::int64_t k = 0; k < slices; ++k) {  // jinja2's do_slice, step for step
        std::int64_t start = offset + k * per;
        if (k < extra) ++offset;
        std::int64_t end = offset + (k + 1) * per;
        ValueList part(seq.begin() + start, seq.begin() + end);
        if (b[1] && !b[1]->is_none() && k >= extra) part.push_back(*b[1]);
        out.push_back(Value::list(std::move(part)));
    }
    return Value::generator(std::move(out));
}

Value f_safe(Interpreter&, const Value& v, CallArgs&) { return Value::string(v.to_str()); }

Value f_escape(Interpreter&, const Value& v, CallArgs&) {
    std::string out;
    for (char c : v.to_str()) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return Value::string(std::move(out));
}

Value f_format(Interpreter&, const Value& v, CallArgs& a) {
    if (!a.keyword.empty()) fail("format: keyword arguments are not supported");
    return Value::string(percent_format(v.to_str(), Value::tuple(a.positional)));
}

Value f_center(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "center", {"width"});
    std::int64_t width = std::int64_t(checked_width(opt(b, 0, Value::integer(80)).as_int(), "center"));
    std::string s = v.to_str();
    auto len = static_cast<std::int64_t>(utf8_decode(s).size());
    if (width <= len) return Value::string(s);
    std::int64_t marg = width - len;
    std::int64_t left = marg / 2 + (marg & width & 1);  // CPython's pad() split
    return Value::string(std::string(static_cast<std::size_t>(left), ' ') + s +
                         std::string(static_cast<std::size_t>(marg - left), ' '));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "truncate", {"length", "killwords", "end", "leeway"});
    std::int64_t length = opt(b, 0, Value::integer(255)).as_int();
    bool killwords = opt(b, 1, Value::boolean(false)).truthy();
    std::u32string end = utf8_decode(opt(b, 2, Value::string("...")).to_str());
    std::int64_t leeway = opt(b, 3, Value::integer(5)).as_int();
    std::u32string s = utf8_decode(v.to_str());
    auto n = static_cast<std::int64_t>(s.size());
    if (length < static_cast<std::int64_t>(end.size()))
        fail("expected length >= " + std::to_string(end.size()) + ", got " + std::to_string(length));
    if (n <= length + leeway) return Value::string(utf8_encode(s));
    std::u32string head = s.substr(0, static_cast<std::size_t>(length - static_cast<std::int64_t>(end.size())));
    if (!killwords) {
        std::size_t sp = head.rfind(U' ');
        if (sp != std::u32string::npos) head = head.substr(0, sp);
    }
    return Value::string(utf8_encode(head + end));
}

Value f_attr(Interpreter& in, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "attr", {"name"});
    if (!b[0]) fail("attr() needs a name");
    return in.get_attr(v, b[0]->to_str());
}

// ---- tests ----

bool t_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool t_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool t_iterable(Interpreter&, const Value& v, CallArgs&) {
    return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || v.is_generator();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs&) {
    return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_callable(Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); }
bool t_escaped(Interpreter&, const Value&, CallArgs&) { return false; }
std::int64_t int_operand(const Value& v, const char* test) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_undefined()) fail(v.str().empty() ? "value is undefined" : v.str());
    fail(std::string("the '") + test + "' test needs an integer, not " + v.type_name());
}
bool t_odd(Interpreter&, const Value& v, CallArgs&) { return int_operand(v, "odd") % 2 != 0; }
bool t_even(Interpreter&, const Value& v, CallArgs&) { return int_operand(v, "even") % 2 == 0; }
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
    auto b = bind_args(a, "divisibleby", {"num"});
    if (!b[0]) fail("divisibleby needs a number");
    std::int64_t n = int_operand(*b[0], "divisibleby");
    if (n == 0) fail("integer division or modulo by zero");
    return int_operand(v, "divisibleby") % n == 0;
}
const Value& other(CallArgs& a, const char* test) {
    if (a.positional.size() != 1 || !a.keyword.empty()) fail(std::string("the '") + test + "' test takes one argument");
    return a.positional[0];
}
bool t_eq(Interpreter&, const Value& v, CallArgs& a) { return values_equal(v, other(a, "eq")); }
bool t_ne(Interpreter&, const Value& v, CallArgs& a) { return !values_equal(v, other(a, "ne")); }
bool t_lt(Interpreter&, const Value& v, CallArgs& a) { return value_less(v, other(a, "lt")); }
bool t_gt(Interpreter&, const Value& v, CallArgs& a) { return value_less(other(a, "gt"), v); }
bool t_le(Interpreter&, const Value& v, CallArgs& a) { return !value_less(other(a, "le"), v); }
bool t_ge(Interpreter&, const Value& v, CallArgs& a) { return !value_less(v, other(a, "ge")); }
bool t_in(Interpreter&, const Value& v, CallArgs& a) {
    const Value& seq = other(a, "in");
    if (seq.is_string()) {
        if (!v.is_string()) fail("'in <string>' requires string as left operand, not " + v.type_name());
        return seq.str().find(v.str()) != std::string::npos;
    }
    if (seq.is_dict()) return seq.dict_ref().find(v) != nullptr;
    for (auto& x : iterate(seq))
        if (values_equal(x, v)) return true;
    return false;
}
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
    const Value& o = other(a, "sameas");
    if (v.kind() != o.kind()) return false;
    return (v.is_none() || v.is_bool()) ? values_equal(v, o) : (v.is_ns() || v.is_callable()) && values_equal(v, o);
}
bool t_lower(Interpreter&, const Value& v, CallArgs&) {
    return v.is_string() && str_lower(v.str()) == v.str() && str_upper(v.str()) != v.str();
}
bool t_upper(Interpreter&, const Value& v, CallArgs&) {
    return v.is_string() && str_upper(v.str()) == v.str() && str_lower(v.str()) != v.str();
}
bool t_filter(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_filter(v.str()) != nullptr; }
bool t_test(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_test(v.str()) != nullptr; }

}  // namespace

FilterFn find_filter(std::string_view name) {
    static const std::map<std::string_view, FilterFn> filters = {
        {"length", f_length},
        {"count", f_length},
        {"trim", f_trim},
        {"tojson", f_tojson},
        {"upper", f_upper},
        {"lower", f_lower},
        {"title", f_title},
        {"capitalize", f_capitalize},
        {"default", f_default},
        {"d", f_default},
        {"join", f_join},
        {"first", f_first},
        {"last", f_last},
        {"items", f_items},
        {"map", f_map},
        {"select", f_select},
        {"reject", f_reject},
        {"selectattr", f_selectattr},
        {"rejectattr", f_rejectattr},
        {"replace", f_replace},
        {"list", f_list},
        {"string", f_string},
        {"int", f_int},
        {"float", f_float},
        {"abs", f_abs},
        {"round", f_round},
        {"sort", f_sort},
        {"unique", f_unique},
        {"reverse", f_reverse},
        {"min", f_min},
        {"max", f_max},
        {"sum", f_sum},
        {"dictsort", f_dictsort},
        {"indent", f_indent},
        {"wordcount", f_wordcount},
        {"batch", f_batch},
        {"safe", f_safe},
        {"e", f_escape},
        {"escape", f_escape},
        {"forceescape", f_escape},
        {"format", f_format},
        {"center", f_center},
        {"truncate", f_truncate},
        {"attr", f_attr},
        {"slice", f_slice},
    };
    auto it = filters.find(name);
    return it == filters.end() ? nullptr : it->second;
}

TestFn find_test(std::string_view name) {
    static const std::map<std::string_view, TestFn> tests = {
        {"defined", t_defined},
        {"undefined", t_undefined},
        {"none", t_none},
        {"string", t_string},
        {"number", t_number},
        {"integer", t_integer},
        {"float", t_float},
        {"mapping", t_mapping},
        {"iterable", t_iterable},
        {"sequence", t_sequence},
        {"boolean", t_boolean},
        {"true", t_true},
        {"false", t_false},
        {"odd", t_odd},
        {"even", t_even},
        {"divisibleby", t_divisibleby},
        {"eq", t_eq},
        {"equalto", t_eq},
        {"==", t_eq},
        {"ne", t_ne},
        {"!=", t_ne},
        {"lt", t_lt},
        {"lessthan", t_lt},
        {"<", t_lt},
        {"gt", t_gt},
        {"greaterthan", t_gt},
        {">", t_gt},
        {"le", t_le},
        {"<=", t_le},
        {"ge", t_ge},
        {">=", t_ge},
        {"in", t_in},
        {"callable", t_callable},
        {"sameas", t_sameas},
        {"escaped", t_escaped},
        {"lower", t_lower},
        {"upper", t_upper},
        {"filter", t_filter},
        {"test", t_test},
    };
    auto it = tests.find(name);
    return it == tests.end() ? nullptr : it->second;
}

}  // namespace loradesk::jinja
