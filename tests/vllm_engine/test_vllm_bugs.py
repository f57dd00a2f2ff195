"""vLLM 0.32's CPU-build bugs that the engine checks found (docs/bugs.md V-19, V-20), reproduced
at their root, in the vLLM environment only (scripts/test-vllm.sh). Each test asserts the bug is
present in the installed build, so an upgrade that fixes it shows up here and in the catalogue."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("vllm.config")  # plain "vllm" also finds tests/vllm as a namespace package

import torch

from arctic_ref.testing.engine.checkpoint import write_engine_model


def test_v20_the_cpu_expand_kernel_leaves_float_and_int32_outputs_unwritten() -> None:
    """``expand_batch_to_tokens`` repeats each request's value over its draft tokens into a
    ``new_empty`` tensor. The CPU build's kernel (``_expand_kernel_impl``) hands the C++ op an int64
    copy of any other output dtype, so a float32 (temperature, top-p) or int32 (top-k) output is
    never written: here it keeps the sentinel it was filled with."""
    from vllm.platforms import current_platform

    # vLLM's own loader registers the C++ ops from the build this CPU runs (_C needs AVX512-BF16,
    # _C_AVX512 and _C_AVX2 the others): importing vllm._C directly kills an AVX2-only process.
    current_platform.import_kernels()
    from vllm.utils.cpu_triton_utils import _expand_kernel_impl

    cu = torch.tensor([3, 5], dtype=torch.int64)
    right = torch.full((5,), -1, dtype=torch.int64)
    _expand_kernel_impl(right, torch.tensor([7, 9]), cu, 0, 0)
    assert right.tolist() == [7, 7, 7, 9, 9]  # the int64 path is right
    temperature = torch.full((5,), -1.0)
    _expand_kernel_impl(temperature, torch.tensor([0.8, 0.5]), cu, 0, 0)
    top_k = torch.full((5,), -1, dtype=torch.int32)
    _expand_kernel_impl(top_k, torch.tensor([8, 16], dtype=torch.int32), cu, 0, 0)
    assert temperature.tolist() == [-1.0] * 5 and top_k.tolist() == [-1] * 5, (
        "V-20 is fixed in this vLLM: update docs/bugs.md and arctic_ref.testing.engine.known_bugs"
    )


def test_v19_a_second_engine_after_an_n_gram_one_does_not_build(tmp_path: Path) -> None:
    """In one process: an engine with n-gram drafting, then any other engine, fails to build."""
    model = write_engine_model(tmp_path / "model")
    script = textwrap.dedent(
        f"""
        import os
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        from vllm import LLM
        def build(spec):
            return LLM(model={str(model)!r}, skip_tokenizer_init=True, dtype="float32", enforce_eager=True,
                       gpu_memory_utilization=0.2, max_model_len=128, speculative_config=spec)
        if __name__ == "__main__":
            llm = build({{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 3}})
            del llm
            try:
                build(None)
            except AttributeError as error:
                print("V-19:", error)
            else:
                print("second engine built")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env={**os.environ}, check=False
    )
    assert "V-19: '_lib_fn_wrapper' object has no attribute 'get'" in done.stdout, (
        done.stdout[-2000:] + done.stderr[-2000:]
    )
