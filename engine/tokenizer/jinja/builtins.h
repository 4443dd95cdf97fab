// Jinja2's built-in filters and tests, Python's str/dict/list methods as the sandbox exposes them, and
// the globals a chat template sees (range, dict, namespace, raise_exception, strftime_now, cycler, joiner).
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/jinja/interpreter.h"

namespace loradesk::jinja {

using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);
using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);

FilterFn find_filter(std::string_view name);  // nullptr when unknown
TestFn find_test(std::string_view name);

// A bound method of a str/dict/list/tuple value (`s.startswith`), or undefined when there is none.
Value find_method(const Value& self, const std::string& name);

void install_globals(Frame& globals);

}  // namespace loradesk::jinja
