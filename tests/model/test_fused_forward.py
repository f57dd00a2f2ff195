"""The fused forward's structure on the CPU, with the torch ops (``--kernels packed``): packed
projections share storage with the separate ones; a chunked-prefill step and a mixed verify step
equal the reference ``forward`` in float64, hidden states and KV cache; generation keeps the
reference's tokens; the Triton set is refused without CUDA. The Triton kernels themselves are
checked against the same torch ops in ``gpu_tests/test_fused_forward_gpu.py``."""

from dataclasses import replace

import pytest
import torch

from arctic_ref.model.config import ModelConfig, tiny_config
from arctic_ref.model.fused_forward import fused_forward, pack_projections
from arctic_ref.model.kv_cache import KVCache
from arctic_ref.model.layer_ops import TORCH_OPS, LayerOps
from arctic_ref.model.llama import ForwardInputs, LlamaShard, forward
from arctic_ref.model.triton_ops import (
    add_rms_norm,
    attention_tiling,
    decode_attention,
    gated_linear,
    linear,
    qkv_write_cache,
    rope_write_cache,
    silu_mul,
    skinny_config,
)
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel import GraphTables, ParallelLayout, RankGroups, ShiftPolicy, SoloComm, StepPlan, plan_step
from arctic_ref.runner import EngineConfig, SampleRecord, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.testing.layouts.steps import mixed_step

SOLO = SoloComm(0)
GROUPS = RankGroups(rank=0, tp=SOLO, sp=SOLO, shift=SOLO)
CPU = torch.device("cpu")


def _models() -> tuple[LlamaShard, LlamaShard]:
    config = tiny_config()
    model = LlamaShard.build(random_weights(config, 0), config, 0, 1)
    return model, pack_projections(model)


def _float64_caches(config: ModelConfig) -> list[KVCache]:
    """Two empty float64 caches of 16 blocks: one for the reference, one for the forward under test."""
    return [
        KVCache.allocate(
            layers=config.num_hidden_layers,
            num_blocks=16,
            heads=config.num_key_value_heads,
            head_dim=config.head_dim,
            dtype=torch.float64,
            device=CPU,
        )
        for _ in range(2)
    ]


def _mixed_step_and_plan(vocab_size: int) -> tuple[ForwardInputs, StepPlan]:
    """Three requests of 9, 5 and 3 new tokens plus a pad row, planned on one rank without graphs."""
    inputs = mixed_step([9, 5, 3], {0: 0, 1: 0, 2: 0}, vocab_size, torch.Generator().manual_seed(3), pad=1)
    return inputs, plan_step(18, policy=ShiftPolicy(ParallelLayout(1, 1, 1)), graphs=GraphTables.eager(), groups=GROUPS)


def test_packed_projections_are_views_of_one_tensor() -> None:
    model, packed = _models()
    for layer in range(model.config.num_hidden_layers):
        p = f"model.layers.{layer}."
        for whole, parts in (("self_attn.qkv_proj", ("q", "k", "v")), ("mlp.gate_up_proj", ("gate", "up"))):
            tensor = packed.w(p + whole + ".weight")
            prefix = "self_attn." if whole.startswith("self_attn") else "mlp."
            names = [p + prefix + part + "_proj.weight" for part in parts]
            assert torch.equal(tensor, torch.cat([model.w(n) for n in names]))
            for name in names:
                assert packed.w(name).untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
                assert torch.equal(packed.w(name), model.w(name))
    assert pack_projections(packed) is packed


def test_packed_forward_equals_the_reference_in_float64() -> None:
    model, packed = _models()
    config = model.config
    caches = _float64_caches(config)
    g, history = torch.Generator().manual_seed(5), {0: 0, 1: 0, 2: 0}
    for counts in ([20, 7, 13], [1, 4, 3], [1, 1, 1]):
        inputs = mixed_step(counts, history, config.vocab_size, g, pad=3)
        plan = plan_step(
            inputs.input_ids.shape[0],
            policy=ShiftPolicy(ParallelLayout(1, 1, 1)),
            graphs=GraphTables.eager(),
            groups=GROUPS,
        )
        real = sum(counts)
        want = forward(model, inputs, caches[0], plan)[:real]
        got = fused_forward(packed, inputs, caches[1], plan, TORCH_OPS)[:real]
        assert float((got - want).abs().max()) <= 1e-12
    for ref, ours in zip((*caches[0].keys, *caches[0].values), (*caches[1].keys, *caches[1].values), strict=True):
        # Block 0 takes the pad rows of the static write; every other block must agree, NaN included.
        assert torch.equal(ref[1:].isnan(), ours[1:].isnan())
        assert float((ref[1:].nan_to_num(0) - ours[1:].nan_to_num(0)).abs().max()) <= 1e-12


