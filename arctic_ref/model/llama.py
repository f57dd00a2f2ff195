"""One rank's Llama forward in any layout (docs/parallel.md §2.3, docs/runner.md §3): baseline, TP, Ulysses
SP, SP×TP and shift. The ``StepPlan`` says which groups the collectives use; the KV cache is an
argument, so the base and shift models share it."""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from arctic_ref.model.attention import (
    AttentionMetadata,
    BatchedAttention,
    allowed_keys,
    batched_attention,
    paged_attention,
)
from arctic_ref.model.config import ModelConfig
from arctic_ref.model.kv_cache import KVCache
from arctic_ref.model.layers import apply_rope, rms_norm, rope_tables, swiglu
from arctic_ref.model.shard import shard_weights
from arctic_ref.model.weights import Weights
from arctic_ref.parallel.comm import Comm
from arctic_ref.parallel.heads import kv_head_range
from arctic_ref.parallel.plan import StepPlan


@dataclass(frozen=True, slots=True)
class LlamaShard:
    """Shard ``shard`` of ``count`` of the full weights (base: (t, T); shift: (t·S + s, P))."""

    config: ModelConfig
    weights: Weights
    shard: int
    count: int

    @classmethod
    def build(cls, full: Weights, config: ModelConfig, shard: int, count: int) -> "LlamaShard":
        return cls(config, shard_weights(full, config, shard, count), shard, count)

    @property
    def num_q_heads(self) -> int:
        return self.config.num_attention_heads // self.count

    @property
    def num_kv_heads(self) -> int:
        return len(kv_head_range(self.config.num_key_value_heads, self.shard, self.count))

    def w(self, name: str) -> Tensor:
        return self.weights[name]


@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardInputs:
    """The N padded rows of a step (pad rows: id 0, position 0, slot −1)."""

    input_ids: Int[Tensor, "padded"]
    positions: Int[Tensor, "padded"]
    slot_mapping: Int[Tensor, "padded"]
    attention: AttentionMetadata | BatchedAttention  # Batched: static shapes (CUDA graphs)


def embed(model: LlamaShard, ids: Int[Tensor, "rows"], tp: Comm) -> Float[Tensor, "rows hidden"]:
    """Vocab-parallel lookup: foreign ids give zero rows; one all-reduce over the group."""
    table = model.w("model.embed_tokens.weight")
    local = ids - model.shard * table.shape[0]
    mine = (local >= 0) & (local < table.shape[0])
    rows = table[local.clamp(0, table.shape[0] - 1)] * mine[:, None].to(table.dtype)
    return tp.all_reduce(rows)


