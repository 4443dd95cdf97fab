#!/usr/bin/env python3
# structured_bench: what grammar-constrained decoding costs, against a running `loradeskd serve` (issue #18 goals).
#
#  1. Step time at batch B (default 32): B concurrent greedy streams, unconstrained (ignore_eos), then B with every row
#     constrained by a typical extraction schema (response_format json_schema), each on a different adapter when
#     --adapters is given; each stream is hung up after N tokens (max_tokens 4096, so no row nears its budget).
#     From /metrics deltas: mean step time, mean batch size, and the host sampling phase per step.
#  1b. The same schema with max_tokens N just above its shortest document: a random-weight model never closes its
#     strings, so every row spends most steps in the budget rule (tokens filtered by shortest completion).
#  2. Time to first token of one request: unconstrained, constrained with a schema the server has compiled before,
#     and with a schema it has never seen (compile + first mask): medians of --ttft-runs.
#
# Usage: structured_bench.py --url http://127.0.0.1:18240 [--batch 32] [--max-tokens 128] [--adapters a0,a1,...]
import argparse
import asyncio
import json
import re
import statistics
import time

import aiohttp

EXTRACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "customer": {"type": "string"},
        "email": {"type": "string", "format": "email"},
        "status": {"type": "string", "enum": ["paid", "open", "void"]},
        "total_cents": {"type": "integer", "minimum": 0, "maximum": 10000000},
        "items": {"type": "array", "minItems": 1, "maxItems": 5,
                  "items": {"type": "object",
                            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1, "maximum": 999}},
                            "required": ["sku", "qty"], "additionalProperties": False}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["customer", "email", "status", "total_cents", "items", "note"],
    "additionalProperties": False,
}


def metric_sums(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r'^(loradesk_step_duration_seconds_(?:sum|count)|loradesk_step_batch_size_sum|'
                     r'loradesk_step_phase_seconds_total\{phase="(\w+)"\})\s+(\S+)$', line)
        if m:
            out[m.group(2) or m.group(1)] = float(m.group(3))
    return out


async def metrics(session, root):
    async with session.get(f"{root}/metrics") as r:
        return metric_sums(await r.text())


async def chat(session, root, model, body, stream=False):
    payload = {"model": model, "messages": [{"role": "user", "content": "Extract the invoice from: ACME paid 12.50."}],
               "temperature": 0, **body}
    t0 = time.perf_counter()
    if not stream:
        async with session.post(f"{root}/v1/chat/completions", json=payload) as r:
            data = await r.json()
            if r.status != 200:
                raise RuntimeError(f"{r.status}: {data}")
            return data, time.perf_counter() - t0
    payload["stream"] = True
    async with session.post(f"{root}/v1/chat/completions", json=payload) as r:
        if r.status != 200:
            raise RuntimeError(f"{r.status}: {await r.text()}")
        async for raw in r.content:
            line = raw.decode().strip()
            if line.startswith("data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"] if json.loads(line[6:])["choices"] else {}
                if delta.get("content"):
                    return None, time.perf_counter() - t0
    return None, time.perf_counter() - t0


async def stream_tokens(session, root, model, body, n):
    """Streams a request and hangs up after n content chunks (the server cancels it): steady decoding only."""
    payload = {"model": model, "messages": [{"role": "user", "content": "Extract the invoice from: ACME paid 12.50."}],
               "temperature": 0, "stream": True, **body}
    got = 0
    async with session.post(f"{root}/v1/chat/completions", json=payload) as r:
        async for raw in r.content:
            line = raw.decode().strip()
            if line.startswith("data: {") and '"content":"' in line and '"content":""' not in line:
                got += 1
                if got >= n:
                    break
    return got


