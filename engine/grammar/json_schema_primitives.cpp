// Rule texts of the JSON primitives and string formats. The whitespace gap is bounded (at most 2 newlines then at
// most 20 spaces or tabs, or at most 20 spaces or tabs) so that a model cannot spend its budget on layout; digit
// counts are capped likewise (the 18/19/2 below are kMaxIntegerDigits - 1, kMaxFractionDigits and
// kMaxExponentDigits of integer_range_regex.h). Formats follow RFC 3339 / 4291 / 3986 / 5321 closely enough
// that ajv-formats ("full" mode) accepts every string they produce; each is a subset, never a superset.
#include "grammar/json_schema_primitives.h"

#include <array>
#include <cctype>

namespace loradesk::grammar::json_schema {
namespace {

constexpr std::array kPrimitives = {
    PrimitiveTemplate{"space", R"(( [ \t]{1,20} | "\n"{1,2} [ \t]{0,20} )?)"},
    // \u escapes stop short of the surrogates (D800-DFFF): a pair of them is one character to a validator, which
    // would break minLength/maxLength counting; characters beyond the BMP are written as they are.
    PrimitiveTemplate{
        "char",
        R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) ))"},
    PrimitiveTemplate{"string", R"("\"" <P>char* "\"" <S>)"},
    PrimitiveTemplate{"integral", R"("0" | [1-9] [0-9]{0,18})"},
    PrimitiveTemplate{"number", R"("-"? <P>integral ( "." [0-9]{1,19} )? ( [eE] ( "+" | "-" )? [0-9]{1,2} )? <S>)"},
    PrimitiveTemplate{"integer", R"("-"? <P>integral <S>)"},
    PrimitiveTemplate{"boolean", R"(( "true" | "false" ) <S>)"},
    PrimitiveTemplate{"null", R"("null" <S>)"},
    PrimitiveTemplate{"value", R"(<P>object | <P>array | <P>string | <P>number | <P>boolean | <P>null)"},
    PrimitiveTemplate{"object",
                      R"("{" <S> ( <P>string ":" <S> <P>value ( "," <S> <P>string ":" <S> <P>value )* )? "}" <S>)"},
    PrimitiveTemplate{"array", R"("[" <S> ( <P>value ( "," <S> <P>value )* )? "]" <S>)"},
    // Dates check days per month and February 29 in leap years, as ajv-formats does.
    PrimitiveTemplate{
        "fmt-leap-year",
        R"([0-9]{2} ( "0" [48] | [2468] [048] | [13579] [26] ) | ( "0" [048] | [2468] [048] | [13579] [26] ) "00")"},
    PrimitiveTemplate{
        "fmt-date",
        R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | <P>fmt-leap-year "-02-29")"},
    PrimitiveTemplate{"fmt-hour-minute", R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9])"},
    // RFC 3339 full-time: the offset is required, as ajv-formats requires it.
    PrimitiveTemplate{
        "fmt-time",
        R"(<P>fmt-hour-minute ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | ( "+" | "-" ) <P>fmt-hour-minute ))"},
    PrimitiveTemplate{"fmt-date-time", R"(<P>fmt-date "T" <P>fmt-time)"},
    PrimitiveTemplate{"fmt-date-time-utc",
                      R"(<P>fmt-date "T" <P>fmt-hour-minute ":" [0-5] [0-9] ( "." [0-9]{1,9} )? "Z")"},
    // RFC 9562 version (1-8) and variant nibbles: what zod's uuid pattern also asks for.
    PrimitiveTemplate{
        "fmt-uuid",
        R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [1-8] [0-9a-fA-F]{3} "-" [89abAB] [0-9a-fA-F]{3} "-" [0-9a-fA-F]{12})"},
    PrimitiveTemplate{"fmt-label", R"([a-zA-Z0-9] ( [a-zA-Z0-9\-]{0,61} [a-zA-Z0-9] )?)"},
    // At most 3 labels keep the name under the 253 characters that hostnames allow.
    PrimitiveTemplate{"fmt-hostname", R"(( <P>fmt-label "." ){0,2} <P>fmt-label)"},
    // The common core of RFC 5321 (ajv-formats) and zod's email pattern: dot-separated atoms of [A-Za-z0-9_+-], then
    // labels and an alphabetic top-level domain.
    PrimitiveTemplate{"fmt-email-atom", R"([a-zA-Z0-9_+\-]{1,64})"},
    PrimitiveTemplate{
        "fmt-email",
        R"(<P>fmt-email-atom ( "." <P>fmt-email-atom ){0,7} "@" ( <P>fmt-label "." ){1,3} [a-zA-Z]{2,63})"},
    PrimitiveTemplate{"fmt-ipv4-octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])"},
    PrimitiveTemplate{"fmt-ipv4",
                      R"(<P>fmt-ipv4-octet "." <P>fmt-ipv4-octet "." <P>fmt-ipv4-octet "." <P>fmt-ipv4-octet)"},
    // RFC 4291 section 2.2, one alternative per position of "::".
    PrimitiveTemplate{"fmt-h16", R"([0-9a-fA-F]{1,4})"},
    PrimitiveTemplate{"fmt-h16-pair", R"(<P>fmt-h16 ":" <P>fmt-h16)"},
    PrimitiveTemplate{"fmt-ls32", R"(<P>fmt-h16 ":" <P>fmt-h16 | <P>fmt-ipv4)"},
    PrimitiveTemplate{
        "fmt-ipv6",
        R"(( <P>fmt-h16 ":" ){6} <P>fmt-ls32 | "::" ( <P>fmt-h16 ":" ){5} <P>fmt-ls32 | <P>fmt-h16? "::" ( <P>fmt-h16 ":" ){4} <P>fmt-ls32 | ( ( <P>fmt-h16 ":" )? <P>fmt-h16 )? "::" ( <P>fmt-h16 ":" ){3} <P>fmt-ls32 | ( ( <P>fmt-h16 ":" ){0,2} <P>fmt-h16 )? "::" ( <P>fmt-h16 ":" ){2} <P>fmt-ls32 | ( ( <P>fmt-h16 ":" ){0,3} <P>fmt-h16 )? "::" <P>fmt-h16 ":" <P>fmt-ls32 | ( ( <P>fmt-h16 ":" ){0,4} <P>fmt-h16 )? "::" <P>fmt-ls32 | ( ( <P>fmt-h16 ":" ){0,5} <P>fmt-h16 )? "::" <P>fmt-h16 | ( ( <P>fmt-h16 ":" ){0,6} <P>fmt-h16 )? "::")"},
    // Without the embedded IPv4 forms, as zod's ipv6 pattern reads them.
    PrimitiveTemplate{
        "fmt-ipv6-hex",
        R"(( <P>fmt-h16 ":" ){6} <P>fmt-h16-pair | "::" ( <P>fmt-h16 ":" ){5} <P>fmt-h16-pair | <P>fmt-h16? "::" ( <P>fmt-h16 ":" ){4} <P>fmt-h16-pair | ( ( <P>fmt-h16 ":" )? <P>fmt-h16 )? "::" ( <P>fmt-h16 ":" ){3} <P>fmt-h16-pair | ( ( <P>fmt-h16 ":" ){0,2} <P>fmt-h16 )? "::" ( <P>fmt-h16 ":" ){2} <P>fmt-h16-pair | ( ( <P>fmt-h16 ":" ){0,3} <P>fmt-h16 )? "::" <P>fmt-h16 ":" <P>fmt-h16-pair | ( ( <P>fmt-h16 ":" ){0,4} <P>fmt-h16 )? "::" <P>fmt-h16-pair | ( ( <P>fmt-h16 ":" ){0,5} <P>fmt-h16 )? "::" <P>fmt-h16 | ( ( <P>fmt-h16 ":" ){0,6} <P>fmt-h16 )? "::")"},
    // ISO 8601 durations as ajv-formats reads them: at least one component, "T" only before a time component.
    PrimitiveTemplate{
        "fmt-duration-date",
        R"([0-9]{1,9} "Y" ( [0-9]{1,9} "M" )? ( [0-9]{1,9} "D" )? | [0-9]{1,9} "M" ( [0-9]{1,9} "D" )? | [0-9]{1,9} "D")"},
    PrimitiveTemplate{
        "fmt-duration-time",
        R"("T" ( [0-9]{1,9} "H" ( [0-9]{1,9} "M" )? ( [0-9]{1,9} "S" )? | [0-9]{1,9} "M" ( [0-9]{1,9} "S" )? | [0-9]{1,9} "S" ))"},
    PrimitiveTemplate{"fmt-duration",
                      R"("P" ( <P>fmt-duration-date <P>fmt-duration-time? | <P>fmt-duration-time | [0-9]{1,9} "W" ))"},
    // Absolute URIs with an authority; sizes chosen so that the longest stays under 1800 characters (Pydantic's
    // HttpUrl carries maxLength 2083).
    PrimitiveTemplate{"fmt-pchar", R"([a-zA-Z0-9._~!$&'()*+,;=:@\-] | "%" [0-9a-fA-F]{2})"},
    PrimitiveTemplate{"fmt-uri-query", R"(( <P>fmt-pchar | [/?] ){0,128})"},
    PrimitiveTemplate{
        "fmt-uri",
        R"([a-zA-Z] [a-zA-Z0-9+.\-]{0,9} "://" <P>fmt-hostname ( ":" [0-9]{1,5} )? ( "/" <P>fmt-pchar{0,32} ){0,8} ( "?" <P>fmt-uri-query )? ( "#" <P>fmt-uri-query )?)"},
};

