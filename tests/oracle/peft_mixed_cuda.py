#!/usr/bin/env python3
"""CUDA runner with LoRA adapters vs PEFT on the GPU, one adapter at a time and in mixed-adapter batches
(issue #9: whole-model logits against PEFT on the GPU for mixed-adapter batches).

usage: peft_mixed_cuda.py /path/to/loradeskd [--presets tiny,...,qwen3-0.6b] [--workdir DIR]

Needs torch, transformers, peft and a GPU. For every preset (the four tiny architectures and Qwen3-0.6B shapes):
  1. `loradeskd synth-model` writes a bf16 base; three PEFT adapters with different configurations (rank 4
     on all seven projections, rank 8 on q/v, rank 16 with rank/alpha patterns) are created by the real
     `peft` with non-zero random B and saved;
  2. logits: per adapter, `loradeskd logits --device cuda --adapter DIR --all-positions` against the
     PeftModel on the GPU in float32 (reference) and in bf16 (noise floor, base and LoRA weights in bf16 as
     in our runner). Relative L2 ‖Δ‖/‖ref‖ of ours-vs-f32 must be <= 2 x (peft bf16 vs f32) + 1e-3, and
     the adapter must move the f32 logits by more than twice that bound (else the check proves nothing);
  3. mixed batch: one `loradeskd generate --device cuda --requests-file F` run of 12 greedy requests
     (24 new tokens, EOS ignored) interleaving base and the three adapters with prompt lengths 1..47,
     which the engine's scheduler serves concurrently (all are submitted before any is drained; base
     needs no LoRA slot, the three adapters fit --max-loras 4), against a float32 PEFT argmax loop per
     request (set_adapter / disable_adapter). Tokens must be identical, except from a first divergence
     where the f32 reference's top-2 margin is below 2 % of its logit range (a near-tie, reported).
Prints one table per check and exits non-zero when any check fails.
"""
import argparse
import json
import os
import sys
import tempfile

import torch
from peft import PeftModel

from oracle_common import ALL_MODULES, ids_arg, load_base, make_adapter, rel, run, top2_margin

PROMPT_LEN = {"tiny": 40, "tiny-llama": 40, "tiny-qwen2": 40, "tiny-mistral": 40, "qwen3-0.6b": 24}
# name -> LoraConfig keyword arguments (task_type CAUSAL_LM, lora_dropout 0 added by make_adapter).
ADAPTERS = {
    "r4-all": dict(r=4, lora_alpha=8, target_modules=ALL_MODULES),
    "r8-qv": dict(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]),
    "r16-patterns": dict(r=16, lora_alpha=16, target_modules=ALL_MODULES, rank_pattern={"v_proj": 4, "down_proj": 8},
                         alpha_pattern={"o_proj": 4}),
}
# Mixed batch: request i uses MIXED_ROUTE[i % 4] (None = base) and a prompt of MIXED_LENGTHS[i] tokens.
MIXED_ROUTE = [None] + list(ADAPTERS)
MIXED_LENGTHS = [3, 17, 40, 9, 28, 1, 33, 12, 5, 21, 47, 8]
NEW_TOKENS = 24
NEAR_TIE = 0.02  # top-2 margin / logit range below which either token is a legitimate bf16 pick


def random_ids(n, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, min(vocab, 5000), (n,), generator=g).tolist()


def logits_cmd(exe, model_dir, adapter_dir, ids, device="cuda"):
    cmd = [exe, "logits", "--model", model_dir, "--device", device, "--prompt-ids", ids_arg(ids), "--all-positions",
           "--json"]
    return cmd + (["--adapter", adapter_dir] if adapter_dir else [])


def ours_logits(exe, model_dir, adapter_dir, ids, device="cuda"):
    out = run(logits_cmd(exe, model_dir, adapter_dir, ids, device))
    return torch.tensor(json.loads(out)["logits"], dtype=torch.float32)


