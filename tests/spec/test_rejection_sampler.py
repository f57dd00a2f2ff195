"""``RejectionSampler`` off CUDA (every call eager: it is ``rejection_sample``, output and generator
alike), its arguments, and the runner's ``PersistentInputs``. The graph path: gpu_tests."""

import random

import pytest
import torch

from arctic_ref.runner.persistent_inputs import PersistentInputs
from arctic_ref.spec import INTENDED, VLLM_0_9_2, RejectionSampler, rejection_sample
from arctic_ref.spec.rejection_graph import DRAWN_MAX_VALUES
from arctic_ref.spec.rejection_triton import drawn_race_block, race_chunks, stats_config
from arctic_ref.testing.sampler.corpus import random_case


@pytest.mark.parametrize("seed", range(40))
def test_cpu_calls_equal_rejection_sample(seed: int) -> None:
    case = random_case(random.Random(seed))
    profile = VLLM_0_9_2 if seed % 2 else INTENDED
    sampler = RejectionSampler(profile=profile, capture_after=1)
    for call in range(3):
        torch.manual_seed(call)
        expected = rejection_sample(*case.args(), profile=profile)
        state = torch.get_rng_state()
        torch.manual_seed(call)
        assert torch.equal(sampler(*case.args()), expected)
        assert torch.equal(torch.get_rng_state(), state)
    assert sampler.replays == 0 and sampler.num_graphs == 0


def test_bad_input_raises_as_rejection_sample() -> None:
    case = random_case(random.Random(3))
    args = list(case.args())
    args[2] = 40  # max_spec_len above the limit
    with pytest.raises(ValueError, match="limit"):
        RejectionSampler()(*args)


@pytest.mark.parametrize(("capacity", "capture_after"), [(-1, 2), (4, 0)])
def test_arguments_are_checked(capacity: int, capture_after: int) -> None:
    with pytest.raises(ValueError, match=f"got {capacity} and {capture_after}"):
        RejectionSampler(capacity=capacity, capture_after=capture_after)


def test_drawn_max_values_is_checked() -> None:
    with pytest.raises(ValueError, match="got -1"):
        RejectionSampler(drawn_max_values=-1)
    assert RejectionSampler().drawn_max_values == DRAWN_MAX_VALUES == 2**19


def test_drawing_race_segments_divide_the_stride_and_fit_a_row() -> None:
    """Philox slots per drawing-race program: at most 1024, a divisor of the draw's thread stride (a
    multiple of 256), at most V."""
    assert drawn_race_block(1056 * 256, 128_256) == 1024  # the H200's full grid: 270,336 = 1024 · 264
    assert drawn_race_block(501 * 256, 128_256) == 256  # 501 blocks: odd
    assert drawn_race_block(1056 * 256, 1000) == 512
    assert drawn_race_block(256, 20) == 16


def test_persistent_inputs_reuse_one_buffer_per_layout() -> None:
    inputs = PersistentInputs(capacity=2)
    first = inputs.put("x", torch.tensor([1, 2, 3]))
    again = inputs.put("x", torch.tensor([4, 5, 6]))
    assert again.data_ptr() == first.data_ptr() and again.tolist() == [4, 5, 6]
    other = inputs.put("x", torch.tensor([1.0, 2.0, 3.0]))
    assert other.data_ptr() != first.data_ptr()
    inputs.put("y", torch.zeros(2))  # a third layout: the least recently used ("x" int64) goes
    assert inputs.put("x", torch.tensor([7, 8, 9])).data_ptr() != first.data_ptr()
    strided = torch.arange(10)[::2]
    assert inputs.put("s", strided).is_contiguous()
    with pytest.raises(ValueError, match="got 0"):
        PersistentInputs(capacity=0)


def test_race_chunks_spread_a_small_batch_over_more_programs() -> None:
    """A lone request's race runs over 64 vocabulary chunks; from 64 requests on, 16 (about 1024
    programs in all, powers of two from 16 to 64)."""
    assert [race_chunks(n) for n in (0, 1, 8, 16, 17, 32, 33, 63, 64, 256)] == [64, 64, 64, 64, 64, 32, 32, 32, 16, 16]


def test_stats_config_switches_at_9_and_1024_draft_rows() -> None:
    assert [stats_config(n) for n in (1, 8, 9, 128, 1023, 1024, 4096)] == (
        [(4096, 8)] * 2 + [(2048, 4)] * 3 + [(1024, 4)] * 2
    )
