#!/usr/bin/env python3
"""Replays issue #16's hostile and careless requests against a fresh `loradeskd serve` and measures each one.

For every probe it records the HTTP status (or how the connection ended), the server's peak RSS growth while
the probe ran (VmHWM, reset before each probe through /proc/PID/clear_refs), the bytes the probe sent, and
whether /health still answered within 1 s afterwards. The goals: every probe ends in a clean 4xx (or a closed
connection for bodies the server refuses to read), the server stays alive, /health answers within 1 s, and
no single request grows the peak RSS by more than 2x the bytes the body limit lets it send.

  bench/hardening_probe.py --loradeskd build/app/loradeskd/loradeskd [--json out.json]
Only the Python standard library; Linux only (reads /proc).
"""
import argparse
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

MiB = 1 << 20


class Server:
    def __init__(self, loradeskd, workdir, extra):
        cmd = [loradeskd, "serve", "--port", "0", "--data-dir", os.path.join(workdir, "data"), "--log-level",
               "warn", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(os.path.join(workdir, "server.log"), "wb"))
        line = self.proc.stdout.readline().decode()
        if "listening on" not in line:
            raise SystemExit(f"probe: server did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])

    def status(self, key):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def reset_peak(self):
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS

    def stop(self):
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def send_raw(port, head, body_chunks=(), timeout=30):
    """Sends a request head and body pieces; returns (status or description, bytes sent)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sent = 0
    try:
        s.sendall(head)
        sent += len(head)
        for chunk in body_chunks:
            s.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered early and closed: read what it said
    try:
        data = s.recv(65536)
    except (ConnectionResetError, socket.timeout) as e:
        return f"connection {type(e).__name__}", sent
    finally:
        s.close()
    if not data:
        return "closed without an answer", sent
    try:
        return int(data.split(b" ", 2)[1]), sent
    except (IndexError, ValueError):
        return f"unparsable answer {data[:40]!r}", sent


def post(port, path, body: bytes, headers=""):
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{headers}\r\n").encode()
    return send_raw(port, head, [body[i:i + MiB] for i in range(0, len(body), MiB)])


def health_ms(port):
    t = time.time()
    status, _ = send_raw(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", timeout=5)
    return (time.time() - t) * 1000 if status == 200 else None


def probes(port):
    nested = b'{"model":"","messages":[{"role":"user","content":"hi","x":' + b"[" * 40000 + b"]" * 40000 + b"}]}"
    yield "deeply nested JSON (40,000 levels)", lambda: post(port, "/v1/chat/completions", nested)
    yield "deeply nested JSON on /tokenize", lambda: post(port, "/tokenize", b'{"prompt":"a","x":' + b"[" * 40000 + b"]" * 40000 + b"}")
    bomb = gzip.compress(b" " * (512 * MiB), 9)
    yield "gzip bomb (%.1f MB -> 512 MB)" % (len(bomb) / MiB), lambda: post(
        port, "/v1/completions", bomb, "Content-Encoding: gzip\r\n")
    yield "brotli-labelled body", lambda: post(port, "/v1/completions", b"\x1b" * 3000, "Content-Encoding: br\r\n")

    def chunked_forever():
        head = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"%x\r\n" % MiB + b" " * MiB + b"\r\n"
        return send_raw(port, head, (piece for _ in range(2048)))  # 2 GB offered
    yield "chunked body of 2 GB", chunked_forever

    def huge_header():
        head = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: "
        return send_raw(port, head, (b"a" * MiB for _ in range(1024)))  # 1 GB header line offered
    yield "1 GB header line", huge_header
    many = {"model": "", "prompt": ["hello world " * 2000] * 300, "stop": ["x" * 20000], "max_tokens": 4}
    yield "300 prompts of 24 KB with a long stop string", lambda: post(port, "/v1/completions", json.dumps(many).encode())
    bias = {"model": "", "prompt": ["hi"] * 100, "logit_bias": {str(i): 1 for i in range(1_000_000)}}
    yield "1 M logit_bias keys x 100 prompts", lambda: post(port, "/v1/completions", json.dumps(bias).encode())
    yield "30 MB prompt", lambda: post(port, "/v1/completions",
                                       json.dumps({"model": "", "prompt": "word " * (6 * MiB), "max_tokens": 1}).encode())
    yield "top_k 2^64-1", lambda: post(port, "/v1/completions", b'{"prompt":"hi","top_k":18446744073709551615}')
    yield "n 2^63", lambda: post(port, "/v1/completions", b'{"prompt":"hi","n":9223372036854775808}')
    yield "malformed JSON", lambda: post(port, "/v1/completions", b'{"prompt": "hi", ')
    yield "unknown adapter", lambda: post(port, "/v1/completions", b'{"model":"nobody","prompt":"hi"}')
    yield "adapter name with a newline", lambda: post(port, "/v1/load_lora_adapter",
                                                      b'{"lora_name":"a\\nINFO forged","lora_path":"/tmp"}')


def slowloris(port, n=300, seconds=12):
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /health HTTP/1.1\r\n")
            socks.append(s)
        except OSError:
            break
    worst = 0.0
    failed = 0
    end = time.time() + seconds
    while time.time() < end:
        for s in socks:
            try:
                s.sendall(b"X: y\r\n")
            except OSError:
                pass
        ms = health_ms(port)
        if ms is None:
            failed += 1
        else:
            worst = max(worst, ms)
        time.sleep(1)
    for s in socks:
        s.close()
    return len(socks), worst, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loradeskd", required=True)
    ap.add_argument("--json")
    ap.add_argument("server_args", nargs="*", help="extra `serve` options (default: the demo kit)")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="loradesk-probe-")
    server = Server(args.loradeskd, workdir, args.server_args)
    time.sleep(1)
    rows = []
    ok = True
    for name, run in probes(server.port):
        server.reset_peak()
        base = server.status("VmRSS")
        t = time.time()
        status, sent = run()
        seconds = time.time() - t
        peak = server.status("VmHWM") - base
        alive = server.proc.poll() is None
        h = health_ms(server.port) if alive else None
        # Bytes the server may hold for this request: what was sent, up to the 32 MB body limit.
        bounded = min(sent, 32 * MiB)
        row = {"probe": name, "status": status, "sent_mb": round(sent / MiB, 2), "seconds": round(seconds, 2),
               "peak_rss_growth_mb": round(peak / MiB, 1), "limit_mb": round(2 * bounded / MiB, 1),
               "alive": alive, "health_ms": None if h is None else round(h, 1)}
        row["ok"] = (alive and h is not None and h < 1000 and peak <= max(2 * bounded, 8 * MiB)
                     and (not isinstance(status, int) or 400 <= status < 500))
        ok = ok and row["ok"]
        rows.append(row)
        print(f"{'PASS' if row['ok'] else 'FAIL'}  {name}: {status}, sent {row['sent_mb']} MB, peak RSS +"
              f"{row['peak_rss_growth_mb']} MB (limit {row['limit_mb']}), {row['seconds']} s, /health {row['health_ms']} ms",
              flush=True)
    held, worst, failed = slowloris(server.port)
    slow_ok = failed == 0 and worst < 1000
    ok = ok and slow_ok
    print(f"{'PASS' if slow_ok else 'FAIL'}  slowloris: {held} trickling connections, /health worst {worst:.1f} ms, "
          f"{failed} failed")
    rss_after = server.status("VmRSS")
    code = server.stop()
    print(f"idle RSS after the probes: {rss_after / MiB:.0f} MB; exit code on SIGTERM {code}")
    ok = ok and code == 0
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"probes": rows, "slowloris": {"connections": held, "worst_health_ms": worst, "failed": failed},
                       "idle_rss_mb": rss_after / MiB, "exit_code": code}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