struct FormatEntry {
    std::string_view name;
    StringFormat format;
};

constexpr std::array kFormats = {
    FormatEntry{"date-time", {"fmt-date-time", 20, 35}},
    FormatEntry{"date", {"fmt-date", 10, 10}},
    FormatEntry{"time", {"fmt-time", 9, 24}},
    FormatEntry{"duration", {"fmt-duration", 3, 62}},
    FormatEntry{"email", {"fmt-email", 5, 8 * 64 + 7 + 1 + 4 * 63 + 3}},
    FormatEntry{"hostname", {"fmt-hostname", 1, 3 * 63 + 2}},
    FormatEntry{"ipv4", {"fmt-ipv4", 7, 15}},
    FormatEntry{"ipv6", {"fmt-ipv6", 2, 45}},
    FormatEntry{"uuid", {"fmt-uuid", 36, 36}},
    FormatEntry{"uri", {"fmt-uri", 5, 2000}},
    // Annotations only (ajv-formats does not check them either).
    FormatEntry{"password", {"", 0, 0}},
    FormatEntry{"binary", {"", 0, 0}},
};

// zod 4 writes a pattern beside each format it checks (z.email(), z.uuid(), z.iso.datetime(), ...). A format and a
// pattern together mean both must hold; for these exact patterns (zod 4.6) the rule named here produces only strings
// that match the pattern and the format, so the pair compiles to that rule.
struct FormatPattern {
    std::string_view format;
    std::string_view pattern;
    std::string_view rule;
};

