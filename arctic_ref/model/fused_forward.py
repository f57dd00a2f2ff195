"""The fused forward: the reference ``forward`` of one rank (any layout) in about ten launches per
layer, for CUDA graphs on a GPU. Same collectives, same plan, same cache layout; packed projections
(vLLM's ``qkv_proj`` and ``gate_up_proj``), so a decode step reads each weight once in four GEMMs
per layer; the layer math in five operations of a ``LayerOps`` value (the GEMMs are its
``linear``, and ``gated_linear`` for gate_up with SiLU·up; a kernel set may add ``qkv_write_cache``): ``TRITON_OPS`` (Triton kernels; ``--kernels triton``) or
``TORCH_OPS`` (the reference's torch functions, any device; ``--kernels packed``), with which this
forward's structure is checked in every layout on the CPU.

Per layer: add+RMSNorm → qkv GEMM → [Ulysses exchange of raw q, k, v] → RoPE(k) + cache write (in
the qkv GEMM's epilogue where there is no exchange and the op set has ``qkv_write_cache``) →
RoPE(q) + split attention (+ combine) → [inverse exchange] → o GEMM → TP all-reduce → add+RMSNorm →
gate_up GEMM with SiLU·up → down GEMM → TP all-reduce. RoPE comes after the exchange (it acts per row
and head, so it commutes with the exchange), with cos/sin of all N rows.

This is an implementation checked against the reference, not a second reference: the GPU tests
(``gpu_tests/test_fused_forward_gpu.py``) hold each kernel to the reference's roundings and the whole
forward to ``forward`` in every dtype (float64 to the roundoff of transformers' float32 RMSNorm
island, whose mean is summed in another order; bfloat16 to the scale of bfloat16 roundoff)."""

import torch
from jaxtyping import Float
from torch import Tensor

from arctic_ref.model.attention import AttentionMetadata, BatchedAttention, batched_metadata
from arctic_ref.model.kv_cache import KVCache
from arctic_ref.model.layer_ops import LayerOps
from arctic_ref.model.layers import rope_tables
from arctic_ref.model.llama import ForwardInputs, LlamaShard, embed, pack_qkv, replicate_kv, unpack_qkv
from arctic_ref.model.weights import Weights
from arctic_ref.parallel.plan import StepPlan

QKV = "self_attn.qkv_proj.weight"
GATE_UP = "mlp.gate_up_proj.weight"


def pack_projections(model: LlamaShard) -> LlamaShard:
    """Per layer, ``qkv_proj = cat(q, k, v)`` and ``gate_up_proj = cat(gate, up)`` (rows); the
    separate projections become views of them, so the reference ``forward`` still runs on the
    result and the packed model holds each weight once (the input's separate tensors are freed once
    nothing else refers to them). A packed model comes back unchanged."""
    if "model.layers.0." + QKV in model.weights:
        return model
    weights: Weights = dict(model.weights)
    for layer in range(model.config.num_hidden_layers):
        p = f"model.layers.{layer}."
        for packed, parts in (
            (QKV, ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
            (GATE_UP, ("mlp.gate_proj", "mlp.up_proj")),
        ):
            names = [p + part + ".weight" for part in parts]
            whole = torch.cat([weights[name] for name in names], dim=0)
            weights[p + packed] = whole
            start = 0
            for name in names:
                rows = weights[name].shape[0]
                weights[name] = whole[start : start + rows]
                start += rows
    return LlamaShard(model.config, weights, model.shard, model.count)


def static_attention(inputs: ForwardInputs) -> BatchedAttention:
    """The step's attention in static form (already so under CUDA graphs)."""
    meta = inputs.attention
    if isinstance(meta, BatchedAttention):
        return meta
    assert isinstance(meta, AttentionMetadata)
    context = max((len(s) for s in meta.context_slots), default=1)
    return batched_metadata(meta, inputs.input_ids.shape[0], max(context, 1), inputs.input_ids.device)


def fused_forward(
    model: LlamaShard, inputs: ForwardInputs, cache: KVCache, plan: StepPlan, ops: LayerOps
) -> Float[Tensor, "padded hidden"]:
    """Hidden states after the final norm for all N rows, on every rank (as ``forward``); bind
    ``ops`` (``functools.partial``) to get a ``ForwardFn``."""
    if inputs.input_ids.shape[0] != plan.num_input_tokens:
        raise ValueError(f"inputs have {inputs.input_ids.shape[0]} rows, the plan {plan.num_input_tokens}")
    p0 = "model.layers.0."
    if p0 + QKV not in model.weights:
        raise ValueError("fused_forward needs packed projections: build the model with pack_projections")
    config = model.config
    d, eps = config.head_dim, config.rms_norm_eps
    sp = plan.groups.sp if plan.token_slice is not None else None
    rows = plan.token_slice if plan.token_slice is not None else slice(None)
    x = embed(model, inputs.input_ids[rows], plan.groups.tp)
    meta = static_attention(inputs)
    cos, sin = rope_tables(inputs.positions, d, config.rope_theta, x.dtype)
    hq, hk = model.num_q_heads, model.num_kv_heads
    delta: Tensor | None = None
    for layer in range(config.num_hidden_layers):
        p = f"model.layers.{layer}."
        x, h = ops.add_rms_norm(x, delta, model.w(p + "input_layernorm.weight"), eps)
        key_cache, value_cache = cache.keys[layer], cache.values[layer]
        if sp is None and ops.qkv_write_cache is not None:
            qkv = ops.qkv_write_cache(h, model.w(p + QKV), cos, sin, inputs.slot_mapping, key_cache, value_cache)
            q = qkv[:, : hq * d].view(qkv.shape[0], hq, d)
        else:
            qkv = ops.linear(h, model.w(p + QKV))
            n = qkv.shape[0]
            q, k, v = torch.split(qkv, [hq * d, hk * d, hk * d], dim=1)
            q, k, v = q.view(n, hq, d), k.view(n, hk, d), v.view(n, hk, d)
            if sp is not None:
                k, v = replicate_kv(k, sp.size), replicate_kv(v, sp.size)
                exchanged = plan.groups.exchange.seq_to_heads(pack_qkv(q, k, v, sp.size), sp)
                q, k, v = unpack_qkv(exchanged, hq // sp.size, k.shape[1] // sp.size, d)
            ops.rope_write_cache(k, v, cos, sin, inputs.slot_mapping, key_cache, value_cache)
        o = ops.decode_attention(q, cos, sin, inputs.positions, meta.context_slots, meta.real, key_cache, value_cache)
        o = o.reshape(o.shape[0], -1)
        if sp is not None:
            o = plan.groups.exchange.heads_to_seq(o, sp)
        delta = plan.groups.tp.all_reduce(ops.linear(o, model.w(p + "self_attn.o_proj.weight")))
        x, h = ops.add_rms_norm(x, delta, model.w(p + "post_attention_layernorm.weight"), eps)
        up = ops.gated_linear(h, model.w(p + GATE_UP))
        delta = plan.groups.tp.all_reduce(ops.linear(up, model.w(p + "mlp.down_proj.weight")))
    _, out = ops.add_rms_norm(x, delta, model.w("model.norm.weight"), eps)
    if sp is not None:
        out = sp.all_gather(out)
    return out
