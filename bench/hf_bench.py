#!/usr/bin/env python3
# Hugging Face transformers baseline for `loradeskd bench --device cuda`: the same checkpoint in bf16 with
# AutoModelForCausalLM, single-prompt prefill (TTFT) and greedy `generate` decode at several batch sizes
# after the same synthetic prompt. Decode tokens/s = batch x (new - 1) / (generate time - prefill time).
# Prints one JSON object per measurement. Usage: hf_bench.py MODEL_DIR [--batch 1,8] [--new-tokens 64]
import argparse
import json
import time

import torch
from transformers import AutoModelForCausalLM


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", default="1")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--prefill-lens", default="512")
    a = ap.parse_args()
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16).cuda().eval()
    vocab = min(model.config.vocab_size, 4096)

    def prompt(n, b):  # the token ids loradeskd bench uses
        ids = [(i * 2654435761) % (2**32) % vocab for i in range(n)]
        return torch.tensor([ids] * b, device="cuda")

    print(json.dumps({"engine": "transformers", "model": a.model, "torch": torch.__version__}), flush=True)
    with torch.inference_mode():
        for n in [int(x) for x in a.prefill_lens.split(",")]:
            model(prompt(n, 1))  # warm-up
            _, s = timed(lambda: model(prompt(n, 1)).logits[:, -1].argmax(-1))
            print(json.dumps({"engine": "transformers", "phase": "prefill", "prompt_len": n, "ttft_ms": 1e3 * s,
                              "tokens_per_s": n / s}), flush=True)
        for b in [int(x) for x in a.batch.split(",")]:
            x = prompt(a.prompt_len, b)
            mask = torch.ones_like(x)
            gen = lambda k: model.generate(x, attention_mask=mask, max_new_tokens=k, min_new_tokens=k, do_sample=False,
                                           pad_token_id=0, eos_token_id=None)
            gen(2)  # warm-up
            _, t1 = timed(lambda: gen(1))
            out, tn = timed(lambda: gen(a.new_tokens))
            assert out.shape[1] == a.prompt_len + a.new_tokens
            steps = a.new_tokens - 1
            print(json.dumps({"engine": "transformers", "phase": "decode", "batch": b, "prompt_len": a.prompt_len,
                              "new_tokens": a.new_tokens, "tokens_per_s": b * steps / (tn - t1),
                              "ms_per_step": 1e3 * (tn - t1) / steps}), flush=True)


if __name__ == "__main__":
    main()
