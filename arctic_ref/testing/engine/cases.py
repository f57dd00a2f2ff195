"""The engine checks' requests and configurations, per level: seeded token-id prompts (some
sharing a prefix, so prefix caching has something to reuse; some repeating a span, so n-gram and
suffix drafts find matches), the ``lossless`` matrix, and the sampling mixes of the
``distribution`` check."""

import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final, Literal

from arctic_ref.check_options import Level
from arctic_ref.testing.engine.engine_target import EngineRequest, EngineSetup

DraftMethod = Literal["ngram", "suffix"]
DRAFT_METHODS: Final[tuple[DraftMethod, ...]] = ("ngram", "suffix")
NGRAM_LOOKUP: Final = (2, 4)
"""(prompt_lookup_min, prompt_lookup_max) of every n-gram configuration."""


def speculative_config(method: DraftMethod, k: int) -> dict[str, object]:
    """vLLM's ``speculative_config`` for ``method`` with ``k`` draft tokens (the n-gram lookup
    window ``NGRAM_LOOKUP``; every suffix knob at vLLM's default)."""
    if method == "ngram":
        low, high = NGRAM_LOOKUP
        return {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_min": low, "prompt_lookup_max": high}
    return {"method": "suffix", "num_speculative_tokens": k}


def prompts(vocab: int, count: int, lengths: tuple[int, int], seed: int) -> list[tuple[int, ...]]:
    """``count`` prompts with lengths in ``lengths``: every third shares the first prompt's first
    half (prefix caching), every other one ends by repeating a span of itself (drafts match)."""
    rng = random.Random(seed)
    out: list[tuple[int, ...]] = []
    for i in range(count):
        n = rng.randint(*lengths)
        tokens = [rng.randrange(vocab) for _ in range(n)]
        if i % 3 == 2 and out:
            half = min(len(out[0]), n) // 2
            tokens[:half] = out[0][:half]
        if i % 2 == 1:
            span = tokens[: max(2, n // 4)]
            tokens[-len(span) :] = span
        out.append(tuple(tokens))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class LosslessGroup:
    """One scheduler configuration: its spec-off run is compared with a spec-on run per entry of
    ``drafts`` (method, k), over the same greedy requests."""

    name: str
    base: EngineSetup
    requests: tuple[EngineRequest, ...]
    drafts: tuple[tuple[DraftMethod, int], ...]
    expects_preemption: bool = False

    def spec_on(self, method: DraftMethod, k: int) -> EngineSetup:
        return replace(self.base, speculative_config=speculative_config(method, k))


def greedy(prompt_set: list[tuple[int, ...]], max_tokens: int) -> tuple[EngineRequest, ...]:
    return tuple(EngineRequest(prompt=p, max_tokens=max_tokens) for p in prompt_set)


def lossless_matrix(vocab: int, level: Level, methods: tuple[DraftMethod, ...]) -> list[LosslessGroup]:
    """Each axis of the field's bugs at least once: draft lengths 1, 4, 8, 16 (suffix up to 32),
    ``max_num_seqs`` 1, 3 and 8, chunked prefill (prompts longer than the token budget), prefix
    caching on and off, a KV budget that forces preemption, and requests that reach
    ``max_model_len``. ``full`` adds the remaining draft lengths to every group and more requests."""
    many = 16 if level == "full" else 8
    groups = [
        LosslessGroup(
            name="batched",
            base=EngineSetup(max_num_seqs=8, enable_prefix_caching=True),
            requests=greedy(prompts(vocab, many, (24, 48), 1), 48),
            drafts=(("ngram", 4), ("suffix", 8)),
        ),
        LosslessGroup(
            name="three seqs, no prefix caching",
            base=EngineSetup(max_num_seqs=3, enable_prefix_caching=False),
            requests=greedy(prompts(vocab, 6, (16, 40), 2), 40),
            drafts=(("ngram", 1), ("suffix", 16)),
        ),
        LosslessGroup(
            name="one seq to max_model_len",
            base=EngineSetup(max_num_seqs=1, max_model_len=128),
            requests=greedy(prompts(vocab, 3, (40, 64), 3), 128),
            drafts=(("ngram", 16), ("suffix", 32)),
        ),
        LosslessGroup(
            name="chunked prefill, preemption",
            base=EngineSetup(max_num_seqs=8, max_model_len=256, max_num_batched_tokens=64, num_gpu_blocks_override=4),
            requests=greedy(prompts(vocab, 8, (80, 120), 4), 64),
            drafts=(("ngram", 8), ("suffix", 4)),
            expects_preemption=True,
        ),
    ]
    if level == "full":
        lengths: Mapping[DraftMethod, tuple[int, ...]] = {"ngram": (1, 4, 8, 16), "suffix": (1, 4, 8, 16, 32)}
        groups = [replace(g, drafts=tuple((m, k) for m in DRAFT_METHODS for k in lengths[m])) for g in groups]
    return [replace(g, drafts=tuple((m, k) for m, k in g.drafts if m in methods)) for g in groups]


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingMix:
    """One row of the ``distribution`` check: vLLM sampling parameters at T > 0."""

    name: str
    temperature: float
    top_k: int | None = None
    top_p: float | None = None


SAMPLING_MIXES: Final = (
    SamplingMix(name="T=1", temperature=1.0),
    SamplingMix(name="T=0.7 top_p=0.9", temperature=0.7, top_p=0.9),
    SamplingMix(name="T=0.8 top_k=8 top_p=0.95", temperature=0.8, top_k=8, top_p=0.95),
    SamplingMix(name="T=1 top_k=16", temperature=1.0, top_k=16),
)
"""Temperature alone, top-p, top-k with top-p, and top-k alone (the case vLLM 0.32 crashes on
with n-gram drafts: docs/bugs.md V-17)."""