def test_fused_forward_needs_packed_projections() -> None:
    model, _ = _models()
    inputs = mixed_step([1, 1, 1], {0: 0, 1: 0, 2: 0}, model.config.vocab_size, torch.Generator().manual_seed(0), pad=0)
    plan = plan_step(3, policy=ShiftPolicy(ParallelLayout(1, 1, 1)), graphs=GraphTables.eager(), groups=GROUPS)
    cache = KVCache.allocate(layers=4, num_blocks=16, heads=2, head_dim=16, dtype=torch.float64, device=CPU)
    with pytest.raises(ValueError, match="pack_projections"):
        fused_forward(model, inputs, cache, plan, TORCH_OPS)


def _generate(kernels: str) -> tuple[list[tuple[int, ...]], list[SampleRecord]]:
    config = tiny_config()
    engine = EngineConfig(
        model=config,
        layout=ParallelLayout(1, 1, 1),
        kernels=kernels,
        scheduler=SchedulerConfig(max_num_batched_tokens=16),
    )
    records: list[SampleRecord] = []
    runner = build_runner(engine, random_weights(config, 0), GROUPS)
    prompts = builtin_prompts(config.vocab_size)
    results = run_requests(
        runner, engine.scheduler, prompts, [SamplingParams(max_tokens=12)] * len(prompts), records=records
    )
    return [r.output_token_ids for r in results], records


def test_generation_with_packed_kernels_keeps_the_reference_tokens() -> None:
    """Chunked prefill at budget 16, then decode: the same tokens and logits ≤ 1e-12."""
    ref_tokens, ref_rows = _generate("reference")
    tokens, rows = _generate("packed")
    assert tokens == ref_tokens
    assert max(float((a.logits - b.logits).abs().max()) for a, b in zip(ref_rows, rows, strict=True)) <= 1e-12


def test_kernel_names_are_checked() -> None:
    base = EngineConfig(model=tiny_config(), layout=ParallelLayout(1, 1, 1))
    with pytest.raises(ValueError, match=r"kernels\('fast'\) must be one of"):
        replace(base, kernels="fast")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="needs a CUDA device and Triton"):
            replace(base, kernels="triton")


def test_triton_ops_validate_before_launching() -> None:
    """The Triton wrappers check devices, shapes and strides first, naming the offending values
    (this runs without Triton or CUDA: nothing is launched)."""
    x = torch.zeros(2, 8)
    with pytest.raises(ValueError, match=r"need CUDA tensors; on other devices: \{'x': 'cpu'"):
        add_rms_norm(x, None, torch.ones(8), 1e-5)
    with pytest.raises(ValueError, match=r"'gate_up': 'cpu'"):
        silu_mul(torch.zeros(2, 6))
    with pytest.raises(ValueError, match=r"'x': 'cpu', 'weight': 'cpu'"):
        linear(torch.zeros(2, 6), torch.zeros(4, 6))
    with pytest.raises(ValueError, match=r"'x': 'cpu', 'weight': 'cpu'"):
        gated_linear(torch.zeros(2, 6), torch.zeros(4, 6))
    caches = (torch.zeros(2, 16, 2, 4), torch.zeros(2, 16, 2, 4))
    with pytest.raises(ValueError, match=r"'x': 'cpu', 'weight': 'cpu', 'cos': 'cpu'"):
        qkv_write_cache(
            torch.zeros(3, 6),
            torch.zeros(24, 6),
            torch.zeros(3, 4),
            torch.zeros(3, 4),
            torch.zeros(3, dtype=torch.int64),
            *caches,
        )
    k = torch.zeros(3, 2, 4)
    with pytest.raises(ValueError, match=r"'k': 'cpu', 'v': 'cpu'"):
        rope_write_cache(
            k,
            k,
            torch.zeros(3, 4),
            torch.zeros(3, 4),
            torch.zeros(3, dtype=torch.int64),
            torch.zeros(2, 16, 2, 4),
            torch.zeros(2, 16, 2, 4),
        )
    with pytest.raises(ValueError, match=r"'q': 'cpu'"):
        decode_attention(
            torch.zeros(3, 4, 4),
            torch.zeros(3, 4),
            torch.zeros(3, 4),
            torch.zeros(3, dtype=torch.int64),
            torch.zeros(3, 5, dtype=torch.int64),
            torch.ones(3, dtype=torch.bool),
            torch.zeros(2, 16, 2, 4),
            torch.zeros(2, 16, 2, 4),
        )