def replicate_kv(x: Float[Tensor, "rows kvheads head_dim"], sp: int) -> Float[Tensor, "rows heads head_dim"]:
    """Fewer KV heads than SP ranks: repeat each S/K_t times so every SP rank gets one."""
    heads = x.shape[1]
    return x.repeat_interleave(sp // heads, dim=1) if heads < sp else x


def pack_qkv(q: Tensor, k: Tensor, v: Tensor, sp: int) -> Float[Tensor, "rows packed"]:
    """Per head group g < S: [q_g | k_g | v_g], group-major columns (the all-to-all send layout)."""
    rows = q.shape[0]
    parts = [t.reshape(rows, sp, -1) for t in (q, k, v)]
    return torch.cat(parts, dim=2).reshape(rows, -1)


def unpack_qkv(x: Tensor, hq: int, hk: int, head_dim: int) -> tuple[Tensor, Tensor, Tensor]:
    rows = x.shape[0]
    q, k, v = torch.split(x, [hq * head_dim, hk * head_dim, hk * head_dim], dim=1)
    return q.reshape(rows, hq, head_dim), k.reshape(rows, hk, head_dim), v.reshape(rows, hk, head_dim)


@dataclass(frozen=True, slots=True)
class StepTables:
    """Per-step values every layer shares, computed once: RoPE cos/sin of this rank's rows and, for
    the static attention form, the key mask."""

    cos: Tensor
    sin: Tensor
    allowed: Tensor | None


def attention_block(
    model: LlamaShard, layer: int, x: Tensor, tables: StepTables, inputs: ForwardInputs, cache: KVCache, plan: StepPlan
) -> Tensor:
    """rmsnorm → q, k, v (this shard) → RoPE → [Ulysses exchange] → cache write → attention →
    [inverse exchange] → o_proj partial sums → TP all-reduce."""
    config, p = model.config, f"model.layers.{layer}."
    d = config.head_dim
    h = rms_norm(x, model.w(p + "input_layernorm.weight"), config.rms_norm_eps)
    rows = h.shape[0]
    q = (h @ model.w(p + "self_attn.q_proj.weight").T).view(rows, -1, d)
    k = (h @ model.w(p + "self_attn.k_proj.weight").T).view(rows, -1, d)
    v = (h @ model.w(p + "self_attn.v_proj.weight").T).view(rows, -1, d)
    q, k = apply_rope(q, tables.cos, tables.sin), apply_rope(k, tables.cos, tables.sin)
    sp = plan.groups.sp
    if plan.token_slice is not None and sp is not None:
        k, v = replicate_kv(k, sp.size), replicate_kv(v, sp.size)
        hq, hk = q.shape[1] // sp.size, k.shape[1] // sp.size
        q, k, v = unpack_qkv(plan.groups.exchange.seq_to_heads(pack_qkv(q, k, v, sp.size), sp), hq, hk, d)
    if isinstance(inputs.attention, BatchedAttention):
        assert tables.allowed is not None
        cache.write_static(layer, inputs.slot_mapping, k, v)
        o = batched_attention(q, tables.allowed, cache, layer, inputs.attention)
    else:
        cache.write(layer, inputs.slot_mapping, k, v)
        o = paged_attention(q, inputs.positions, cache, layer, inputs.attention)
    o = o.reshape(o.shape[0], -1)
    if plan.token_slice is not None and sp is not None:
        o = plan.groups.exchange.heads_to_seq(o, sp)
    return plan.groups.tp.all_reduce(o @ model.w(p + "self_attn.o_proj.weight").T)


def mlp_block(model: LlamaShard, layer: int, x: Tensor, plan: StepPlan) -> Tensor:
    p = f"model.layers.{layer}."
    h = rms_norm(x, model.w(p + "post_attention_layernorm.weight"), model.config.rms_norm_eps)
    partial = swiglu(
        h, model.w(p + "mlp.gate_proj.weight"), model.w(p + "mlp.up_proj.weight"), model.w(p + "mlp.down_proj.weight")
    )
    return plan.groups.tp.all_reduce(partial)


def forward(model: LlamaShard, inputs: ForwardInputs, cache: KVCache, plan: StepPlan) -> Float[Tensor, "padded hidden"]:
    """Hidden states after the final norm for all N rows, on every rank."""
    if inputs.input_ids.shape[0] != plan.num_input_tokens:
        raise ValueError(f"inputs have {inputs.input_ids.shape[0]} rows, the plan {plan.num_input_tokens}")
    rows = plan.token_slice if plan.token_slice is not None else slice(None)
    ids, positions = inputs.input_ids[rows], inputs.positions[rows]
    x = embed(model, ids, plan.groups.tp)
    cos, sin = rope_tables(positions, model.config.head_dim, model.config.rope_theta, x.dtype)
    allowed = (
        allowed_keys(inputs.positions, inputs.attention) if isinstance(inputs.attention, BatchedAttention) else None
    )
    tables = StepTables(cos, sin, allowed)
    for layer in range(model.config.num_hidden_layers):
        x = x + attention_block(model, layer, x, tables, inputs, cache, plan)
        x = x + mlp_block(model, layer, x, plan)
    x = rms_norm(x, model.w("model.norm.weight"), model.config.rms_norm_eps)
    if plan.token_slice is not None and plan.groups.sp is not None:
        x = plan.groups.sp.all_gather(x)
    return x


def compute_logits(
    model: LlamaShard, hidden: Float[Tensor, "rows hidden"], plan: StepPlan
) -> Float[Tensor, "rows vocab"]:
    """Vocab-parallel lm_head over ``plan.groups.vocab``, gathered in true vocab order and trimmed."""
    local = hidden @ model.w("lm_head.weight").T
    comm = plan.groups.vocab
    gathered = comm.all_gather(local)
    rows, shard_rows = local.shape
    full = gathered.view(comm.size, rows, shard_rows).permute(1, 0, 2).reshape(rows, comm.size * shard_rows)
    return full[:, : model.config.vocab_size]


ForwardFn = Callable[[LlamaShard, ForwardInputs, KVCache, StepPlan], Tensor]
"""``forward`` or an implementation of it (``arctic_ref.model.fused_forward.fused_forward``)."""