def mixed_requests(vocab):
    """The mixed batch: [(id, adapter name or None, prompt ids)], adapters interleaved in file order."""
    return [(f"req{i}", MIXED_ROUTE[i % len(MIXED_ROUTE)], random_ids(n, vocab, 1000 + i))
            for i, n in enumerate(MIXED_LENGTHS)]


def write_requests(path, requests):
    with open(path, "w") as f:
        for rid, adapter, ids in requests:
            f.write(json.dumps({"id": rid, "adapter": adapter, "prompt_ids": ids, "max_tokens": NEW_TOKENS,
                                "temperature": 0, "ignore_eos": True}) + "\n")


def mixed_cmd(exe, model_dir, adapter_dirs, requests_file, device="cuda"):
    cmd = [exe, "generate", "--model", model_dir, "--device", device, "--requests-file", requests_file,
           "--max-loras", str(len(adapter_dirs) + 1), "--kv-memory", "1", "--json"]
    for name, d in adapter_dirs.items():
        cmd += ["--adapter", f"{name}={d}"]
    return cmd


def parse_mixed(stdout):
    """generate --requests-file prints one JSON object per request, in file order: id -> that object."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return {str(r["id"]): r for r in lines}


def peft_on_gpu(model_dir, adapter_dirs, dtype):
    """One PeftModel on the GPU holding every adapter; bf16 casts the LoRA weights too (PEFT keeps them f32)."""
    model = None
    for name, d in adapter_dirs.items():
        if model is None:
            model = PeftModel.from_pretrained(load_base(model_dir, dtype, "cuda"), d, adapter_name=name)
        else:
            model.load_adapter(d, adapter_name=name)
    model = model.to(dtype)
    model.eval()
    return model


def forward(model, adapter, ids):
    """Logits [len, vocab] (f32, CPU) with `adapter` active, or the base when adapter is None."""
    x = torch.tensor([ids], device="cuda")
    with torch.no_grad():
        if adapter is None:
            with model.disable_adapter():
                return model(input_ids=x).logits[0].float().cpu()
        model.set_adapter(adapter)
        return model(input_ids=x).logits[0].float().cpu()


def greedy(model, adapter, ids, n):
    """Plain argmax loop (EOS neither stops nor is masked, as ignore_eos): tokens and each step's logits."""
    seq, toks, steps = list(ids), [], []
    for _ in range(n):
        last = forward(model, adapter, seq)[-1]
        steps.append(last)
        toks.append(int(last.argmax()))
        seq.append(toks[-1])
    return toks, steps


def check_logits(exe, preset, model_dir, adapter_dirs, f32, b16, vocab):
    """Table (a); returns the number of failures."""
    failures = 0
    ids = random_ids(PROMPT_LEN[preset], vocab, 11)
    base_ref = forward(f32, None, ids)
    for name in [None] + list(adapter_dirs):
        label = f"{preset:12s} {name or 'base':13s} {len(ids):4d}"
        ref, hb = forward(f32, name, ids), forward(b16, name, ids)
        try:
            got = ours_logits(exe, model_dir, adapter_dirs.get(name), ids)
        except RuntimeError as e:
            print(f"{label}  FAIL {e}")
            failures += 1
            continue
        if got.shape != ref.shape:
            print(f"{label}  FAIL logits shape {tuple(got.shape)}, PEFT {tuple(ref.shape)}")
            failures += 1
            continue
        r_ours, r_hf = rel(got, ref), rel(hb, ref)
        bound = 2 * r_hf + 1e-3
        effect = rel(ref, base_ref) if name else float("nan")
        ok = r_ours <= bound and (name is None or effect > 2 * bound)
        why = "" if ok else (f"  FAIL ours-vs-f32 {r_ours:.2e} > bound {bound:.2e}" if r_ours > bound
                             else f"  FAIL adapter effect {effect:.2e} <= 2 x bound {2 * bound:.2e}")
        top1 = (got.argmax(-1) == ref.argmax(-1)).float().mean().item()
        print(f"{label} {r_ours:12.2e} {r_hf:15.2e} {rel(got, hb):16.2e} {effect:10.2e} {top1:10.2%}{why}")
        failures += 0 if ok else 1
    return failures


