"""The fused Triton path equals the readable loop reference bit for bit on injected noise (both on
the GPU, sharing compute_target_probs' fused softmax), and its softmax stays within 2^-20 of float64."""

import random

import pytest
import torch

from arctic_ref.spec import (
    INTENDED,
    RejectionNoise,
    SamplingMetadata,
    rejection_sample_loop,
    rejection_sample_with_noise,
)
from arctic_ref.spec.rejection_triton import TRITON_AVAILABLE, DrawnNoise, fused_kernels, softmax_rows
from arctic_ref.testing.sampler.corpus import random_case, random_noise

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not TRITON_AVAILABLE, reason="needs Triton")]


def _to_cuda(args: tuple) -> tuple:  # type: ignore[type-arg]
    return tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in args)


def _meta_cuda(meta: SamplingMetadata) -> SamplingMetadata:
    return SamplingMetadata(
        temperature=None if meta.temperature is None else meta.temperature.cuda(),
        all_greedy=meta.all_greedy,
        all_random=meta.all_random,
        top_k=None,
        top_p=None,
    )


@pytest.mark.parametrize("seed", range(300))
def test_fused_equals_loop_on_random_cases(seed: int) -> None:
    rng = random.Random(seed)
    case = random_case(rng, max_vocab=9000 if seed % 10 == 0 else 64)
    noise = random_noise(case, INTENDED, rng)
    args = list(_to_cuda(case.args()))
    args[7] = _meta_cuda(case.sampling_metadata)
    cuda_noise = (
        None
        if noise is None
        else RejectionNoise(uniforms=noise.uniforms.cuda(), exponentials=noise.exponentials.cuda())
    )
    fast = rejection_sample_with_noise(*args, cuda_noise)
    slow = rejection_sample_loop(*args, cuda_noise)
    assert torch.equal(fast.cpu(), slow.cpu())


@pytest.mark.parametrize(
    ("drafts", "with_probs"), [(4, False), (16, False), (4, True)], ids=["256x4", "256x16", "256x4-probs"]
)
def test_fused_equals_loop_on_benchmark_shape(drafts: int, with_probs: bool) -> None:
    g = torch.Generator(device="cuda").manual_seed(drafts)
    reqs, vocab = 256, 128_256
    total = reqs * drafts
    logits = torch.randn(total, vocab, device="cuda", generator=g) * 4
    argmax = logits.argmax(dim=1)
    draft_ids = torch.where(
        torch.rand(total, device="cuda", generator=g) < 0.8,
        argmax,
        torch.randint(0, vocab, (total,), device="cuda", generator=g),
    )
    probs = torch.softmax(torch.randn(total, vocab, device="cuda", generator=g), dim=1) if with_probs else None
    temperature = torch.where(torch.arange(reqs, device="cuda") % 8 == 0, 0.0, 1.0)
    meta = SamplingMetadata(temperature=temperature, all_greedy=False, all_random=False)
    noise = RejectionNoise(
        uniforms=torch.rand(total, dtype=torch.float64, device="cuda", generator=g),
        exponentials=torch.empty(reqs, vocab, device="cuda").exponential_(generator=g),
    )
    args = (
        draft_ids,
        [drafts] * reqs,
        drafts,
        torch.arange(1, reqs + 1, device="cuda") * drafts,
        probs,
        logits,
        torch.zeros(reqs, 1, dtype=torch.int64, device="cuda"),
        meta,
    )
    fast = rejection_sample_with_noise(*args, noise)
    slow = rejection_sample_loop(*args, noise)
    assert torch.equal(fast.cpu(), slow.cpu())
    assert (fast[:, 0] >= 0).all()


def test_fused_softmax_accuracy() -> None:
    g = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(64, 128_256, device="cuda", generator=g) * 6
    tau = torch.full((64,), 0.8, device="cuda")
    p = softmax_rows(logits, tau).double()
    exact = torch.softmax(logits.double() / tau.double().unsqueeze(1), dim=1)
    eager = torch.softmax(logits / tau.unsqueeze(1), dim=1).double()
    significant = exact > 1e-30
    relative = ((p - exact).abs() / exact)[significant].max().item()
    eager_relative = ((eager - exact).abs() / exact)[significant].max().item()
    print(
        f"max relative error vs float64: fused {relative:.3e}, torch float32 softmax {eager_relative:.3e} (2^-20 = {2**-20:.3e})"
    )
    # Both inherit the float32 rounding of x/τ (|x/τ| up to ~30 here); the fused kernel must not be worse.
    assert relative <= 2 * eager_relative


