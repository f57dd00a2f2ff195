"""``shard_weights(full, shard, count)``: one rank's slice of the full weights (docs/runner.md §3.5).
The base model uses (t, T), the shift model (t·S + s, P); both come from one full set."""

import torch.nn.functional as F
from torch import Tensor

from arctic_ref.model.config import ModelConfig
from arctic_ref.model.weights import Weights
from arctic_ref.parallel.heads import kv_head_range


def vocab_shard(weight: Tensor, shard: int, count: int) -> Tensor:
    """Rows ``[shard·Vs, (shard+1)·Vs)`` with ``Vs = ceil(V/count)``, zero-padded past V."""
    vocab = weight.shape[0]
    rows = -(-vocab // count)
    padded = F.pad(weight, (0, 0, 0, rows * count - vocab))
    return padded[shard * rows : (shard + 1) * rows].clone()


def shard_weights(full: Weights, config: ModelConfig, shard: int, count: int) -> Weights:
    heads, kv, d, inter = (
        config.num_attention_heads,
        config.num_key_value_heads,
        config.head_dim,
        config.intermediate_size,
    )
    if not 0 <= shard < count or heads % count or inter % count or (kv % count and count % kv):
        raise ValueError(
            f"cannot shard heads({heads}), kv heads({kv}), intermediate({inter}) as shard {shard} of {count}"
        )
    q_rows = slice(shard * heads // count * d, (shard + 1) * heads // count * d)
    kv_heads = kv_head_range(kv, shard, count)
    kv_rows = slice(kv_heads.start * d, kv_heads.stop * d)
    i_rows = slice(shard * inter // count, (shard + 1) * inter // count)
    out: Weights = {"model.embed_tokens.weight": vocab_shard(full["model.embed_tokens.weight"], shard, count)}
    lm = full["model.embed_tokens.weight"] if config.tie_word_embeddings else full["lm_head.weight"]
    out["lm_head.weight"] = vocab_shard(lm, shard, count)
    out["model.norm.weight"] = full["model.norm.weight"]
    for layer in range(config.num_hidden_layers):
        p = f"model.layers.{layer}."
        out |= {
            p + "input_layernorm.weight": full[p + "input_layernorm.weight"],
            p + "post_attention_layernorm.weight": full[p + "post_attention_layernorm.weight"],
            p + "self_attn.q_proj.weight": full[p + "self_attn.q_proj.weight"][q_rows].clone(),
            p + "self_attn.k_proj.weight": full[p + "self_attn.k_proj.weight"][kv_rows].clone(),
            p + "self_attn.v_proj.weight": full[p + "self_attn.v_proj.weight"][kv_rows].clone(),
            p + "self_attn.o_proj.weight": full[p + "self_attn.o_proj.weight"][:, q_rows].clone(),
            p + "mlp.gate_proj.weight": full[p + "mlp.gate_proj.weight"][i_rows].clone(),
            p + "mlp.up_proj.weight": full[p + "mlp.up_proj.weight"][i_rows].clone(),
            p + "mlp.down_proj.weight": full[p + "mlp.down_proj.weight"][:, i_rows].clone(),
        }
    return out
