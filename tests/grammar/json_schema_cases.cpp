// Data rows of tst_json_schema_grammar (see json_schema_cases.h).
#include "json_schema_cases.h"

#include <QtTest>

namespace loradesk::grammar::test {
namespace {

void add_row(const char* name, const char* schema, QStringList good, QStringList bad, bool strict = false) {
    QTest::newRow(name) << QString::fromUtf8(schema) << good << bad << strict;
}

}  // namespace

void add_document_rows() {
    // Pydantic v2: class Address(BaseModel): street: str; zip: Optional[str] = None
    //              class User(BaseModel): name: str; age: int = Field(ge=0); address: Optional[Address] = None
    add_row("pydantic nested model",
            R"({"$defs":{"Address":{"properties":{"street":{"title":"Street","type":"string"},
                "zip":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Zip"}},
                "required":["street"],"title":"Address","type":"object"}},
              "properties":{"name":{"title":"Name","type":"string"},"age":{"minimum":0,"title":"Age","type":"integer"},
                "address":{"anyOf":[{"$ref":"#/$defs/Address"},{"type":"null"}],"default":null}},
              "required":["name","age"],"title":"User","type":"object"})",
            {R"({"name":"Ann","age":31})", R"({"name":"Ann","age":0,"address":null})",
             R"({"name":"A\"n\u00e9","age":7,"address":{"street":"Main 1","zip":"12345"}})",
             R"({"name":"Ann","age":7,"address":{"street":"x","zip":null}})",
             "{ \"name\" : \"Ann\" ,\n  \"age\": 1 }\n", R"({"name":"Ann","age":1,"nickname":"A"})"},
            {R"({"age":31,"name":"Ann"})", R"({"name":"Ann"})", R"({"name":"Ann","age":-1})",
             R"({"name":"Ann","age":1.5})", R"({"name":"Ann","age":01})", R"({"name":"Ann","age":1,"address":{}})",
             R"({"name":"Ann","age":1,"name":"B"})", R"({"name":"Ann","age":1,"address":{"street":"x","zip":3}})",
             "{\"name\":\"a\nb\",\"age\":1}", R"({"name":"Ann","age":1,})"});
    // Pydantic v2 discriminated union: pet: Union[Cat, Dog] = Field(discriminator="pet_type").
    add_row("pydantic discriminated union",
            R"({"$defs":{"Cat":{"properties":{"pet_type":{"const":"cat","title":"Pet Type","type":"string"},
              "meows":{"title":"Meows","type":"integer"}},"required":["pet_type","meows"],"title":"Cat","type":"object"},
              "Dog":{"properties":{"pet_type":{"const":"dog","title":"Pet Type","type":"string"},
              "barks":{"title":"Barks","type":"number"}},"required":["pet_type","barks"],"title":"Dog","type":"object"}},
              "properties":{"pet":{"discriminator":{"mapping":{"cat":"#/$defs/Cat","dog":"#/$defs/Dog"},
              "propertyName":"pet_type"},"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}],"title":"Pet"}},
              "required":["pet"],"title":"Model","type":"object"})",
            {R"({"pet":{"pet_type":"cat","meows":3}})", R"({"pet":{"pet_type":"dog","barks":0.5}})"},
            {R"({"pet":{"pet_type":"cat","barks":3}})", R"({"pet":{"pet_type":"fish"}})", R"({"pet":null})"});
    // zod: z.object({ kind: z.enum(["a","b"]), tags: z.array(z.string()).min(1).max(3), note: z.string().nullable(),
    //                 score: z.number().int().min(-5).max(123).optional() }) via z.toJSONSchema
    add_row("zod object",
            R"({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
              "properties":{"kind":{"type":"string","enum":["a","b"]},
                "tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3},
                "note":{"anyOf":[{"type":"string"},{"type":"null"}]},
                "score":{"type":"integer","minimum":-5,"maximum":123}},
              "required":["kind","tags","note"],"additionalProperties":false})",
            {R"({"kind":"a","tags":["x"],"note":null})", R"({"kind":"b","tags":["x","y","z"],"note":"n","score":-5})",
             R"({"kind":"b","tags":[ "x" , "y" ],"note":"","score":123})"},
            {R"({"kind":"c","tags":["x"],"note":null})", R"({"kind":"a","tags":[],"note":null})",
             R"({"kind":"a","tags":["1","2","3","4"],"note":null})", R"({"kind":"a","tags":["x"]})",
             R"({"kind":"a","tags":["x"],"note":null,"score":124})", R"({"kind":"a","tags":["x"],"note":null,"x":1})",
             R"({"kind":"a","tags":["x"],"note":null,"score":-6})"});
    // OpenAI strict: every property required, additionalProperties false, optional fields as unions with null.
    add_row("openai strict",
            R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"type":["string","null"],
              "enum":["c","f",null]},"days":{"type":"integer"}},"required":["city","unit","days"],
              "additionalProperties":false})",
            {R"({"city":"Oslo","unit":"c","days":3})", R"({"city":"Oslo","unit":null,"days":-3})"},
            {R"({"city":"Oslo","days":3})", R"({"city":"Oslo","unit":"k","days":3})",
             R"({"city":"Oslo","unit":"c","days":3,"x":true})"},
            true);
    add_row("strict makes every property present",
            R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"}}})",
            {R"({"a":true,"b":null})"}, {R"({"a":true})", R"({"b":null})", R"({"a":true,"b":null,"c":1})"}, true);
    add_row(
        "recursive tree via #",
        R"({"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#"}}},
              "required":["value"],"additionalProperties":false})",
        {R"({"value":1})", R"({"value":1,"children":[]})",
         R"({"value":1,"children":[{"value":2,"children":[{"value":3}]},{"value":4}]})"},
        {R"({"value":1,"children":[{}]})", R"({"value":1,"children":[{"value":"x"}]})"});
    add_row("recursive defs through anyOf",
            R"({"$ref":"#/$defs/Expr","$defs":{"Expr":{"anyOf":[{"type":"integer"},{"type":"object",
              "properties":{"op":{"const":"+"},"args":{"type":"array","items":{"$ref":"#/$defs/Expr"},"minItems":2,
              "maxItems":2}},"required":["op","args"],"additionalProperties":false}]}}})",
            {"1", R"({"op":"+","args":[1,{"op":"+","args":[2,3]}]})"},
            {R"({"op":"+","args":[1]})", R"({"op":"-","args":[1,2]})", R"("1")"});
    add_row("optional properties in schema order",
            R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},
              "additionalProperties":false})",
            {"{}", R"({"a":1})", R"({"b":1})", R"({"c":1})", R"({"a":1,"c":3})", R"({"b":2,"c":3})",
             R"({"a":1,"b":2,"c":3})"},
            {R"({,"a":1})", R"({"a":1,})", R"({"b":1,"a":2})", R"({"a":1,"a":2})", R"({"a":1 "b":2})"});
    add_row("required in the middle",
            R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},
              "required":["b"]})",
            {R"({"b":1})", R"({"a":1,"b":2})", R"({"b":1,"c":3})", R"({"a":1,"b":2,"c":3,"d":[4]})",
             R"({"b":1,"ab":0,"":1})"},
            {"{}", R"({"a":1})", R"({"a":1,"c":3})", R"({"b":1,"a":1})", R"({"b":1,"x":1,"c":3})"});
    add_row("additional properties schema",
            R"({"type":"object","properties":{"id":{"type":"integer"}},"additionalProperties":{"type":"string"}})",
            {"{}", R"({"id":1})", R"({"id":1,"x":"y","i":"j"})", R"({"x":"y"})", R"({"idx":"1"})"},
            {R"({"x":1})", R"({"id":1,"id":"z"})", R"({"x":"y","id":1})"});
    add_row("required but not listed",
            R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a","z"]})",
            {R"({"a":1,"z":{}})", R"({"a":1,"z":null,"q":2})"}, {R"({"a":1})", R"({"z":1,"a":1})"});
    add_row("draft 7 tuple",
            R"({"type":"array","items":[{"type":"integer"},{"type":"string"}],"additionalItems":false})",
            {"[]", "[1]", R"([1,"a"])"}, {R"(["a"])", R"([1,"a",2])", R"([1,2])"});
    add_row("prefixItems with rest and counts",
            R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":{"type":"boolean"},
              "minItems":1,"maxItems":4})",
            {"[1]", R"([1,"a"])", R"([1,"a",true])", R"([1,"a",true,false])"},
            {"[]", R"([1,"a",true,false,true])", R"([1,true])", R"(["a"])"});
    add_row("exact item count", R"({"type":"array","items":{"type":"null"},"minItems":2,"maxItems":2})",
            {"[null,null]", "[ null , null ]"}, {"[null]", "[null,null,null]", "[]"});
    add_row("large item bounds stay small",
            R"({"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":5000})",
            {"[1,2,3]", "[1,2,3,4,5,6,7,8,9,10]"}, {"[1,2]"});
    add_row("string lengths in code points", R"({"type":"string","minLength":2,"maxLength":3})",
            {R"("ab")", R"("abc")", "\"\xC3\xA9\xE6\x97\xA5\"", R"("a\n")", R"("\u00e9\u00e9\u00e9")"},
            {R"("a")", R"("abcd")", R"("\u00e9\u00e9\u00e9\u00e9")"});
    add_row("string escapes", R"({"type":"string"})", {R"("\" \\ \/ \b \f \n \r \t \u12aB")", "\"\xF0\x9F\x98\x80\""},
            {"\"\x01\"", "\"a\tb\"", R"("\x")", R"("\u12g4")", R"("unterminated)", R"("\ud83d\ude00")"});
    add_row("enum of any values", R"({"enum":["a\"b",1,2.5,null,true,{"k":[1,"x"]},[],"\u00e9"]})",
            {R"("a\"b")", "1", "2.5", "null", "true", R"({"k":[1,"x"]})", "[]", "\"\xC3\xA9\""},
            {R"("a")", "3", "false", R"({"k":[1]})", R"({ "k":[1,"x"]})"});
    add_row("const", R"({"const":{"a":null}})", {R"({"a":null})"}, {R"({"a":1})", "null"});
    add_row("type array with bounds", R"({"type":["integer","null"],"minimum":10,"maximum":10})", {"10", "null"},
            {"9", "11", "10.0", R"("10")"});
    add_row("openapi nullable", R"({"type":"string","nullable":true,"maxLength":1})", {R"("a")", "null"},
            {R"("ab")", "0"});
    add_row("allOf single ref", R"({"$defs":{"A":{"type":"boolean"}},"allOf":[{"$ref":"#/$defs/A"}],"title":"t"})",
            {"true"}, {"1"});
    add_row("allOf merges objects",
            R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
              {"properties":{"b":{"type":"string"}},"required":["b"]}],"unevaluatedProperties":false})",
            {R"({"a":1,"b":"x"})"}, {R"({"a":1})", R"({"b":"x","a":1})", R"({"a":1,"b":"x","c":0})"});
    add_row("empty schema is any value", "{}", {"1", R"({"a":[null,{"b":"c"}]})", "\"s\"", "-0.5e+10"},
            {"01", "[1,]", "nul", "'a'"});
    add_row("number without bounds", R"({"type":"number"})", {"0", "-0", "1.5", "-12.75e-3", "1E10", "123456789"},
            {"+1", ".5", "1.", "01", "1e", "NaN", "--1"});
    add_row("integer without bounds", R"({"type":"integer"})", {"0", "-0", "42", "-9223372036854775807"},
            {"1.0", "00", "-", "1e3", "12345678901234567890"});
    add_row("date-time", R"({"type":"string","format":"date-time"})",
            {R"("2024-02-29T12:30:59Z")", R"("1999-12-31T23:59:59.123+05:30")", R"("2000-02-29T00:00:00-01:00")"},
            {R"("2023-02-29T12:30:59Z")", R"("2024-13-01T00:00:00Z")", R"("2024-01-01T24:00:00Z")",
             R"("2024-01-01T12:00:00")", R"("2024-04-31T12:00:00Z")", R"("1900-02-29T00:00:00Z")"});
    // zod 4 (z.email(), z.iso.datetime(), z.uuid(), z.record(z.string(), z.number())) writes a pattern beside each
    // format and propertyNames for records.
    add_row(
        "zod formats with their patterns",
        R"({"type":"object","properties":{"email":{"type":"string","format":"email","pattern":"^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$"},"when":{"type":"string","format":"date-time","pattern":"^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:Z))$"},"id":{"type":"string","format":"uuid","pattern":"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$"},"rec":{"type":"object","propertyNames":{"type":"string"},"additionalProperties":{"type":"number"}}},"required":["email","when","id"],"additionalProperties":false})",
        {R"({"email":"a.b@example.com","when":"2024-02-29T12:00:00.5Z","id":"123e4567-e89b-42d3-a456-426614174000"})",
         R"({"email":"x@y.io","when":"2024-01-01T00:00:00Z","id":"123e4567-e89b-12d3-8456-426614174000","rec":{"k":1}})"},
        {R"({"email":"a.b@example.c0","when":"2024-02-29T12:00:00Z","id":"123e4567-e89b-42d3-a456-426614174000"})",
         R"({"email":"a@b.co","when":"2024-02-29T12:00:00+01:00","id":"123e4567-e89b-42d3-a456-426614174000"})",
         R"({"email":"a@b.co","when":"2024-02-29T12:00:00Z","id":"123e4567-e89b-02d3-a456-426614174000"})",
         R"({"email":"a@b.co","when":"2024-02-29T12:00:00Z","id":"123e4567-e89b-12d3-a456-426614174000","rec":{"k":"v"}})"});
    add_row("date", R"({"type":"string","format":"date"})", {R"("2024-01-31")", R"("2000-02-29")"},
            {R"("2024-1-31")", R"("2024-06-31")", R"("2100-02-29")"});
    add_row("time", R"({"type":"string","format":"time"})", {R"("23:59:59Z")", R"("00:00:00.5+14:00")"},
            {R"("23:60:00Z")", R"("1:00:00Z")"});
    add_row("email", R"({"type":"string","format":"email"})", {R"("a.b+c@example.co.uk")", R"("x_y@host.io")"},
            {R"("a@b")", R"("@b.c")", R"("a..b@c.d")", R"("a b@c.d")"});
    add_row("uuid", R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
            {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
    add_row("uri", R"({"type":"string","format":"uri","minLength":1,"maxLength":2083})",
            {R"("https://example.com")", R"("http://a.b:8080/p/q%20r?x=1&y=2#frag")"},
            {R"("example.com")", R"("https://")", R"("https://exa mple.com")"});
    add_row("hostname", R"({"type":"string","format":"hostname"})", {R"("localhost")", R"("a-b.example.org")"},
            {R"("-a.com")", R"("a_b.com")"});
    add_row("ipv4", R"({"type":"string","format":"ipv4"})", {R"("192.168.0.255")", R"("0.0.0.0")"},
            {R"("256.1.1.1")", R"("1.2.3")", R"("01.2.3.4")"});
    add_row("ipv6", R"({"type":"string","format":"ipv6"})",
            {R"("::")", R"("::1")", R"("fe80::1:2")", R"("2001:db8:0:0:0:0:2:1")", R"("::ffff:192.0.2.1")"},
            {R"(":::")", R"("1:2:3:4:5:6:7:8:9")", R"("fe80::1::2")", R"("12345::")"});
    add_row("duration", R"({"type":"string","format":"duration"})", {R"("P1Y2M3DT4H5M6S")", R"("PT5M")", R"("P3W")"},
            {R"("P")", R"("PT")", R"("P1H")", R"("P1W2D")"});
    add_row("pattern anchored", R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3,4}$"})", {R"("AB-123")", R"("XY-0000")"},
            {R"("ab-123")", R"("AB-12")", R"("AB-12345")", R"("xAB-123")"});
    add_row("pattern unanchored", R"({"type":"string","pattern":"ab+"})", {R"("ab")", R"("xxabbby")"},
            {R"("a")", R"("ba")"});
    add_row("pattern with quote and backslash", R"({"type":"string","pattern":"^a[\"\\\\]b$"})",
            {R"("a\"b")", R"("a\\b")"}, {R"("a"b")", R"("axb")"});
    add_row("pattern alternation and groups", R"({"type":"string","pattern":"^(foo|ba[rz])(-\\w+)?$"})",
            {R"("foo")", R"("baz-x_1")"}, {R"("ba")", R"("foo-")", R"("qux")"});
}

void add_number_rows() {
    add_row("closed", R"({"type":"number","minimum":-5,"maximum":123})",
            {"-5", "-5.0", "-4.999", "0", "-0", "0.5", "122.99", "123", "123.000"},
            {"-5.01", "-6", "123.01", "124", "1e2", "1000"});
    add_row("exclusive", R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})", {"0.5", "0.001", "0.999999"},
            {"0", "0.0", "-0", "1", "1.0", "1.5", "-0.5"});
    add_row("draft 4 exclusive", R"({"type":"number","minimum":2,"exclusiveMinimum":true,"maximum":3})",
            {"2.01", "3", "3.0"}, {"2", "2.000", "3.1"});
    add_row("negative range", R"({"type":"number","minimum":-10,"exclusiveMaximum":-2})",
            {"-10", "-2.5", "-2.001", "-9.99"}, {"-2", "-2.0", "-10.5", "0", "-1"});
    add_row("only minimum", R"({"type":"number","minimum":0})", {"0", "0.25", "1234567.5"}, {"-0.1", "-1"});
    add_row("zero point", R"({"type":"number","minimum":0,"maximum":0})", {"0", "0.000"}, {"0.1", "-0.1", "1"});
}

