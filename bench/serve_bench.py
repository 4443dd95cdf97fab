#!/usr/bin/env python3
# serve_bench: the S-LoRA synthetic workload (arXiv 2311.03285, section 7 and its benchmarks/ folder) against a
# running `loradeskd serve`, reporting the paper's metrics.
#
# Workload, as the paper's generator describes it: N = int(rate * duration) requests; adapter i of n with
# i = floor(n * x), x ~ numpy.random.power(alpha) (alpha = 1: uniform popularity, smaller: a few adapters take
# most requests); prompt and output lengths uniform integers in [lo, hi); inter-arrival times gamma with shape
# 1/cv^2 and scale cv^2/rate (cv = 1: Poisson). The draws use numpy's legacy RandomState(seed) in that order, so a
# seed gives the same adapters, lengths and arrival times as the paper's generator. Prompts are random token ids
# (the paper sent "Hello " * len; random ids give no accidental prefix sharing), sent to /v1/completions as
# `prompt` = list of ids with max_tokens = the output length, ignore_eos, temperature 0, streamed.
#
# Metrics (the paper's, from the client): throughput = finished requests / total time, the total time running
# from the first send to the end of the last request (the drain counts); average latency; per-token latency =
# latency / (input + output tokens); per-output-token latency = latency / output tokens; first-token latency
# (time to the first streamed chunk with a choice, as vLLM's benchmark) mean, p50, p90, p99; SLO attainment = share of all requests, failed
# ones counted as misses, whose first token came within --slo seconds (6 s in the paper). Plus output tok/s,
# errors (count, by kind, first messages), outputs whose usage.completion_tokens differs from the request, how late
# the client sent requests against the schedule, and /metrics before/after.
#
# Bounded: at most --max-requests requests; no request is sent after the schedule ends; requests still running
# --drain-timeout seconds after the last send are cancelled and counted as errors; each request has --timeout
# (total) and --read-timeout (silence). Talks only to --url (no proxies from the environment).
#
# Usage: serve_bench.py --url http://127.0.0.1:8080 --num-adapters 100 --rate 2 --duration 60 --json out.json
import argparse
import asyncio
import json
import os
import re
import signal
import sys
import time
import urllib.parse

