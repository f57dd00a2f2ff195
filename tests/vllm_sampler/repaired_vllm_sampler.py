"""vLLM 0.32's own ``RejectionSampler`` class with the CPU build's two sampler bugs repaired in this
process, for ``--arctic-ref-sampler=repaired_vllm_sampler:RejectionSampler`` (tests/vllm_sampler/
test_kit_on_vllm_sampler.py runs the plugin on it in a subprocess; never import it into a test
process: the repairs would reach every vLLM test of that process).

- **V-20** (docs/bugs.md): the C++ ``expand_kernel`` override leaves the per-draft temperature, top-k
  and top-p uninitialised. Repaired by ``broken_engines.repairs.repair_expand_kernel``, the repair
  the broken engines' control uses, after registering the CPU build's kernels as a V1 worker does
  (the kit's adapter registers them only when nothing is registered yet, so it keeps this repair).
- **V-17** (V-10 in vLLM 0.32): with top-k, no top-p and no draft token in the batch,
  ``apply_top_k_only`` calls ``k.max()`` on an empty tensor and raises; the kit meets such batches
  (E1 and the statistical checks). Repaired at its root: an empty batch of rows has nothing to mask.
  (The broken engines answer such a step with the bonus tokens instead, on an instance; the kit
  builds the instance itself, so the repair here is the function's.)

``RejectionSampler`` is vLLM's class itself, so the kit treats it as vLLM 0.32's (its known
differences apply)."""

import sys
from pathlib import Path
from typing import Final

from torch import Tensor
from vllm.platforms import current_platform
from vllm.v1.sample.ops import topk_topp_sampler
from vllm.v1.sample.rejection_sampler import RejectionSampler

BROKEN_ENGINES: Final = Path(__file__).resolve().parents[2] / "examples" / "broken-engines"
if str(BROKEN_ENGINES) not in sys.path:
    sys.path.insert(0, str(BROKEN_ENGINES))

from broken_engines.repairs import repair_expand_kernel  # noqa: E402  (needs the path above)

__all__ = ["RejectionSampler"]

_apply_top_k_only: Final = topk_topp_sampler.apply_top_k_only


def apply_top_k_only(logits: Tensor, k: Tensor) -> Tensor:
    """vLLM's ``apply_top_k_only``, except that no rows are returned as they are (V-17)."""
    if logits.shape[0] == 0:
        return logits
    return _apply_top_k_only(logits, k)


current_platform.register_triton_kernel_overrides()
if not repair_expand_kernel():
    raise RuntimeError("no CPU override of vLLM's expand_kernel to repair: not vLLM 0.32's CPU build")
topk_topp_sampler.apply_top_k_only = apply_top_k_only
