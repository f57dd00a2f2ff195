"""``RejectionSampler`` on CUDA: graph replays equal eager ``rejection_sample`` bit for bit, output and
default-generator state alike; bad values raise the eager message with the generator untouched; the
calls it cannot graph run eagerly; the runner's verify step replays and generates what eager does."""

from collections.abc import Callable

import pytest
import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel import ParallelLayout, RankGroups, SoloComm
from arctic_ref.runner import EngineConfig, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.drafters import SuffixDrafter
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.spec import RejectionSampler, SamplingMetadata, draw_noise, rejection_sample
from arctic_ref.spec.rejection_graph import RING
from arctic_ref.spec.rejection_triton import TRITON_AVAILABLE
from arctic_ref.spec.torch_philox import MAX_VALUES

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not TRITON_AVAILABLE, reason="needs Triton")]
Args = tuple  # type: ignore[type-arg]


def _args(reqs: int, drafts: int, vocab: int, *, probs: bool = False, mixed: bool = False, seed: int = 0) -> Args:
    g = torch.Generator(device="cuda").manual_seed(seed)
    counts = [drafts if i % 3 else max(drafts - 1, 0) for i in range(reqs)]
    total = sum(counts)
    logits = torch.randn(total, vocab, device="cuda", generator=g) * 3
    ids = torch.where(
        torch.rand(total, device="cuda", generator=g) < 0.7,
        logits.argmax(1),
        torch.randint(0, vocab, (total,), device="cuda", generator=g),
    )
    q = torch.softmax(torch.randn(total, vocab, device="cuda", generator=g), 1) if probs else None
    temperature = torch.full((reqs,), 0.8, device="cuda")
    if mixed:
        temperature[::4] = 0.0
    meta = SamplingMetadata(temperature=temperature, all_greedy=False, all_random=not mixed)
    cu = torch.tensor([sum(counts[: i + 1]) for i in range(reqs)], dtype=torch.int32, device="cuda")
    bonus = torch.randint(0, vocab, (reqs,), device="cuda", generator=g)
    return (ids, counts, drafts, cu, q, logits, bonus, meta)


def _state() -> torch.Tensor:
    """The default CUDA generator's state (the list fills once CUDA is initialised)."""
    return torch.cuda.default_generators[0].get_state()


DRAWS = {"race draws": MAX_VALUES - 1, "noise tensors": 0}
"""``RejectionSampler``'s ``drawn_max_values`` for each way a graph draws its noise: every case below in
the race, or every case into noise tensors (``DRAWN_MAX_VALUES``, the default, splits them)."""


@pytest.mark.parametrize("draws", list(DRAWS))
@pytest.mark.parametrize(
    ("reqs", "drafts", "vocab", "probs", "mixed"),
    [
        (1, 4, 128_256, False, False),
        (8, 4, 32_000, False, True),
        (5, 7, 9_000, True, True),
        (32, 1, 50_000, True, False),
        (3, 0, 1000, False, False),
    ],
)
def test_replays_equal_eager_output_and_generator(
    reqs: int, drafts: int, vocab: int, probs: bool, mixed: bool, draws: str
) -> None:
    args = _args(reqs, drafts, vocab, probs=probs, mixed=mixed)
    sampler = RejectionSampler(drawn_max_values=DRAWS[draws])
    for call in range(5):
        torch.manual_seed(call)
        eager = rejection_sample(*args)
        eager_state = _state()
        torch.manual_seed(call)
        fast = sampler(*args)
        assert torch.equal(fast, eager), f"call {call}"
        assert torch.equal(_state(), eager_state), f"call {call}: generator state"
    assert sampler.replays == 4 and sampler.num_graphs == 1  # the first sighting runs eagerly


