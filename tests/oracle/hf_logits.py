#!/usr/bin/env python3
"""HF oracle for the CPU runner: compares `loradeskd logits` and `loradeskd generate` with
transformers on synthetic checkpoints of every architecture we serve.

usage: hf_logits.py /path/to/loradeskd [--presets tiny,tiny-llama,...] [--workdir DIR] [--dtype f32]

Needs torch and transformers (5.x or 4.4x). Exits non-zero when any check fails:
  logits: max |ours - hf| <= 1e-3 * max |hf| at every position of every prompt
  greedy: our 32-token greedy continuation == model.generate(do_sample=False)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM

PRESETS = ["tiny", "tiny-llama", "tiny-qwen2", "tiny-mistral"]
PROMPTS = [[5], [17, 3, 250, 99, 1, 42, 7], list(range(10, 60, 3)), [i * 37 % 400 for i in range(40)]]
NEW_TOKENS = 32


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.stdout


def ours_logits(exe, model_dir, ids):
    out = run([exe, "logits", "--model", model_dir, "--prompt-ids", ",".join(map(str, ids)), "--all-positions", "--json"])
    return torch.tensor(json.loads(out)["logits"], dtype=torch.float32)


def ours_generate(exe, model_dir, ids):
    out = run([exe, "generate", "--model", model_dir, "--prompt-ids", ",".join(map(str, ids)),
               "--max-tokens", str(NEW_TOKENS), "--ignore-eos", "--json"])
    return json.loads(out)["output_ids"]


def hf_model(model_dir):
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    except TypeError:  # transformers 4.x spells it torch_dtype
        model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    # Our side runs with --ignore-eos; HF must not stop (or suppress EOS) either.
    model.generation_config.eos_token_id = None
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loradeskd")
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--dtype", default="bf16", help="weight dtype of the synthetic checkpoints")
    args = ap.parse_args()
    exe = os.path.abspath(args.loradeskd)
    work = args.workdir or tempfile.mkdtemp(prefix="hf_oracle_")
    rows, failed = [], False
    for preset in args.presets.split(","):
        model_dir = os.path.join(work, preset)
        run([exe, "synth-model", "--preset", preset, "--out", model_dir, "--seed", "1", "--dtype", args.dtype])
        model = hf_model(model_dir)
        vocab = model.config.vocab_size
        for ids in PROMPTS:
            ids = [i % vocab for i in ids]
            with torch.no_grad():
                ref = model(torch.tensor([ids])).logits[0].float()
            ours = ours_logits(exe, model_dir, ids)
            if ours.shape != ref.shape:
                rows.append((preset, len(ids), "shape", f"{tuple(ours.shape)} vs {tuple(ref.shape)}", "FAIL"))
                failed = True
                continue
            err = (ours - ref).abs().max().item()
            bound = 1e-3 * ref.abs().max().item()
            ok = err <= bound
            failed |= not ok
            rows.append((preset, len(ids), "logits", f"max|d|={err:.2e} bound={bound:.2e}", "ok" if ok else "FAIL"))

            with torch.no_grad():
                gen = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                     do_sample=False, max_new_tokens=NEW_TOKENS, pad_token_id=0)
            hf_ids = gen[0, len(ids):].tolist()
            our_ids = ours_generate(exe, model_dir, ids)
            same = hf_ids == our_ids
            first = next((i for i, (a, b) in enumerate(zip(hf_ids, our_ids)) if a != b), None)
            failed |= not same
            detail = "identical" if same else f"first difference at {first}: hf {hf_ids[:first + 1] if first is not None else hf_ids} ours {our_ids[:first + 1] if first is not None else our_ids}"
            rows.append((preset, len(ids), "greedy", detail, "ok" if same else "FAIL"))
    print(f"{'preset':<14} {'len':>4} {'check':<7} {'result':<6} detail")
    for preset, n, check, detail, status in rows:
        print(f"{preset:<14} {n:>4} {check:<7} {status:<6} {detail}")
    print("FAILED" if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
