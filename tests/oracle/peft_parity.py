#!/usr/bin/env python3
"""PEFT oracle for LoRA: adapters made by the real `peft` library on synthetic base models, compared
with `loradeskd logits/generate --adapter DIR` (logits at every position, greedy continuations).

usage: peft_parity.py /path/to/loradeskd [--presets tiny,tiny-llama,...] [--workdir DIR]

Needs torch, transformers (5.x or 4.4x) and peft (0.17+). For every preset and configuration:
  1. loradeskd synth-model writes the base (f32 weights, so both sides compute in f32);
  2. get_peft_model(base, LoraConfig(...)); every lora_B is set to random values (fresh adapters have
     B = 0, a no-op) sized so the merged delta is ~30% of the base weights' spread; save_pretrained;
  3. logits: max |ours - peft| <= 1e-3 * max |peft| at every position of every prompt;
     greedy: our 24-token greedy continuation == peft_model.generate(do_sample=False);
     and the adapter must visibly change the logits (else the check proves nothing).
Exits non-zero when any check fails.
"""
import argparse
import json
import os
import sys
import tempfile

import torch

from oracle_common import ALL_MODULES as ALL, ids_arg, load_base, make_adapter, run

PRESETS = ["tiny", "tiny-llama", "tiny-qwen2", "tiny-mistral"]
PROMPTS = [[5], [17, 3, 250, 99, 1, 42, 7], [i * 37 % 400 for i in range(30)]]
NEW_TOKENS = 24
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# name -> LoraConfig keyword arguments (task_type CAUSAL_LM, lora_dropout 0 added below).
CONFIGS = {
    "all-modules": dict(r=8, lora_alpha=16, target_modules=ALL),
    "q-v": dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]),
    "rank-alpha-patterns": dict(r=8, lora_alpha=16, target_modules=ALL,
                                rank_pattern={"v_proj": 2, "down_proj": 4}, alpha_pattern={"o_proj": 4}),
    "rslora": dict(r=16, lora_alpha=8, use_rslora=True, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]),
    "layers-to-transform": dict(r=4, lora_alpha=8, target_modules=["gate_proj", "up_proj"], layers_to_transform=[0]),
    "regex-targets": dict(r=4, lora_alpha=4, target_modules=r".*\.layers\.1\.(self_attn\.o_proj|mlp\.down_proj)"),
}


def ours_logits(exe, model_dir, adapter_dir, ids):
    out = run([exe, "logits", "--model", model_dir, "--adapter", adapter_dir, "--prompt-ids", ids_arg(ids),
               "--all-positions", "--json"])
    return torch.tensor(json.loads(out)["logits"], dtype=torch.float32)


def ours_generate(exe, model_dir, adapter_dir, ids):
    out = run([exe, "generate", "--model", model_dir, "--adapter", adapter_dir, "--prompt-ids", ids_arg(ids),
               "--max-tokens", str(NEW_TOKENS), "--ignore-eos", "--json"])
    return json.loads(out)["output_ids"]


def check(rows, label, ok, detail):
    rows.append((label, "ok" if ok else "FAIL", detail))
    return not ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loradeskd")
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    exe = os.path.abspath(args.loradeskd)
    work = args.workdir or tempfile.mkdtemp(prefix="peft_oracle_")
    rows, failed = [], False
    for preset in args.presets.split(","):
        model_dir = os.path.join(work, preset)
        run([exe, "synth-model", "--preset", preset, "--out", model_dir, "--seed", "2", "--dtype", "f32"])
        base = load_base(model_dir)
        vocab = base.config.vocab_size
        for seed, cname in enumerate(args.configs.split(",")):
            adapter_dir = os.path.join(work, f"{preset}-{cname}")
            peft_model = make_adapter(model_dir, CONFIGS[cname], adapter_dir, seed + 100)
            for ids in PROMPTS:
                ids = [i % vocab for i in ids]
                label = f"{preset:<13} {cname:<20} len {len(ids):>3}"
                with torch.no_grad():
                    ref = peft_model(torch.tensor([ids])).logits[0].float()
                    plain = base(torch.tensor([ids])).logits[0].float()
                ours = ours_logits(exe, model_dir, adapter_dir, ids)
                if ours.shape != ref.shape:
                    failed |= check(rows, label + " logits", False, f"shape {tuple(ours.shape)} vs {tuple(ref.shape)}")
                    continue
                err = (ours - ref).abs().max().item()
                bound = 1e-3 * ref.abs().max().item()
                effect = (ref - plain).abs().max().item()
                failed |= check(rows, label + " logits", err <= bound, f"max|d|={err:.2e} bound={bound:.2e}")
                failed |= check(rows, label + " effect", effect > 10 * bound,
                                f"adapter moves logits by {effect:.2e} (must exceed {10 * bound:.2e})")
                with torch.no_grad():
                    gen = peft_model.generate(input_ids=torch.tensor([ids]),
                                              attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                              do_sample=False, max_new_tokens=NEW_TOKENS, pad_token_id=0)
                hf_ids = gen[0, len(ids):].tolist()
                our_ids = ours_generate(exe, model_dir, adapter_dir, ids)
                first = next((i for i, (a, b) in enumerate(zip(hf_ids, our_ids)) if a != b), None)
                same = hf_ids == our_ids
                detail = "identical" if same else f"first difference at {first}: peft {hf_ids} ours {our_ids}"
                failed |= check(rows, label + " greedy", same, detail)
    for label, status, detail in rows:
        print(f"{label} {status:<5} {detail}")
    print("FAILED" if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