void add_unsupported_rows() {
    auto row = [](const char* keyword, const char* schema, const char* message) {
        QTest::newRow(keyword) << QString::fromUtf8(schema) << QString::fromUtf8(message);
    };
    row("patternProperties", R"({"type":"object","properties":{"a":{"type":"object","patternProperties":{"x":{}}}}})",
        "unsupported JSON Schema keyword 'patternProperties' at /properties/a");
    row("pattern beside format", R"({"type":"string","format":"email","pattern":"^a.*$"})",
        "'pattern' together with 'format' at / is supported only for the patterns zod writes");
    row("propertyNames", R"({"type":"object","propertyNames":{"maxLength":3}})",
        "unsupported JSON Schema keyword 'propertyNames' at /");
    row("if", R"({"if":{},"then":{}})", "unsupported JSON Schema keyword 'if' at /");
    row("not", R"({"items":{"not":{"type":"null"}}})", "unsupported JSON Schema keyword 'not' at /items");
    row("dependentRequired", R"({"dependentRequired":{"a":["b"]}})", "keyword 'dependentRequired'");
    row("contains", R"({"type":"array","contains":{"type":"integer"}})", "keyword 'contains'");
    row("multipleOf", R"({"type":"integer","multipleOf":3})", "keyword 'multipleOf' at /");
    row("uniqueItems", R"({"type":"array","uniqueItems":true})", "keyword 'uniqueItems' at /: a grammar cannot");
    row("unevaluatedProperties schema", R"({"type":"object","unevaluatedProperties":{"type":"string"}})",
        "keyword 'unevaluatedProperties'");
    row("minProperties", R"({"type":"object","minProperties":1})", "keyword 'minProperties' at /");
    row("maxProperties", R"({"type":"object","maxProperties":2})", "keyword 'maxProperties' at /");
    row("unknown format", R"({"properties":{"a b":{"type":"string","format":"phone"}}})",
        "unsupported string format 'phone' at /properties/a b/format");
    row("non-integer number bound", R"({"type":"number","maximum":1.5})", "'maximum' at / is not an integer");
    row("remote ref", R"({"$ref":"https://example.com/s.json"})", "only local references");
    row("dangling ref", R"({"$ref":"#/$defs/Nope"})", "does not resolve");
    row("ref sibling", R"({"$defs":{"A":{}},"$ref":"#/$defs/A","maxLength":3})", "'maxLength' beside $ref at /");
    row("anyOf sibling", R"({"anyOf":[{"type":"string"}],"maxLength":3})", "'maxLength' beside anyOf at /");
    row("allOf of non-objects", R"({"allOf":[{"type":"string"},{"maxLength":3}]})",
        "keyword 'type' at /allOf/0 inside allOf");
    row("false schema", R"({"properties":{"a":false}})", "the schema at /properties/a is false");
    row("format with length", R"({"type":"string","format":"date","maxLength":5})", "together with format 'date'");
    row("pattern lookahead", R"({"type":"string","pattern":"^(?=a)a$"})", "pattern at /");
    row("tilde in path", R"({"properties":{"a/b~c":{"not":{}}}})", "at /properties/a~1b~0c");
}

}  // namespace loradesk::grammar::test
