#!/usr/bin/env python3
"""Soak test: hours of careless, hostile-ish traffic against one `loradeskd serve`, then checks that it is intact.

For --minutes (default 30) it runs, all at once:
  * streaming and non-streamed completions and chats over the base model and every adapter, a share of them
    abandoned mid-stream (the client closes its socket) or cut short by a timeout;
  * an adapter churner: load under a fresh name, pin, unpin, unload (the API), and delete / recreate folders in
    the watched --adapters root (the folder watch);
  * an in-place rewriter: truncates and rewrites an adapter's weights file that the watch is reading;
  * a /health prober (every second, must answer within 1 s) and a sampler of RSS and thread count.
Then, after the traffic stops and the server has had a moment to settle, it asserts:
  no crash; nothing running or waiting; every KV page free or cached; RSS within 20 % of its plateau (the
  median of the middle half of the run); the thread count no higher than the plateau's highest; /health always
  answered within 1 s; every request ended with a status the API documents (no 500s).

Only the Python standard library: runs here, on CI machines and on the GPU machine alike.
  bench/soak.py --loradeskd build/app/loradeskd/loradeskd --minutes 30 --json soak.json
Exit status 0 when every check passes; the JSON report lists each check and the timelines.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

DOCUMENTED = {200, 400, 404, 409, 413, 429, 499, 503}


class Server:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.adapters = os.path.join(workdir, "adapters")
        self.port = 0
        self.proc = None
        self.log = open(os.path.join(workdir, "server.log"), "wb")

    def synth(self, name, seed, root=None):
        out = os.path.join(root or self.adapters, name)
        subprocess.run([self.args.loradeskd, "synth-adapter", "--model", self.args.model, "--rank", "4",
                        "--seed", str(seed), "--dtype", "bf16", "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        return out

    def start(self):
        os.makedirs(self.adapters, exist_ok=True)
        for i in range(self.args.adapters):
            self.synth(f"a{i}", i)
        cmd = [self.args.loradeskd, "serve", "--model", self.args.model, "--adapters", self.adapters,
               "--port", "0", "--data-dir", os.path.join(self.workdir, "data"), "--watch-interval", "500",
               "--max-loras", "2", "--threads", str(self.args.threads), "--log-level", "warn"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        if "listening on" not in line:
            raise SystemExit(f"soak: server did not start: {line!r}; see {self.log.name}")
        self.port = int(line.rsplit(":", 1)[1])
        threading.Thread(target=self._drain_stdout, daemon=True).start()

    def _drain_stdout(self):
        for _ in self.proc.stdout:
            pass

    def request(self, method, path, body=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def proc_status(self):
        fields = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["Threads"])


class Soak:
    def __init__(self, server, args):
        self.s = server
        self.args = args
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.statuses = {}
        self.failures = []
        self.health = []  # (t, seconds or None)
        self.samples = []  # (t, rss, threads)
        self.t0 = time.time()
        self.rng = random.Random(args.seed)
        self.names = [f"a{i}" for i in range(args.adapters)]

    def count(self, what, status):
        with self.lock:
            key = f"{what}:{status}"
            self.statuses[key] = self.statuses.get(key, 0) + 1
            if status not in DOCUMENTED and status != "abandoned" and status != "timeout":
                self.failures.append(f"{what} answered {status}")

    def model(self, rng):
        choice = rng.choice(["", *self.names, "a0", "ghost"])
        return choice

    def client(self, seed):
        rng = random.Random(seed)
        while not self.stop.is_set():
            chat = rng.random() < 0.5
            stream = rng.random() < 0.7
            body = {"model": self.model(rng), "max_tokens": rng.randint(1, 96), "stream": stream,
                    "temperature": rng.choice([0, 0.7, 1.0]), "seed": rng.randint(0, 1 << 30)}
            if rng.random() < 0.2:
                body["n"] = rng.randint(2, 4)
            if chat:
                body["messages"] = [{"role": "user", "content": "Tell me a fortune " * rng.randint(1, 20)}]
                path = "/v1/chat/completions"
            else:
                body["prompt"] = "Once upon a time " * rng.randint(1, 40)
                path = "/v1/completions"
            abandon = stream and rng.random() < 0.25
            try:
                if abandon:
                    self.abandoned_stream(path, body, rng)
                    self.count(path, "abandoned")
                else:
                    status, _ = self.s.request("POST", path, body, timeout=120)
                    self.count(path, status)
            except (socket.timeout, TimeoutError):
                self.count(path, "timeout")
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                if self.s.proc.poll() is not None:
                    return
                self.count(path, f"connection error {type(e).__name__}")

    def abandoned_stream(self, path, body, rng):
        sock = socket.create_connection(("127.0.0.1", self.s.port), timeout=30)
        data = json.dumps(body).encode()
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        want = rng.randint(1, 2000)
        got = 0
        while got < want:
            chunk = sock.recv(min(4096, want - got))
            if not chunk:
                break
            got += len(chunk)
        sock.close()

    def churner(self):
        rng = random.Random(self.args.seed + 1)
        # Under the served root (loads are confined to it) but one level down, where the folder watch does not look.
        spare = os.path.join(self.s.adapters, "staging")
        os.makedirs(spare, exist_ok=True)
        n = 0
        while not self.stop.is_set():
            n += 1
            action = rng.choice(["load_unload", "pin", "delete_recreate"])
            try:
                if action == "load_unload":
                    name = f"extra{n}"
                    path = self.s.synth(name, 1000 + n, root=spare)
                    st, _ = self.s.request("POST", "/v1/load_lora_adapter", {"lora_name": name, "lora_path": path})
                    self.count("load", st)
                    # use it once, then unload it while others may still be queued on it
                    threading.Thread(target=lambda: self.s.request(
                        "POST", "/v1/completions", {"model": name, "prompt": "hi", "max_tokens": 16}),
                        daemon=True).start()
                    time.sleep(rng.random())
                    st, _ = self.s.request("POST", "/v1/unload_lora_adapter", {"lora_name": name})
                    self.count("unload", st)
                    shutil.rmtree(path, ignore_errors=True)
                elif action == "pin":
                    name = rng.choice(self.names)
                    st, _ = self.s.request("POST", f"/v1/adapters/{name}/pin")
                    self.count("pin", st)
                    time.sleep(rng.random())
                    st, _ = self.s.request("POST", f"/v1/adapters/{name}/unpin")
                    self.count("unpin", st)
                else:
                    name = rng.choice(self.names[1:])  # a0 is the rewriter's
                    shutil.rmtree(os.path.join(self.s.adapters, name), ignore_errors=True)
                    time.sleep(0.5 + rng.random())
                    self.s.synth(name, rng.randint(0, 1 << 20))
            except (ConnectionError, http.client.HTTPException, OSError):
                if self.s.proc.poll() is not None:
                    return
            time.sleep(rng.random())

    def rewriter(self):
        """Rewrites a0's weights in place (same inode: truncate then write) with alternating contents."""
        rng = random.Random(self.args.seed + 2)
        target = os.path.join(self.s.adapters, "a0", "adapter_model.safetensors")
        versions = []
        for seed in (7001, 7002):
            d = self.s.synth(f"v{seed}", seed, root=os.path.join(self.s.workdir, "versions"))
            with open(os.path.join(d, "adapter_model.safetensors"), "rb") as f:
                versions.append(f.read())
        while not self.stop.is_set():
            data = rng.choice(versions)
            with open(target, "r+b" if os.path.exists(target) else "wb") as f:
                f.truncate(0)
                half = len(data) // 2
                f.write(data[:half])
                f.flush()
                time.sleep(rng.random() * 0.2)
                f.write(data[half:])
            time.sleep(rng.random() * 2)

    def prober(self):
        while not self.stop.is_set():
            t = time.time()
            try:
                st, _ = self.s.request("GET", "/health", timeout=5)
                took = time.time() - t
                self.health.append((t - self.t0, took if st == 200 else None))
            except (OSError, http.client.HTTPException):
                self.health.append((t - self.t0, None))
            try:
                rss, threads = self.s.proc_status()
                self.samples.append((time.time() - self.t0, rss, threads))
            except OSError:
                pass
            time.sleep(max(0.0, 1.0 - (time.time() - t)))

    def metrics(self):
        st, body = self.s.request("GET", "/metrics")
        values = {}
        for line in body.decode().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            key, _, value = line.rpartition(" ")
            values[key] = float(value)
        return values

    def run(self):
        threads = [threading.Thread(target=self.client, args=(self.args.seed + 10 + i,), daemon=True)
                   for i in range(self.args.clients)]
        threads += [threading.Thread(target=f, daemon=True) for f in (self.churner, self.rewriter, self.prober)]
        for t in threads:
            t.start()
        end = self.t0 + self.args.minutes * 60
        while time.time() < end and self.s.proc.poll() is None:
            time.sleep(1)
        self.stop.set()
        for t in threads:
            t.join(timeout=180)
        time.sleep(5)  # streams cancelled by abandoned sockets settle; the watch sees the last rewrite
        return self.check()

    def check(self):
        checks = []

        def check(name, ok, detail):
            checks.append({"check": name, "ok": bool(ok), "detail": detail})

        alive = self.s.proc.poll() is None
        check("server alive", alive, f"exit code {self.s.proc.returncode}")
        if alive:
            m = self.metrics()
            running = m.get("loradesk_engine_requests_running", -1)
            waiting = m.get("loradesk_engine_requests_waiting", -1)
            check("nothing running or waiting", running == 0 and waiting == 0, f"running {running}, waiting {waiting}")
            total = m.get('loradesk_kv_cache_pages{state="total"}', 0)
            free = m.get('loradesk_kv_cache_pages{state="free"}', 0)
            cached = m.get('loradesk_kv_cache_pages{state="cached"}', 0)
            check("KV pages all free or cached", total > 0 and free + cached == total,
                  f"total {total}, free {free}, cached {cached}")
            rss, threads = self.s.proc_status()
            n = len(self.samples)
            middle = self.samples[n // 4: max(n // 4 + 1, 3 * n // 4)]
            plateau = statistics.median(s[1] for s in middle) if middle else rss
            check("RSS within 20 % of the plateau", rss <= 1.2 * plateau,
                  f"end {rss / 2**20:.0f} MiB, plateau {plateau / 2**20:.0f} MiB")
            peak_threads = max((s[2] for s in middle), default=threads)
            check("thread count flat", threads <= peak_threads, f"end {threads}, plateau max {peak_threads}")
        slow = [h for h in self.health if h[1] is None or h[1] > 1.0]
        check("/health answered within 1 s throughout", not slow,
              f"{len(self.health)} probes, {len(slow)} late or failed" + (f", first at {slow[0][0]:.0f} s" if slow else ""))
        check("every answer documented (no 5xx but 503)", not self.failures, "; ".join(sorted(set(self.failures))[:10]))
        return checks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loradeskd", required=True)
    ap.add_argument("--model", default=os.path.join(os.path.dirname(__file__), "..", "resources", "demo", "fortune-6m"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--adapters", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1, help="CPU runner threads")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (server.log, data)")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="loradesk-soak-")
    server = Server(args, workdir)
    server.start()
    soak = Soak(server, args)
    try:
        checks = soak.run()
    finally:
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGTERM)
            try:
                server.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.proc.kill()
    stopped = server.proc.returncode == 0
    checks.append({"check": "clean stop on SIGTERM", "ok": stopped, "detail": f"exit code {server.proc.returncode}"})
    report = {"minutes": args.minutes, "clients": args.clients, "adapters": args.adapters, "checks": checks,
              "statuses": soak.statuses, "health_probes": len(soak.health),
              "rss_mib": [(round(t), round(r / 2**20, 1)) for t, r, _ in soak.samples[::30]],
              "threads": [(round(t), n) for t, _, n in soak.samples[::30]]}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    for c in checks:
        print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['check']}: {c['detail']}")
    print("statuses:", json.dumps(soak.statuses, sort_keys=True))
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print("work folder:", workdir)
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
