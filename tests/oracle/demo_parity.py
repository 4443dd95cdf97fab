#!/usr/bin/env python3
"""Demo kit parity: loradesk's greedy tokens equal transformers + peft greedy tokens for 64 tokens,
for the base model and every adapter (a trained model has peaked distributions, so this is a robust
end-to-end check of the model, the adapters and the chat template).

usage: demo_parity.py /path/to/loradeskd [--kit resources/demo] [--devices cpu,cuda]
Runs on the GPU machine (torch, transformers, peft). Prints a table; exits non-zero on a mismatch.
"""
import argparse
import json
import os
import subprocess
import sys

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = ["Tell me a fortune.", "Say something wise.", "Give me a quote.", "What do you have for me today?"]
N = 64


def ours(loradeskd, model_dir, adapter_dir, ids, device):
    cmd = [loradeskd, "generate", "--model", model_dir, "--prompt-ids", ",".join(map(str, ids)),
           "--max-tokens", str(N), "--device", device, "--json"]
    if adapter_dir:
        cmd += ["--adapter", adapter_dir]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["output_ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loradeskd")
    ap.add_argument("--kit", default="resources/demo")
    ap.add_argument("--devices", default="cpu,cuda")
    args = ap.parse_args()
    model_dir = os.path.join(args.kit, "fortune-6m")
    tok = AutoTokenizer.from_pretrained(model_dir)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    names = [None] + sorted(os.listdir(os.path.join(args.kit, "adapters")))
    failures = 0
    print(f"{'adapter':8s} {'prompt':32s} " + " ".join(f"{d:>6s}" for d in args.devices.split(",")))
    for name in names:
        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to("cuda").eval()
        adapter_dir = os.path.join(args.kit, "adapters", name) if name else None
        model = PeftModel.from_pretrained(base, adapter_dir).eval() if name else base
        for prompt in PROMPTS:
            text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                           add_generation_prompt=True)
            ids = tok(text, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                out = model.generate(input_ids=torch.tensor([ids], device="cuda"), max_new_tokens=N,
                                     do_sample=False, eos_token_id=eos, pad_token_id=tok.pad_token_id)
            ref = out[0, len(ids):].tolist()
            cells = []
            for device in args.devices.split(","):
                got = ours(args.loradeskd, model_dir, adapter_dir, ids, device)
                same = got == ref
                failures += 0 if same else 1
                cells.append("equal" if same else f"@{next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))}")
            print(f"{name or 'base':8s} {prompt:32s} " + " ".join(f"{c:>6s}" for c in cells) + f"  ({len(ref)} tokens)")
    print(f"{'all equal' if failures == 0 else str(failures) + ' mismatches'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
