"""A second formulation of the Llama forward: one sequence, dense causal attention, no KV cache,
no paging, no sharding. The engine checks use it as the float64 reference for a checkpoint
(teacher-forced logits over a whole token sequence); it shares only the layer math of
``arctic_ref.model.layers`` with the runner's paged forward, so the two check each other
(tests/model/test_dense.py)."""

import torch
from jaxtyping import Float, Int
from torch import Tensor

from arctic_ref.model.config import ModelConfig
from arctic_ref.model.layers import apply_rope, rms_norm, rope_tables, swiglu
from arctic_ref.model.weights import Weights


def dense_logits(weights: Weights, config: ModelConfig, token_ids: Int[Tensor, "seq"]) -> Float[Tensor, "seq vocab"]:
    """Row i: the logits predicting token i + 1 from tokens 0..i, in the weights' dtype."""
    if token_ids.ndim != 1 or token_ids.numel() == 0:
        raise ValueError(f"token_ids must be a non-empty 1-D tensor (got shape {tuple(token_ids.shape)})")
    d, hq, hk = config.head_dim, config.num_attention_heads, config.num_key_value_heads
    x = weights["model.embed_tokens.weight"][token_ids]
    n = x.shape[0]
    positions = torch.arange(n, device=x.device)
    cos, sin = rope_tables(positions, d, config.rope_theta, x.dtype)
    causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
    for layer in range(config.num_hidden_layers):
        p = f"model.layers.{layer}."
        h = rms_norm(x, weights[p + "input_layernorm.weight"], config.rms_norm_eps)
        q = apply_rope((h @ weights[p + "self_attn.q_proj.weight"].T).view(n, hq, d), cos, sin)
        k = apply_rope((h @ weights[p + "self_attn.k_proj.weight"].T).view(n, hk, d), cos, sin)
        v = (h @ weights[p + "self_attn.v_proj.weight"].T).view(n, hk, d)
        k, v = k.repeat_interleave(hq // hk, dim=1), v.repeat_interleave(hq // hk, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) / d**0.5
        probs = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        o = torch.einsum("hqk,khd->qhd", probs, v).reshape(n, hq * d)
        x = x + o @ weights[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, weights[p + "post_attention_layernorm.weight"], config.rms_norm_eps)
        x = x + swiglu(
            h,
            weights[p + "mlp.gate_proj.weight"],
            weights[p + "mlp.up_proj.weight"],
            weights[p + "mlp.down_proj.weight"],
        )
    x = rms_norm(x, weights["model.norm.weight"], config.rms_norm_eps)
    head = weights["model.embed_tokens.weight"] if config.tie_word_embeddings else weights["lm_head.weight"]
    return x @ head.T
