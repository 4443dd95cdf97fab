"""Conversations, tools and the feature corpus for oracle_chat_templates.py."""

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city — °C",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
]

CONVERSATIONS = {
    "single": [{"role": "user", "content": "Hello!"}],
    "system": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}],
    "multi": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
              {"role": "assistant", "content": "yo"}, {"role": "user", "content": "again"}],
    "think": [{"role": "user", "content": "2+2?"},
              {"role": "assistant", "content": "<think>\nadd\n</think>\n\n4"}, {"role": "user", "content": "and 3+3?"}],
    "reasoning": [{"role": "user", "content": "q"},
                  {"role": "assistant", "content": "a", "reasoning_content": "because"}],
    "tools": [{"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"},
              {"role": "tool", "tool_call_id": "c2", "content": "sunny"},
              {"role": "assistant", "content": "21 °C and sunny."}],
    "empty": [{"role": "user", "content": ""}],
    "unicode_quotes": [{"role": "developer", "content": "Ünïcødé 日本語 🙂"},
                       {"role": "user", "content": [{"type": "text", "text": "it's \"quoted\" \\ back\\slash"},
                                                    {"type": "text", "text": "part two\n\ttab"}]}],
    "bad_alternation": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
}

FEATURE_VARS = {
    "messages": [{"role": "user", "content": "hi"}],
    "xs": [3, 1, 2], "words": ["b", "A", "c", "a"], "d": {"b": 2, "a": 1, "c": None}, "s": "  Hello, World  ",
    "n": 7, "f": 2.5, "t": True, "none_v": None, "people": [{"name": "ann", "age": 30}, {"name": "Bob", "age": 25},
                                                          {"name": "cy", "age": None}],
    "u": "héllo wörld", "nested": {"a": {"b": [1, {"c": "deep"}]}},
}

