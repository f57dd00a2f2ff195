"""Deliberately broken subclasses of vLLM 0.32's ``SuffixDecodingProposer``, for the plugin runs of
``test_vllm_drafter_plugin.py`` (copied into the run's directory, as a user's own module would be):
each keeps vLLM's interface, so the kit builds and calls it as vLLM's runner would, and each breaks
one rule the ``bounds`` check holds a drafter to (docs/verification.md §4, D8)."""

from typing import Any

from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

OVERRUN = 8
"""How far past max_model_len ``DraftsPastMaxModelLen`` believes the model reaches."""
VOCAB_SIZE = 512
"""The checks' model's vocabulary (``arctic_ref.model.config.tiny_config``)."""


class DraftsPastMaxModelLen(SuffixDecodingProposer):  # type: ignore[misc]
    """Reads ``max_model_len`` as M + 8, so a request near M still drafts up to k tokens: past the
    M - N - 1 that can be verified."""

    def __init__(self, vllm_config: Any) -> None:
        super().__init__(vllm_config)
        self.max_model_len += OVERRUN


class DraftsOutsideTheVocabulary(SuffixDecodingProposer):  # type: ignore[misc]
    """Shifts every draft id by the vocabulary size."""

    def propose(self, *args: Any, **kwargs: Any) -> list[list[int]]:
        return [[token + VOCAB_SIZE for token in draft] for draft in super().propose(*args, **kwargs)]