import aiohttp
import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="S-LoRA synthetic workload against loradeskd serve",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8080", help="server base URL (a trailing /v1 is ignored)")
    p.add_argument("--api-key", default=os.environ.get("LORADESK_API_KEY"), help="bearer key, if the server has one")
    g = p.add_argument_group("adapters")
    g.add_argument("--num-adapters", type=int, default=None,
                   help="adapters to spread requests over (default: every adapter the server lists)")
    g.add_argument("--adapters", default=None, help="comma-separated adapter names to use instead of the server's list")
    g.add_argument("--adapter-prefix", default=None,
                   help="name adapters PREFIX0 .. PREFIX{n-1} (needs --num-adapters) instead of asking the server")
    g.add_argument("--base-only", action="store_true", help="no adapters: every request goes to the base model")
    g.add_argument("--alpha", type=float, default=1.0, help="popularity exponent: adapter = floor(n * power(alpha))")
    g = p.add_argument_group("arrivals and lengths")
    g.add_argument("--rate", type=float, default=2.0, help="requests per second offered")
    g.add_argument("--cv", type=float, default=1.0, help="coefficient of variation of gamma inter-arrivals (1 = Poisson)")
    g.add_argument("--duration", type=float, default=60.0, help="seconds of arrivals; requests = int(rate * duration)")
    g.add_argument("--input-range", type=int, nargs=2, default=[8, 512], metavar=("LO", "HI"),
                   help="prompt length uniform in [LO, HI)")
    g.add_argument("--output-range", type=int, nargs=2, default=[8, 512], metavar=("LO", "HI"),
                   help="output length (max_tokens, ignore_eos) uniform in [LO, HI)")
    g.add_argument("--seed", type=int, default=42, help="trace seed (the paper's default is 42)")
    g.add_argument("--shared-prefix", type=int, default=0, metavar="N",
                   help="each adapter's prompts start with the same N random tokens (at most len-1 of a prompt)")
    g.add_argument("--vocab-size", type=int, default=None,
                   help="prompt token ids are drawn from [0, V) (default: probed with /detokenize)")
    g.add_argument("--max-requests", type=int, default=20000, help="refuse traces with more requests than this")
    g = p.add_argument_group("limits")
    g.add_argument("--timeout", type=float, default=900.0, help="seconds one request may take in all")
    g.add_argument("--read-timeout", type=float, default=300.0,
                   help="seconds of silence (headers included) before a request counts as failed; the server sends "
                        "keep-alives every 5 s on a started stream, none while a request waits for an HTTP thread")
    g.add_argument("--connect-timeout", type=float, default=30.0, help="seconds to connect")
    g.add_argument("--drain-timeout", type=float, default=600.0,
                   help="after the last send, seconds to wait for running requests before cancelling them")
    g.add_argument("--keep-alive", action="store_true",
                   help="reuse connections (default: one connection per request, as the paper's client)")
    g.add_argument("--max-connections", type=int, default=0, help="client connection cap (0 = none)")
    g = p.add_argument_group("output")
    g.add_argument("--slo", type=float, default=6.0, help="first-token SLO in seconds for attainment")
    g.add_argument("--json", default=None, metavar="FILE", help="write the result object here")
    g.add_argument("--requests-out", default=None, metavar="FILE", help="write one JSON line per request here")
    g.add_argument("--metrics-out", default=None, metavar="FILE", help="write the raw /metrics text after the run here")
    g.add_argument("--metrics-interval", type=float, default=5.0,
                   help="seconds between /metrics samples of the engine gauges during the run (0 = off)")
    g.add_argument("--label", default="", help="free text stored in the result (setting name, server flags)")
    g.add_argument("--quiet", action="store_true", help="no progress lines")
    a = p.parse_args(argv)
    for name, (lo, hi) in (("input-range", a.input_range), ("output-range", a.output_range)):
        if lo < 1 or hi <= lo:
            p.error(f"--{name} needs 1 <= LO < HI, got {lo} {hi}")
    if a.rate <= 0 or a.duration <= 0 or a.cv <= 0 or a.alpha <= 0:
        p.error("--rate, --duration, --cv and --alpha must be positive")
    if a.base_only and (a.adapters or a.adapter_prefix or a.num_adapters):
        p.error("--base-only takes no adapters")
    if a.adapter_prefix and not a.num_adapters:
        p.error("--adapter-prefix needs --num-adapters")
    if a.shared_prefix < 0:
        p.error("--shared-prefix must be >= 0")
    return a


# ---- the trace ----------------------------------------------------------------------------------------------


def make_trace(n_adapters, alpha, rate, cv, duration, input_range, output_range, seed):
    """The paper's synthetic trace: (adapter index, input len, output len, arrival s) per request."""
    rs = np.random.RandomState(seed)
    total = int(rate * duration)
    adapter = np.minimum((rs.power(alpha, total) * n_adapters).astype(int), n_adapters - 1)
    in_len = rs.randint(input_range[0], input_range[1], total)
    out_len = rs.randint(output_range[0], output_range[1], total)
    shape, scale = 1.0 / (cv * cv), cv * cv / rate
    arrival = np.cumsum(rs.gamma(shape, scale, total))
    return [dict(i=i, adapter=int(adapter[i]), in_len=int(in_len[i]), out_len=int(out_len[i]), at=float(arrival[i]))
            for i in range(total)]


