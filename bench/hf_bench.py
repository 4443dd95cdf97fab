#!/usr/bin/env python3
# Hugging Face transformers (+ PEFT) baseline for `loradeskd bench`: the same checkpoint in bf16 with
# AutoModelForCausalLM, single-prompt prefill (TTFT) and greedy `generate` decode at several batch sizes
# after the same synthetic prompt. Decode rate = (t(N new tokens) - t(1 new token)) / (N - 1) steps, so the
# prefill is not counted. With --adapters N --lora-rank R the model is wrapped in-process with N PEFT LoRA
# adapters on all seven projections (random nonzero B, so they do work) and measures (a) batch 1 on one adapter
# beside the base model and (b) each --batch size spread round-robin over the N adapters in one batch with
# PEFT's mixed-adapter inference (generate(..., adapter_names=[...])). One JSON object per measurement.
# Usage: hf_bench.py MODEL_DIR [--batch 1,8] [--new-tokens 64] [--adapters 4 --lora-rank 16] [--device cpu]
import argparse
import json
import time

import torch
from transformers import AutoModelForCausalLM

LORA_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def make_timer(device):
    def sync():
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def timed(fn):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        return out, time.perf_counter() - t0

    return timed


def add_lora_adapters(model, n, rank, seed):
    """Wraps model with n LoRA adapters a0..a{n-1} (alpha = 2 rank, like `loradeskd synth-adapter`)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=LORA_MODULES, bias="none")
    model = get_peft_model(model, config, adapter_name="a0")
    for i in range(1, n):
        model.add_adapter(f"a{i}", config)
    gen = torch.Generator().manual_seed(seed)
    dtype = model.get_base_model().dtype
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" not in name:
                continue
            # PEFT keeps adapters in f32 over a bf16 base (for training); serve them in the base dtype, as loradesk
            # does. B is zero at init (the adapter would be a no-op): give it small random values.
            std = 0.02 if "lora_B" in name else 1.0 / p.shape[1] ** 0.5
            p.data = (torch.randn(p.shape, generator=gen) * std).to(device=p.device, dtype=dtype)
    n_lora = sum(1 for name, _ in model.named_parameters() if "lora_B" in name)
    assert n_lora == n * len(LORA_MODULES) * model.config.num_hidden_layers, f"expected LoRA on all 7 modules, got {n_lora}"
    return model.eval()


def decode_rate(timed, model, x, new_tokens, **kw):
    """ms per decode step and tokens/s for x's batch: (t(new_tokens) - t(1)) / (new_tokens - 1)."""
    mask = torch.ones_like(x)

    def gen(k):
        return model.generate(input_ids=x, attention_mask=mask, max_new_tokens=k, min_new_tokens=k, do_sample=False,
                              pad_token_id=0, eos_token_id=None, **kw)

    gen(2)  # warm-up
    _, t1 = timed(lambda: gen(1))
    out, tn = timed(lambda: gen(new_tokens))
    assert out.shape[1] == x.shape[1] + new_tokens
    steps = new_tokens - 1
    return 1e3 * (tn - t1) / steps, x.shape[0] * steps / (tn - t1), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", default="1")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--prefill-lens", default="512")
    ap.add_argument("--adapters", type=int, default=0, help="PEFT LoRA adapters to create (0: base model only)")
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    if a.new_tokens < 2:
        ap.error("--new-tokens must be at least 2 (the decode rate is a difference of two generate calls)")
    if a.adapters < 0 or a.lora_rank < 1:
        ap.error("--adapters must be >= 0 and --lora-rank >= 1")
    timed = make_timer(a.device)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16).to(a.device).eval()
    vocab = min(model.config.vocab_size, 4096)
    batches = [int(x) for x in a.batch.split(",")]

    def prompt(n, b):  # the token ids loradeskd bench uses
        ids = [(i * 2654435761) % (2**32) % vocab for i in range(n)]
        return torch.tensor([ids] * b, device=a.device)

    engine = "transformers"
    print(json.dumps({"engine": engine, "model": a.model, "torch": torch.__version__, "device": a.device}), flush=True)
    with torch.inference_mode():
        if a.adapters == 0:
            for n in [int(x) for x in a.prefill_lens.split(",")]:
                model(prompt(n, 1))  # warm-up
                _, s = timed(lambda: model(prompt(n, 1)).logits[:, -1].argmax(-1))
                print(json.dumps({"engine": engine, "phase": "prefill", "prompt_len": n, "ttft_ms": 1e3 * s,
                                  "tokens_per_s": n / s}), flush=True)
            for b in batches:
                ms, tps, _ = decode_rate(timed, model, prompt(a.prompt_len, b), a.new_tokens)
                print(json.dumps({"engine": engine, "phase": "decode", "batch": b, "prompt_len": a.prompt_len,
                                  "new_tokens": a.new_tokens, "tokens_per_s": tps, "ms_per_step": ms}), flush=True)
            return
        import peft

        model = add_lora_adapters(model, a.adapters, a.lora_rank, seed=1)
        engine = "transformers+peft"
        common = {"engine": engine, "peft": peft.__version__, "prompt_len": a.prompt_len, "new_tokens": a.new_tokens,
                  "lora_rank": a.lora_rank, "lora_modules": len(LORA_MODULES)}
        # (a) batch 1: the base model (adapters disabled) and one adapter active.
        x = prompt(a.prompt_len, 1)
        with model.disable_adapter():
            base_ms, base_tps, base_out = decode_rate(timed, model, x, a.new_tokens)
        model.set_adapter("a0")
        ms, tps, lora_out = decode_rate(timed, model, x, a.new_tokens)
        print(json.dumps({**common, "phase": "decode_one_adapter", "batch": 1, "adapters": 1, "tokens_per_s": tps,
                          "ms_per_step": ms, "base_tokens_per_s": base_tps, "base_ms_per_step": base_ms,
                          "lora_changed_tokens": bool((lora_out != base_out).any())}), flush=True)
        # (b) mixed batches: row i uses adapter a{i % N}, all in one generate call.
        for b in batches:
            names = [f"a{i % a.adapters}" for i in range(b)]
            ms, tps, _ = decode_rate(timed, model, prompt(a.prompt_len, b), a.new_tokens, adapter_names=names)
            print(json.dumps({**common, "phase": "decode_mixed_adapters", "batch": b, "adapters": min(b, a.adapters),
                              "tokens_per_s": tps, "ms_per_step": ms}), flush=True)


if __name__ == "__main__":
    main()