async def steady_run(session, root, models, batch, body, n):
    before = await metrics(session, root)
    got = await asyncio.gather(*(stream_tokens(session, root, models[i % len(models)], body, n) for i in range(batch)))
    await asyncio.sleep(0.5)  # the cancelled requests leave the engine
    after = await metrics(session, root)
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    steps = d.get("loradesk_step_duration_seconds_count", 0) or 1
    return {"steps": int(steps), "mean_step_ms": 1000 * d.get("loradesk_step_duration_seconds_sum", 0) / steps,
            "mean_batch": d.get("loradesk_step_batch_size_sum", 0) / steps,
            "sample_ms_per_step": 1000 * d.get("sample", 0) / steps, "streamed_tokens": sum(got)}


async def batch_run(session, root, models, batch, body):
    before = await metrics(session, root)
    results = await asyncio.gather(*(chat(session, root, models[i % len(models)], body) for i in range(batch)))
    after = await metrics(session, root)
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    steps = d.get("loradesk_step_duration_seconds_count", 0) or 1
    tokens = sum(r[0]["usage"]["completion_tokens"] for r in results)
    valid = 0
    for r, _ in results:
        try:
            json.loads(r["choices"][0]["message"]["content"])
            valid += 1
        except ValueError:
            pass
    return {"steps": int(steps), "mean_step_ms": 1000 * d.get("loradesk_step_duration_seconds_sum", 0) / steps,
            "mean_batch": d.get("loradesk_step_batch_size_sum", 0) / steps,
            "sample_ms_per_step": 1000 * d.get("sample", 0) / steps, "completion_tokens": tokens, "json_valid": valid}


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:18240")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--adapters", default="", help="comma-separated adapter names to spread requests over")
    p.add_argument("--ttft-runs", type=int, default=10)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    root = a.url.rstrip("/").removesuffix("/v1")
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as s:
        async with s.get(f"{root}/v1/models") as r:
            base = (await r.json())["data"][0]["id"]
        models = [m for m in a.adapters.split(",") if m] or [base]
        schema_body = {"response_format": {"type": "json_schema", "json_schema": {"name": "invoice", "schema": EXTRACTION_SCHEMA}}}
        # Warm-up: compiles the schema and the vocabulary index, loads adapters.
        await batch_run(s, root, models, min(a.batch, len(models)), {"max_tokens": 8, **schema_body})
        await batch_run(s, root, models, a.batch, {"max_tokens": 8, "ignore_eos": True})
        # Steady decoding: long budgets, hung up after --max-tokens tokens (no request nears its budget).
        free = await steady_run(s, root, models, a.batch, {"max_tokens": 4096, "ignore_eos": True}, a.max_tokens)
        constrained = await steady_run(s, root, models, a.batch, {"max_tokens": 4096, **schema_body}, a.max_tokens)
        # The budget phase: max_tokens just above the schema's shortest document, so every row closes under it.
        budget = await batch_run(s, root, models, a.batch, {"max_tokens": a.max_tokens, **schema_body})
        ttft = {"unconstrained": [], "cached_schema": [], "new_schema": []}
        for i in range(a.ttft_runs):
            ttft["unconstrained"].append((await chat(s, root, models[0], {"max_tokens": 2}, stream=True))[1])
            ttft["cached_schema"].append((await chat(s, root, models[0], {"max_tokens": 2, **schema_body}, stream=True))[1])
            fresh = json.loads(json.dumps(EXTRACTION_SCHEMA))
            fresh["properties"][f"field_{i}_{time.time_ns()}"] = {"type": "string"}  # never seen: compiled now
            ttft["new_schema"].append((await chat(s, root, models[0], {"max_tokens": 2, "response_format": {
                "type": "json_schema", "json_schema": {"name": "x", "schema": fresh}}}, stream=True))[1])
    med = {k: 1000 * statistics.median(v) for k, v in ttft.items()}
    out = {"batch": a.batch, "max_tokens": a.max_tokens, "models": len(models), "unconstrained": free,
           "constrained": constrained, "constrained_closing_within_max_tokens": budget,
           "step_overhead_pct": 100 * (constrained["mean_step_ms"] / free["mean_step_ms"] - 1),
           "ttft_ms_median": med,
           "ttft_added_ms": {"cached_schema": med["cached_schema"] - med["unconstrained"],
                             "new_schema": med["new_schema"] - med["unconstrained"]}}
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    asyncio.run(main())