def _attention_without_own_key(
    q: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    positions: torch.Tensor,
    context_slots: torch.Tensor,
    real: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
) -> torch.Tensor:
    """A plausible kernel bug: each row attends up to its position − 1 (its own key missed)."""
    return TORCH_OPS.decode_attention(q, cos, sin, positions - 1, context_slots, real, key_cache, value_cache)


def _rope_before_nothing(
    k: torch.Tensor,
    v: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    slots: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
) -> None:
    """Another: keys cached without RoPE."""
    ones, zeros = torch.ones_like(cos), torch.zeros_like(sin)
    TORCH_OPS.rope_write_cache(k, v, ones, zeros, slots, key_cache, value_cache)


@pytest.mark.parametrize(
    "broken",
    [
        replace(TORCH_OPS, decode_attention=_attention_without_own_key),
        replace(TORCH_OPS, rope_write_cache=_rope_before_nothing),
    ],
    ids=["own-key-missed", "keys-unrotated"],
)
def test_the_comparison_catches_broken_ops(broken: LayerOps) -> None:
    """The fused-vs-reference comparison has teeth: an op set with one plausible bug is off by far
    more than the 1e-12 the correct one meets."""
    model, packed = _models()
    config = model.config
    caches = _float64_caches(config)
    inputs, plan = _mixed_step_and_plan(config.vocab_size)
    want = forward(model, inputs, caches[0], plan)[:17]
    got = fused_forward(packed, inputs, caches[1], plan, broken)[:17]
    assert not torch.allclose(got, want, rtol=0.0, atol=1e-3)  # (a row with no key gives NaN: also caught)


def _qkv_then_write(
    x: torch.Tensor,
    weight: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    slots: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    *,
    rotate: bool = True,
) -> torch.Tensor:
    """A ``qkv_write_cache`` written as the two torch ops (``rotate=False``: keys cached unrotated,
    a plausible fused-kernel bug)."""
    qkv = TORCH_OPS.linear(x, weight)
    rows, (kv_heads, head_dim) = qkv.shape[0], key_cache.shape[2:]
    kv = kv_heads * head_dim
    k = qkv[:, qkv.shape[1] - 2 * kv : qkv.shape[1] - kv].view(rows, kv_heads, head_dim)
    v = qkv[:, qkv.shape[1] - kv :].view(rows, kv_heads, head_dim)
    cos, sin = (cos, sin) if rotate else (torch.ones_like(cos), torch.zeros_like(sin))
    TORCH_OPS.rope_write_cache(k, v, cos, sin, slots, key_cache, value_cache)
    return qkv


def _unrotated_qkv_write(
    x: torch.Tensor,
    weight: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    slots: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
) -> torch.Tensor:
    return _qkv_then_write(x, weight, cos, sin, slots, key_cache, value_cache, rotate=False)


def _step_pair(ops: LayerOps) -> tuple[torch.Tensor, torch.Tensor, KVCache, KVCache]:
    """The fused forward's hidden states and cache for one mixed step, with ``TORCH_OPS`` and ``ops``."""
    _, packed = _models()
    config = packed.config
    caches = _float64_caches(config)
    inputs, plan = _mixed_step_and_plan(config.vocab_size)
    want = fused_forward(packed, inputs, caches[0], plan, TORCH_OPS)
    got = fused_forward(packed, inputs, caches[1], plan, ops)
    return want, got, caches[0], caches[1]


def _assert_same_cache(got: KVCache, want: KVCache) -> None:
    """Every layer's keys and values bit for bit (unwritten slots, NaN in both, compare equal)."""
    for a, b in zip((*got.keys, *got.values), (*want.keys, *want.values), strict=True):
        assert torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))