def make_prompts(trace, vocab, shared_prefix, seed):
    """Random token ids per request; with shared_prefix N the first min(N, len-1) come from the adapter's prefix."""
    rng = np.random.default_rng([seed, 1])
    prefixes = {}
    for r in trace:
        ids = rng.integers(0, vocab, r["in_len"], dtype=np.int64)
        if shared_prefix > 0:
            a = r["adapter"]
            if a not in prefixes:
                prefixes[a] = np.random.default_rng([seed, 2, a]).integers(0, vocab, shared_prefix, dtype=np.int64)
            k = min(shared_prefix, r["in_len"] - 1)
            ids[:k] = prefixes[a][:k]
        r["prompt"] = ids.tolist()


# ---- talking to the server ----------------------------------------------------------------------------------


class Server:
    def __init__(self, args):
        u = urllib.parse.urlsplit(args.url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise SystemExit(f"--url must be http(s)://HOST:PORT, got {args.url!r}")
        path = u.path.rstrip("/")
        if path.endswith("/v1"):
            path = path[:-3]
        self.base = f"{u.scheme}://{u.netloc}{path}"
        self.headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}

    def url(self, route):
        return self.base + route

    async def get_json(self, session, route):
        async with session.get(self.url(route), headers=self.headers) as r:
            body = await r.text()
            if r.status != 200:
                raise RuntimeError(f"GET {route}: HTTP {r.status}: {body[:300]}")
            return json.loads(body)

    async def get_text(self, session, route):
        async with session.get(self.url(route), headers=self.headers) as r:
            return r.status, await r.text()


async def probe_vocab(server, session):
    """One past the largest id /detokenize accepts (exponential then binary search; ids assumed contiguous)."""
    async def known(i):
        async with session.post(server.url("/detokenize"), json={"tokens": [i]}, headers=server.headers) as r:
            await r.read()
            if r.status == 200:
                return True
            if r.status == 400:
                return False
            raise RuntimeError(f"/detokenize answered HTTP {r.status}; give --vocab-size")

    if not await known(0):
        raise RuntimeError("/detokenize rejects token 0; give --vocab-size")
    lo, hi = 0, 256
    while await known(hi):
        lo, hi = hi, hi * 2
        if hi > (1 << 24):
            raise RuntimeError("vocabulary probe ran past 16M ids; give --vocab-size")
    while hi - lo > 1:  # known(lo), not known(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if await known(mid) else (lo, mid)
    return hi


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


async def pick_models(args, server, session):
    """(base id, list of model names requests use)."""
    models = await server.get_json(session, "/v1/models")
    entries = models.get("data", [])
    base = next((m["id"] for m in entries if m.get("parent") is None), None)
    if base is None:
        raise RuntimeError("/v1/models lists no base model")
    if args.base_only:
        return base, [base]
    if args.adapters:
        names = [s for s in args.adapters.split(",") if s]
    elif args.adapter_prefix:
        names = [f"{args.adapter_prefix}{i}" for i in range(args.num_adapters)]
    else:
        names = sorted((m["id"] for m in entries if m.get("parent") is not None), key=natural_key)
    if args.num_adapters is not None:
        if args.num_adapters > len(names):
            raise RuntimeError(f"--num-adapters {args.num_adapters} but only {len(names)} adapters are available")
        names = names[: args.num_adapters]
    if not names:
        raise RuntimeError("the server lists no adapters; use --base-only or load some")
    ctx = next((m.get("max_model_len") for m in entries if m.get("parent") is None), None)
    longest = args.input_range[1] - 1 + args.output_range[1] - 1
    if isinstance(ctx, int) and longest > ctx:
        log(args, f"serve_bench: warning: the longest request ({longest} tokens) exceeds the server's context "
                  f"({ctx}); the server clips their max_tokens, so they count as wrong-length outputs")
    return base, names


