"""``VLLM_0_32`` is bit-identical to the installed vLLM 0.32's CPU rejection path: its
``RejectionSampler(Sampler())`` as the V1 runner builds it, ``forward(metadata, None, logits,
sampling_metadata)`` as the runner calls it, after the worker registered the CPU build's C++
kernels (``register_triton_kernel_overrides``), on the kit's seeded corpus: the same output rows and
the same generator states afterwards (every request generator and the global one), greedy, random
and mixed batches, per-request generators or none, top-k, top-p and draft probabilities.

vLLM's ``forward`` samples the bonus token itself. Each bonus row here is 0 at the corpus's bonus
id and −inf elsewhere, so any sampler returns that id; its randomness is predicted: the CPU build's
``TopKTopPSampler.forward_cpu`` draws ``randint`` seeds, B from the global generator and one from
each request generator, before verification draws anything (``bonus_stage_draws``).

V-20 (docs/bugs.md) makes the installed build verify random rows against uninitialised
temperatures, so the identity holds with V-20 repaired (``broken_engines.repairs``, the repair the
broken engines use), and ``test_v20_unrepaired_vllm_breaks_the_identity`` shows the comparison
catches the bug when it is back. V-17 (vLLM raises on a batch without a draft token and with top-k
but no top-p) is counted, not compared. The CPU kernel's float32 cast of the uniforms (V-18) is
measured against the float64 rule in ``test_v18_float32_cast_of_the_uniforms``."""

import functools
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import pytest

pytest.importorskip("vllm.config")  # not "vllm": tests/vllm would be found as a namespace package

import torch
from torch import Tensor

from arctic_ref.spec import VLLM_0_32, draw_noise, rejection_sample_with_noise
from arctic_ref.spec.sampling import compute_target_probs
from arctic_ref.testing.sampler.corpus import RejectionCase, random_case
from arctic_ref.testing.sampler.exact import tied_maxima_case
from arctic_ref.testing.sampler.vllm_class import VllmClassSampler

BROKEN_ENGINES: Final = Path(__file__).resolve().parents[2] / "examples" / "broken-engines"
CASES: Final = int(os.environ.get("ARCTIC_REF_VLLM_CASES", "600"))


@pytest.fixture(scope="module")
def kernels() -> Iterator[Any]:
    """The CPU build's kernels as a V1 worker registers them, V-20 repaired for this module only."""
    from vllm.platforms import current_platform
    from vllm.v1.sample import rejection_sampler

    current_platform.register_triton_kernel_overrides()
    sys.path.insert(0, str(BROKEN_ENGINES))
    from broken_engines.repairs import repair_expand_kernel

    override = rejection_sampler.expand_kernel
    original = (override._impl, override.func)
    assert repair_expand_kernel(), "no CPU override of expand_kernel: not the CPU build?"
    yield override
    override._impl, override.func = original


@functools.cache
def _adapter() -> VllmClassSampler:
    """The kit's adapter for vLLM's class, used here only for the inputs it builds (after ``kernels``
    registered the CPU kernels, so it registers nothing itself)."""
    from vllm.v1.sample.rejection_sampler import RejectionSampler

    return VllmClassSampler(
        "--arctic-ref-sampler", "vllm.v1.sample.rejection_sampler:RejectionSampler", RejectionSampler, "cpu"
    )


def _vllm_inputs(args: tuple[Any, ...]) -> tuple[Any, Tensor, Any]:
    """vLLM's SpecDecodeMetadata, the [T + B, V] logits (request i's nᵢ draft rows, then its bonus
    row, 0 at the bonus id and −inf elsewhere) and vLLM's SamplingMetadata for one case, as the kit's
    adapter builds them, with the runner's ``max_spec_len = max(num_draft_tokens)``."""
    drafts, counts, _, cu, _, target_logits, bonus, meta = args
    return _adapter().vllm_inputs(drafts, counts, max(counts), cu, target_logits, bonus, meta)


def bonus_stage_draws(args: tuple[Any, ...]) -> None:
    """What vLLM 0.32's CPU ``Sampler`` draws for the bonus rows (``TopKTopPSampler.forward_cpu``):
    nothing if every row is greedy, else B seeds from the global generator, then one seed from
    each request generator, in the dict's order."""
    meta = args[7]
    if meta.all_greedy:
        return
    torch.randint(0, 2**31, (len(args[1]),), dtype=torch.long)
    for generator in meta.generators.values():
        torch.randint(0, 2**31, (1,), generator=generator, dtype=torch.long)


def _v17(case: RejectionCase) -> bool:
    meta = case.sampling_metadata
    return sum(case.num_draft_tokens) == 0 and meta.top_k is not None and meta.top_p is None and not meta.all_greedy


