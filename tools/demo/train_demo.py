#!/usr/bin/env python3
"""Trains loradesk's demo kit on the GPU machine: a byte-level BPE tokenizer, a small Qwen3-architecture
base model on English fortunes, and one PEFT LoRA adapter per other corpus (de, es, it, bofh).

Input: the corpus written by prepare_corpus.py. Output (OUT): model/ (a normal Hugging Face model
folder, bf16 safetensors) and adapters/<lang>/ (normal PEFT adapter folders), plus report.json with
held-out perplexities and sample generations. Seeds are fixed; see docs/demo.md for the exact run.
"""
import argparse
import json
import math
import os
import random
import time

import torch
from peft import LoraConfig, get_peft_model
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen's pre-tokenizer pattern (single digits), so the demo exercises the same code path as Qwen3.
SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
         r"|\s+(?!\S)|\s+")
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# The same English requests are answered in each adapter's language/style, so an adapter visibly
# changes the answer to an identical prompt.
PROMPTS = ["Tell me a fortune.", "Say something wise.", "Give me a quote.", "Tell me something.",
           "What do you have for me today?", "Share a thought.", "Any words of wisdom?", "Surprise me."]
LANGS = ["en", "de", "es", "it", "bofh"]


def read_records(path):
    with open(path, encoding="utf-8") as f:
        return [r.strip("\n") for r in f.read().split("\n%\n") if r.strip()]


def train_tokenizer(texts, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def encode_examples(tok, records, rng):
    """Half chat turns (English request -> record), half plain text; each ends with its EOS."""
    ids = []
    for rec in records:
        if rng.random() < 0.5:
            text = tok.apply_chat_template([{"role": "user", "content": rng.choice(PROMPTS)},
                                            {"role": "assistant", "content": rec}], tokenize=False)
        else:
            text = rec + "<|endoftext|>"
        ids.extend(tok(text, add_special_tokens=False)["input_ids"])
    return ids


def batches(ids, seq_len, batch_size, steps, rng, device):
    data = torch.tensor(ids, dtype=torch.long)
    n = len(ids) - seq_len - 1
    for _ in range(steps):
        starts = [rng.randrange(n) for _ in range(batch_size)]
        x = torch.stack([data[s:s + seq_len + 1] for s in starts]).to(device)
        yield x[:, :-1], x[:, 1:]


def train(model, params, ids, steps, lr, batch_size, seq_len, seed, device, label, evaluate, eval_every):
    """AdamW with warmup + cosine; keeps the parameters that scored best on held-out text (early
    stopping), since these corpora are small enough for a few-million-parameter model to memorise."""
    rng = random.Random(seed)
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) *
                                              0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
    best, best_state, t0 = float("inf"), None, time.time()
    for step, (x, y) in enumerate(batches(ids, seq_len, batch_size, steps, rng, device)):
        model.train()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if (step + 1) % eval_every == 0 or step == steps - 1:
            model.eval()
            ppl = evaluate()
            if ppl < best:
                best, best_state = ppl, [p.detach().clone() for p in params]
            print(f"[{label}] step {step + 1:5d} loss {loss.item():.3f} held-out ppl {ppl:.1f} "
                  f"(best {best:.1f}, {time.time() - t0:.0f}s)", flush=True)
    with torch.no_grad():
        for p, b in zip(params, best_state):
            p.copy_(b)
    model.eval()
    return best


@torch.no_grad()
def perplexity(model, tok, records, device, seq_len=256):
    ids = []
    for rec in records:
        ids.extend(tok(rec + "<|endoftext|>", add_special_tokens=False)["input_ids"])
    total, count = 0.0, 0
    for i in range(0, len(ids) - 1, seq_len):
        chunk = torch.tensor(ids[i:i + seq_len + 1], device=device)[None]
        if chunk.shape[1] < 2:
            break
        logits = model(input_ids=chunk[:, :-1]).logits.float()
        loss = torch.nn.functional.cross_entropy(logits[0], chunk[0, 1:], reduction="sum")
        total += loss.item()
        count += chunk.shape[1] - 1
    return math.exp(total / count)


@torch.no_grad()
def sample(model, tok, prompt, device, n=64):
    text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]], device=device)
    out = model.generate(input_ids=ids, max_new_tokens=n, do_sample=False, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    return tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=6144)
    ap.add_argument("--base-steps", type=int, default=1200)
    ap.add_argument("--adapter-steps", type=int, default=500)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    device = "cuda"
    corpus = {l: {s: read_records(os.path.join(args.corpus, l, s + ".txt")) for s in ("train", "heldout")} for l in LANGS}

    tok = train_tokenizer([r for l in LANGS for r in corpus[l]["train"]], args.vocab)
    vocab = (len(tok) + 63) // 64 * 64
    cfg = Qwen3Config(vocab_size=vocab, hidden_size=256, intermediate_size=768, num_hidden_layers=6,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=1024,
                      rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                      bos_token_id=None, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model = Qwen3ForCausalLM(cfg).to(device)
    print(f"base model: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters, vocab {vocab}")
    en_ids = encode_examples(tok, corpus["en"]["train"], random.Random(args.seed))
    train(model, list(model.parameters()), en_ids, args.base_steps, 2e-3, 64, 256, args.seed, device, "base",
          lambda: perplexity(model, tok, corpus["en"]["heldout"], device), 100)

    report = {"base_parameters": sum(p.numel() for p in model.parameters()), "vocab": vocab,
              "perplexity": {}, "samples": {}}
    report["perplexity"]["base"] = {l: perplexity(model, tok, corpus[l]["heldout"], device) for l in LANGS}
    report["samples"]["base"] = {p: sample(model, tok, p, device) for p in PROMPTS[:3]}
    os.makedirs(args.out, exist_ok=True)
    model_dir = os.path.join(args.out, "model")
    model.to(torch.bfloat16).save_pretrained(model_dir, safe_serialization=True)
    tok.save_pretrained(model_dir)
    model.to(torch.float32)

    for lang in ["de", "es", "it", "bofh"]:
        base = Qwen3ForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device)
        lcfg = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        peft_model = get_peft_model(base, lcfg)
        ids = encode_examples(tok, corpus[lang]["train"], random.Random(args.seed + 1))
        # Small corpora (bofh) get fewer steps so the adapter does not just memorise them.
        steps = max(150, min(args.adapter_steps, len(ids) // 256))
        params = [p for p in peft_model.parameters() if p.requires_grad]
        train(peft_model, params, ids, steps, 2e-3, 32, 256, args.seed + 2, device, lang,
              lambda: perplexity(peft_model, tok, corpus[lang]["heldout"], device), 50)
        report["perplexity"][lang] = {l: perplexity(peft_model, tok, corpus[l]["heldout"], device) for l in (lang, "en")}
        report["samples"][lang] = {p: sample(peft_model, tok, p, device) for p in PROMPTS[:3]}
        peft_model.save_pretrained(os.path.join(args.out, "adapters", lang))
        print(f"[{lang}] held-out perplexity {report['perplexity'][lang][lang]:.1f} "
              f"(base {report['perplexity']['base'][lang]:.1f})", flush=True)
    with open(os.path.join(args.out, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, ensure_ascii=False)
    print(json.dumps(report["perplexity"], indent=1))


if __name__ == "__main__":
    main()
