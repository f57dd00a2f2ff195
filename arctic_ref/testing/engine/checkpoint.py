"""The model the engine checks run: the kit's own checkpoint (seeded random Llama weights, written
where the engine can load it), or the user's (``--arctic-ref-engine-model``); and
``ReferenceModel``, its float64 reference (``arctic_ref.model.dense``)."""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import torch
from jaxtyping import Float
from torch import Tensor

from arctic_ref.model.config import ModelConfig
from arctic_ref.model.dense import dense_logits
from arctic_ref.model.weights import Weights, load_weights, random_weights, save_pretrained

ENGINE_MODEL: Final = ModelConfig(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=32,
    max_position_embeddings=1024,
)
"""The kit's model: small enough for a CPU engine to start in seconds, ``head_dim`` 32 because
vLLM's CPU attention rejects 16, and one KV head so that grouped-query attention is exercised."""
LOGIT_SCALE: Final = 24.0
"""``lm_head`` is multiplied by this after ``random_weights``, so that next-token distributions are
peaked but not one-hot: drafts are accepted at a useful rate at T > 0, and greedy top-2 margins are
far above float32 noise (docs/user-guide.md, "Check your engine")."""


def write_engine_model(path: Path, *, seed: int = 0, logit_scale: float = LOGIT_SCALE) -> Path:
    """The kit's checkpoint in ``path`` (config.json and model.safetensors in float32, which every
    engine loads), returned. The same seed writes the same bytes."""
    weights = random_weights(ENGINE_MODEL, seed)
    weights["lm_head.weight"] = weights["lm_head.weight"] * logit_scale
    save_pretrained(path, ENGINE_MODEL, {k: v.to(torch.float32) for k, v in weights.items()})
    return path


@dataclass(frozen=True, slots=True)
class ReferenceModel:
    """A checkpoint's float64 forward, teacher-forced over whole sequences."""

    config: ModelConfig
    weights: Weights

    @classmethod
    def load(cls, path: Path) -> "ReferenceModel":
        config = ModelConfig.load(path)
        return cls(config, load_weights(path, config, torch.float64))

    def logits(self, tokens: Sequence[int]) -> Float[Tensor, "seq vocab"]:
        """Row i predicts token i + 1."""
        return dense_logits(self.weights, self.config, torch.tensor(list(tokens), dtype=torch.int64))

    def greedy_extension(self, tokens: Sequence[int], count: int) -> list[int]:
        """The next ``count`` greedy tokens after ``tokens`` (float64 argmax, first maximum)."""
        out = list(tokens)
        for _ in range(count):
            out.append(int(self.logits(out)[-1].argmax()))
        return out[len(tokens) :]


def top2_margin(row: Float[Tensor, "vocab"]) -> float:
    """The float64 gap between the largest and second-largest logit: how far a greedy choice is
    from a tie."""
    top = torch.topk(row.to(torch.float64), 2).values
    return float(top[0] - top[1])