# ---- /metrics ---------------------------------------------------------------------------------------------------

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{family types}, [(name, {labels}, value)]."""
    types, samples = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                types[parts[2]] = parts[3]
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        try:
            v = float(m.group(3))
        except ValueError:
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        samples.append((m.group(1), labels, v))
    return types, samples


def family_of(name, types):
    for suffix in ("_bucket", "_count", "_sum", "_total", ""):
        if suffix and name.endswith(suffix) and name[: -len(suffix)] in types:
            return name[: -len(suffix)], types[name[: -len(suffix)]]
    return name, types.get(name, "untyped")


def aggregate(text):
    """Counters and histograms summed over every label but `le` (and a few non-adapter labels kept);
    gauges summed over labels. Keys are name{kept labels}."""
    types, samples = parse_metrics(text)
    out = {"counter": {}, "gauge": {}}
    keep = ("le", "reason", "state", "phase", "kind", "tier", "code", "endpoint")
    for name, labels, v in samples:
        _, typ = family_of(name, types)
        kind = "gauge" if typ == "gauge" else "counter"  # counters, histograms, summaries, untyped: deltas
        kept = ",".join(f'{k}="{labels[k]}"' for k in keep if k in labels)
        key = f"{name}{{{kept}}}" if kept else name
        out[kind][key] = out[kind].get(key, 0.0) + v
    return out


def metrics_delta(before, after):
    b, a = aggregate(before), aggregate(after)
    delta = {k: v - b["counter"].get(k, 0.0) for k, v in a["counter"].items() if v != b["counter"].get(k, 0.0)}
    return {"counters_delta": dict(sorted(delta.items())), "gauges_after": dict(sorted(a["gauge"].items()))}


async def sample_gauges(server, session, t0, stop, interval, in_flight, out):
    """Engine gauges (summed over adapters) every `interval` s while the run lasts, beside the client's count of
    requests in flight: requests the server holds but the engine does not list (running or waiting) are queued
    in the HTTP server, e.g. behind its worker threads."""
    while not stop.is_set():
        ts = time.perf_counter()
        sample = {"t": round(ts - t0, 3), "client_in_flight": in_flight()}
        limit = max(interval, 10)
        try:
            status, text = await asyncio.wait_for(server.get_text(session, "/metrics"), timeout=limit)
            sample["scrape_s"] = round(time.perf_counter() - ts, 4)
            if status == 200:
                g = aggregate(text)["gauge"]
                sample.update({k: v for k, v in g.items()
                               if not k.startswith(("loradesk_adapter_loaded", "loradesk_adapter_pinned"))})
            else:
                sample["error"] = f"HTTP {status}"
        except asyncio.TimeoutError:
            sample["error"] = f"/metrics did not answer within {limit:g} s"
        except aiohttp.ClientError as e:
            sample["error"] = f"{type(e).__name__}: {e}"
        out.append(sample)
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except asyncio.TimeoutError:
            pass


# ---- one request ------------------------------------------------------------------------------------------------


async def run_request(server, session, req, model, t0, timeout):
    """Streams one completion; fills send/first/end times, status, completion tokens, error."""
    body = {"model": model, "prompt": req["prompt"], "max_tokens": req["out_len"], "ignore_eos": True,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    req["model"] = model
    req["sent"] = time.perf_counter() - t0
    first = None
    try:
        async with session.post(server.url("/v1/completions"), json=body, headers=server.headers,
                                timeout=timeout) as r:
            req["status"] = r.status
            if r.status != 200:
                text = await r.text()
                try:
                    msg = json.loads(text)["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    msg = text[:300]
                req["error"] = f"HTTP {r.status}: {msg}"
                return
            req["prefix_hit_tokens"] = int(r.headers.get("x-prefix-hit-tokens", "0") or 0)
            req["tier"] = r.headers.get("x-adapter-tier")
            chunks, done = 0, False
            async for raw in r.content:
                line = raw.strip()
                if not line.startswith(b"data:"):
                    continue  # blank separators and ": keep-alive" comments
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    break
                chunks += 1
                # Parse only what matters: the first chunk, errors, the finish and the usage chunk.
                if first is None or b'"error"' in data or b'"usage":{' in data or b'"finish_reason":"' in data:
                    obj = json.loads(data)
                    if "error" in obj:
                        req["error"] = f"stream error: {obj['error'].get('message', obj['error'])}"
                        return
                    for c in obj.get("choices") or []:
                        # The first token is the first chunk with a choice, whose text may be empty (bytes of
                        # a character still held back, a skipped special token): vLLM's benchmark counts it
                        # the same way, and random-token prompts make such tokens common.
                        if first is None and not c.get("finish_reason"):
                            first = time.perf_counter() - t0
                        if c.get("finish_reason"):
                            req["finish_reason"] = c["finish_reason"]
                            if first is None:
                                first = time.perf_counter() - t0  # no text at all: the finish is the first sign
                                req["first_from_finish"] = True
                    if obj.get("usage"):
                        req["completion_tokens"] = obj["usage"].get("completion_tokens")
                        req["prompt_tokens"] = obj["usage"].get("prompt_tokens")
                        req["cached_tokens"] = (obj["usage"].get("prompt_tokens_details") or {}).get("cached_tokens")
            req["chunks"] = chunks
            if not done:
                req["error"] = "stream ended without data: [DONE]"
                return
            req["end"] = time.perf_counter() - t0
            req["first"] = first
            req["ok"] = True
    except asyncio.TimeoutError:
        req["error"] = "client timeout (--timeout or --read-timeout)"
    except aiohttp.ClientError as e:
        req["error"] = f"{type(e).__name__}: {e}"
    except asyncio.CancelledError:
        req["error"] = "cancelled: still running at the end of --drain-timeout"
        raise
    finally:
        if first is not None:
            req["first"] = first


# ---- the run ----------------------------------------------------------------------------------------------------


def log(args, msg):
    if not args.quiet:
        print(msg, file=sys.stderr, flush=True)


async def run(args):
    server = Server(args)
    connector = aiohttp.TCPConnector(limit=args.max_connections, force_close=not args.keep_alive)
    session_timeout = aiohttp.ClientTimeout(total=60)
    req_timeout = aiohttp.ClientTimeout(total=args.timeout, sock_connect=args.connect_timeout,
                                        sock_read=args.read_timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=session_timeout, trust_env=False) as session:
        status, _ = await server.get_text(session, "/health")
        if status != 200:
            raise RuntimeError(f"/health answered HTTP {status}")
        base, names = await pick_models(args, server, session)
        vocab = args.vocab_size or await probe_vocab(server, session)
        trace = make_trace(len(names), args.alpha, args.rate, args.cv, args.duration, args.input_range,
                           args.output_range, args.seed)
        if not trace:
            raise RuntimeError("rate * duration < 1: no requests")
        if len(trace) > args.max_requests:
            raise RuntimeError(f"{len(trace)} requests exceed --max-requests {args.max_requests}")
        make_prompts(trace, vocab, args.shared_prefix, args.seed)
        log(args, f"serve_bench: {len(trace)} requests over {trace[-1]['at']:.1f} s to {server.base}, "
                  f"{len(names)} model name(s) ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}), vocab {vocab}")
        _, metrics_before = await server.get_text(session, "/metrics")

        stop_sampling = asyncio.Event()
        timeline = []
        interrupted = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, interrupted.set)
            except (NotImplementedError, RuntimeError):
                pass

        t0 = time.perf_counter()
        tasks, done_count = [], 0
        sampler = (asyncio.create_task(sample_gauges(server, session, t0, stop_sampling, args.metrics_interval,
                                                     lambda: len(tasks) - done_count, timeline))
                   if args.metrics_interval > 0 else None)

        def on_done(_):
            nonlocal done_count
            done_count += 1

        next_progress = 10.0
        for req in trace:
            delay = req["at"] - (time.perf_counter() - t0)
            if delay > 0:
                try:
                    await asyncio.wait_for(interrupted.wait(), timeout=delay)
                except asyncio.TimeoutError:
                    pass
            if interrupted.is_set():
                break
            task = asyncio.create_task(run_request(server, session, req, names[req["adapter"]], t0, req_timeout))
            task.add_done_callback(on_done)
            tasks.append(task)
            now = time.perf_counter() - t0
            if now >= next_progress:
                log(args, f"  t={now:6.1f} s sent {len(tasks)}/{len(trace)}, finished {done_count}")
                next_progress = now + 10.0
        last_send = time.perf_counter() - t0
        pending = {t for t in tasks if not t.done()}
        drain_deadline = time.perf_counter() + args.drain_timeout
        while pending and not interrupted.is_set():
            left = drain_deadline - time.perf_counter()
            if left <= 0:
                break
            _, pending = await asyncio.wait(pending, timeout=min(10.0, left))
            if pending:
                log(args, f"  draining: t={time.perf_counter() - t0:6.1f} s, {len(pending)} running")
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        t_end = time.perf_counter() - t0
        stop_sampling.set()
        if sampler:
            await sampler
        try:
            status, metrics_after = await server.get_text(session, "/metrics")
            if status != 200:
                metrics_after = ""
        except aiohttp.ClientError as e:
            log(args, f"serve_bench: /metrics after the run failed: {e}")
            metrics_after = ""

    sent = [r for r in trace if "sent" in r]
    return dict(server=server, base=base, names=names, vocab=vocab, trace=trace, sent=sent, t_end=t_end,
                last_send=last_send, n_cancelled=len(pending), interrupted=interrupted.is_set(),
                metrics_before=metrics_before, metrics_after=metrics_after, timeline=timeline)


# ---- the report -------------------------------------------------------------------------------------------------


def stats(values):
    if not values:
        return None
    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max()), "n": int(a.size)}


def error_kind(msg):
    m = re.match(r"HTTP (\d+)", msg)
    if m:
        return f"http_{m.group(1)}"
    if msg.startswith("stream error"):
        return "stream_error"
    if msg.startswith("cancelled"):
        return "cancelled_at_drain_timeout"
    if msg.startswith("client timeout"):
        return "client_timeout"
    if msg.startswith("stream ended"):
        return "stream_ended_without_done"
    return msg.split(":")[0]


def build_report(args, r):
    trace, sent = r["trace"], r["sent"]
    ok = [q for q in sent if q.get("ok")]
    failed = [q for q in sent if not q.get("ok")]
    total = r["t_end"]
    lat = [q["end"] - q["sent"] for q in ok]
    ttft = [q["first"] - q["sent"] for q in ok if q.get("first") is not None]
    wrong = [q for q in ok if q.get("completion_tokens") != q["out_len"]]
    slo_hits = sum(1 for q in ok if q.get("first") is not None and q["first"] - q["sent"] < args.slo)
    tpot = [(q["end"] - q["first"]) / (q["out_len"] - 1) for q in ok
            if q.get("first") is not None and q["out_len"] > 1 and not q.get("first_from_finish")]
    lag = [q["sent"] - q["at"] for q in sent]
    out_tokens = sum(q.get("completion_tokens") or 0 for q in ok)
    in_tokens = sum(q["in_len"] for q in ok)
    errors_by_kind = {}
    for q in failed:
        k = error_kind(q.get("error", "unknown"))
        errors_by_kind[k] = errors_by_kind.get(k, 0) + 1
    first_errors = []
    for q in failed:
        msg = q.get("error", "unknown")
        if msg not in first_errors:
            first_errors.append(msg)
        if len(first_errors) >= 5:
            break
    per_adapter = {}
    for q in sent:
        per_adapter[q["model"]] = per_adapter.get(q["model"], 0) + 1
    counts = sorted(per_adapter.values(), reverse=True)

    def mean(xs):
        return float(np.mean(xs)) if xs else None

    result = {
        "requests": len(trace),
        "sent": len(sent),
        "finished": len(ok),
        "errors": len(failed),
        "total_time_s": total,
        "last_send_s": r["last_send"],
        "throughput_req_s": len(ok) / total if total > 0 else None,
        "avg_latency_s": mean(lat),
        "avg_per_token_latency_s": mean([(q["end"] - q["sent"]) / (q["in_len"] + q["out_len"]) for q in ok]),
        "avg_per_output_token_latency_s": mean([(q["end"] - q["sent"]) / q["out_len"] for q in ok]),
        "first_token_latency_s": stats(ttft),
        "latency_s": stats(lat),
        "time_per_output_token_after_first_s": stats(tpot),
        "slo_s": args.slo,
        "slo_attainment": slo_hits / len(trace),
        "output_tok_s": out_tokens / total if total > 0 else None,
        "input_tok_s": in_tokens / total if total > 0 else None,
        "output_tokens": out_tokens,
        "input_tokens": in_tokens,
        "cached_prompt_tokens": sum(q.get("cached_tokens") or 0 for q in ok),
        "wrong_length": len(wrong),
        "first_token_from_finish_chunk": sum(1 for q in ok if q.get("first_from_finish")),
        "send_lag_s": stats(lag),
        "cancelled_at_drain_timeout": r["n_cancelled"],
        "interrupted": r["interrupted"],
    }
    tl = r["timeline"]

    def peak(key):
        vals = [x[key] for x in tl if key in x]
        return max(vals) if vals else None

    result["timeline_peaks"] = {
        "samples": len(tl), "failed_scrapes": sum(1 for x in tl if "error" in x),
        "client_in_flight": peak("client_in_flight"),
        "engine_running": peak("loradesk_engine_requests_running"),
        "engine_waiting": peak("loradesk_engine_requests_waiting"),
        "kv_cache_usage_ratio": peak("loradesk_kv_cache_usage_ratio"),
    }
    return {
        "tool": "bench/serve_bench.py",
        "label": args.label,
        "started_unix": time.time() - total,
        "config": {
            "url": r["server"].base, "base_model": r["base"], "base_only": args.base_only,
            "num_adapters": 0 if args.base_only else len(r["names"]), "adapters_first": r["names"][:5],
            "alpha": args.alpha, "rate": args.rate, "cv": args.cv, "duration_s": args.duration,
            "input_range": args.input_range, "output_range": args.output_range, "seed": args.seed,
            "shared_prefix": args.shared_prefix, "vocab_size": r["vocab"], "keep_alive": args.keep_alive,
            "timeout_s": args.timeout, "read_timeout_s": args.read_timeout, "drain_timeout_s": args.drain_timeout,
        },
        "trace": {
            "requests": len(trace), "last_arrival_s": trace[-1]["at"],
            "offered_rate": len(trace) / trace[-1]["at"] if trace[-1]["at"] > 0 else None,
            "mean_input_len": mean([q["in_len"] for q in trace]),
            "mean_output_len": mean([q["out_len"] for q in trace]),
            "adapters_used": len(per_adapter),
            "requests_per_adapter_max": counts[0] if counts else 0,
            "requests_per_adapter_median": float(np.median(counts)) if counts else 0,
        },
        "result": result,
        "errors": {"by_kind": errors_by_kind, "first": first_errors},
        "wrong_length_first": [{"i": q["i"], "model": q["model"], "requested": q["out_len"],
                                "completion_tokens": q.get("completion_tokens"),
                                "finish_reason": q.get("finish_reason")} for q in wrong[:5]],
        "metrics": {**metrics_delta(r["metrics_before"], r["metrics_after"]), "timeline": r["timeline"]},
    }


def fmt(v, unit="", digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}{unit}"
    return f"{v}{unit}"


def print_table(rep, out=sys.stdout):
    c, t, res = rep["config"], rep["trace"], rep["result"]
    ft = res["first_token_latency_s"] or {}
    lag = res["send_lag_s"] or {}
    rows = [
        ("workload", f"{c['num_adapters']} adapters (alpha {c['alpha']:g}), {c['rate']:g} req/s, cv {c['cv']:g}, "
                     f"{c['duration_s']:g} s, in [{c['input_range'][0]}, {c['input_range'][1]}), "
                     f"out [{c['output_range'][0]}, {c['output_range'][1]}), seed {c['seed']}"
                     + (f", shared prefix {c['shared_prefix']}" if c["shared_prefix"] else "")),
        ("trace", f"mean input {t['mean_input_len']:.1f}, mean output {t['mean_output_len']:.1f} tokens, "
                  f"{t['adapters_used']} models used (most requests on one: {t['requests_per_adapter_max']})"),
        ("requests", f"{res['requests']} ({res['sent']} sent, {res['finished']} finished, {res['errors']} errors)"),
        ("total time (incl. drain)", fmt(res["total_time_s"], " s", 2) + f"  (last send at {res['last_send_s']:.2f} s)"),
        ("throughput", fmt(res["throughput_req_s"], " req/s", 3)),
        ("output tokens/s", fmt(res["output_tok_s"], "", 1) + f"  (input {fmt(res['input_tok_s'], '', 1)})"),
        ("avg latency", fmt(res["avg_latency_s"], " s")),
        ("avg latency per token", fmt(res["avg_per_token_latency_s"], " s", 4)),
        ("avg latency per output token", fmt(res["avg_per_output_token_latency_s"], " s", 4)),
        ("first token mean / p50 / p90 / p99", " / ".join(fmt(ft.get(k), " s") for k in ("mean", "p50", "p90", "p99"))),
        (f"SLO attainment (first token < {res['slo_s']:g} s)", fmt(res["slo_attainment"], "", 3)),
        ("time per output token after the first (mean)", fmt((res["time_per_output_token_after_first_s"] or {}).get("mean"), " s", 4)),
        ("outputs of the wrong length", str(res["wrong_length"])),
        ("cached prompt tokens", str(res["cached_prompt_tokens"])),
        ("client send lag mean / max", f"{fmt(lag.get('mean'), ' s', 4)} / {fmt(lag.get('max'), ' s', 4)}"),
    ]
    pk = res["timeline_peaks"]
    if pk["samples"]:
        rows.append(("peaks: client in flight / engine running / waiting",
                     f"{fmt(pk['client_in_flight'])} / {fmt(pk['engine_running'], '', 0)} / "
                     f"{fmt(pk['engine_waiting'], '', 0)}  (kv_cache_usage_ratio peak {fmt(pk['kv_cache_usage_ratio'], '', 2)})"))
        if pk["failed_scrapes"]:
            rows.append(("/metrics samples that failed", f"{pk['failed_scrapes']} of {pk['samples']}"))
    if res["interrupted"]:
        rows.append(("interrupted", "yes: stopped by a signal, requests not sent count as SLO misses"))
    if res["cancelled_at_drain_timeout"]:
        rows.append(("cancelled at the drain timeout", str(res["cancelled_at_drain_timeout"])))
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}", file=out)
    if rep["errors"]["by_kind"]:
        print(f"{'errors by kind':<{w}}  {rep['errors']['by_kind']}", file=out)
        for m in rep["errors"]["first"]:
            print(f"{'':<{w}}  {m}", file=out)
    for q in rep["wrong_length_first"]:
        print(f"{'wrong length':<{w}}  request {q['i']} ({q['model']}): asked {q['requested']}, "
              f"got {q['completion_tokens']} ({q['finish_reason']})", file=out)


def main(argv=None):
    args = parse_args(argv)
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # one socket per running request
    except (ImportError, ValueError, OSError):
        pass
    try:
        r = asyncio.run(run(args))
    except (RuntimeError, aiohttp.ClientError, OSError) as e:
        print(f"serve_bench: {e}", file=sys.stderr)
        return 2
    rep = build_report(args, r)
    if args.metrics_out:
        with open(args.metrics_out, "w") as f:
            f.write(r["metrics_after"])
    if args.requests_out:
        with open(args.requests_out, "w") as f:
            for q in r["trace"]:
                f.write(json.dumps({k: v for k, v in q.items() if k != "prompt"}) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rep, f, indent=1)
            f.write("\n")
    print_table(rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
