"""Helpers shared by the PEFT oracles (peft_parity.py on the CPU runner, peft_mixed_cuda.py on the CUDA
runner): running loradeskd, loading a synthesized base with transformers, creating PEFT adapters whose
B is non-zero, and the error/near-tie measures. Needs torch, transformers and peft.
"""
import json
import subprocess

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

ALL_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def run(cmd):
    """Runs a command and returns its stdout; on failure raises with its stderr (which says why)."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} ... failed with exit code {done.returncode}:\n{done.stderr}")
    return done.stdout


def ids_arg(ids):
    return ",".join(map(str, ids))


def load_base(model_dir, dtype=torch.float32, device=None):
    """The synthesized checkpoint in transformers, eval mode, EOS disabled (our side runs --ignore-eos)."""
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    except TypeError:  # transformers 4.x spells it torch_dtype
        model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=dtype)
    if device is not None:
        model = model.to(device)
    model.eval()
    model.generation_config.eos_token_id = None
    return model


def make_adapter(model_dir, config, out_dir, seed):
    """Creates a PEFT adapter on the f32 CPU base with non-zero B and saves it; returns the PEFT model (f32, eval).

    Fresh PEFT adapters have B = 0 (a no-op), so every lora_B gets random values sized so that the merged
    delta scaling * B A is ~30% of the base weight's spread: large enough that an ignored adapter fails.
    """
    torch.manual_seed(seed)
    peft_model = get_peft_model(load_base(model_dir), LoraConfig(task_type="CAUSAL_LM", lora_dropout=0.0, **config))
    with torch.no_grad():
        for _, module in peft_model.named_modules():
            if not hasattr(module, "lora_B") or "default" not in getattr(module, "lora_B", {}):
                continue
            a = module.lora_A["default"].weight
            b = module.lora_B["default"].weight
            scaling = module.scaling["default"]
            w_std = module.get_base_layer().weight.float().std().item()
            # var(scaling * B A) = scaling^2 * r * var(A) * var(B): aim for 0.3 * std(W).
            b_std = 0.3 * w_std / (scaling * (a.shape[0] ** 0.5) * a.float().std().item())
            b.copy_(torch.randn_like(b) * b_std)
    peft_model.save_pretrained(out_dir)
    peft_model.eval()
    return peft_model


def loradesk_logits(exe, model_dir, ids, device="cuda"):
    """`loradeskd logits --all-positions` of a prompt: f32 [len(ids), vocab]."""
    out = run([exe, "logits", "--model", model_dir, "--device", device, "--prompt-ids", ids_arg(ids),
               "--all-positions", "--json"])
    return torch.tensor(json.loads(out)["logits"], dtype=torch.float32)


def rel(a, b):
    """Relative L2 error ||a - b|| / ||b|| (b = the reference)."""
    return float((a.float() - b.float()).norm() / b.float().norm())


def top2_margin(logits):
    """Gap between the two largest logits as a fraction of the row's logit range (0 = exact tie)."""
    lg = logits.float()
    top2 = lg.topk(2).values
    return float((top2[0] - top2[1]) / (lg.max() - lg.min()))
