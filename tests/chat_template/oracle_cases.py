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

FEATURES += [
    # numbers and printing
    "{{ 1e16 }} {{ 123456789012345.6 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1 / 3 }} {{ 2 / 3 * 3 }} {{ 1e300 * 10 }} {{ -1e-300 / 1e300 }}",
    "{{ 1.5e300|tojson }} {{ 100.0|tojson }} {{ 1e16|tojson }} {{ 0.00001|tojson }} {{ [1e-7, 12.0]|tojson }}",
    "{{ -7 // 2.0 }} {{ 7 % 2.5 }} {{ 'abc' * 0 }}|{{ [1] * -1 }} {{ 2 ** 0.5 }} {{ 10 // 3 * 3 + 10 % 3 }} {{ (1 + 2) * 3 }} {{ 1 + 2 * 3 }} {{ -2 ** 2 }}",
    "{{ none_v == false }} {{ 0 == false }} {{ 1 in [true] }} {{ 'a' in ['a'] }} {{ ('a', 1) }} {{ {1: 'a'} }} {{ {1: 'a'}[1] }} {{ {'k': 1}.k }}",
    "{% if {} %}a{% endif %}{% if 0.0 %}b{% endif %}{% if [0] %}c{% endif %}{% if ' ' %}d{% endif %}{% if none_v %}e{% endif %}",
    "{{ 'a' ~ none_v }} {{ 1 ~ 2 }} {{ xs ~ '' }} {{ '%d items'|format(3) }} {{ '%s-%s' % ('a', 'b') }} {{ '%05.1f' % 3.14159 }} {{ '%x' % 255 }} {{ '%%' % () }}",
    # iteration
    "{% for k in d %}{{ k }}{% endfor %} {% for c in 'ab' %}{{ c }}.{% endfor %} {% for c in u %}{{ c }}|{% endfor %}",
    "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ b }}{{ a }} {% endfor %}{{ loop.index }};{% endfor %}",
    "{{ messages[-1]['content'] }} {{ messages|length }} {{ messages[0].role|upper }} {{ xs|map('string')|join(',') }} {{ ['1', '2']|map('int')|sum }}",
    "{{ xs|select('greaterthan', 1)|list }} {{ xs|select('in', [1, 2])|list }} {{ xs|select('divisibleby', 2)|list }} {{ [none, 1]|select('none')|list }} {{ [1, none]|reject('none')|list }}",
    "{{ range(10)|batch(3)|list }} {{ d.get('a', 0) + 1 }} {{ none_v is sameas none }} {{ t is sameas true }} {{ undefined_thing|default }}|",
    "{{ undefined_thing|length }} {{ undefined_thing|list }} {{ undefined_thing|join }}| {{ undefined_thing is string }} {{ none_v|string }} {{ none_v|lower }} {{ t|int }} {{ [3, 1]|sort|first }}",
    "{% for x in undefined_thing %}never{% else %}else-branch{% endfor %} {{ undefined_thing ~ 'x' }} {{ undefined_thing == undefined_thing }} {{ undefined_thing is none }}",
    "{{ 'a-b-c'.split('-', -1) }} {{ ' a '.strip(None) }}|{{ 'abc'.find('c') }} {{ '{:>5}'.format('a') }}|{{ '{:.2f}'.format(3.14159) }} {{ '{!r}'.format('a') }} {{ '{:<4}|'.format('ab') }} {{ '{:^7}|'.format('mid') }}",
    "{% set ns = namespace(a=1) %}{{ ns }} {{ ns.a }} {{ ns.missing is defined }} {% set ns2 = namespace({'x': 2}, y=3) %}{{ ns2.x + ns2.y }}",
    "{% set x = 'a' %}{% set x = x ~ 'b' %}{{ x }} {% set l = xs + [9] %}{{ l }} {{ xs }}",
    "{% macro m(a, b=a ~ '!') %}{{ a }}{{ b }}{% endmacro %}{{ m('x') }} {{ m(b='y', a='z') }} {% macro rec(n) %}{{ n }}{% if n > 0 %}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}",
    "{% macro list_items(items) %}{% for i in items %}<{{ caller(i) }}>{% endfor %}{% endmacro %}{% call(item) list_items(xs) %}[{{ item * 2 }}]{% endcall %}",
    "{% set out %}{% for x in xs %}{{ x }}{% if not loop.last %}, {% endif %}{% endfor %}{% endset %}({{ out }}) {{ out|length }}",
    "{{ people|map(attribute='name')|map('upper')|select('ne', 'BOB')|join(' & ') }} {{ people|selectattr('age', 'defined')|selectattr('age', 'number')|list|length }}",
    "{{ people|sort(attribute='age', reverse=true)|map(attribute='name')|list if false else 'skip' }} {{ people|map(attribute='age')|select('number')|max }} {{ people|min(attribute='name') }}",
    "{{ nested|tojson(indent=2) }}|{{ people|tojson(separators=(',', ':'), sort_keys=true) }}|{{ 'tab\\there'|tojson }}|{{ '\\u2028 \\x7f'|tojson }}",
    "{{ 'Hello World'|replace('o', '0')|lower|title }} {{ s|trim|truncate(9) }} {{ 'a b c d e f g h i j k'|wordcount }} {{ '  x  '|trim('x ') }}|{{ 'xxaxx'|trim('x') }}",
    "{{ xs|first is number }} {{ d|first }} {{ d|last }} {{ 'héllo'|last }} {{ ''|first is defined }} {{ xs|unique|length }} {{ d|length }} {{ u|length }} {{ u|reverse }}",
    "{{ 'abc'|center(2) }} {{ 'x'|center(4) }}| {{ 'abc'|indent(2) }} {{ 'a\\nb'|indent(first=true) }} {{ 'a\\n\\nb\\n'|indent(2) }}|",
    "{{ 'HeLLo'.swapcase() }} {{ 'a,b'.partition(',') }} {{ 'abc'.rpartition('x') }} {{ 'pre_x'.removeprefix('pre_') }} {{ 'Title Case Here'.istitle is defined }} {{ 'abc'.count('') }} {{ 'aaa'.replace('a', 'b', 2) }}",
    "{{ 'One Two'.lower().split() }} {{ 'x'.join(['a', 'b']) }} {{ ' '.join(words|sort) }} {{ 'a\\tb c'.split() }} {{ '  lead'.split(' ') }} {{ 'a b c'.rsplit(None, 1) }} {{ 'a  b'.split(' ') }}",
    # whitespace control in depth
    "{%- raw -%}  {{ x }}  {%- endraw -%}  after",
    "start\n{% for x in xs %}\n  {% if x > 1 %}\n    big {{ x }}\n  {% else %}\n    small {{ x }}\n  {% endif %}\n{% endfor %}\nend",
    "  {{ 'var line keeps indent' }}\n  {% if t %}block{% endif %} tail\n\t{% if t -%}\n\ttabbed\n\t{%- endif %}\n",
    "a {#- c1 -#} b {# c2 #}\n  {# c3 #}\nc{#\nmulti\nline\n#}d",
    "x\r\n{% if t %}\r\nwin\r\n{% endif %}\r\ny\r\n",
    "{% if t %}\n\n{% endif %}|{{ '' }}\n\n|{% for x in [1] %}{{ x }}\n{% endfor %}|",
    "keep trailing newline?\n\n",
    "{{ 'a' }}{{- ' b ' -}}{{ 'c' }}  {{- 'd' }} {{ 'e' -}}  \n  f",
    # errors that must fail in both
    "{{ 'a' < 1 }}",
    "{{ xs[1:2:0] }}",
    "{{ n.foo.bar }}",
    "{{ undefined_thing() }}",
    "{{ d.pop('a') }}",
    "{{ words|sort(attribute='x') }}",
    "{% for a, b in xs %}{% endfor %}",
    "{{ 'x'|int(base=1) if false else raise_exception('conditional raise ' ~ n) }}",
    "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}",
    "{{ n|unknown_filter }}",
    "{% if t %}unclosed",
    "{{ 'abc'.join([1, 2]) }}",
]

