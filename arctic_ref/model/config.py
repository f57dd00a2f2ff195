"""``ModelConfig``: the Llama shape, read from and written to a Hugging Face ``config.json``
(docs/runner.md §3.3), and the built-in ``tiny`` (§3.4)."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import torch

DTYPES: Final = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}
"""Run dtypes by name (``--dtype``, conformance cases)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    eos_token_ids: tuple[int, ...] = ()  # config.json's eos_token_id (an int or a list); () = none

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "max_position_embeddings",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1 (got {value!r})")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads({self.num_attention_heads}) is not divisible by "
                f"num_key_value_heads({self.num_key_value_heads})"
            )
        if self.head_dim % 2:
            raise ValueError(f"head_dim({self.head_dim}) must be even for RoPE")
        bad = [
            t
            for t in self.eos_token_ids
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < self.vocab_size
        ]
        if bad:
            raise ValueError(f"eos_token_ids {bad} must be ints in [0, vocab_size({self.vocab_size}))")

    @classmethod
    def from_hf(cls, raw: dict[str, Any]) -> "ModelConfig":
        """A transformers 4.x or 5.x ``LlamaConfig`` dict; unsupported features → ValueError naming them."""
        architectures = raw.get("architectures") or ["LlamaForCausalLM"]
        if architectures != ["LlamaForCausalLM"]:
            raise ValueError(f"architectures must be ['LlamaForCausalLM'] (got {architectures})")
        checks = (
            ("hidden_act", raw.get("hidden_act", "silu"), "silu"),
            ("attention_bias", raw.get("attention_bias", False), False),
            ("mlp_bias", raw.get("mlp_bias", False), False),
            ("pretraining_tp", raw.get("pretraining_tp", 1), 1),
        )
        for name, value, wanted in checks:
            if value != wanted:
                raise ValueError(f"{name} must be {wanted!r} (got {value!r})")
        rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
        rope_type = rope.get("rope_type", rope.get("type", "default")) if rope else "default"
        if rope_type not in ("default", None):
            raise ValueError(f"rope scaling must be none/default (got rope_type={rope_type!r})")
        theta = raw.get("rope_theta", rope.get("rope_theta", 10000.0))
        heads = int(raw["num_attention_heads"])
        eos = raw.get("eos_token_id")
        eos_ids = () if eos is None else (eos,) if isinstance(eos, int) else tuple(eos)
        return cls(
            vocab_size=int(raw["vocab_size"]),
            hidden_size=int(raw["hidden_size"]),
            intermediate_size=int(raw["intermediate_size"]),
            num_hidden_layers=int(raw["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(raw.get("num_key_value_heads") or heads),
            head_dim=int(raw.get("head_dim") or raw["hidden_size"] // heads),
            rope_theta=float(theta),
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
            eos_token_ids=eos_ids,
        )

    def to_hf(self) -> dict[str, Any]:
        """Both ``rope_theta`` (4.x) and ``rope_parameters`` (5.x)."""
        return {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "rms_norm_eps": self.rms_norm_eps,
            "max_position_embeddings": self.max_position_embeddings,
            "tie_word_embeddings": self.tie_word_embeddings,
            "rope_theta": self.rope_theta,
            "rope_parameters": {"rope_type": "default", "rope_theta": self.rope_theta},
            "attention_bias": False,
            "mlp_bias": False,
            "pretraining_tp": 1,
            "bos_token_id": None,
            "eos_token_id": None
            if not self.eos_token_ids
            else self.eos_token_ids[0]
            if len(self.eos_token_ids) == 1
            else list(self.eos_token_ids),
        }

    @classmethod
    def load(cls, path: Path) -> "ModelConfig":
        config = path / "config.json"
        try:
            raw = json.loads(config.read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{config}:{error.lineno}: not JSON ({error.msg} at column {error.colno})") from None
        return cls.from_hf(raw)


def tiny_config(*, tied: bool = False, vocab_size: int = 512) -> ModelConfig:
    """vocab 512, hidden 128, intermediate 352, 4 layers, 8 heads, 2 KV heads, head_dim 16."""
    return ModelConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=352,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=16,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        max_position_embeddings=2048,
        tie_word_embeddings=tied,
    )


def llama3_8b_config() -> ModelConfig:
    """Llama-3-8B shapes (docs/runner.md §7), for GPU benchmarks with random weights."""
    return ModelConfig(
        vocab_size=128_256,
        hidden_size=4096,
        intermediate_size=14_336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        rope_theta=500_000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
    )