def _compare(sampler: Any, case: RejectionCase, index: int, seed: int) -> str:
    """'' if vLLM and VLLM_0_32 agree on the rows and on every generator state afterwards."""
    theirs_args = case.args()
    spec, logits, sampling = _vllm_inputs(theirs_args)
    torch.manual_seed(seed)
    theirs = sampler.forward(spec, case.draft_probs, logits, sampling).sampled_token_ids
    their_global = torch.get_rng_state()
    ours_args = case.args()
    torch.manual_seed(seed)
    bonus_stage_draws(ours_args)
    meta = ours_args[7]
    noise = draw_noise(ours_args[1], case.vocab, meta, profile=VLLM_0_32)
    ours = rejection_sample_with_noise(*ours_args[:2], max(ours_args[1]), *ours_args[3:], noise, profile=VLLM_0_32)
    if not torch.equal(theirs.to(torch.int32), ours):
        return f"case {index}: vLLM {theirs.tolist()} VLLM_0_32 {ours.tolist()}"
    if not torch.equal(their_global, torch.get_rng_state()):
        return f"case {index}: the global generator differs"
    for i, generator in meta.generators.items():
        if not torch.equal(generator.get_state(), theirs_args[7].generators[i].get_state()):
            return f"case {index}: generator of request {i} differs"
    return ""


@pytest.mark.parametrize("seeded", [True, False], ids=["request-generators", "global-generator"])
def test_vllm_0_32_is_bit_identical_to_vllm(kernels: Any, seeded: bool) -> None:
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler

    sampler = RejectionSampler(Sampler())
    rng = random.Random(32 + seeded)
    compared = raised = greedy = random_rows = 0
    for index in range(CASES):
        case = random_case(rng, greedy_temperature=0.0, seeded=seeded)
        if _v17(case):
            with pytest.raises(RuntimeError):
                _compare(sampler, case, index, seed=index)
            raised += 1
            continue
        assert _compare(sampler, case, index, seed=index) == ""
        compared += 1
        greedy += sum(case.greedy)
        random_rows += len(case.greedy) - sum(case.greedy)
    print(
        f"\n{compared} of {CASES} cases bit-identical ({greedy} greedy and {random_rows} random requests), "
        f"{raised} where vLLM raises (V-17: no draft token, top-k without top-p)"
    )
    assert compared >= 0.9 * CASES


def test_v20_unrepaired_vllm_breaks_the_identity(kernels: Any) -> None:
    """The replay: with the installed ``expand_kernel`` override back (V-20), random rows verify
    against uninitialised temperatures, top-k and top-p; the comparison sees it (a differing row
    or generator, or vLLM raising) within the first cases that have random rows with drafts."""
    from vllm.utils.cpu_triton_utils import _expand_kernel_impl
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler

    sampler = RejectionSampler(Sampler())
    repaired = (kernels._impl, kernels.func)
    kernels._impl = kernels.func = _expand_kernel_impl
    rng = random.Random(20)
    caught = []
    try:
        for index in range(200):
            case = random_case(rng, greedy_temperature=0.0, seeded=True)
            if _v17(case) or case.sampling_metadata.all_greedy or not sum(case.num_draft_tokens):
                continue
            # Fill the allocator's free memory with a value no temperature has, as a busy engine would.
            torch.full((4096,), -3.0).sum()
            try:
                problem = _compare(sampler, case, index, seed=index)
            except (RuntimeError, IndexError) as error:
                problem = f"case {index}: vLLM raised {type(error).__name__}"
            if problem:
                caught.append(problem)
            if len(caught) >= 3:
                break
    finally:
        kernels._impl, kernels.func = repaired
    assert caught, "V-20 is fixed in this vLLM (or the comparison went blind): update docs/bugs.md"


def test_v18_float32_cast_of_the_uniforms(kernels: Any) -> None:
    """How often the CPU kernel's decision (u rounded to float32) differs from the float64 rule
    (vLLM 0.32's Triton kernel, ``acceptance_dtype=None``) on the corpus's seeded random draft
    rows: every acceptance test the kit's corpus makes, counted, with the same uniforms."""
    gpu_rule = replace(VLLM_0_32, name="vllm-0.32-float64-test", acceptance_dtype=None)
    rng = random.Random(18)
    decisions = differing = rows_differing = 0
    for _ in range(CASES):
        case = random_case(rng, greedy_temperature=0.0, seeded=True)
        meta = case.sampling_metadata
        if meta.all_greedy or not sum(case.num_draft_tokens):
            continue
        args = case.args()
        noise = draw_noise(args[1], case.vocab, args[7], profile=VLLM_0_32)
        assert noise is not None
        probs = compute_target_probs(case.target_logits, case.cu_num_draft_tokens, meta, profile=VLLM_0_32)
        p = probs.gather(1, case.draft_token_ids.unsqueeze(1)).squeeze(1)
        q = (
            torch.ones_like(p)
            if case.draft_probs is None
            else case.draft_probs.gather(1, case.draft_token_ids.unsqueeze(1)).squeeze(1)
        )
        ratio = torch.where(q > 0, p / q, 0.0)
        random_row = ~torch.tensor(case.greedy).repeat_interleave(torch.tensor(case.num_draft_tokens))
        cpu = ratio >= noise.uniforms.to(torch.float32)
        gpu = ratio.to(torch.float64) >= noise.uniforms
        decisions += int(random_row.sum())
        differing += int((random_row & (cpu != gpu)).sum())
        one = rejection_sample_with_noise(*case.args(), noise, profile=VLLM_0_32)
        other = rejection_sample_with_noise(*case.args(), noise, profile=gpu_rule)
        rows_differing += int((one != other).any(dim=1).sum())
    # Analytically a decision differs when u lies within half a float32 step above p/q: a rate of
    # about E[p]·2⁻²⁵ ≈ 1e-8, far below what a corpus of this size can show.
    print(f"\nV-18: {differing} of {decisions} seeded acceptance decisions differ; {rows_differing} output rows")
    assert decisions > 5 * CASES
    assert differing == rows_differing == 0