FEATURES = [
    # printing with Python semantics
    "{{ none_v }}|{{ t }}|{{ false }}|{{ xs }}|{{ d }}|{{ words }}|{{ (1,) }}|{{ (1, 'a') }}|{{ [] }}|{{ {} }}",
    "{{ f }}|{{ 1.0 }}|{{ 10 / 4 }}|{{ 10 / 5 }}|{{ 1e20 }}|{{ 1.5e-7 }}|{{ 0.1 + 0.2 }}|{{ 3 * 1.0 }}|{{ -0.0 }}",
    "{{ [none, true, 'it\\'s', \"q\\\"\", 1.5, {'k': [1]}] }}",
    "{{ ['a\\nb', '\\t', 'é'] }}|{{ d.items() | list }}|{{ d.keys() | list }}",
    # arithmetic
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
    "{{ 'ab' * 3 }}|{{ 3 * 'x' }}|{{ [1] * 2 }}|{{ [1, 2] + [3] }}|{{ 'a' ~ 1 ~ none_v ~ t }}|{{ 1 + true }}|{{ -n }}|{{ +f }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ none_v == none }}",
    "{{ 'ell' in 'hello' }} {{ 2 in xs }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in xs }}",
    "{{ not t }} {{ t and 'yes' }} {{ none_v or 'fallback' }} {{ 0 or [] }} {{ 'x' if t }}|{{ 'x' if not t }}|{{ 'a' if n > 5 else 'b' }}",
    # slicing and indexing
    "{{ xs[::-1] }} {{ xs[1:] }} {{ xs[-1] }} {{ xs[:-1] }} {{ xs[::2] }} {{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ u[1:4] }} {{ xs[5:] }}",
    "{{ xs[10] is defined }} {{ nested.a.b[1].c }} {{ nested['a']['b'][0] }} {{ people[0].name }} {{ people.0.age }}",
    "{{ xs[-10:2] }} {{ xs[1:-10:-1] }} {{ 'abcdef'[-2:] }} {{ 'abcdef'[4:1:-1] }}",
    # tests
    "{{ x is defined }} {{ n is defined }} {{ none_v is none }} {{ s is string }} {{ n is number }} {{ f is float }} {{ n is integer }} {{ t is number }} {{ t is integer }}",
    "{{ d is mapping }} {{ xs is iterable }} {{ s is sequence }} {{ t is boolean }} {{ t is true }} {{ t is false }} {{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }}",
    "{{ n is eq 7 }} {{ n is equalto 8 }} {{ n is ne 8 }} {{ n is lt 8 }} {{ n is gt(8) }} {{ n is le 7 }} {{ n is ge 7 }} {{ 2 is in xs }} {{ range is callable }} {{ n is callable }}",
    "{{ undefined_thing is undefined }} {{ none_v is not none }} {{ xs is not string }} {{ 'abc' is lower }} {{ 'ABC' is upper }}",
    # filters
    "{{ xs|length }} {{ s|trim }}|{{ s|count }} {{ s|upper }} {{ s|lower }} {{ 'hello world-foo'|title }} {{ 'hELLO'|capitalize }}",
    "{{ undefined_thing|default('dflt') }} {{ none_v|default('d2') }} {{ ''|default('d3', true) }} {{ 0|d('z', boolean=true) }}",
    "{{ words|join(', ') }} {{ people|join('/', attribute='name') }} {{ xs|first }} {{ xs|last }} {{ 'abc'|first }} {{ []|first is defined }}",
    "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %} {{ d|dictsort }} {{ d|dictsort(by='key', reverse=true) }}",
    "{{ people|map(attribute='name')|list }} {{ words|map('upper')|join }} {{ people|map(attribute='zz', default='?')|list }}",
    "{{ xs|select('odd')|list }} {{ xs|reject('odd')|list }} {{ people|selectattr('age')|map(attribute='name')|list }} {{ people|rejectattr('age', 'none')|list|length }}",
    "{{ people|selectattr('name', 'equalto', 'ann')|list }} {{ people|selectattr('age', 'gt', 26)|map(attribute='name')|join }}",
    "{{ s|replace('l', 'L') }} {{ s|replace('l', 'L', 1) }} {{ 'abc'|replace('', '-') }} {{ 'abc'|list }} {{ d|list }} {{ 42|string }} {{ xs|string }}",
    "{{ '42'|int + 1 }} {{ '3.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ '0x1A'|int(0, 16) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 'q'|float }} {{ 3|float }}",
    "{{ -3|abs }} {{ (-2.5)|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(0, 'floor') }} {{ 3|round }}",
    "{{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ xs|sort(reverse=true) }} {{ people|sort(attribute='name')|map(attribute='name')|list }}",
    "{{ words|unique|list }} {{ [1, 2, 1, 3]|unique|list }} {{ xs|reverse|list }} {{ 'abc'|reverse }} {{ xs|min }} {{ xs|max }} {{ words|max }} {{ xs|sum }} {{ people|sum(attribute='age', start=0) if false else 1 }}",
    "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('>', blank=true) }}",
    "{{ 'one two, three'|wordcount }} {{ xs|batch(2)|list }} {{ xs|batch(2, 0)|list }} {{ '<a href=\"x\">&</a>'|e }} {{ '<b>'|safe }}",
    "{{ '%s and %d and %.2f and %5s|%-4d|%r'|format('a', 3, 1.5, 'x', 7, 'q') }} {{ 'hi'|center(9) }}|{{ 'hi'|center(8) }}|",
    "{{ 'The quick brown fox jumps over the lazy dog'|truncate(20) }} {{ 'short'|truncate(20) }} {{ 'The quick brown fox jumps'|truncate(12, true) }} {{ 'abcdefghijklmnop'|truncate(10, false, '..', 0) }}",
    "{{ d|tojson }} {{ xs|tojson(indent=2) }} {{ {'z': 1, 'a': [1, {'b': none}]}|tojson(indent=4, sort_keys=true) }} {{ u|tojson }} {{ 'é'|tojson(ensure_ascii=true) }} {{ {'a': [], 'b': {}}|tojson(indent=2) }}",
    "{{ 'a\"b\\\\c\\n\\u0001'|tojson }} {{ [1.0, 2.5, true, none]|tojson }} {{ d|tojson(separators=(',', ':')) }} {{ 'x'|attr('upper') is callable }}",
    # string methods
    "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nA\\n'.lstrip('\\n') }}|{{ 'a b  c'.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}",
    "{{ s.upper() }} {{ s.lower() }} {{ 'hello wORLD'.title() }} {{ 'hello'.capitalize() }} {{ s.replace('l', '_') }} {{ s.find('o') }} {{ s.find('zz') }} {{ s.count('l') }}",
    "{{ s.startswith('  He') }} {{ s.endswith('  ') }} {{ 'abc'.startswith(('x', 'a')) }} {{ '-'.join(words) }} {{ '{} is {}'.format('x', 1) }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{name}!'.format(name='n') }}",
    "{{ 'a\\nb\\r\\nc'.splitlines() }} {{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'ab1'.isalnum() }} {{ '  '.isspace() }} {{ 'AB'.isupper() }} {{ 'ab'.islower() }} {{ '42'.zfill(5) }} {{ 'ab'.ljust(4) }}| {{ 'ab'.rjust(4, '*') }}",
    "{{ u.upper() }} {{ 'ÉCOLE'.lower() }} {{ u|length }} {{ u[0] }} {{ u.split('ö') }} {{ u.find('w') }} {{ 'think</think>rest'.split('</think>')[-1] }}",
    # dict methods
    "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.items()|list }} {{ d.values()|list }} {{ d.keys()|list }} {{ d['b'] }} {{ d.b }}",
    # statements
    "{% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }} {% endfor %}",
    "{% for x in xs %}{{ loop.previtem is defined }}:{{ loop.nextitem | default('end') }}:{{ loop.cycle('a', 'b') }} {% endfor %}",
    "{% for x in [] %}no{% else %}empty{% endfor %}|{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}|{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}",
    "{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% set ns = namespace(count=0, items=[]) %}{% for x in xs %}{% set ns.count = ns.count + x %}{% set ns.items = ns.items + [x] %}{% endfor %}{{ ns.count }} {{ ns.items }}",
    "{% set y = 1 %}{% for x in xs %}{% set y = x %}{% endfor %}{{ y }}|{% for i in [1, 2] %}{% if i == 1 %}{% set z = 5 %}{% endif %}[{{ z }}]{% endfor %}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = [1, 2] %}{{ c }}{% set block %}  inner {{ n }}  {% endset %}[{{ block }}]",
    "{% set up | upper %}shout {{ n }}{% endset %}{{ up }}|{% filter upper %}filtered {{ s|trim }}{% endfilter %}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('ann') }} {{ greet('bob', punct='?') }} {{ greet('x', '.') }}",
    "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ n }}{% endcall %}",
    "{% macro item(x) %}[{{ x }}]{% endmacro %}{% for x in xs %}{{ item(x) }}{% endfor %}{{ item(undefined_thing) }}",
    "{% generation %}gen {{ n }}{% endgeneration %}|{% raw %}{{ not rendered }} {% if %}{% endraw %}",
    "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b='x') }} {% set j = joiner('+') %}{% for x in xs %}{{ j() }}{{ x }}{% endfor %}",
    # whitespace control
    "a  \n  {% if t %}\n  yes\n  {% endif %}\n  b",
    "a\n{%- if t -%}\n  yes  \n{%- endif -%}\n  b  {{- ' c' -}}  d {#- comment -#}  e",
    "  {# lstrip comment #}\nx\n  {%+ if t %}keep{% endif %}\n{% if t +%}\nkeep-newline{% endif %}",
    "line1\n    {{ n }}\n    {% for x in xs %}\n    - {{ x }}\n    {% endfor %}\nend\n",
    "{% if t %}A{% elif n %}B{% else %}C{% endif %}{% if not t %}A{% elif n > 100 %}B{% else %}C{% endif %}",
    "{{ 'a' 'b' }} {{ \"\\u00e9\\x41\" }} {{ 1_000 }} {{ 'multi\nline' }}",
    # errors that must fail in both
    "{{ raise_exception('custom failure message') }}",
    "{{ undefined_thing.attr }}",
    "{{ 'a' + 1 }}",
    "{{ xs.append(4) }}",
    "{{ 1 / 0 }}",
    "{% for x in none_v %}{% endfor %}",
    "{{ undefined_thing + 1 }}",
]
