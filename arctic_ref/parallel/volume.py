"""Communication volume of one forward step and its logits, per rank (docs/parallel.md §2.4): elements a
rank sends (ring all-reduce 2(n−1)/n·x, all-to-all (n−1)/n·x) or receives (all-gather (n−1)·x),
keyed like ``CountingComm``'s log by (op, group). Bytes = elements × the dtype's size.

Per layer in BASE mode (S×T): seq_to_heads (S−1)/S·N_r·(H/T + 2·K_e)·d and heads_to_seq
(S−1)/S·N_r·(H/T)·d on SP, where N_r = N/S and K_e = max(K_t, S) is the TP shard's KV heads after
replication to the SP ranks; two TP all-reduces 2(T−1)/T·N_r·D. In SHIFT mode (P = S·T ranks, all N
rows): two all-reduces 2(P−1)/P·N·D over the shift group. Per step: the embedding's all-reduce
(same form), the hidden all-gather (S−1)·N_r·D (BASE, S > 1) and the logits all-gather
(n−1)·n_logits·⌈V/n⌉ over the vocab group (TP in BASE, shift in SHIFT). A group of one sends nothing.
"""

from collections import Counter
from fractions import Fraction
from typing import Protocol, runtime_checkable

from arctic_ref.parallel.comm import CommOp, GroupKind
from arctic_ref.parallel.heads import kv_head_range
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import StepMode

Volume = Counter[tuple[CommOp, GroupKind]]  # (op, group) → elements


@runtime_checkable
class ModelShape(Protocol):
    """The sizes the volume depends on (``arctic_ref.model.config.ModelConfig`` has them all)."""

    @property
    def head_dim(self) -> int: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def num_attention_heads(self) -> int: ...
    @property
    def num_key_value_heads(self) -> int: ...
    @property
    def num_hidden_layers(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...


def _exact(value: Fraction) -> int:
    if value.denominator != 1:
        raise ValueError(f"volume {value} is not a whole number of elements")
    return int(value)


def _all_reduce(size: int, elements: int) -> int:
    return _exact(Fraction(2 * (size - 1), size) * elements)


def _all_to_all(size: int, elements: int) -> int:
    return _exact(Fraction(size - 1, size) * elements)


def comm_volume(
    layout: ParallelLayout, config: ModelShape, *, num_tokens: int, num_logits: int, mode: StepMode
) -> Volume:
    """Elements per (op, group) for one step of ``num_tokens`` padded rows whose ``num_logits``
    sampled rows go through the vocab-parallel head."""
    d, hidden, heads, layers = config.head_dim, config.hidden_size, config.num_attention_heads, config.num_hidden_layers
    if num_tokens % layout.sp:
        raise ValueError(f"num_tokens({num_tokens}) is not divisible by sp({layout.sp})")
    volume: Volume = Counter()

    def add(op: CommOp, group: GroupKind, size: int, elements: int) -> None:
        if size > 1:
            volume[(op, group)] += elements

    if mode is StepMode.SHIFT:
        p = layout.world_size
        add("all_reduce", "shift", p, (1 + 2 * layers) * _all_reduce(p, num_tokens * hidden))
        add("all_gather", "shift", p, (p - 1) * num_logits * -(-config.vocab_size // p))
        return volume
    s, t = layout.sp, layout.tp
    rows = num_tokens // s
    kv_t = len(kv_head_range(config.num_key_value_heads, 0, t))
    kv_e = max(kv_t, s)
    add("all_to_all", "sp", s, layers * _all_to_all(s, rows * (heads // t + 2 * kv_e) * d))
    add("all_to_all", "sp", s, layers * _all_to_all(s, rows * (heads // t) * d))
    add("all_reduce", "tp", t, (1 + 2 * layers) * _all_reduce(t, rows * hidden))
    add("all_gather", "sp", s, (s - 1) * rows * hidden)
    add("all_gather", "tp", t, (t - 1) * num_logits * -(-config.vocab_size // t))
    return volume
