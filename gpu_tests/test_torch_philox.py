"""``torch_philox``: the Triton draws equal torch's own ``rand`` (float64) and ``exponential_``
(float32) bit for bit, and the offset after both, across seeds (64-bit ones too), offsets, one-call
and many-call layouts, and vocabularies that do and do not fill the grid."""

import pytest
import torch

from arctic_ref.spec.torch_philox import TRITON_AVAILABLE, PhiloxDraw, draw_from_state, draw_like_torch, signed_seed

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not TRITON_AVAILABLE, reason="needs Triton")]
CUDA = torch.device("cuda")


@pytest.mark.parametrize(
    ("seed", "offset", "rows", "reqs", "vocab"),
    [
        (0, 0, 4, 1, 128_256),
        (1234, 40, 1024, 256, 128_256),
        (2**40 + 7, 2**33, 7, 3, 1000),
        (2**64 - 5, 8, 4096, 256, 128_256),
        (5, 0, 1, 1, 32_000),
        (9, 12, 0, 2, 50_000),
        (3, 4, 300, 97, 151_936),
    ],
)
def test_draws_equal_torchs(seed: int, offset: int, rows: int, reqs: int, vocab: int) -> None:
    torch.cuda.init()  # fills default_generators
    torch.cuda.manual_seed(seed)
    generator = torch.cuda.default_generators[torch.cuda.current_device()]
    generator.set_offset(offset)
    u = torch.rand(rows, dtype=torch.float64, device=CUDA)
    e = torch.empty(reqs, vocab, device=CUDA).exponential_()
    ours_u, ours_e, end = draw_like_torch(seed, offset, rows, reqs, vocab, CUDA)
    assert end == generator.get_offset()
    assert torch.equal(ours_u, u)
    assert torch.equal(ours_e, e)
    state = torch.tensor([signed_seed(seed), offset], device=CUDA)
    layouts = PhiloxDraw.of(rows, 2, CUDA), PhiloxDraw.of(reqs * vocab, 4, CUDA)
    for stream in (None, torch.cuda.Stream(CUDA)):  # type: ignore[no-untyped-call]
        state_u, state_e = draw_from_state(state, *layouts, vocab, exponential_stream=stream)
        if stream is not None:
            torch.cuda.current_stream(CUDA).wait_stream(stream)
        assert torch.equal(state_u, u) and torch.equal(state_e, e), f"exponential stream {stream}"


def test_draw_from_state_checks_its_arguments() -> None:
    layouts = PhiloxDraw.of(4, 2, CUDA), PhiloxDraw.of(2 * 100, 4, CUDA)
    with pytest.raises(ValueError, match="int64 \\[2\\]"):
        draw_from_state(torch.zeros(3, dtype=torch.int64, device=CUDA), *layouts, 100)
    with pytest.raises(ValueError, match="rows of 30"):
        draw_from_state(torch.zeros(2, dtype=torch.int64, device=CUDA), *layouts, 30)
    with pytest.raises(ValueError, match="rows of 100"):
        draw_from_state(torch.zeros(2, dtype=torch.int64, device=CUDA), layouts[1], layouts[0], 100)


def test_layout_refuses_what_torch_splits() -> None:
    with pytest.raises(ValueError, match="2\\*\\*31"):
        PhiloxDraw.of(2**31, 4, CUDA)
    with pytest.raises(ValueError, match="unroll"):
        PhiloxDraw.of(10, 3, CUDA)
    assert PhiloxDraw.of(0, 2, CUDA).increment == 0
    with pytest.raises(ValueError, match="multiple of 4"):
        draw_like_torch(1, 6, 1, 1, 10, CUDA)
