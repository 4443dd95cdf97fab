#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for tests: the endpoints loradeskd pull uses, with the response
shapes huggingface_hub reads from the real Hub.

  GET  /api/models/{org}/{name}/revision/{rev}[?blobs=true]  model info: sha, gated, siblings (rfilename, size,
                                                               blobId, lfs {sha256, size, pointerSize})
  GET  /api/models?filter=base_model:adapter:{org}/{name}     adapters whose adapter_config.json names that base
  GET  /api/models?search=TEXT[&limit=N]                       repos whose id contains TEXT (case-insensitive)
  HEAD/GET /{org}/{name}/resolve/{rev}/{path}                 git files: 200 with ETag "<git blob sha1>";
                                                               LFS files (*.safetensors, *.bin, *.gguf): 302 to
                                                               /cdn/<sha256> with X-Linked-Etag, X-Linked-Size;
                                                               both with X-Repo-Commit
  GET  /cdn/{sha256}                                           the bytes, with Range (206 / 416)

Errors as the Hub sends them: 401 + X-Error-Code RepoNotFound (unknown repo, anonymous), 404 RevisionNotFound,
404 EntryNotFound, 401/403 GatedRepo. Repositories come from folders: --repo ORG/NAME[@BRANCH]=DIR (repeatable;
several branches of one repo are several revisions). Test modes: --gated ID (needs --token T), --corrupt ID:PATH
(serves that file with one byte changed, listed with the true hash), --drop-after N --drop-times K (the first K
LFS downloads send N bytes of the body and hang up; K=-1: all), --cdn-host NAME (LFS redirects go to another
origin, as the Hub's do), --throttle BYTES (the file host sends LFS bodies at BYTES per second, as a slow link
does, so a download can be watched and cancelled). --log FILE gets one JSON line per request.
Prints "PORT <n>" once listening.
"""
import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


class Repo:
    def __init__(self, repo_id):
        self.id = repo_id
        self.branches = {}  # branch -> commit
        self.commits = {}  # commit -> {path: (bytes, is_lfs)}


def load_folder(folder):
    files = {}
    for root, _, names in os.walk(folder):
        for n in sorted(names):
            full = os.path.join(root, n)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            with open(full, "rb") as f:
                files[rel] = (f.read(), rel.endswith(LFS_SUFFIXES))
    return files


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def commit_of(repo_id, branch, files):
    h = hashlib.sha1(f"{repo_id}@{branch}".encode())
    for path in sorted(files):
        h.update(path.encode() + b"\0" + hashlib.sha256(files[path][0]).digest())
    return h.hexdigest()


class State:
    def __init__(self, args):
        self.repos = {}
        self.blobs = {}  # sha256 -> bytes (as served: corrupt files already altered)
        self.gated = set(args.gated)
        self.token = args.token
        self.corrupt = set(args.corrupt)
        self.drop_after = args.drop_after
        self.drops_left = args.drop_times
        self.throttle = args.throttle
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1) if args.log else None
        for spec in args.repo:
            ident, folder = spec.split("=", 1)
            repo_id, _, branch = ident.partition("@")
            branch = branch or "main"
            repo = self.repos.setdefault(repo_id, Repo(repo_id))
            files = load_folder(folder)
            commit = commit_of(repo_id, branch, files)
            repo.branches[branch] = commit
            repo.commits[commit] = files
            for path, (data, lfs) in files.items():
                if lfs:
                    served = data
                    if f"{repo_id}:{path}" in self.corrupt:
                        served = data[:-1] + bytes([data[-1] ^ 0xFF])
                    self.blobs[hashlib.sha256(data).hexdigest()] = served

    def take_drop(self):
        with self.lock:
            if self.drop_after < 0 or self.drops_left == 0:
                return False
            if self.drops_left > 0:
                self.drops_left -= 1
            return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-hub"

    def log_message(self, *args):
        pass

    @property
    def state(self):
        return self.server.state

    def record(self):
        if self.state.log:
            self.state.log.write(json.dumps({
                "method": self.command, "path": self.path, "range": self.headers.get("Range"),
                "authorization": self.headers.get("Authorization")}) + "\n")

    def send(self, status, body=b"", headers=None, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message):
        self.send(status, json.dumps({"error": message}).encode(), {"X-Error-Code": code, "X-Error-Message": message})

    def token_ok(self):
        return self.headers.get("Authorization") == f"Bearer {self.state.token}" and self.state.token

    def do_HEAD(self):
        self.handle_request()

    def do_GET(self):
        self.handle_request()

    def handle_request(self):
        self.record()
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        try:
            if parts[:2] == ["api", "models"] and len(parts) == 2:
                return self.model_list(urllib.parse.parse_qs(url.query))
            if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
                return self.model_info(f"{parts[2]}/{parts[3]}", "/".join(parts[5:]))
            if len(parts) >= 5 and parts[2] == "resolve":
                return self.resolve(f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]))
            if len(parts) == 2 and parts[0] == "cdn":
                return self.cdn(parts[1])
        except (BrokenPipeError, ConnectionResetError):  # the client hung up (a cancelled download)
            return
        self.error(404, "EntryNotFound", "no such endpoint")

    def find(self, repo_id, rev):
        repo = self.state.repos.get(repo_id)
        if repo is None:
            if self.headers.get("Authorization"):
                self.error(404, "RepoNotFound", "Repository not found")
            else:
                self.error(401, "RepoNotFound", "Repository not found")
            return None, None
        commit = repo.branches.get(rev, rev if rev in repo.commits else None)
        if commit is None:
            self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return None, None
        return repo, commit

    def model_info(self, repo_id, rev):
        repo, commit = self.find(repo_id, rev)
        if repo is None:
            return
        siblings = []
        for path, (data, lfs) in sorted(repo.commits[commit].items()):
            s = {"rfilename": path, "blobId": git_blob_sha1(data), "size": len(data)}
            if lfs:
                s["blobId"] = hashlib.sha1(data).hexdigest()  # the pointer file's oid on the Hub
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(s)
        body = {"_id": hashlib.md5(repo_id.encode()).hexdigest()[:24], "id": repo_id, "modelId": repo_id,
                "author": repo_id.split("/")[0], "sha": commit, "lastModified": "2025-01-01T00:00:00.000Z",
                "private": False, "disabled": False, "gated": "manual" if repo_id in self.state.gated else False,
                "downloads": 42, "likes": 7, "tags": ["safetensors"], "library_name": "transformers",
                "siblings": siblings, "createdAt": "2025-01-01T00:00:00.000Z"}
        self.send(200, json.dumps(body).encode())

    def model_list(self, query):
        flt = (query.get("filter") or [""])[0]
        base = flt[len("base_model:adapter:"):] if flt.startswith("base_model:adapter:") else None
        search = (query.get("search") or [""])[0].lower()
        limit = int((query.get("limit") or ["1000"])[0])
        out = []
        for repo in self.state.repos.values():
            files = repo.commits[repo.branches.get("main") or next(iter(repo.commits))]
            cfg = files.get("adapter_config.json")
            adapter_of = json.loads(cfg[0]).get("base_model_name_or_path") if cfg else None
            if base is not None and (cfg is None or adapter_of != base):
                continue
            if search and search not in repo.id.lower():
                continue
            if base is None and not search:
                continue
            tags = ["peft", "safetensors", f"base_model:adapter:{adapter_of}"] if cfg else ["safetensors"]
            out.append({"_id": hashlib.md5(repo.id.encode()).hexdigest()[:24], "id": repo.id, "likes": 3,
                        "downloads": 100 + len(out), "private": False, "tags": tags,
                        "library_name": "peft" if cfg else "transformers", "createdAt": "2025-01-01T00:00:00.000Z",
                        "modelId": repo.id})
        out.sort(key=lambda m: -m["downloads"])
        self.send(200, json.dumps(out[:limit]).encode())

    def resolve(self, repo_id, rev, path):
        repo, commit = self.find(repo_id, rev)
        if repo is None:
            return
        if repo_id in self.state.gated and not self.token_ok():
            if self.headers.get("Authorization"):
                return self.error(403, "GatedRepo", f"Access to model {repo_id} is restricted and you are not in the "
                                                    "authorized list. Visit the repo page to ask for access.")
            return self.error(401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access to "
                                                "it and be authenticated to access it. Please log in.")
        entry = repo.commits[commit].get(path)
        if entry is None:
            return self.error(404, "EntryNotFound", f"{path} does not exist on \"{rev}\"")
        data, lfs = entry
        if lfs:
            sha = hashlib.sha256(data).hexdigest()
            host = self.headers.get("Host")
            if self.server.cdn_host:  # another origin, as the Hub's file hosts are
                host = f"{self.server.cdn_host}:{self.server.server_address[1]}"
            return self.send(302, b"", {"Location": f"http://{host}/cdn/{sha}?X-Amz-Signature=fake",
                                        "X-Repo-Commit": commit, "X-Linked-Etag": f'"{sha}"',
                                        "X-Linked-Size": str(len(data)), "ETag": f'"{git_blob_sha1(data)}"'},
                             "text/plain; charset=utf-8")
        self.send_bytes(data, {"X-Repo-Commit": commit, "ETag": f'"{git_blob_sha1(data)}"'}, drop=False)

    def cdn(self, sha):
        data = self.state.blobs.get(sha)
        if data is None:
            return self.send(404, b"NoSuchKey", {}, "application/xml")
        self.send_bytes(data, {"ETag": f'"{hashlib.md5(data).hexdigest()}"'}, drop=self.command == "GET")

    def send_bytes(self, data, headers, drop):
        start = 0
        rng = self.headers.get("Range")
        status = 200
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                return self.send(416, b"", {"Content-Range": f"bytes */{len(data)}"}, "text/plain")
            status = 206
            headers = dict(headers, **{"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})
        body = data[start:]
        headers = dict(headers, **{"Accept-Ranges": "bytes", "Content-Length": str(len(body))})
        if drop and len(body) > self.state.drop_after >= 0 and self.state.take_drop():
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[:self.state.drop_after])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if drop and self.state.throttle > 0:
            return self.send_slowly(status, body, headers)
        self.send(status, body, headers, "application/octet-stream")

    def send_slowly(self, status, body, headers):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        chunk = max(1, self.state.throttle // 20)  # 20 writes a second
        for i in range(0, len(body), chunk):
            self.wfile.write(body[i:i + chunk])
            self.wfile.flush()
            time.sleep(0.05)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--repo", action="append", default=[])
    p.add_argument("--gated", action="append", default=[])
    p.add_argument("--token", default="")
    p.add_argument("--corrupt", action="append", default=[])
    p.add_argument("--drop-after", type=int, default=-1)
    p.add_argument("--drop-times", type=int, default=-1)
    p.add_argument("--throttle", type=int, default=0, help="LFS bodies at most this many bytes per second")
    p.add_argument("--log")
    p.add_argument("--cdn-host", default="", help="redirect LFS files to this host name (another origin)")
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.state = State(args)
    server.cdn_host = args.cdn_host
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