def test_the_fused_forward_takes_qkv_write_cache_without_an_exchange() -> None:
    """An op set's ``qkv_write_cache`` replaces its qkv ``linear`` + ``rope_write_cache`` in a layout
    without Ulysses: written as the two ops it gives the same bits; one that caches the keys
    unrotated is caught (so the fused forward really calls it)."""
    want, got, want_cache, got_cache = _step_pair(replace(TORCH_OPS, qkv_write_cache=_qkv_then_write))
    assert torch.equal(got, want)
    _assert_same_cache(got_cache, want_cache)
    want, got, _, _ = _step_pair(replace(TORCH_OPS, qkv_write_cache=_unrotated_qkv_write))
    assert not torch.allclose(got[:17], want[:17], rtol=0.0, atol=1e-3)


def _no_qkv_write(
    x: torch.Tensor,
    weight: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    slots: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
) -> torch.Tensor:
    raise AssertionError("qkv_write_cache called in a step with a Ulysses exchange")


def test_the_fused_forward_skips_qkv_write_cache_under_ulysses() -> None:
    """Under Ulysses the keys and values are exchanged between the projection and the cache write,
    so the fused op must not run: a step planned with a token slice (one rank, an exchange over a
    group of one) never calls it and gives ``TORCH_OPS``'s bits and cache."""
    _, packed = _models()
    caches = _float64_caches(packed.config)
    inputs, plan = _mixed_step_and_plan(packed.config.vocab_size)
    sliced = replace(plan, token_slice=slice(0, plan.num_input_tokens))
    assert sliced.groups.sp is not None
    want = fused_forward(packed, inputs, caches[0], plan, TORCH_OPS)
    got = fused_forward(packed, inputs, caches[1], sliced, replace(TORCH_OPS, qkv_write_cache=_no_qkv_write))
    assert torch.equal(got, want)
    _assert_same_cache(caches[1], caches[0])


def test_skinny_config_keeps_the_measured_settings() -> None:
    """The settings of the measured decode figures: 32 columns per program up to 4096 outputs, else
    64; 256-wide K slices; 5 stages up to 4096 outputs, 3 from 16,384, else 4."""
    assert [skinny_config(n) for n in (96, 4096, 4097, 6144, 16_383, 16_384, 28672)] == [
        (32, 256, 5),
        (32, 256, 5),
        (64, 256, 4),
        (64, 256, 4),
        (64, 256, 4),
        (64, 256, 3),
        (64, 256, 3),
    ]


@pytest.mark.parametrize(
    ("rows", "kv_heads", "context", "expected"),
    [(1, 8, 1056, (64, 64, 4)), (8, 8, 1056, (192, 64, 4)), (128, 8, 1056, (1088, 64, 4)), (16, 8, 1056, (320, 64, 4))],
)
def test_attention_tiling_fills_the_gpu_with_few_splits(
    rows: int, kv_heads: int, context: int, expected: tuple[int, int, int]
) -> None:
    """Tensor cores: 64-key tiles, splits while rows × KV heads are under 512 programs, one split
    (no combine) beyond; the split kernel keeps its fixed tiling."""
    assert attention_tiling(rows, kv_heads, context, True) == expected
    assert attention_tiling(rows, kv_heads, context, False) == (32, 32, 1)


def test_torch_gated_linear_is_silu_of_gate_times_up() -> None:
    """Small integers, so every product is exact whatever order a CPU matmul kernel sums in (on
    some CPUs x·Wᵀ and x·W[:4]ᵀ of random floats differ in the last bit)."""
    g = torch.Generator().manual_seed(4)
    x, weight = (torch.randint(-3, 4, shape, generator=g).float() for shape in ((3, 5), (8, 5)))
    gate, up = x @ weight[:4].T, x @ weight[4:].T
    assert torch.equal(TORCH_OPS.gated_linear(x, weight), torch.nn.functional.silu(gate) * up)


def test_torch_linear_is_the_product_with_the_transposed_weight() -> None:
    g = torch.Generator().manual_seed(3)
    x, weight = torch.randn(3, 5, generator=g), torch.randn(4, 5, generator=g)
    assert torch.equal(TORCH_OPS.linear(x, weight), x @ weight.T)
