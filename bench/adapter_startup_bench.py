#!/usr/bin/env python3
"""Start-to-serving time of `loradeskd serve` with many adapter folders (docs/adapter-startup.md).

Builds N adapter folders from one synthesized adapter, then starts the server twice on the same data
directory: cold (empty catalog: every folder must be hashed) and warm (the catalog's folder digest cache
is valid). For each start it reports the seconds until /health answers (serving), until every adapter
has a digest (/v1/adapters without `digest: null`), the first request to the adapter that was read last
(it jumps the queue), and the time of GET /v1/models and GET /v1/adapters at that size.

--link (the default) hard-links one adapter_model.safetensors into every folder, so 2,000 folders of
16.8 MB cost 16.8 MB of disk: each folder is still read and hashed on its own (from the page cache, so
this measures hashing, not the disk). --copies writes N distinct files instead (N x size of disk).
Python 3 standard library only.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def get(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def post(url, body, timeout=120):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def make_folders(args, work):
    model = os.path.join(work, "model")
    seed = os.path.join(work, "seed-adapter")
    adapters = os.path.join(work, "adapters")
    if not os.path.isdir(model):
        run([args.loradeskd, "synth-model", "--preset", "tiny", "--out", model])
    if not os.path.isdir(seed):
        run([args.loradeskd, "synth-adapter", "--model", model, "--rank", str(args.rank), "--out", seed])
    shutil.rmtree(adapters, ignore_errors=True)
    os.makedirs(adapters)
    tensors = os.path.join(seed, "adapter_model.safetensors")
    size = os.path.getsize(tensors)
    header = 8 + int.from_bytes(open(tensors, "rb").read(8), "little")
    for i in range(args.adapters):
        d = os.path.join(adapters, f"lora-{i:05d}")
        os.makedirs(d)
        shutil.copy(os.path.join(seed, "adapter_config.json"), d)
        out = os.path.join(d, "adapter_model.safetensors")
        if args.copies:
            shutil.copy(tensors, out)
            with open(out, "r+b") as f:  # distinct content: one f32 of the first tensor
                f.seek(header)
                f.write(i.to_bytes(4, "little"))
        else:
            os.link(tensors, out)
    return model, adapters, size


def start(args, model, adapters, data):
    cmd = [args.loradeskd, "serve", "--model", model, "--adapters", adapters, "--data-dir", data, "--device", "cpu",
           "--port", str(args.port), "--max-lora-rank", str(args.rank), "--kv-memory", "0.05"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, t0


def measure(args, proc, t0):
    base = f"http://127.0.0.1:{args.port}"
    serving = None
    while serving is None:
        if proc.poll() is not None:
            sys.exit(f"loradeskd exited with {proc.returncode} before serving")
        try:
            if get(base + "/health", timeout=1)[0] == 200:
                serving = time.monotonic() - t0
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.02)
    last = f"lora-{args.adapters - 1:05d}"
    t = time.monotonic()
    post(base + "/v1/completions", {"model": last, "prompt": [1, 2, 3], "max_tokens": 1})
    first_request = time.monotonic() - t
    while True:
        t = time.monotonic()
        data = json.loads(get(base + "/v1/adapters")[1])["data"]
        adapters_s = time.monotonic() - t
        if len(data) >= args.adapters and all(a["digest"] for a in data):
            break
        time.sleep(1.0)  # each poll costs the server a full listing: keep it out of the way of the reads
    all_read = time.monotonic() - t0
    t = time.monotonic()
    models = json.loads(get(base + "/v1/models")[1])["data"]
    models_s = time.monotonic() - t
    assert len(models) == args.adapters + 1, len(models)
    return {"serving_s": round(serving, 3), "all_read_s": round(all_read, 3),
            "first_request_last_adapter_s": round(first_request, 3),
            "get_models_ms": round(models_s * 1000, 1), "get_adapters_ms": round(adapters_s * 1000, 1)}


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loradeskd", default="build/app/loradeskd/loradeskd")
    p.add_argument("--adapters", type=int, default=2000, help="adapter folders (default 2000)")
    p.add_argument("--rank", type=int, default=512,
                   help="rank on the tiny base; 512 gives 16.1 MB f32 adapters, near the 16.8 MB of a rank-8 "
                        "q/k/v/o Llama-7B adapter (default 512)")
    p.add_argument("--copies", action="store_true", help="distinct files instead of hard links (N x size of disk)")
    p.add_argument("--work", default="/tmp/loradesk-startup-bench")
    p.add_argument("--port", type=int, default=18080)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model, adapters, size = make_folders(args, args.work)
    data = os.path.join(args.work, "data")
    shutil.rmtree(data, ignore_errors=True)
    results = {"adapters": args.adapters, "adapter_mb": round(size / 1e6, 1), "files": "copies" if args.copies else
               "hard links", "cpus": os.cpu_count()}
    for run_name in ("cold", "warm"):
        proc, t0 = start(args, model, adapters, data)
        try:
            results[run_name] = measure(args, proc, t0)
        finally:
            stop(proc)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.adapters} adapter folders of {results['adapter_mb']} MB ({results['files']}), "
          f"{results['cpus']} CPUs")
    print(f"{'start':<6} {'serving s':>10} {'all read s':>11} {'1st req s':>10} {'/v1/models ms':>14} "
          f"{'/v1/adapters ms':>16}")
    for run_name in ("cold", "warm"):
        r = results[run_name]
        print(f"{run_name:<6} {r['serving_s']:>10} {r['all_read_s']:>11} {r['first_request_last_adapter_s']:>10} "
              f"{r['get_models_ms']:>14} {r['get_adapters_ms']:>16}")


if __name__ == "__main__":
    main()
