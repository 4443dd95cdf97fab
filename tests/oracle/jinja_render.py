#!/usr/bin/env python3
"""Renders chat templates with Python Jinja2 configured exactly as transformers' apply_chat_template
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, a `generation` tag that renders
its body, the tojson override, raise_exception, strftime_now). Used as the oracle for loradeskd render-chat."""
import json
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:  # the CTest wrapper maps this to a skip
    jinja2 = None


def make_env():
    class GenerationTag(Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def token_text(v):
    if isinstance(v, dict):
        return v.get("content")
    return v


def render(template, messages, tools=None, add_generation_prompt=False, kwargs=None, config=None):
    """Mirrors ChatTemplate::render's variables: special tokens, kwargs, messages, tools, documents."""
    config = config or {}
    variables = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        if config.get(key) is not None and token_text(config[key]) is not None:
            variables[key] = token_text(config[key])
    if isinstance(config.get("additional_special_tokens"), list):
        variables["additional_special_tokens"] = [token_text(t) for t in config["additional_special_tokens"]]
    variables.update(kwargs or {})
    return make_env().from_string(template).render(messages=messages, tools=tools, documents=None,
                                                   add_generation_prompt=add_generation_prompt, **variables)


if __name__ == "__main__":
    if jinja2 is None:
        sys.exit(77)
    spec = json.load(sys.stdin)
    sys.stdout.write(render(spec["template"], spec["messages"], spec.get("tools"), spec.get("add_generation_prompt", False),
                            spec.get("kwargs"), spec.get("config")))
