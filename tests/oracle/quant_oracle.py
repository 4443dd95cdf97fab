#!/usr/bin/env python3
"""Independent oracle for quantized checkpoints (issue 21), numpy only (no torch on CI).

For every format `loradeskd synth-model --quant` writes and a few architectures it:
  1. reads the safetensors by hand (header JSON + raw bytes; F8_E4M3 decoded from its bit fields),
  2. dequantizes each projection per the published layout (FP8 block/tensor/channel scales, AutoAWQ's
     interleaved nibbles and zero points, GPTQ's sequential nibbles with v1 zero offset and g_idx),
  3. checks the dequantized weights against the bf16 checkpoint synthesized from the same seed (a wrong
     packing order or offset is off by the whole quantization range, not by one step),
  4. runs its own float64 forward pass on the dequantized weights and compares with `loradeskd logits`
     (CPU runner) at every position: max |ours - numpy| <= 1e-3 * max |numpy|;
  5. on the first preset, does the same with a PEFT LoRA adapter on the quantized base (merged in numpy as
     W + alpha / r * B A): adapters act on activations, so they apply unchanged.

usage: quant_oracle.py /path/to/loradeskd [--formats fp8,awq,...] [--presets tiny,...] [--workdir DIR]
Exits 77 (skip) when numpy is missing, 1 when a check fails.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    # CMake may have found another interpreter (pyenv, venv) than the one apt's python3-numpy serves.
    if os.path.exists("/usr/bin/python3") and not os.environ.get("QUANT_ORACLE_REEXEC"):
        os.environ["QUANT_ORACLE_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("quant_oracle: numpy is not installed (apt install python3-numpy); skipping")
    sys.exit(77)

FORMATS = ["fp8", "fp8-tensor", "fp8-channel", "awq", "gptq", "gptq-actorder"]
PRESETS = ["tiny", "tiny-llama", "tiny-qwen2"]
PROMPT = [17, 3, 250, 99, 1, 42, 7, 300, 5, 11]
PROJECTIONS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
               "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


# ---- safetensors, by hand -------------------------------------------------------------------------------

def decode_e4m3(u8):
    """OCP FP8 E4M3 (e4m3fn): bias 7, subnormals at exponent 0, S.1111.111 is NaN, no infinities."""
    u8 = u8.astype(np.int64)
    sign, exp, mant = (u8 >> 7) & 1, (u8 >> 3) & 0xF, u8 & 0x7
    mag = np.where(exp == 0, mant / 8.0 * 2.0 ** -6, (1.0 + mant / 8.0) * np.exp2(exp - 7.0))
    mag = np.where((exp == 15) & (mant == 7), np.nan, mag)
    return np.where(sign == 1, -mag, mag)


def decode(raw, dtype, shape):
    if dtype == "F32":
        a = np.frombuffer(raw, "<f4").astype(np.float64)
    elif dtype == "F16":
        a = np.frombuffer(raw, "<f2").astype(np.float64)
    elif dtype == "BF16":
        a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    elif dtype == "I32":
        a = np.frombuffer(raw, "<i4").copy()
    elif dtype == "F8_E4M3":
        a = decode_e4m3(np.frombuffer(raw, np.uint8))
    else:
        raise ValueError(f"unexpected dtype {dtype}")
    return a.reshape(shape)


def read_checkpoint(model_dir, stem="model"):
    index = os.path.join(model_dir, stem + ".safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else [stem + ".safetensors"]
    tensors, dtypes = {}, {}
    for name in files:
        with open(os.path.join(model_dir, name), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            data = f.read()
        for key, meta in header.items():
            if key == "__metadata__":
                continue
            b, e = meta["data_offsets"]
            tensors[key] = decode(data[b:e], meta["dtype"], meta["shape"])
            dtypes[key] = meta["dtype"]
    return tensors, dtypes


# ---- dequantization per the published layouts -----------------------------------------------------------

def unpack_sequential(words):
    """int32 [..., n] -> [..., n, 8]: nibble k of each word (GPTQ order: value k in bits 4k..4k+3)."""
    u = words.astype(np.int64) & 0xFFFFFFFF
    return (u[..., None] >> (4 * np.arange(8))) & 0xF


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # AutoAWQ: nibble j holds column AWQ_ORDER[j]


def unpack_awq(words):
    """int32 [rows, n] -> [rows, 8n] in logical column order."""
    nib = unpack_sequential(words)  # [rows, n, 8] by nibble
    cols = np.empty_like(nib)
    for j, c in enumerate(AWQ_ORDER):
        cols[..., c] = nib[..., j]
    return cols.reshape(words.shape[0], -1)


def dequantize(qc, T, prefix):
    method = qc["quant_method"]
    if method == "fp8":
        w, s = T[prefix + ".weight"], T[prefix + ".weight_scale_inv"]
        bo, bi = qc["weight_block_size"]
        full = np.repeat(np.repeat(s, bo, axis=0), bi, axis=1)[: w.shape[0], : w.shape[1]]
        return w * full
    if method == "compressed-tensors":
        w, s = T[prefix + ".weight"], T[prefix + ".weight_scale"]
        strategy = next(iter(qc["config_groups"].values()))["weights"]["strategy"]
        return w * (s.reshape(-1)[0] if strategy == "tensor" else s.reshape(-1, 1))
    if method == "awq":
        q, z, s = unpack_awq(T[prefix + ".qweight"]), unpack_awq(T[prefix + ".qzeros"]), T[prefix + ".scales"]
        g = np.arange(q.shape[0]) // qc["group_size"]
        return ((q - z[g]) * s[g]).T  # [in, out] -> [out, in]
    if method == "gptq":
        qw = T[prefix + ".qweight"]
        q = unpack_sequential(qw).transpose(0, 2, 1).reshape(qw.shape[0] * 8, qw.shape[1])  # [in, out]
        z = unpack_sequential(T[prefix + ".qzeros"]).reshape(T[prefix + ".qzeros"].shape[0], -1)
        if qc.get("checkpoint_format", "gptq") == "gptq":
            z = z + 1  # v1 checkpoints store zero - 1
        g = T[prefix + ".g_idx"]
        return ((q - z[g]) * T[prefix + ".scales"][g]).T
    raise ValueError(f"unknown quant_method {method}")


# ---- forward pass (float64, Hugging Face semantics) -----------------------------------------------------

def rope_inv_freq(cfg, hd):
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (np.arange(0, hd, 2) / hd))
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "linear":
        inv = inv / rs["factor"]
    elif kind == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * np.pi / inv
        scaled = np.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        inv = np.where(medium, smoothed, scaled)
    return inv


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rotate(x, pos, inv):
    ang = pos[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1))[:, None, :], np.sin(np.concatenate([ang, ang], -1))[:, None, :]
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def forward(cfg, W, ids):
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    eps = cfg["rms_norm_eps"]
    n = len(ids)
    inv, pos = rope_inv_freq(cfg, hd), np.arange(n, dtype=np.float64)
    x = W["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((n, n), -np.inf), 1)
    lin = lambda a, p: a @ W[p + ".weight"].T + (W[p + ".bias"] if p + ".bias" in W else 0.0)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").reshape(n, nh, hd)
        k = lin(h, p + "self_attn.k_proj").reshape(n, nkv, hd)
        v = lin(h, p + "self_attn.v_proj").reshape(n, nkv, hd)
        if p + "self_attn.q_norm.weight" in W:
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k = rotate(q, pos, inv), rotate(k, pos, inv)
        k, v = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)
        s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        x = x + lin(np.einsum("hqk,khd->qhd", s, v).reshape(n, nh * hd), p + "self_attn.o_proj")
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        g, u = lin(h, p + "mlp.gate_proj"), lin(h, p + "mlp.up_proj")
        x = x + lin(g / (1 + np.exp(-g)) * u, p + "mlp.down_proj")
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    return x @ head.T


# ---- the checks -----------------------------------------------------------------------------------------

def merge_adapter(W, adapter_dir):
    """W + alpha / r * B A for every PEFT lora_A/lora_B pair (plain LoRA: no rsLoRA, no rank patterns)."""
    cfg = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))
    scale = cfg["lora_alpha"] / cfg["r"]
    T, _ = read_checkpoint(adapter_dir, "adapter_model")
    merged = dict(W)
    for name, a in T.items():
        if name.endswith(".lora_A.weight"):
            base = name[len("base_model.model."):-len(".lora_A.weight")] + ".weight"
            merged[base] = merged[base] + scale * T[name.replace("lora_A", "lora_B")] @ a
    return merged


def compare_logits(exe, model_dir, cfg, W, extra=()):
    """None or a problem, and max |loradeskd - numpy| / max |numpy| over every position."""
    ids = [i % cfg["vocab_size"] for i in PROMPT]
    ref = forward(cfg, W, ids)
    out = run([exe, "logits", "--model", model_dir, "--prompt-ids", ",".join(map(str, ids)), "--all-positions",
               "--json", "--threads", "2", *extra])
    ours = np.array(json.loads(out)["logits"], dtype=np.float64)
    if ours.shape != ref.shape:
        return f"logits shape {ours.shape} vs numpy {ref.shape}", float("nan")
    err = np.abs(ours - ref).max() / np.abs(ref).max()
    what = "logits with the adapter" if extra else "logits"
    return (None if err <= 1e-3 else f"{what}: max |loradeskd - numpy| / max |numpy| = {err:.3g} > 1e-3"), err


def check_model(exe, work, preset, fmt, plain, with_adapter):
    model_dir = os.path.join(work, f"{preset}-{fmt}")
    run([exe, "synth-model", "--preset", preset, "--out", model_dir, "--seed", "1", "--quant", fmt])
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    qc = cfg["quantization_config"]
    T, dtypes = read_checkpoint(model_dir)
    W = {k: v for k, v in T.items() if k.endswith((".bias", "norm.weight", "embed_tokens.weight", "lm_head.weight"))}
    problems = []
    for layer in range(cfg["num_hidden_layers"]):
        for proj in PROJECTIONS:
            prefix = f"model.layers.{layer}.{proj}"
            w = dequantize(qc, T, prefix)
            ref = plain[prefix + ".weight"]
            if w.shape != ref.shape:
                problems.append(f"{prefix}: dequantized shape {w.shape} vs {ref.shape}")
                continue
            err, mag = np.abs(w - ref).max(), np.abs(ref).max()
            bound = 0.07 if qc["quant_method"] in ("fp8", "compressed-tensors") else 0.14
            if not err <= bound * mag:
                problems.append(f"{prefix}: max |dequantized - bf16| {err:.4g} > {bound} * {mag:.4g}")
            W[prefix + ".weight"] = w
    if fmt == "gptq-actorder":
        g = T["model.layers.0.mlp.down_proj.g_idx"]
        if np.array_equal(g, np.arange(len(g)) // qc["group_size"]):
            problems.append("gptq-actorder wrote the trivial g_idx; act-order is not exercised")
    if fmt.startswith("fp8") and dtypes["model.layers.0.mlp.up_proj.weight"] != "F8_E4M3":
        problems.append("fp8 weights are not F8_E4M3")
    problem, err = compare_logits(exe, model_dir, cfg, W)
    problems += [problem] if problem else []
    if with_adapter:
        adapter_dir = os.path.join(work, f"{preset}-{fmt}-lora")
        run([exe, "synth-adapter", "--model", model_dir, "--rank", "8", "--alpha", "16", "--seed", "3",
             "--targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "--out", adapter_dir])
        merged = merge_adapter(W, adapter_dir)
        problem, lora_err = compare_logits(exe, model_dir, cfg, merged, ("--adapter", adapter_dir))
        problems += [problem] if problem else []
        err = max(err, lora_err)
    return problems, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loradeskd")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    exe = os.path.abspath(args.loradeskd)
    work = args.workdir or tempfile.mkdtemp(prefix="quant_oracle_")
    failed = False
    for n, preset in enumerate(args.presets.split(",")):
        plain_dir = os.path.join(work, f"{preset}-bf16")
        run([exe, "synth-model", "--preset", preset, "--out", plain_dir, "--seed", "1"])
        plain, _ = read_checkpoint(plain_dir)
        for fmt in args.formats.split(","):
            problems, err = check_model(exe, work, preset, fmt, plain, with_adapter=n == 0)
            status = "ok" if not problems else "FAIL"
            lora = " (base and LoRA)" if n == 0 else ""
            print(f"{preset:12s} {fmt:14s} logits rel err {err:.2e}{lora}  {status}")
            for p in problems:
                print("    " + p)
            failed |= bool(problems)
    print("quant_oracle: " + ("FAILED" if failed else "all formats match"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
