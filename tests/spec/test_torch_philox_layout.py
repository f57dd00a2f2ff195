"""``PhiloxDraw.on_grid``: torch's grid-stride layout of a CUDA draw, checked on the CPU against the
offsets torch itself reached on an H200 (132 SMs of 2,048 threads; ``gpu_tests/test_torch_philox.py``
checks the values): from offset 0, ``rand(4, float64)`` then ``exponential_`` of 1 × 128,256 ends at
8; from 40, 1,024 uniforms then 256 × 128,256 exponentials end at 168; from 8, 4,096 then
256 × 128,256 end at 136."""

import pytest

from arctic_ref.spec.torch_philox import MAX_VALUES, THREADS, PhiloxDraw

H200 = (132, 2048)


@pytest.mark.parametrize(
    ("start", "rows", "values", "end"),
    [
        (0, 4, 128_256, 8),
        (40, 1024, 256 * 128_256, 168),
        (8, 4096, 256 * 128_256, 136),
        (0, 1, 32_000, 8),
        (2**33, 7, 3000, 2**33 + 8),
    ],
)
def test_offsets_torch_reached_on_an_h200(start: int, rows: int, values: int, end: int) -> None:
    uniforms = PhiloxDraw.on_grid(rows, 2, *H200)
    exponentials = PhiloxDraw.on_grid(values, 4, *H200)
    assert start + uniforms.increment + exponentials.increment == end


def test_stride_is_the_whole_grid_or_what_the_values_need() -> None:
    assert PhiloxDraw.on_grid(256 * 128_256, 4, *H200).stride == 1056 * THREADS  # 8 blocks per SM
    assert PhiloxDraw.on_grid(128_256, 4, *H200).stride == 128_256  # 501 blocks: one call per thread
    assert PhiloxDraw.on_grid(5, 2, *H200).stride == THREADS
    small = PhiloxDraw.on_grid(10_000, 4, 1, 256)  # one block: 10,000 values over 256 threads, 4 a call
    assert (small.stride, small.increment) == (256, 40)


def test_nothing_drawn_leaves_the_offset() -> None:
    assert PhiloxDraw.on_grid(0, 2, *H200).increment == 0


@pytest.mark.parametrize(
    ("numel", "unroll", "sms", "threads"),
    [(-1, 2, 132, 2048), (MAX_VALUES, 4, 132, 2048), (10, 3, 132, 2048), (10, 4, 0, 2048), (10, 4, 1, 128)],
)
def test_bad_layouts_raise(numel: int, unroll: int, sms: int, threads: int) -> None:
    with pytest.raises(ValueError, match="got"):
        PhiloxDraw.on_grid(numel, unroll, sms, threads)