def check_mixed(exe, preset, model_dir, adapter_dirs, f32, vocab, work):
    """Table (b); returns the number of failures."""
    requests = mixed_requests(vocab)
    path = os.path.join(work, f"{preset}-mixed.jsonl")
    write_requests(path, requests)
    try:
        results = parse_mixed(run(mixed_cmd(exe, model_dir, adapter_dirs, path)))
    except RuntimeError as e:
        print(f"{preset:12s} FAIL the mixed-batch run failed: {e}")
        return 1
    failures = 0
    for rid, adapter, ids in requests:
        label = f"{preset:12s} {rid:6s} {adapter or 'base':13s} {len(ids):4d}"
        got = results.get(rid)
        if got is None or "error" in got:
            print(f"{label} FAIL {'missing from the output' if got is None else got['error']}")
            failures += 1
            continue
        ours = got["output_ids"]
        ref, steps = greedy(f32, adapter, ids, NEW_TOKENS)
        div = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), None)
        if div is None and len(ours) == len(ref):
            print(f"{label} identical")
            continue
        if div is None:
            print(f"{label} FAIL {len(ours)} tokens (finish_reason {got.get('finish_reason')}), expected {len(ref)}")
            failures += 1
            continue
        margin = top2_margin(steps[div])
        near_tie = margin < NEAR_TIE
        print(f"{label} diverges at {div} ({'near-tie' if near_tie else 'NOT a near-tie'}, margin {margin:.4f})"
              f"{'' if near_tie else f'  FAIL ours {ours} peft {ref}'}")
        failures += 0 if near_tie else 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loradeskd")
    ap.add_argument("--presets", default=",".join(PROMPT_LEN))
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    exe = os.path.abspath(args.loradeskd)
    work = args.workdir or tempfile.mkdtemp(prefix="peft-mixed-")
    presets = args.presets.split(",")
    for p in presets:
        if p not in PROMPT_LEN:
            ap.error(f"unknown preset '{p}' (choose from {', '.join(PROMPT_LEN)})")
    failures = 0
    for preset in presets:
        model_dir = os.path.join(work, preset)
        if not os.path.exists(os.path.join(model_dir, "config.json")):
            run([exe, "synth-model", "--preset", preset, "--out", model_dir, "--seed", "3"])
        adapter_dirs = {}
        for k, (name, config) in enumerate(ADAPTERS.items()):
            adapter_dirs[name] = os.path.join(work, f"{preset}-{name}")
            make_adapter(model_dir, config, adapter_dirs[name], 200 + k)  # the CPU model it returns is dropped
        f32 = peft_on_gpu(model_dir, adapter_dirs, torch.float32)
        b16 = peft_on_gpu(model_dir, adapter_dirs, torch.bfloat16)
        vocab = f32.get_base_model().config.vocab_size
        print(f"\n(a) logits, {preset}: relative L2 vs PEFT float32 on the GPU")
        print(f"{'preset':12s} {'adapter':13s} {'len':>4s} {'ours-vs-f32':>12s} {'peftbf16-vs-f32':>15s} "
              f"{'ours-vs-peftbf16':>16s} {'effect':>10s} {'top1 agree':>10s}")
        failures += check_logits(exe, preset, model_dir, adapter_dirs, f32, b16, vocab)
        del b16
        torch.cuda.empty_cache()
        print(f"\n(b) mixed batch, {preset}: {len(MIXED_LENGTHS)} requests in one generate run, "
              f"{NEW_TOKENS} greedy tokens vs PEFT float32")
        print(f"{'preset':12s} {'req':6s} {'adapter':13s} {'len':>4s} result")
        failures += check_mixed(exe, preset, model_dir, adapter_dirs, f32, vocab, work)
        del f32
        torch.cuda.empty_cache()
    print("\nall checks passed" if failures == 0 else f"\n{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