# Idioms from public templates (Llama 3.x, Mistral, DeepSeek, Command R styles), re-expressed.
FEATURES += [
    "{% set builtin_tools = ['brave_search', 'code_interpreter', 'wolfram_alpha'] %}{%- for tool in builtin_tools if tool != 'code_interpreter' %}{{ tool }}{{ ', ' if not loop.last }}{% endfor %}|{{ builtin_tools | reject('equalto', 'code_interpreter') | join(', ') }}",
    "{{ (messages|selectattr('role', 'equalto', 'user')|list|last).content }} {% for m in messages %}{{ loop.index0 is divisibleby 2 }}{% endfor %}",
    "{%- set ns = namespace(sys='', first=true) %}{%- for m in messages %}{%- if ns.first %}{%- set ns.sys = ns.sys ~ m.role %}{%- set ns.first = false %}{%- endif %}{%- endfor %}[{{ ns.sys }}]",
    "{% if t %}  \nX{% endif %}\n{% if t %}\t\nY\n{% endif %}Z",
    "{{- 'lead' -}}\n\n  {%- if t %}\n    mid\n  {%- endif %}\n\n{{- 'tail' }}\n",
    "{%- for m in messages -%}\n  {%- if m.tool_calls is defined and m.tool_calls|length > 0 -%}TC{%- else -%}{{ m['content'] | trim }}{%- endif -%}\n{%- endfor -%}",
    "{{ '<｜tool▁calls▁begin｜>' }}{{ u.upper()|length }} {{ 'ǅ'|lower }} {{ 'ΣΑΣ'|lower }} {{ 'éa'|capitalize }} {{ 'x'.center(5, '·') }}",
    "{% for key, value in d.items() %}{{ key }}:{{ value|tojson }}{{ ',' if not loop.last }}{% endfor %} {{ d.items()|list|length }}",
    "{{ '%-6s|%6s|%06d|%+d|%.3s|%c|%5.2f%%' % ('ab', 'cd', 42, 5, 'abcdef', 65, 99.567) }}",
    "{% set d2 = dict(d, z=26) %}{{ d2 }} {{ dict(a=[1, 2]).a[1] }} {{ range(3)|reverse|list }} {{ (range(5)|list)[1:4] }}",
]

FEATURES += [
    "{% with a = n, b = n * 2 %}{{ a }}+{{ b }}{% endwith %}[{{ a }}] {% with n = n + 1, m = n %}{{ n }}/{{ m }}{% endwith %}{{ n }}",
    "{% for p in people|sort(attribute='name') %}{% if loop.changed(p.name[0]|lower) %}#{% endif %}{{ p.name }} {% endfor %}",
    "{{ range(7)|slice(3)|list }} {{ range(7)|slice(3, 'x')|list }} {{ []|slice(2)|list }} {% for col in xs|slice(2) %}{{ col }}{% endfor %}",
]
