#!/usr/bin/env python3
"""Builds the demo kit's text corpus from Debian's fortune packages.

Downloads the .debs with apt (or takes a folder that already holds them), extracts each package's
fortune files, splits them on '%' lines, cleans them (attributions, ASCII art, whitespace) and
de-duplicates, then writes a deterministic train / held-out split per language:

    OUT/en/train.txt, OUT/en/heldout.txt, OUT/de/..., OUT/es/..., OUT/it/..., OUT/bofh/...

Each file holds one fortune per record, records separated by a line with a single NUL-free
"\\n%\\n" marker so that multi-line fortunes survive. Only derived weights are ever committed; this
corpus stays out of the repository (docs/demo.md lists the sources and licenses).
"""
import argparse
import hashlib
import os
import random
import re
import subprocess
import sys
import tempfile
import unicodedata

PACKAGES = {
    "en": "fortunes",
    "de": "fortunes-de",
    "es": "fortunes-es",
    "it": "fortunes-it",
    "bofh": "fortunes-bofh-excuses",
}
# English fortunes that are mostly formatting, not prose.
SKIP_FILES = {"ascii-art", "art", "banner", "zippy"}
HELDOUT_FRACTION = 0.05


def fetch_debs(folder):
    missing = [p for p in PACKAGES.values() if not any(f.startswith(p + "_") for f in os.listdir(folder))]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=folder, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    debs = {}
    for lang, pkg in PACKAGES.items():
        found = sorted(f for f in os.listdir(folder) if f.startswith(pkg + "_") and f.endswith(".deb"))
        if not found:
            sys.exit(f"prepare_corpus: no .deb for {pkg} in {folder}")
        debs[lang] = os.path.join(folder, found[-1])
    return debs


def fortune_files(deb, root):
    subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    listing = subprocess.run(["dpkg-deb", "-c", deb], check=True, capture_output=True, text=True).stdout
    files = []
    for line in listing.splitlines():
        path = line.split()[-1].lstrip(".")
        if "/games/fortunes/" not in path or line.startswith("l") or line.startswith("d"):
            continue
        base = os.path.basename(path)
        if base.endswith((".dat", ".u8")) or "/off/" in path or base in SKIP_FILES:
            continue
        files.append(os.path.join(root, path.lstrip("/")))
    return sorted(files)


def decode(raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


ATTRIBUTION = re.compile(r"^\s*(--|—|-)\s*\S.*$")


BOFH_HEADER = re.compile(r"^\s*BOFH excuse #\d+:\s*$")


def clean(record):
    lines = [l.rstrip() for l in record.replace("\t", "    ").splitlines()]
    # "BOFH excuse #240:" headers carry no style, only a counter.
    lines = [l for l in lines if not BOFH_HEADER.match(l)]
    # Attributions ("-- Mark Twain", sometimes wrapped over two or three lines) at the end are noisy
    # for a tiny model: drop them.
    while lines and not lines[-1].strip():
        lines.pop()
    for back in range(1, min(4, len(lines)) + 1):
        if ATTRIBUTION.match(lines[-back]):
            del lines[-back:]
            break
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    text = "\n".join(l.strip() for l in lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = unicodedata.normalize("NFC", text)
    if len(text) < 12 or len(text) > 600:
        return None
    letters = sum(c.isalpha() for c in text)
    if letters < 0.6 * len(text.replace(" ", "").replace("\n", "")):
        return None  # ASCII art, tables, code
    return text


def records(path):
    with open(path, "rb") as f:
        text = decode(f.read())
    for rec in re.split(r"(?m)^%\s*$", text):
        cleaned = clean(rec)
        if cleaned:
            yield cleaned


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder for the corpus")
    ap.add_argument("--debs", help="folder holding (or receiving) the fortune .debs")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    debs_dir = args.debs or tempfile.mkdtemp(prefix="loradesk-debs-")
    os.makedirs(debs_dir, exist_ok=True)
    debs = fetch_debs(debs_dir)
    extract_root = tempfile.mkdtemp(prefix="loradesk-fortunes-")
    summary = []
    for lang, deb in debs.items():
        seen, items = set(), []
        for path in fortune_files(deb, extract_root):
            for rec in records(path):
                key = hashlib.sha1(re.sub(r"\W+", "", rec.lower()).encode()).hexdigest()
                if key not in seen:
                    seen.add(key)
                    items.append(rec)
        random.Random(f"{args.seed}-{lang}").shuffle(items)
        n_held = max(20, int(len(items) * HELDOUT_FRACTION))
        split = {"heldout": items[:n_held], "train": items[n_held:]}
        os.makedirs(os.path.join(args.out, lang), exist_ok=True)
        for name, recs in split.items():
            with open(os.path.join(args.out, lang, name + ".txt"), "w", encoding="utf-8") as f:
                f.write("\n%\n".join(recs) + "\n")
        summary.append((lang, os.path.basename(deb), len(split["train"]), len(split["heldout"]),
                        sum(len(r) for r in items)))
    for lang, deb, n_train, n_held, chars in summary:
        print(f"{lang:5s} {deb:40s} train {n_train:6d}  held-out {n_held:5d}  chars {chars:8d}")


if __name__ == "__main__":
    main()
