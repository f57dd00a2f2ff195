"""Full (unsharded) weights under Hugging Face ``LlamaForCausalLM`` names (docs/runner.md §3.2–3.4):
seeded random weights, safetensors loading (single file or sharded index) and ``save_pretrained``."""

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from arctic_ref.model.config import ModelConfig

Weights = dict[str, Tensor]


def weight_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every expected name and ``[out, in]`` shape, in §3.2 order."""
    v, d, i = config.vocab_size, config.hidden_size, config.intermediate_size
    hd, kd = config.num_attention_heads * config.head_dim, config.num_key_value_heads * config.head_dim
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (v, d)}
    for layer in range(config.num_hidden_layers):
        p = f"model.layers.{layer}."
        shapes |= {
            p + "input_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (hd, d),
            p + "self_attn.k_proj.weight": (kd, d),
            p + "self_attn.v_proj.weight": (kd, d),
            p + "self_attn.o_proj.weight": (d, hd),
            p + "post_attention_layernorm.weight": (d,),
            p + "mlp.gate_proj.weight": (i, d),
            p + "mlp.up_proj.weight": (i, d),
            p + "mlp.down_proj.weight": (d, i),
        }
    shapes["model.norm.weight"] = (d,)
    if not config.tie_word_embeddings:
        shapes["lm_head.weight"] = (v, d)
    return shapes


def random_weights(config: ModelConfig, seed: int, dtype: torch.dtype = torch.float64) -> Weights:
    """Generator ``manual_seed(seed)``, names in §3.2 order: matrices randn·0.02, norms 1 + 0.1·randn
    (drawn in float64, then cast)."""
    g = torch.Generator("cpu").manual_seed(seed)
    out: Weights = {}
    for name, shape in weight_shapes(config).items():
        if len(shape) == 1:
            value = 1 + 0.1 * torch.randn(shape, dtype=torch.float64, generator=g)
        else:
            value = torch.randn(shape, dtype=torch.float64, generator=g) * 0.02
        out[name] = value.to(dtype)
    return out


def check_weights(config: ModelConfig, weights: Weights) -> None:
    """Missing/unknown keys, wrong shapes, and a tied ``lm_head`` that differs → ValueError."""
    shapes = weight_shapes(config)
    extra = set(weights) - set(shapes)
    if config.tie_word_embeddings and "lm_head.weight" in extra:
        if not torch.equal(weights["lm_head.weight"], weights["model.embed_tokens.weight"]):
            raise ValueError("tie_word_embeddings is true but lm_head.weight differs from model.embed_tokens.weight")
        extra.discard("lm_head.weight")
    missing = sorted(set(shapes) - set(weights))
    if missing or extra:
        raise ValueError(f"checkpoint keys do not match the config: missing {missing}, unknown {sorted(extra)}")
    wrong = {k: tuple(weights[k].shape) for k, s in shapes.items() if tuple(weights[k].shape) != s}
    if wrong:
        raise ValueError(f"weight shapes differ from the config: {wrong} (expected {[shapes[k] for k in wrong]})")


def load_weights(path: Path, config: ModelConfig, dtype: torch.dtype) -> Weights:
    """``model.safetensors`` or ``model.safetensors.index.json``; cast to ``dtype`` after loading."""
    single, index = path / "model.safetensors", path / "model.safetensors.index.json"
    raw: Weights = {}
    if single.exists():
        raw = load_file(str(single))
    elif index.exists():
        weight_map: dict[str, str] = json.loads(index.read_text())["weight_map"]
        for shard in sorted(set(weight_map.values())):
            raw |= load_file(str(path / shard))
    else:
        raise ValueError(f"{path} has neither model.safetensors nor model.safetensors.index.json")
    check_weights(config, raw)
    if config.tie_word_embeddings:
        raw.pop("lm_head.weight", None)
    return {k: v.to(dtype) for k, v in raw.items()}


def save_pretrained(path: Path, config: ModelConfig, weights: Weights) -> None:
    """config.json and model.safetensors, loadable by ``LlamaForCausalLM.from_pretrained``."""
    check_weights(config, weights)
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config.to_hf(), indent=2))
    save_file(
        {k: v.contiguous() for k, v in weights.items()}, str(path / "model.safetensors"), metadata={"format": "pt"}
    )


def random_weights_on(config: ModelConfig, seed: int, dtype: torch.dtype, device: torch.device) -> Weights:
    """The same distributions as ``random_weights``, drawn directly on ``device`` in ``dtype`` (for
    models too large to build in float64 on the host); not equal to ``random_weights`` bit for bit."""
    g = torch.Generator(device).manual_seed(seed)
    out: Weights = {}
    for name, shape in weight_shapes(config).items():
        value = torch.randn(shape, dtype=dtype, device=device, generator=g)
        out[name] = (1 + 0.1 * value) if len(shape) == 1 else value.mul_(0.02)
    return out
