#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (docs/fuzzing.md). Seeds are small, real-shaped inputs;
reproducers of fixed findings are committed next to them by hand (named repro-*) and are not touched here.
Run from anywhere: python3 fuzz/make_seeds.py"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def out(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- safetensors: valid files of each dtype, then the ways real files go wrong -------------------------------
DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8, "U8": 1, "I8": 1, "BOOL": 1, "F64": 8,
              "I16": 2, "U16": 2, "U32": 4, "U64": 8}


def safetensors(tensors, metadata=None, pad=True):
    header, blob = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        nbytes = n * DTYPE_SIZE[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + nbytes]}
        blob += bytes((i * 37 + 11) % 256 for i in range(nbytes))
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob


def raw(header_obj, blob=b""):
    h = json.dumps(header_obj).encode()
    return struct.pack("<Q", len(h)) + h + blob


lora = [("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", "BF16", [4, 16]),
        ("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", "BF16", [16, 4])]
out("fuzz_safetensors", "adapter_bf16", safetensors(lora, {"format": "pt"}))
out("fuzz_safetensors", "f32_matrix", safetensors([("w", "F32", [3, 5])]))
out("fuzz_safetensors", "f16_vector", safetensors([("w", "F16", [7])]))
out("fuzz_safetensors", "scalar_and_empty", safetensors([("s", "F32", []), ("z", "F32", [0, 4])]))
out("fuzz_safetensors", "every_dtype", safetensors([(f"t_{k}", k, [2, 3]) for k in DTYPE_SIZE]))
out("fuzz_safetensors", "unpadded_header", safetensors([("w", "BF16", [2, 2])], pad=False))
out("fuzz_safetensors", "metadata_only", safetensors([], {"format": "pt", "note": "no tensors"}))
good = safetensors(lora)
out("fuzz_safetensors", "truncated_data", good[:-5])
out("fuzz_safetensors", "truncated_header", good[:40])
out("fuzz_safetensors", "short_file", b"\x10\x00\x00")
out("fuzz_safetensors", "header_len_huge", struct.pack("<Q", 1 << 40) + b"{}")
out("fuzz_safetensors", "header_not_json", struct.pack("<Q", 6) + b"{nope}")
out("fuzz_safetensors", "header_array", struct.pack("<Q", 2) + b"[]")
out("fuzz_safetensors", "overlap", raw({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                                        "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}, b"x" * 6))
out("fuzz_safetensors", "gap", raw({"a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}}, b"xxxx"))
out("fuzz_safetensors", "trailing", raw({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}, b"xxxx"))
out("fuzz_safetensors", "wrong_size", raw({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"xxxx"))
out("fuzz_safetensors", "negative_dim", raw({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}))
out("fuzz_safetensors", "unknown_dtype", raw({"a": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}, b"x"))
out("fuzz_safetensors", "float_offsets", raw({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0.0, 1.0]}}, b"x"))
out("fuzz_safetensors", "bad_metadata", raw({"__metadata__": {"format": 1}}))
out("fuzz_safetensors", "huge_shape", raw({"a": {"dtype": "U8", "shape": [1 << 40, 1 << 40], "data_offsets": [0, 0]}}))
# The demo model's real header (Qwen-shaped names, BF16), cut off after a few bytes of tensor data.
with open(os.path.join(ROOT, "resources/demo/fortune-6m/model.safetensors"), "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    f.seek(0)
    demo = f.read(8 + n + 64)
if len(demo) <= 65536:
    out("fuzz_safetensors", "demo_model_truncated", demo)

# --- adapter_config.json ---------------------------------------------------------------------------------
peft = {"alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "Qwen/Qwen3-0.6B", "bias": "none",
        "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True, "layer_replication": None,
        "layers_pattern": None, "layers_to_transform": None, "loftq_config": {}, "lora_alpha": 32,
        "lora_dropout": 0.05, "megatron_config": None, "megatron_core": "megatron.core", "modules_to_save": None,
        "peft_type": "LORA", "r": 16, "rank_pattern": {}, "revision": None,
        "target_modules": ["q_proj", "v_proj", "k_proj", "o_proj"], "task_type": "CAUSAL_LM", "use_dora": False,
        "use_rslora": False}
cfgs = {
    "peft_default": {},
    "all_linear": {"target_modules": "all-linear"},
    "regex_target": {"target_modules": r".*\.(q_proj|v_proj)$"},
    "regex_layers": {"target_modules": r"model\.layers\.(\d|1\d)\.self_attn\.(q|k)_proj"},
    "bad_regex": {"target_modules": "(q_proj"},
    "exclude_list": {"target_modules": "all-linear", "exclude_modules": ["down_proj"]},
    "exclude_regex": {"target_modules": ["q_proj", "up_proj"], "exclude_modules": r".*layers\.3\..*"},
    "rank_alpha_patterns": {"rank_pattern": {"q_proj": 8, r"model\.layers\.1\..*": 4},
                            "alpha_pattern": {"v_proj": 64, "^model.layers.10.mlp.gate_proj": 2.5}},
    "layers_int": {"layers_to_transform": 3, "target_modules": ["o_proj"]},
    "layers_list": {"layers_to_transform": [0, 1, 7, 31], "target_modules": ["q_proj", "down_proj"]},
    "layers_pattern": {"layers_to_transform": [5], "layers_pattern": "layers", "target_modules": ["fc1"]},
    "layers_pattern_list": {"layers_to_transform": [0], "layers_pattern": ["h", "layers"]},
    "rslora": {"use_rslora": True, "r": 64, "lora_alpha": 16},
    "dora": {"use_dora": True},
    "modules_to_save": {"modules_to_save": ["lm_head"]},
    "bias_all": {"bias": "all"},
    "lm_head_target": {"target_modules": ["q_proj", "lm_head"]},
    "embed_target": {"target_modules": ["embed_tokens"]},
    "r_zero": {"r": 0},
    "alpha_string": {"lora_alpha": "32"},
    "not_lora": {"peft_type": "PREFIX_TUNING"},
    "float_r": {"r": 8.0},
    "alpha_past_float": {"alpha_pattern": {"q_proj": 1e300}},
    "fan_in_fan_out": {"fan_in_fan_out": True},
}
for name, over in cfgs.items():
    c = dict(peft)
    c.update(over)
    out("fuzz_adapter_config", name, json.dumps(c, indent=2))
out("fuzz_adapter_config", "minimal", '{"r": 4, "lora_alpha": 8, "target_modules": ["q_proj"]}')
out("fuzz_adapter_config", "not_object", "[1, 2]")
out("fuzz_adapter_config", "truncated", json.dumps(peft)[:120])

# --- request bodies -----------------------------------------------------------------------------------------
msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
reqs = {
    "chat_min": {"model": "demo", "messages": [{"role": "user", "content": "hi"}]},
    "chat_stream": {"model": "demo", "messages": msgs, "stream": True, "stream_options": {"include_usage": True}},
    "chat_sampling": {"model": "demo:pirate", "messages": msgs, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
                      "min_p": 0.05, "seed": 42, "presence_penalty": 0.5, "frequency_penalty": -0.5,
                      "repetition_penalty": 1.1, "max_tokens": 64, "n": 3},
    "chat_logprobs": {"model": "demo", "messages": msgs, "logprobs": True, "top_logprobs": 5},
    "chat_tools": {"model": "demo", "messages": msgs, "tools": tools, "tool_choice": "auto"},
    "chat_tool_turn": {"model": "demo", "messages": msgs + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "12C"}], "tools": tools, "tool_choice": "none"},
    "chat_parts": {"model": "demo", "messages": [{"role": "developer", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, {"role": "user", "content": "c"}]},
    "chat_image_part": {"model": "demo", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:,"}}]}]},
    "chat_stop": {"model": "demo", "messages": msgs, "stop": ["\n\n", "END"], "stop_token_ids": [1, 2],
                  "ignore_eos": True, "include_stop_str_in_output": True, "min_tokens": 2},
    "chat_logit_bias": {"model": "demo", "messages": msgs, "logit_bias": {"11": -100, "42": 5.5}},
    "chat_kwargs": {"model": "demo", "messages": msgs, "chat_template_kwargs": {"enable_thinking": False},
                    "add_generation_prompt": True, "skip_special_tokens": False, "user": "u1",
                    "max_completion_tokens": 10, "response_format": {"type": "text"}},
    "chat_lora_path": {"model": "demo", "messages": msgs, "lora_path": "../../etc"},
    "chat_echo": {"model": "demo", "messages": msgs + [{"role": "assistant", "content": "Par"}], "echo": True},
    "chat_bad_role": {"model": "demo", "messages": [{"role": "wizard", "content": "x"}]},
    "chat_n_too_big": {"model": "demo", "messages": msgs, "n": 1000},
    "completion_min": {"model": "demo", "prompt": "Once upon a time"},
    "completion_batch": {"model": "demo", "prompt": ["a", "b", "c"], "n": 2, "echo": True, "logprobs": 3},
    "completion_ids": {"model": "demo", "prompt": [1, 2, 3, 4], "max_tokens": 5},
    "completion_id_batch": {"model": "demo", "prompt": [[1, 2], [3]], "suffix": None, "stream": True},
    "completion_stop": {"model": "demo", "prompt": "x", "stop": "\n", "temperature": 0, "seed": -1},
    "completion_big_int": {"model": "demo", "prompt": "x", "max_tokens": 18446744073709551615},
    "completion_float_int": {"model": "demo", "prompt": "x", "max_tokens": 16.0, "top_k": -1},
    "completion_empty_prompt": {"model": "demo", "prompt": ""},
    "completion_nan_like": {"model": "demo", "prompt": "x", "temperature": 1e309},
}
for name, body in reqs.items():
    out("fuzz_request_parse", name, json.dumps(body))
out("fuzz_request_parse", "not_object", "[]")
out("fuzz_request_parse", "deep", "[" * 200 + "]" * 200)
out("fuzz_request_parse", "bad_utf8", b'{"model":"demo","prompt":"\xff\xfe"}')

# --- tokenizer: control byte (bits 0-1 mode: 0 encode, 1-2 decode ids, 3 stop strings; bit 2 add/skip
# special tokens; bits 4-7 pick the tokenizer) then the payload ---------------------------------------------
texts = {
    "english": "The quick brown fox jumps over the lazy dog. It's 3:14pm, isn't it?",
    "code": "def f(x):\n    return {'a': x ** 2}  # comment\n\n\tprint(f(3))\r\n",
    "unicode": "Ünïcödé naïve café — 日本語のテキスト, 한국어, emoji 👍🏽 👨‍👩‍👧 and ﷺ",
    "specials": "<|im_start|>user\nhi<|im_end|>\n<|endoftext|><s></s>",
    "whitespace": "   leading\n\n\n   \t trailing   \u00a0\u3000 ",
    "digits": "1234567890 3.14159 -42 1e10 0x1F",
    "combining": "e\u0301 A\u030a \u1e9b\u0323 Å",
}
for i, (name, t) in enumerate(texts.items()):
    out("fuzz_tokenizer", f"encode_{name}", bytes([0x04 if i % 2 else 0x00]) + t.encode())
    out("fuzz_tokenizer", f"encode_{name}_llama2", bytes([0x10]) + t.encode())
out("fuzz_tokenizer", "encode_invalid_utf8", b"\x00ab\xc3\x28\xed\xa0\x80\xf4\x90\x80\x80")


def ids(seq):
    return b"".join(struct.pack("<H", i + 8) for i in seq)


# Low ids: Llama 2's <0xNN> byte tokens are ids 3..258, so 0xE2 0x82 0xAC is the euro sign in three tokens.
out("fuzz_tokenizer", "decode_bytes_euro_llama2", bytes([0x11]) + ids([3 + 0xE2, 3 + 0x82, 3 + 0xAC, 500]))
out("fuzz_tokenizer", "decode_bytes_broken_llama2", bytes([0x11]) + ids([3 + 0xE2, 3 + 0x82, 600, 3 + 0xF0]))
out("fuzz_tokenizer", "decode_specials_llama2", bytes([0x15]) + ids([1, 450, 4996, 2, 0, 1]))
out("fuzz_tokenizer", "decode_low_ids", bytes([0x01]) + ids(list(range(0, 300, 7))))
out("fuzz_tokenizer", "decode_unknown", bytes([0x02]) + ids([-8, -1, 6140, 6143, 6144, 6150]))
out("fuzz_tokenizer", "decode_spread", bytes([0x06]) + b"".join(struct.pack("<H", 0x8000 | (i * 997 % 0x8000))
                                                              for i in range(40)))
out("fuzz_tokenizer", "stops_simple", b"\x03END\x00\n\n\x01Hello wor\x02ld\n\x02\nEN\x02D more")
out("fuzz_tokenizer", "stops_overlap", b"\x03abab\x00bab\x01ab\x02aba\x02b")
out("fuzz_tokenizer", "stops_utf8", "\x03\u00e9t\u00e9\x01l'\u00e9\x02t\u00e9 arrive".encode())

# --- jinja: control byte (bit 0: 0 template source, 1 messages JSON; bit 1 add_generation_prompt; bits 2+
# pick the real template for messages) then the payload ------------------------------------------------------
templates = {}
for name in ("chatml.jinja", "llama31_tools_style.jinja", "mistral_style.jinja"):
    with open(os.path.join(ROOT, "tests/chat_template/data", name)) as f:
        templates["real_" + name.split(".")[0]] = f.read()
with open(os.path.join(ROOT, "resources/demo/fortune-6m/chat_template.jinja")) as f:
    templates["real_demo"] = f.read()
templates.update({
    "print": "{{ bos_token }}{{ messages[0].content | upper }}{{ messages | length }}",
    "loop": "{% for m in messages %}{{ loop.index }}:{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}",
    "loop_filter_else": "{% for m in messages if m.role == 'user' %}{{ m.content }}{% else %}none{% endfor %}",
    "loop_cycle": "{% for m in messages %}{{ loop.cycle('a', 'b') }}{{ loop.changed(m.role) }}{% endfor %}",
    "namespace": "{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
                 "{% endfor %}{{ ns.n }}",
    "macro": "{% macro show(m, sep='|') %}{{ m.role }}{{ sep }}{% endmacro %}"
             "{% for m in messages %}{{ show(m) }}{% endfor %}{{ show(messages[0], sep=';') }}",
    "macro_recursion": "{% macro r(n) %}{% if n > 0 %}{{ r(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ r(5) }}",
    "call_block": "{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inner{% endcall %}",
    "tojson": "{{ tools | tojson }}{{ messages[2].tool_calls[0].function.arguments | tojson(indent=2) }}",
    "filters": "{{ 'a,b,c' .split(',') | join('-') }}{{ '  x ' | trim }}{{ [3,1,2] | sort | list }}"
               "{{ messages | map(attribute='role') | unique | list }}{{ messages | selectattr('role', 'equalto', "
               "'user') | list | length }}{{ none | default('d') }}{{ {'b': 1, 'a': 2} | dictsort }}"
               "{{ 'x' | replace('x', 'y') }}{{ 3.7 | int }}{{ '5' | float }}{{ -3 | abs }}{{ 'ab' | reverse }}",
    "string_methods": "{{ 'Hello'.startswith('He') }}{{ ' a '.strip() }}{{ 'a-b'.replace('-', '+') }}"
                      "{{ 'x{}y'.format(1) }}{{ 'abc'[1:] }}{{ 'abc'[::-1] }}{{ 'A'.lower() }}{{ 'a b'.title() }}",
    "tests": "{{ messages is defined }}{{ x is undefined }}{{ 'a' is string }}{{ 3 is number }}"
             "{{ messages is iterable }}{{ none is none }}{{ 4 is divisibleby(2) }}{{ {} is mapping }}",
    "set_block": "{% set body %}{% for m in messages %}{{ m.role }}{% endfor %}{% endset %}{{ body | length }}",
    "filter_block": "{% filter upper %}{{ messages[0].content }}{% endfilter %}",
    "raise": "{% if messages | length > 100 %}{{ raise_exception('too many') }}{% endif %}ok",
    "arith": "{{ 1 + 2 * 3 - 4 / 2 }}{{ 7 // 2 }}{{ 7 % 3 }}{{ 2 ** 10 }}{{ 'ab' * 3 }}{{ 'a' ~ 1 }}"
             "{{ [1] + [2] }}{{ (1, 2) }}{{ {'k': 'v'}['k'] }}{{ 1 if true else 2 }}",
    "range_dict": "{% for i in range(3) %}{{ i }}{% endfor %}{{ dict(a=1) }}{% for k, v in {'a': 1}.items() %}"
                  "{{ k }}={{ v }}{% endfor %}",
    "with_break": "{% with x = 5 %}{% for m in messages %}{% if loop.index > 2 %}{% break %}{% endif %}"
                  "{{ x }}{% continue %}{% endfor %}{% endwith %}",
    "whitespace_control": "{%- for m in messages -%}\n  {{- m.role -}}\n{%- endfor %}\n{# comment #}\n",
    "strftime": "{{ strftime_now('%Y-%m-%d') | length }}",
    "syntax_error": "{% for m in messages %}{{ m.role }",
    "unknown_filter": "{{ x | frobnicate }}",
    "raw": "{% raw %}{{ not rendered }}{% endraw %}",
    "nested_loops": "{% for a in range(5) %}{% for b in range(5) %}{{ a * b }}{% endfor %}{% endfor %}",
})
for name, src in templates.items():
    out("fuzz_jinja", "template_" + name, b"\x00" + src.encode())
    if name.startswith("real_"):
        out("fuzz_jinja", "template_" + name + "_genprompt", b"\x02" + src.encode())
conversations = {
    "simple": msgs,
    "tool_turn": json.loads(json.dumps(reqs["chat_tool_turn"]["messages"])),
    "parts": reqs["chat_parts"]["messages"],
    "empty": [],
    "odd_types": [{"role": "user", "content": 5}, {"role": None}, "string", {"content": {"a": 1}}],
    "no_system": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                  {"role": "user", "content": "c"}],
}
for i, (name, conv) in enumerate(conversations.items()):
    for which in range(3):
        out("fuzz_jinja", f"messages_{name}_{which}", bytes([1 | (which << 2) | (2 if i % 2 else 0)]) +
            json.dumps(conv).encode())