@pytest.mark.parametrize(
    ("reqs", "drafts", "vocab", "probs", "mixed"),
    [
        (1, 4, 128_256, False, False),
        (8, 4, 32_000, False, True),
        (5, 7, 9_000, True, True),
        (32, 1, 50_000, True, False),
        (3, 0, 1000, False, False),
        (4, 3, 12, False, True),  # a vocabulary under 16
    ],
)
def test_eager_fused_call_equals_the_torch_path_and_generator(
    reqs: int, drafts: int, vocab: int, probs: bool, mixed: bool
) -> None:
    """The eager fused call (value rules inside the kernels, noise from ``draw_noise``)
    returns the plain torch path's output and leaves the default generator where it does."""
    args = _args(reqs, drafts, vocab, probs=probs, mixed=mixed)
    for call in range(3):
        torch.manual_seed(call)
        torch.rand(call * 5 + 1, device="cuda")  # offsets other than 0
        fused = rejection_sample(*args)
        fused_state = _state()
        torch.manual_seed(call)
        torch.rand(call * 5 + 1, device="cuda")
        plain = rejection_sample(*args, fused=False)
        assert torch.equal(fused, plain), f"call {call}"
        assert torch.equal(fused_state, _state()), f"call {call}: generator state"


def test_outputs_are_fresh_tensors() -> None:
    """Replays write fresh tensors, past the ring of ``RING`` views per block: every output keeps its
    values and its own memory, and each equals the eager call's under the same seed."""
    args = _args(2, 3, 1000)
    sampler = RejectionSampler(capture_after=1)
    outputs, eager = [], []
    for step in range(RING + 6):
        torch.manual_seed(step)
        eager.append(rejection_sample(*args))
        torch.manual_seed(step)
        outputs.append(sampler(*args))
    assert sampler.replays == RING + 6
    assert len({out.data_ptr() for out in outputs}) == len(outputs)
    for out, want in zip(outputs, eager, strict=True):
        assert torch.equal(out, want)


BAD_VALUES: dict[str, tuple[Callable[[Args], None], str]] = {
    "draft id >= V": (lambda a: a[0].__setitem__(0, a[5].shape[1]), "outside"),
    "draft id < 0": (lambda a: a[0].__setitem__(1, -1), "outside"),
    "cu mismatch": (lambda a: a[3].__setitem__(0, 99), "cu_num_draft_tokens"),
    "all_random with a greedy row": (lambda a: a[7].temperature.__setitem__(0, 0.0), "all_random flag"),
    "NaN temperature": (lambda a: a[7].temperature.__setitem__(1, float("nan")), "non-finite temperature"),
}


@pytest.mark.parametrize("draws", list(DRAWS))
@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_bad_values_raise_the_eager_message_and_leave_the_generator(case: str, draws: str) -> None:
    args = _args(4, 3, 5000)
    sampler = RejectionSampler(drawn_max_values=DRAWS[draws])
    sampler(*args)
    sampler(*args)
    assert sampler.num_graphs == 1
    saved = [t.clone() for t in (args[0], args[3], args[7].temperature)]
    mutate, message = BAD_VALUES[case]
    mutate(args)  # in place: the same buffers, so the captured graph replays
    before = _state()
    with pytest.raises(ValueError, match=message):
        rejection_sample(*args)
    with pytest.raises(ValueError, match=message):
        sampler(*args)
    assert torch.equal(_state(), before)
    for dst, src in zip((args[0], args[3], args[7].temperature), saved, strict=True):
        dst.copy_(src)
    torch.manual_seed(7)
    eager = rejection_sample(*args)
    torch.manual_seed(7)
    assert torch.equal(sampler(*args), eager)
    assert sampler.replays == 2


def test_nan_logits_raise_after_the_same_draws() -> None:
    args = _args(3, 2, 4000)
    sampler = RejectionSampler(capture_after=1)
    sampler(*args)
    args[5][0, 10] = float("nan")
    torch.manual_seed(3)
    with pytest.raises(ValueError, match="NaN"):
        rejection_sample(*args)
    eager_state = _state()
    torch.manual_seed(3)
    with pytest.raises(ValueError, match="NaN"):
        sampler(*args)
    assert torch.equal(_state(), eager_state)  # item 5: detected after the draws, as eagerly


@pytest.mark.parametrize("column", [10, 8191, 8192, 19_999])
def test_nan_in_a_greedy_row_raises_on_every_path(column: int) -> None:
    """A NaN that is not a greedy row's maximum still makes torch's max NaN (docs/verification.md §1.2
    item 5): the torch path, the fused path and a replay all raise. Triton's ``tl.max`` skips NaN,
    so the fused greedy argmax propagates it explicitly; before that, these calls returned tokens."""
    args = _args(4, 3, 20_000, mixed=True)  # request 0 is greedy (τ = 0): row 0 is a greedy row (3 chunks)
    sampler = RejectionSampler(capture_after=1)
    sampler(*args)
    assert sampler.num_graphs == 1
    args[5][0, column] = float("nan")
    for call in (lambda: rejection_sample(*args, fused=False), lambda: rejection_sample(*args), lambda: sampler(*args)):
        with pytest.raises(ValueError, match="NaN"):
            call()


