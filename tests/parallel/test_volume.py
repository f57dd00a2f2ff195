"""``comm_volume`` against the worked figures of docs/parallel.md §2.4 (the gloo runs in
``conformance/`` compare it with real steps' CountingComm logs)."""

from dataclasses import replace

import pytest

from arctic_ref.model.config import llama3_8b_config
from arctic_ref.parallel import ParallelLayout, StepMode
from arctic_ref.parallel.volume import comm_volume

MIB = 2**20
CONFIG = llama3_8b_config()
LAYERS = CONFIG.num_hidden_layers


def test_llama3_8b_example_per_layer() -> None:
    """bf16, N = 4096, S = 4, T = 2: seq_to_heads 4.5 MiB + heads_to_seq 3 MiB + two TP all-reduces
    of 8 MiB = 23.5 MiB per layer; shift mode at the same N: 2 × 56 MiB = 112 MiB per layer."""
    layout = ParallelLayout(8, 2, 4)
    base = comm_volume(layout, CONFIG, num_tokens=4096, num_logits=0, mode=StepMode.BASE)
    assert base[("all_to_all", "sp")] * 2 == LAYERS * (4.5 + 3) * MIB
    per_step_embedding = 8 * MIB  # the embedding's one all-reduce of the same [N/S, D] rows
    assert base[("all_reduce", "tp")] * 2 == LAYERS * 16 * MIB + per_step_embedding
    per_layer = (base[("all_to_all", "sp")] * 2 + base[("all_reduce", "tp")] * 2 - per_step_embedding) / LAYERS
    assert per_layer == 23.5 * MIB
    assert base[("all_gather", "sp")] == 3 * 1024 * 4096  # (S−1)·N_r·D received, once per step
    shift = comm_volume(layout, CONFIG, num_tokens=4096, num_logits=0, mode=StepMode.SHIFT)
    assert (shift[("all_reduce", "shift")] * 2 - 56 * MIB) / LAYERS == 112 * MIB


@pytest.mark.parametrize("sp", [2, 4, 8])
def test_ulysses_volume_is_4nd_over_s(sp: int) -> None:
    """T = 1 and K = H: 4·N·D·(S−1)/S² elements per rank and layer (DeepSpeed-Ulysses' 4Nh/P)."""
    config = replace(CONFIG, num_key_value_heads=CONFIG.num_attention_heads)
    n, d = 4096, config.hidden_size
    volume = comm_volume(ParallelLayout(sp, 1, sp), config, num_tokens=n, num_logits=0, mode=StepMode.BASE)
    assert volume[("all_to_all", "sp")] * sp * sp == LAYERS * 4 * n * d * (sp - 1)
    assert ("all_reduce", "tp") not in volume  # a TP group of one sends nothing


def test_logits_gather_and_replicated_kv_heads() -> None:
    """K = 8 < S·T: K_e = max(K/T, S); the logits gather receives (n−1)·rows·⌈V/n⌉."""
    layout = ParallelLayout(16, 1, 16)
    volume = comm_volume(layout, CONFIG, num_tokens=32, num_logits=3, mode=StepMode.BASE)
    kv_e = 16  # 8 KV heads replicated to the 16 SP ranks
    seq_to_heads = 15 * (2 * (32 + 2 * kv_e) * 128) // 16
    heads_to_seq = 15 * (2 * 32 * 128) // 16
    assert volume[("all_to_all", "sp")] == LAYERS * (seq_to_heads + heads_to_seq)
    shift = comm_volume(layout, CONFIG, num_tokens=32, num_logits=3, mode=StepMode.SHIFT)
    assert shift[("all_gather", "shift")] == 15 * 3 * -(-CONFIG.vocab_size // 16)


def test_rows_must_split_over_sp() -> None:
    with pytest.raises(ValueError, match=r"num_tokens\(30\) is not divisible by sp\(4\)"):
        comm_volume(ParallelLayout(4, 1, 4), CONFIG, num_tokens=30, num_logits=1, mode=StepMode.BASE)