@pytest.mark.parametrize("reqs", [1, 8, 256])
@pytest.mark.parametrize("side", ["at", "above"])
def test_fused_acceptance_sees_the_reference_probabilities_bit_for_bit(reqs: int, side: str) -> None:
    """Request i examines its row j = i mod 4: u = 0 before it (accepted), and on it u equals the
    reference's p(d) (``softmax_rows``, the loop reference's probabilities on CUDA) or the next float64
    above it. A fused p(d) one bit lower rejects where the reference accepts ("at"), one bit higher
    accepts where it rejects ("above"); so the outputs agree only if the bits do. The row counts 4,
    32 and 1024 take each of ``stats_config``'s three launch settings, which fix the summation order."""
    g = torch.Generator(device="cuda").manual_seed(reqs)
    vocab, drafts = 32_000, 4
    total = reqs * drafts
    logits = torch.randn(total, vocab, device="cuda", generator=g) * 3
    draft_ids = torch.randint(0, vocab, (total,), device="cuda", generator=g)
    tau = torch.full((reqs,), 0.9, device="cuda")
    p_d = softmax_rows(logits, tau.repeat_interleave(drafts)).gather(1, draft_ids[:, None]).squeeze(1).double()
    if side == "above":
        p_d = torch.nextafter(p_d, torch.full_like(p_d, 2.0))
    position = torch.arange(total, device="cuda") % drafts
    examined = (torch.arange(total, device="cuda") // drafts) % drafts
    uniforms = torch.where(position < examined, 0.0, torch.where(position == examined, p_d, 0.5))
    meta = SamplingMetadata(temperature=tau, all_greedy=False, all_random=True)
    noise = RejectionNoise(
        uniforms=uniforms, exponentials=torch.empty(reqs, vocab, device="cuda").exponential_(generator=g)
    )
    args = (
        draft_ids,
        [drafts] * reqs,
        drafts,
        torch.arange(1, reqs + 1, device="cuda") * drafts,
        None,
        logits,
        torch.zeros(reqs, 1, dtype=torch.int64, device="cuda"),
        meta,
    )
    fast = rejection_sample_with_noise(*args, noise)
    slow = rejection_sample_loop(*args, noise)
    assert torch.equal(fast.cpu(), slow.cpu())
    lead = (fast[:, :drafts] == draft_ids.view(reqs, drafts)).int().cumprod(1).sum(1)  # accepted drafts
    row = torch.arange(reqs, device="cuda") % drafts
    assert bool((lead >= row + 1).all() if side == "at" else (lead == row).all())  # the boundary decided


@pytest.mark.parametrize("with_probs", [False, True], ids=["one-hot", "probs"])
@pytest.mark.parametrize("tau", [1.0, 0.5])
def test_fused_degenerate_residual_falls_back_to_p(with_probs: bool, tau: float) -> None:
    """Rows where the residual is zero everywhere (p one-hot at the draft, or q == p) take the
    p-race; most vocabulary chunks then hold no positive residual, some none at all."""
    g = torch.Generator(device="cuda").manual_seed(7)
    reqs, vocab, drafts = 16, 9000, 2
    total = reqs * drafts
    draft_ids = torch.randint(0, vocab, (total,), device="cuda", generator=g)
    logits = torch.randn(total, vocab, device="cuda", generator=g)
    one_hot = torch.full_like(logits, float("-inf")).scatter_(1, draft_ids[:, None], 0.0)
    logits = torch.where((torch.arange(total, device="cuda") % 2 == 0)[:, None], one_hot, logits)
    probs = torch.softmax(logits / tau, dim=1) if with_probs else None  # q == p: residual zero
    meta = SamplingMetadata(temperature=torch.full((reqs,), tau, device="cuda"), all_greedy=False, all_random=True)
    noise = RejectionNoise(
        uniforms=torch.rand(total, dtype=torch.float64, device="cuda", generator=g),
        exponentials=torch.empty(reqs, vocab, device="cuda").exponential_(generator=g),
    )
    args = (
        draft_ids,
        [drafts] * reqs,
        drafts,
        torch.arange(1, reqs + 1, device="cuda") * drafts,
        probs,
        logits,
        torch.zeros(reqs, 1, dtype=torch.int64, device="cuda"),
        meta,
    )
    fast = rejection_sample_with_noise(*args, noise)
    slow = rejection_sample_loop(*args, noise)
    assert torch.equal(fast.cpu(), slow.cpu())


@pytest.mark.parametrize("with_probs", [False, True], ids=["one-hot", "probs"])
@pytest.mark.parametrize("seed", range(4))
def test_fused_path_under_the_v2_and_v6_conditions(with_probs: bool, seed: int) -> None:
    """bugs.md V-6 and V-2 on the fused path. V-6: the vocabulary's tail chunk holds 100 ids, all of
    zero target probability, so its residual is zero while other chunks' is not; every recovered id
    stays in the vocabulary and equals the loop reference. V-2: over 20 launches the call writes none
    of its inputs (bitwise), and it equals the loop reference, whose residual zeroes the draft in a
    copy (so it never recovers the rejected draft: the kit's E3, and its mutant
    ``draft_not_zeroed_in_residual``, on CPU)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    reqs, vocab, drafts = 32, 3 * 8192 + 100, 4
    total = reqs * drafts
    draft_ids = torch.randint(0, vocab - 100, (total,), device="cuda", generator=g)
    logits = torch.randn(total, vocab, device="cuda", generator=g) * 3
    logits[:, vocab - 100 :] = float("-inf")
    probs = torch.softmax(torch.randn(total, vocab, device="cuda", generator=g), dim=1) if with_probs else None
    meta = SamplingMetadata(temperature=torch.full((reqs,), 0.7, device="cuda"), all_greedy=False, all_random=True)
    args = (
        draft_ids,
        [drafts] * reqs,
        drafts,
        torch.arange(1, reqs + 1, device="cuda") * drafts,
        probs,
        logits,
        torch.zeros(reqs, 1, dtype=torch.int64, device="cuda"),
        meta,
    )
    before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    for _ in range(20):
        noise = RejectionNoise(
            uniforms=torch.rand(total, dtype=torch.float64, device="cuda", generator=g),
            exponentials=torch.empty(reqs, vocab, device="cuda").exponential_(generator=g),
        )
        fast = rejection_sample_with_noise(*args, noise)
        assert torch.equal(fast.cpu(), rejection_sample_loop(*args, noise).cpu())
        assert int(fast.max()) < vocab - 100
    for a, b in zip(args, before, strict=True):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a, b)


def test_the_first_launch_copies_the_slot_from_pinned_memory() -> None:
    """``slot_from``: the first launch reads the seed and offset from pinned memory and fills the
    device slot for the later launches, so the output equals that of a slot filled on the device
    (and an offset moved by the host between calls is seen); misplaced slots raise."""
    reqs, drafts, vocab = 3, 4, 1000
    g = torch.Generator(device="cuda").manual_seed(5)
    logits = torch.randn(reqs * drafts, vocab, device="cuda", generator=g) * 3
    cu = torch.arange(1, reqs + 1, device="cuda") * drafts
    args = (
        logits.argmax(1),
        cu,
        drafts,
        None,
        logits,
        torch.zeros(reqs, 1, dtype=torch.int64, device="cuda"),
        torch.ones(reqs, device="cuda"),
        None,
        None,
    )
    for offset in (8, 4000, 8):
        outs = []
        for pinned in (False, True):
            out = torch.empty(reqs, drafts + 1, dtype=torch.int32, device="cuda")
            host = torch.tensor([out.data_ptr(), -1234567, offset], dtype=torch.int64).pin_memory()
            slot = torch.zeros(3, dtype=torch.int64, device="cuda") if pinned else host.cuda()
            noise = DrawnNoise.layout(slot[1:], reqs * drafts, reqs, vocab)
            fused_kernels(*args, out=out, out_slot=slot[:1], drawn=noise, slot_from=host if pinned else None)
            assert slot.tolist() == host.tolist()
            outs.append(out)
        assert torch.equal(outs[0], outs[1])
    slot = torch.zeros(4, dtype=torch.int64, device="cuda")
    host = torch.zeros(3, dtype=torch.int64).pin_memory()
    for bad_from, out_slot, state in (
        (host.clone(), slot[:1], slot[1:3]),  # not pinned
        (host, slot[:1], slot[2:4]),  # the state does not follow out_slot
        (host, None, slot[1:3]),
    ):
        with pytest.raises(ValueError, match="slot_from"):
            fused_kernels(
                *args, out_slot=out_slot, drawn=DrawnNoise.layout(state, reqs * drafts, reqs, vocab), slot_from=bad_from
            )
