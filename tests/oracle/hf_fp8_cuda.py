#!/usr/bin/env python3
"""FP8 block-wise checkpoints: loradesk against transformers' own FP8 loader on the GPU (issue 21).

For `synth-model --quant fp8` checkpoints (128x128 weight_scale_inv blocks, as Qwen3-FP8 and DeepSeek publish),
loads the same folder with transformers (its fine-grained FP8 integration reads quantization_config) and
compares the logits of a prompt with:
  - loradesk's CPU runner (the oracle: weights dequantized to f32 exactly, f32 compute),
  - loradesk's CUDA runner (packed fp8 weights, quant_gemv / quant_dequantize, bf16 activations).
transformers runs its FP8 path when its `kernels` package is installed; that path also quantizes activations to
fp8 per 128-element group, so the check is that the CUDA runner is no further from the exact f32 result than
transformers' FP8 path is (factor 2, as hf_bf16_cuda.py asks of bf16). Without `kernels` (the GPU machine has no
network to install it), transformers' loader dequantizes the FP8 weights itself (FineGrainedFP8Config(dequantize=
True)) and runs in f32: then its logits must match the CPU runner's within 1e-2 (a misread scale block or layout
would be off by order 1), and the CUDA runner must stay within the bf16 bound of hf_bf16_cuda.py (3e-2).

usage: hf_fp8_cuda.py /path/to/loradeskd [--workdir DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM, FineGrainedFP8Config

from oracle_common import loradesk_logits, rel

# Presets whose in_features are whole 128-blocks or not: transformers' dequantizing loader refuses a partial input
# block (tiny-qwen2's 352-wide down_proj), which Hub FP8 releases never have; tiny has one (o_proj, 192 inputs).
CASES = [("tiny", 40), ("qwen3-0.6b", 24)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loradeskd")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="fp8-")
    failures = 0
    print(f"{'preset':12s} {'len':>4s} {'cuda-vs-f32':>12s} {'hffp8-vs-f32':>13s} {'cuda-vs-hffp8':>14s} "
          f"{'top1 cuda/hf':>13s}")
    for preset, n in CASES:
        d = os.path.join(work, preset)
        if not os.path.exists(os.path.join(d, "config.json")):
            subprocess.run([args.loradeskd, "synth-model", "--preset", preset, "--out", d, "--seed", "3", "--quant",
                            "fp8"], check=True, capture_output=True)
        hf = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, device_map="cuda").eval()
        kinds = sorted({type(m).__name__ for m in hf.modules() if "fp8" in type(m).__name__.lower()})
        vocab = hf.config.vocab_size
        g = torch.Generator().manual_seed(11)
        ids = torch.randint(0, min(vocab, 5000), (n,), generator=g).tolist()
        mode = "fp8 kernels"
        try:
            with torch.no_grad():
                hb = hf(input_ids=torch.tensor([ids], device="cuda")).logits[0].float().cpu()
        except ImportError as e:  # transformers' FP8 matmul lives in the `kernels` package
            print(f"{preset}: transformers' FP8 path unavailable ({str(e).splitlines()[0][:80]}...); "
                  "using its loader's own dequantization in f32")
            del hf
            hf = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, device_map="cuda",
                                                      quantization_config=FineGrainedFP8Config(dequantize=True)).eval()
            mode, kinds = "dequantized by transformers, f32", ["dequantize=True"]
            with torch.no_grad():
                hb = hf(input_ids=torch.tensor([ids], device="cuda")).logits[0].float().cpu()
        ref = loradesk_logits(args.loradeskd, d, ids, "cpu")
        got = loradesk_logits(args.loradeskd, d, ids, "cuda")
        r_cuda, r_hf = rel(got, ref), rel(hb, ref)
        top1 = (got.argmax(-1) == ref.argmax(-1)).float().mean().item()
        top1_hf = (hb.argmax(-1) == ref.argmax(-1)).float().mean().item()
        if mode == "fp8 kernels":
            ok = bool(kinds) and r_cuda <= 2 * r_hf + 1e-3 and r_hf < 0.1
        else:
            ok = r_hf < 1e-2 and r_cuda < 3e-2
        failures += 0 if ok else 1
        print(f"{preset:12s} {n:4d} {r_cuda:12.2e} {r_hf:13.2e} {rel(got, hb):14.2e} {top1:6.0%}/{top1_hf:<6.0%}"
              f" transformers: {mode} ({', '.join(kinds) or 'not loaded as FP8'}){'' if ok else '  FAIL'}")
        del hf
        torch.cuda.empty_cache()
    print("all checks passed" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
