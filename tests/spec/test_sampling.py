"""Ordinary sampling (``sample_tokens``: prefill samples and bonus tokens) with top-k and top-p in
vLLM's order, temperature → top-k → top-p (``Sampler.sample`` and ``apply_top_k_top_p_pytorch`` in
vLLM 0.32's ``v1/sample``): examples with hand-built logits, properties over random rows, and a
distribution test with a fixed seed and a stated tolerance."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from arctic_ref.spec.sampling import filter_row, sample_tokens

VOCAB = 8
LOGITS = torch.tensor([[2.0, 1.0, 0.5, 3.0, -1.0, 0.0, 2.5, 1.5]])
"""Ranked 3, 6, 0, 7, 1, 2, 5, 4 (no ties)."""


def _draws(
    logits: torch.Tensor, n: int, *, temperature: float = 1.0, top_k: int = VOCAB, top_p: float = 1.0
) -> list[int]:
    generator = torch.Generator().manual_seed(0)
    rows = logits.expand(n, -1)
    return sample_tokens(rows, [temperature] * n, [generator] * n, top_k=[top_k] * n, top_p=[top_p] * n)


def _old_sample(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """``sample_tokens`` before top-k/top-p, verbatim: the default must stay bit-identical to it."""
    probs = torch.softmax(logits.to(torch.float32) / temperature, dim=-1)
    race = torch.empty_like(probs).exponential_(generator=generator)
    return int(torch.argmax(probs / race))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16], ids=["f64", "f32", "bf16"])
def test_without_filters_the_draws_are_unchanged(dtype: torch.dtype) -> None:
    logits = torch.randn(64, 100, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)
    temperatures = [0.0 if i % 5 == 0 else 0.3 + i / 50 for i in range(64)]
    ours, old = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    got = sample_tokens(logits, temperatures, [ours] * 64)
    expected = [
        int(torch.argmax(row.to(torch.float32))) if t == 0.0 else _old_sample(row, t, old)
        for row, t in zip(logits, temperatures, strict=True)
    ]
    assert got == expected
    off = sample_tokens(
        logits, temperatures, [torch.Generator().manual_seed(3)] * 64, top_k=[100] * 64, top_p=[1.0] * 64
    )
    assert off == got


@pytest.mark.parametrize(
    ("top_k", "top_p", "allowed"),
    [
        (1, 1.0, {3}),
        (2, 1.0, {3, 6}),
        (3, 1.0, {3, 6, 0}),
        (VOCAB, 0.3, {3}),  # p(3) ≈ 0.40 ≥ 0.3: the top token alone
        (VOCAB, 0.5, {3, 6}),  # 0.40 + 0.24
        (3, 0.99, {3, 6, 0}),  # top-k first: top-p renormalises over the three kept
    ],
    ids=["k1", "k2", "k3", "p0.3", "p0.5", "k3-p0.99"],
)
def test_a_masked_token_is_never_sampled(top_k: int, top_p: float, allowed: set[int]) -> None:
    draws = set(_draws(LOGITS, 2000, top_k=top_k, top_p=top_p))
    kept = {int(i) for i in torch.nonzero(filter_row(LOGITS[0], top_k, top_p) > float("-inf")).flatten()}
    assert kept == allowed
    assert draws == kept  # never outside; 2000 draws reach every kept token


def test_top_p_keeps_the_smallest_set_reaching_p() -> None:
    probs = torch.softmax(LOGITS[0], dim=-1)
    order = probs.argsort(descending=True).tolist()
    for p in (0.05, 0.3, 0.5, 0.8, 0.95):
        kept = {int(i) for i in torch.nonzero(filter_row(LOGITS[0], VOCAB, p) > float("-inf")).flatten()}
        mass = 0.0
        expected = set()
        for token in order:  # the largest first, until their mass reaches p
            expected.add(token)
            mass += float(probs[token])
            if mass >= p:
                break
        assert kept == expected, p


def test_temperature_comes_before_top_p() -> None:
    """At τ = 0.25 the top token holds most of the mass, so top-p 0.6 keeps it alone; at τ = 1 it keeps
    more: top-p sees the tempered distribution."""
    sharp = set(_draws(LOGITS, 500, temperature=0.25, top_p=0.6))
    flat = set(_draws(LOGITS, 500, temperature=1.0, top_p=0.6))
    assert sharp == {3}
    assert len(flat) > 1


def test_ties_at_the_top_k_threshold_survive() -> None:
    logits = torch.tensor([[1.0, 3.0, 3.0, 3.0, 0.0]])
    assert set(_draws(logits, 300, top_k=1)) == {1, 2, 3}


def test_greedy_rows_ignore_the_filters() -> None:
    logits = torch.tensor([[0.0, 5.0, 1.0]])
    assert sample_tokens(logits, [0.0], [None], top_k=[1], top_p=[0.1]) == [1]
    assert sample_tokens(logits, [0.0], [None], top_k=[3], top_p=[1.0]) == [1]


def test_top_k_one_is_greedy_on_random_rows() -> None:
    logits = torch.randn(200, 64, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    sampled = sample_tokens(logits, [1.3] * 200, [torch.Generator().manual_seed(4)] * 200, top_k=[1] * 200)
    assert sampled == sample_tokens(logits, [0.0] * 200, [None] * 200)


@pytest.mark.parametrize(("top_k", "top_p"), [(0, 1.0), (3, 0.0), (3, 1.5)], ids=["k0", "p0", "p>1"])
def test_bad_filters_are_refused(top_k: int, top_p: float) -> None:
    with pytest.raises(ValueError, match=r"top_k \[.*\] must be >= 1"):
        sample_tokens(LOGITS, [1.0], [None], top_k=[top_k], top_p=[top_p])


def test_distribution_under_top_k_and_top_p() -> None:
    """Seed 0, 20,000 draws; each kept token's frequency within 4.5 standard errors (a binomial
    bound; ≈ 1e-5 false-alarm chance per token) of softmax over the kept logits at τ = 0.7."""
    n, temperature, top_k, top_p = 20_000, 0.7, 4, 0.9
    draws = torch.tensor(_draws(LOGITS, n, temperature=temperature, top_k=top_k, top_p=top_p))
    x = filter_row(LOGITS[0] / temperature, top_k, top_p)
    expected = torch.softmax(x.to(torch.float64), dim=-1)
    counts = torch.bincount(draws, minlength=VOCAB).to(torch.float64) / n
    stderr = (expected * (1 - expected) / n).sqrt()
    assert bool((counts[expected == 0] == 0).all())
    assert bool(((counts - expected).abs() <= 4.5 * stderr + 1e-12).all()), (counts, expected)
    assert int((expected > 0).sum()) == 3  # top-k kept 4, top-p 0.9 then dropped the smallest


@given(
    row=st.lists(st.floats(-8, 8, allow_nan=False, width=32), min_size=2, max_size=40),
    top_k=st.integers(1, 40),
    top_p=st.floats(0.01, 1.0),
    temperature=st.floats(0.05, 2.0),
    seed=st.integers(0, 2**31),
)
def test_the_sample_is_inside_the_mask(
    row: list[float], top_k: int, top_p: float, temperature: float, seed: int
) -> None:
    logits = torch.tensor([row], dtype=torch.float32)
    token = sample_tokens(logits, [temperature], [torch.Generator().manual_seed(seed)], top_k=[top_k], top_p=[top_p])[0]
    x = logits[0] / temperature
    kept = filter_row(x, top_k, top_p)
    assert kept[token] > float("-inf")
    if top_k < len(row):
        assert x[token] >= x.topk(top_k).values[-1]
    assert int((kept > float("-inf")).sum()) >= 1
