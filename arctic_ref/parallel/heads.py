"""Which query and KV heads GPU (s, t) holds, in base mode and in shift mode (docs/parallel.md §1.2),
as closed formulas: the KV-cache invariance theorem (§3.3) compares the two."""

from arctic_ref.parallel.layout import ParallelLayout


def kv_head_range(num_kv_heads: int, shard: int, count: int) -> range:
    """One shard of the KV heads (the weights' ``shard_weights`` and the cache use it): KV chunk ``shard`` when K ≥ count, else the one head ``shard // (count / K)`` (replicated)."""
    if num_kv_heads >= count:
        chunk = num_kv_heads // count
        return range(shard * chunk, (shard + 1) * chunk)
    head = shard // (count // num_kv_heads)
    return range(head, head + 1)


def query_heads(layout: ParallelLayout, rank: int, num_heads: int) -> range:
    """Both modes: chunk r = t·S + s of size H/P."""
    chunk = num_heads // layout.world_size
    r = layout.shift_rank(rank)
    return range(r * chunk, (r + 1) * chunk)


def base_kv_heads(layout: ParallelLayout, rank: int, num_kv_heads: int) -> range:
    """Base mode: sub-chunk s of TP shard t's ``K_t = max(1, K/T)`` heads, or one replicated head."""
    s, t = layout.coords(rank)
    tp, sp = layout.tp, layout.sp
    per_tp = max(1, num_kv_heads // tp)
    first = t * per_tp if num_kv_heads >= tp else t // (tp // num_kv_heads)
    if per_tp >= sp:
        return range(first + s * per_tp // sp, first + (s + 1) * per_tp // sp)
    head = first + s // (sp // per_tp)
    return range(head, head + 1)


def shift_kv_heads(layout: ParallelLayout, rank: int, num_kv_heads: int) -> range:
    """Shift mode (TP' = P): chunk r of K/P heads, or head r // (P/K) — exactly what the shift
    model's ``shard_weights`` keeps, so T1 checks the model's own shard function."""
    return kv_head_range(num_kv_heads, layout.shift_rank(rank), layout.world_size)


def kv_head_of_query(query_head: int, num_heads: int, num_kv_heads: int) -> int:
    """GQA: global query head j reads KV head j // (H/K)."""
    return query_head // (num_heads // num_kv_heads)
