#!/usr/bin/env python3
"""The demo kit's adapters are applied, and applied to the right requests, when they share batches.

Against a running `loradeskd serve` on the demo kit (LORADESK_BASE_URL), sends the same English
requests to the base model and to the de/es/it adapters — all at once, so they share batches — and
counts common function words of each language in the answers. Each adapter's answers must use its
language's words far more often than the base model's answers do. The test fails if adapters are
ignored, or mixed up in a batch (the German adapter answering in Spanish, say).
"""
import json
import os
import re
import sys
import threading
import urllib.request

BASE = os.environ["LORADESK_BASE_URL"].rstrip("/")
PROMPTS = ["Tell me a fortune.", "Say something wise.", "Give me a quote.", "Tell me something.",
           "What do you have for me today?", "Share a thought."]
WORDS = {
    "de": {"der", "die", "das", "und", "ist", "nicht", "ein", "eine", "ich", "zu", "mit", "sich", "man", "es", "den", "sie"},
    "es": {"el", "la", "que", "de", "y", "no", "es", "en", "los", "se", "un", "una", "por", "las", "lo", "con"},
    "it": {"il", "che", "di", "e'", "non", "la", "un", "una", "per", "sono", "della", "si", "le", "con", "ma", "come"},
}


def ask(model, prompt, seed):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 48,
                       "temperature": 0.3, "seed": seed}).encode()
    req = urllib.request.Request(BASE + "/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)["choices"][0]["message"]["content"]


def rate(texts, lang):
    tokens = [t for text in texts for t in re.findall(r"[\w']+", text.lower())]
    return sum(t in WORDS[lang] for t in tokens) / max(1, len(tokens))


def main():
    models = ["fortune-6m", "de", "es", "it"]
    answers = {m: [] for m in models}
    lock = threading.Lock()

    def worker(model, prompt, seed):
        text = ask(model, prompt, seed)
        with lock:
            answers[model].append(text)

    threads = [threading.Thread(target=worker, args=(m, p, s)) for m in models for s, p in enumerate(PROMPTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = False
    for lang in ["de", "es", "it"]:
        own, base = rate(answers[lang], lang), rate(answers["fortune-6m"], lang)
        others = max(rate(answers[o], lang) for o in ["de", "es", "it"] if o != lang)
        ok = own >= 0.15 and own >= 3 * max(base, 0.01) and own > 1.5 * others
        failed |= not ok
        print(f"{lang}: {own:.2f} of the adapter's words are common {lang} words; base {base:.2f}; "
              f"other adapters at most {others:.2f} -> {'ok' if ok else 'FAIL'}")
        print("   sample:", answers[lang][0][:100].replace("\n", " "))
    print("base sample:", answers["fortune-6m"][0][:100].replace("\n", " "))
    print("1 passed, 0 failed" if not failed else "0 passed, 1 failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