constexpr std::array kKnownFormatPatterns = {
    FormatPattern{
        "date",
        R"(^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))$)",
        "fmt-date"},
    FormatPattern{
        "date-time",
        R"(^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z))$)",
        "fmt-date-time-utc"},
    FormatPattern{
        "date-time",
        R"(^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|([+-](?:[01]\d|2[0-3]):[0-5]\d)))$)",
        "fmt-date-time"},
    FormatPattern{"duration",
                  R"(^P(?:(\d+W)|(?!.*W)(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+([.,]\d+)?S)?)?)$)",
                  "fmt-duration"},
    FormatPattern{
        "email",
        R"(^(?:[A-Za-z0-9_'+\-]+\.)*[A-Za-z0-9_'+\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$)",
        "fmt-email"},
    FormatPattern{
        "ipv4",
        R"(^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])$)",
        "fmt-ipv4"},
    FormatPattern{
        "ipv6",
        R"(^(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:((:[0-9a-fA-F]{1,4}){1,6})|:((:[0-9a-fA-F]{1,4}){1,7}|:))$)",
        "fmt-ipv6-hex"},
    FormatPattern{"uuid", R"(^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$)",
                  "fmt-uuid"},
    FormatPattern{
        "uuid",
        R"(^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$)",
        "fmt-uuid"},
};

}  // namespace

std::optional<std::string_view> format_rule_with_pattern(std::string_view format, std::string_view pattern) {
    for (const auto& f : kKnownFormatPatterns)
        if (f.format == format && f.pattern == pattern) return f.rule;
    return std::nullopt;
}

std::optional<PrimitiveTemplate> primitive_template(std::string_view name) {
    for (const auto& p : kPrimitives)
        if (p.name == name) return p;
    return std::nullopt;
}

std::vector<std::string> primitive_references(std::string_view body) {
    std::vector<std::string> out;
    for (std::size_t pos = body.find("<P>"); pos != std::string_view::npos; pos = body.find("<P>", pos)) {
        pos += 3;
        std::size_t end = pos;
        while (end < body.size() && (std::isalnum(static_cast<unsigned char>(body[end])) || body[end] == '-')) ++end;
        out.emplace_back(body.substr(pos, end - pos));
        pos = end;
    }
    return out;
}

std::optional<StringFormat> string_format(std::string_view format) {
    for (const auto& f : kFormats)
        if (f.name == format) return f.format;
    return std::nullopt;
}

std::string_view supported_formats() {
    return "date-time, date, time, duration, email, hostname, ipv4, ipv6, uuid, uri, password, binary";
}

}  // namespace loradesk::grammar::json_schema