def test_where_the_profiles_part_vllm_takes_vllm_0_32s_side(kernels: Any) -> None:
    """On the corpus INTENDED and VLLM_0_32 cannot be told apart (their differences need exact
    float32 near-ties), so each difference is also shown on vLLM's own code with a hand-built case
    (tests/spec/test_profiles.py builds the same ones for our sampler): the acceptance test and the
    race through the kernels the CPU build registers, fed the noise directly; the greedy argmax of
    a mixed batch through ``forward``, which needs no noise."""
    from vllm.v1.sample import rejection_sampler as theirs
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler

    from arctic_ref.spec import INTENDED, RejectionNoise, SamplingMetadata

    def ours(profile: Any, logits: list[list[float]], draft: int, u: float, race: list[float]) -> int:
        meta = SamplingMetadata(temperature=torch.ones(1), all_greedy=False, all_random=True, generators={})
        noise = RejectionNoise(uniforms=torch.tensor([u], dtype=torch.float64), exponentials=torch.tensor([race]))
        args = (
            torch.tensor([draft]),
            [1],
            1,
            torch.tensor([1]),
            None,
            torch.tensor(logits),
            torch.tensor([[99]]),
            meta,
        )
        return int(rejection_sample_with_noise(*args, noise, profile=profile)[0, 0])

    # Acceptance: p(d) = 0.5, u = 0.5 + 2⁻³⁰, which float32 rounds to 0.5.
    probs = torch.tensor([[0.5, 0.5]])
    out = torch.full((1, 2), -1, dtype=torch.int32)
    theirs._rejection_random_sample(
        out,
        torch.tensor([1], dtype=torch.int32),
        torch.tensor([0], dtype=torch.int32),
        None,
        probs,
        torch.tensor([[99]]),
        torch.tensor([1], dtype=torch.int32),
        torch.tensor([0.5 + 2.0**-30], dtype=torch.float64),
        torch.tensor([False]),
        1,
        None,
    )
    assert out.tolist() == [[0, 99]]  # accepted
    assert ours(VLLM_0_32, [[0.0, 0.0]], 0, 0.5 + 2.0**-30, [1.0, 1.0]) == 0
    assert ours(INTENDED, [[0.0, 0.0]], 0, 0.5 + 2.0**-30, [1.0, 1.0]) == 1  # rejected, recovered 1

    # The race: draft 2 rejected; p_0/E_0 > p_1/E_1 but p_1·(1/E_1) > p_0·(1/E_0).
    logits = [[0.0, 0.1, -1.0]]
    race = [0.7147577404975891, 0.7899294495582581, 1.0]
    recovered = torch.full((1,), -1, dtype=torch.int32)
    theirs._sample_recovered_tokens(
        recovered,
        torch.tensor([1], dtype=torch.int32),
        torch.tensor([2], dtype=torch.int32),
        None,
        torch.tensor(logits).softmax(dim=-1),
        torch.tensor([race]).reciprocal(),
        max_spec_len=1,
    )
    assert recovered.tolist() == [1]
    assert ours(VLLM_0_32, logits, 2, 0.99, race) == 1
    assert ours(INTENDED, logits, 2, 0.99, race) == 0

    # Greedy argmax in a mixed batch: tied maxima, top-p 0.3 keeps the one the sort puts last (V-21).
    case = tied_maxima_case(greedy_temperature=0.0)
    survivor = int(case.target_logits[0].sort().indices[-1])
    if survivor == 0:
        pytest.skip("this torch sorts the tie so that the first maximum survives: the row cannot tell")
    spec, all_logits, sampling = _vllm_inputs(case.args())
    row = RejectionSampler(Sampler()).forward(spec, None, all_logits, sampling).sampled_token_ids[0].tolist()
    assert row[0] == survivor
    assert (
        int(
            rejection_sample_with_noise(
                *case.args(), draw_noise([1, 1], 3, case.args()[7], profile=VLLM_0_32), profile=VLLM_0_32
            )[0, 0]
        )
        == survivor
    )
    assert (
        int(rejection_sample_with_noise(*case.args(), draw_noise([1, 1], 3, case.args()[7]), profile=INTENDED)[0, 0])
        == 0
    )
