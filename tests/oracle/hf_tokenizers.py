#!/usr/bin/env python3
"""Tokenizer parity with Hugging Face `tokenizers` (Python, Rust core) on the GPU machine, where that
package exists: the same corpus the CI oracle uses (written by tests/js/tokenizer_corpus.mjs) encoded
by `loradeskd tokenize --batch` and by tokenizers.Tokenizer, ids compared string by string.

usage: hf_tokenizers.py /path/to/loradeskd CORPUS.json TOKENIZER_DIR... [--bench-text FILE]
With --bench-text, also times Hugging Face's single-threaded encode of FILE (best of 3 after a
warm-up), to put beside bench/tokenizer_bench's figure for loradesk measured on the same machine.
"""
import json
import subprocess
import sys
import os
import time

from tokenizers import Tokenizer


def _timed(tok, text):
    t0 = time.perf_counter()
    tok.encode(text)
    return time.perf_counter() - t0


def main():
    args = sys.argv[1:]
    bench_text = None
    if "--bench-text" in args:
        i = args.index("--bench-text")
        bench_text = open(args[i + 1], encoding="utf-8").read()
        del args[i:i + 2]
    os.environ["RAYON_NUM_THREADS"] = "1"
    loradeskd, corpus_path, dirs = args[0], args[1], args[2:]
    corpus = json.load(open(corpus_path, encoding="utf-8"))
    failures = 0
    for d in dirs:
        ref = Tokenizer.from_file(f"{d}/tokenizer.json")
        out = subprocess.run([loradeskd, "tokenize", "--tokenizer", d, "--batch", corpus_path, "--json"],
                             check=True, capture_output=True, text=True).stdout
        ours = json.loads(out)
        bad = [i for i, s in enumerate(corpus) if ref.encode(s, add_special_tokens=True).ids != ours[i]]
        failures += len(bad)
        print(f"{d}: {len(corpus) - len(bad)}/{len(corpus)} identical" + (f"; first mismatch #{bad[0]}: {corpus[bad[0]]!r}" if bad else ""))
        if bench_text:
            n = len(ref.encode(bench_text).ids)
            best = min(_timed(ref, bench_text) for _ in range(3))
            print(f"{d}: Hugging Face tokenizers single thread: {n} tokens, {n / best:,.0f} tok/s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
