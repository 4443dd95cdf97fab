// Python-`re`-compatible matching for the regexes PEFT configs carry (target_modules as a string,
// exclude_modules, rank_pattern / alpha_pattern keys, layers_pattern). PCRE2 inside the .cpp so the
// syntax (named groups, lookarounds, \d) matches what PEFT users test in Python.
#pragma once

#include <optional>
#include <string>

namespace loradesk::lora {

// re.fullmatch(pattern, text) != None. Throws ExpectedError(invalid_argument) naming `what` when the
// pattern does not compile.
bool regex_fullmatch(const std::string& pattern, const std::string& text, const std::string& what);

// re.match(pattern, text) (anchored at the start only); returns capture group 1 when it matched
// ("" when the group did not participate), nullopt when it did not match.
std::optional<std::string> regex_match_group1(const std::string& pattern, const std::string& text,
                                              const std::string& what);

}  // namespace loradesk::lora