def test_noise_drawn_on_a_side_stream_is_the_same_noise() -> None:
    """``draw_noise(exponential_stream=...)`` (the graph's overlap) takes the same offsets of the
    default and per-request generators as on one stream: the same noise, and generators left alike."""
    counts = [2, 0, 3]

    def meta() -> SamplingMetadata:
        seeded = {2: torch.Generator(device="cuda").manual_seed(5)}
        return SamplingMetadata(
            temperature=torch.ones(3, device="cuda"), all_greedy=False, all_random=True, generators=seeded
        )

    torch.manual_seed(11)
    plain_meta = meta()
    plain = draw_noise(counts, 5000, plain_meta, device="cuda")
    after_plain = (_state(), plain_meta.generators[2].get_state())
    side = torch.cuda.Stream()
    torch.manual_seed(11)
    side_meta = meta()
    other = draw_noise(counts, 5000, side_meta, device="cuda", exponential_stream=side)
    torch.cuda.current_stream().wait_stream(side)
    assert plain is not None and other is not None
    assert torch.equal(plain.uniforms, other.uniforms) and torch.equal(plain.exponentials, other.exponentials)
    assert torch.equal(_state(), after_plain[0]) and torch.equal(side_meta.generators[2].get_state(), after_plain[1])


def test_calls_it_cannot_graph_run_eagerly() -> None:
    ids, counts, drafts, cu, q, logits, bonus, meta = _args(4, 2, 3000)
    seeded = SamplingMetadata(
        temperature=meta.temperature,
        all_greedy=False,
        all_random=True,
        generators={1: torch.Generator(device="cuda").manual_seed(5)},
    )
    top_k = SamplingMetadata(
        temperature=meta.temperature, all_greedy=False, all_random=True, top_k=torch.full((4,), 50, device="cuda")
    )
    greedy = SamplingMetadata(temperature=torch.zeros(4, device="cuda"), all_greedy=True, all_random=False)
    sampler = RejectionSampler(capture_after=1)
    for other in (seeded, top_k, greedy):
        for _ in range(3):
            sampler(ids, counts, drafts, cu, q, logits, bonus, other)
    for _ in range(3):
        sampler(ids, counts, drafts, cu, q, logits.to(torch.bfloat16), bonus, meta)
    assert sampler.num_graphs == 0 and sampler.replays == 0


def test_capacity_bounds_the_graphs() -> None:
    first, second = _args(2, 2, 1000, seed=1), _args(3, 2, 1000, seed=2)
    sampler = RejectionSampler(capacity=1, capture_after=1)
    for args in (first, second, first, second):
        sampler(*args)
    assert sampler.num_graphs == 1 and sampler.replays == 4


def _generate(sampler: RejectionSampler) -> tuple[list[tuple[int, ...]], int]:
    engine = EngineConfig(
        model=tiny_config(),
        layout=ParallelLayout(1, 1, 1),
        device="cuda",
        cuda_graphs=True,
        scheduler=SchedulerConfig(max_num_batched_tokens=256, max_model_len=512),
    )
    solo = SoloComm(0)
    runner = build_runner(
        engine,
        random_weights(engine.model, 0),
        RankGroups(rank=0, tp=solo, sp=solo, shift=solo),
        SuffixDrafter.build(512),
    )
    runner.sampler = sampler
    torch.manual_seed(11)
    params = [SamplingParams(max_tokens=24, temperature=0.7)] * 2
    results = run_requests(runner, engine.scheduler, builtin_prompts(512)[:2], params)
    return [r.output_token_ids for r in results], sampler.replays


def test_runner_verify_replays_and_generates_as_eager() -> None:
    graphed, replays = _generate(RejectionSampler())
    eager, none = _generate(RejectionSampler(capacity=0))
    print(f"\nrunner verify steps served by a graph replay: {replays}")
    assert graphed == eager
    assert replays > 0 and none == 0
