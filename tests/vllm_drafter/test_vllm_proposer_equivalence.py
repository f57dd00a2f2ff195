"""vLLM 0.32's own proposers through the kit's adapter (``arctic_ref.testing.drafter.vllm_proposers``)
draft exactly what arctic_ref's vLLM-semantics drafters (``arctic_ref.runner.vllm_drafting``) draft
with the same ``speculative_config``, row for row and step by step, on random workloads: requests that
come and go, partial prefills (whose discarded sample must not leak), rows that reach
``max_model_len``, ids that come back with a new prompt. A user's class with the custom-class
interface is built and called as vLLM's runner does. Runs in the vLLM environment only."""

import json
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("vllm.config")  # plain "vllm" also finds tests/vllm as a namespace package


from arctic_ref.check_options import CheckOptions
from arctic_ref.runner.vllm_drafting import VllmSuffixDrafter, drafter_for
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.testing.drafter.contract import drafter_bounds
from arctic_ref.testing.drafter.vllm_proposers import (
    VllmProposerDrafter,
    VllmProposerFactory,
    load_vllm_proposer,
    runner_call,
)


def _factory(cls: type, config: dict[str, object] | None) -> VllmProposerFactory:
    call = runner_call(cls)
    assert call is not None
    options = CheckOptions(drafter_config=None if config is None else json.dumps(config))
    return load_vllm_proposer("--arctic-ref-drafter", f"{cls.__module__}:{cls.__qualname__}", cls, call, options)


def _steps(rng: random.Random, max_model_len: int, count: int) -> list[list[DraftRow]]:
    """``count`` steps of up to 5 requests over a vocabulary of 2-6 ids (so matches are common)."""
    vocab = rng.randint(2, 6)
    live: dict[str, tuple[list[int], int]] = {}
    steps = []
    for _ in range(count):
        for name in ("a", "b", "c", "d", "e"):
            if name not in live and rng.random() < 0.4:
                first = [rng.randrange(vocab) for _ in range(rng.randint(1, max_model_len - 1))]
                live[name] = (first, len(first))
        rows = []
        for name in list(live):
            tokens, prompt = live[name]
            if len(tokens) >= max_model_len or rng.random() < 0.05:
                del live[name]  # finished: the id may come back with another prompt
            elif rng.random() < 0.15:  # scheduled but absent from this step
                continue
            elif rng.random() < 0.15:  # a partial prefill: its own sample is discarded
                rows.append(
                    DraftRow(req_id=name, token_ids=list(tokens), num_prompt_tokens=prompt, sampled=[], discarded=[0])
                )
            else:
                sampled = [rng.randrange(vocab) for _ in range(rng.randint(1, 3))][: max_model_len - len(tokens)]
                tokens += sampled
                rows.append(DraftRow(req_id=name, token_ids=list(tokens), num_prompt_tokens=prompt, sampled=sampled))
        rng.shuffle(rows)
        steps.append(rows)
    return steps


def _compare(mine: VllmProposerDrafter, ours: Any, steps: Sequence[Sequence[DraftRow]]) -> int:
    drafted = 0
    for i, rows in enumerate(steps):
        expected = ours.propose(rows)
        assert mine.propose(rows) == expected, (i, rows)
        drafted += sum(map(len, expected))
        if isinstance(ours, VllmSuffixDrafter):
            assert mine.proposer.suffix_cache.active_requests == set(ours.cache.active_requests), i
    return drafted


@pytest.mark.parametrize("seed", range(8))
def test_suffix_decoding_proposer_equals_ours(seed: int) -> None:
    rng = random.Random(seed)
    m = rng.choice((12, 30, 60))
    config: dict[str, object] = {
        "num_speculative_tokens": rng.choice((2, 5, 24)),
        "suffix_decoding_max_tree_depth": rng.choice((3, 8, 24)),
        "suffix_decoding_max_cached_requests": rng.choice((0, 1, 3, 10_000)),
        "suffix_decoding_max_spec_factor": rng.choice((0.5, 1.0, 2.0)),
        "suffix_decoding_min_token_prob": rng.choice((0.0, 0.1, 0.5)),
    }
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    factory = _factory(SuffixDecodingProposer, config)
    assert factory.speculative_config == {"method": "suffix", **config}
    drafted = _compare(factory(m), drafter_for(factory.speculative_config, max_model_len=m), _steps(rng, m, 40))
    assert drafted > 0


@pytest.mark.parametrize("seed", range(12))
def test_ngram_proposer_equals_ours(seed: int) -> None:
    rng = random.Random(seed)
    m = rng.choice((12, 30, 60))
    low = rng.randint(1, 3)
    config: dict[str, object] = {
        "num_speculative_tokens": rng.randint(1, 6),
        "prompt_lookup_min": low,
        "prompt_lookup_max": low + rng.randint(0, 3),
    }
    from vllm.v1.spec_decode.ngram_proposer import NgramProposer  # loads numba: not at collection (V-19)

    factory = _factory(NgramProposer, config)
    drafted = _compare(factory(m), drafter_for(factory.speculative_config, max_model_len=m), _steps(rng, m, 40))
    assert drafted > 0


def test_the_defaults_are_vllms_with_k_4_for_ngram() -> None:
    from vllm.v1.spec_decode.ngram_proposer import NgramProposer
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    suffix, ngram = _factory(SuffixDecodingProposer, None), _factory(NgramProposer, None)
    assert suffix.speculative_config == {"method": "suffix"}
    assert ngram.speculative_config == {"method": "ngram", "num_speculative_tokens": 4}
    assert suffix.summary.endswith(
        "num_speculative_tokens=24, suffix_decoding_max_tree_depth=24, suffix_decoding_max_cached_requests=10000, "
        "suffix_decoding_max_spec_factor=1.0, suffix_decoding_min_token_prob=0.1"
    )
    assert ngram.summary.endswith("num_speculative_tokens=4, prompt_lookup_min=5, prompt_lookup_max=5")
    drafter = ngram(40)
    assert (drafter.max_model_len, drafter.vocab_size, drafter.num_speculative_tokens) == (40, 512, 4)
    rng = random.Random(1)
    _compare(drafter, drafter_for(ngram.speculative_config, max_model_len=40), _steps(rng, 40, 20))
    _compare(suffix(40), drafter_for(suffix.speculative_config, max_model_len=40), _steps(rng, 40, 20))


class RecordingProposer:
    """A user's proposer with vLLM's custom-class interface: drafts the token after the last
    occurrence of the newest token, and records what it was handed."""

    def __init__(self, vllm_config: Any) -> None:
        self.k = vllm_config.speculative_config.num_speculative_tokens
        self.max_model_len = vllm_config.model_config.max_model_len
        self.calls: list[tuple[list[list[int]], np.ndarray, np.ndarray, object]] = []

    def propose(
        self,
        sampled_token_ids: list[list[int]],
        num_tokens_no_spec: np.ndarray,
        token_ids_cpu: np.ndarray,
        slot_mappings: object = "missing",
    ) -> list[list[int]]:
        self.calls.append((sampled_token_ids, num_tokens_no_spec.copy(), token_ids_cpu.copy(), slot_mappings))
        drafts = []
        for i, sampled in enumerate(sampled_token_ids):
            n = int(num_tokens_no_spec[i])
            tokens = token_ids_cpu[i, :n].tolist()
            budget = min(self.k, self.max_model_len - n - 1)
            earlier = [j for j in range(n - 1) if tokens[j] == tokens[-1]] if sampled and budget > 0 else []
            drafts.append(tokens[earlier[-1] + 1 :][:budget] if earlier else [])
        return drafts


def test_a_custom_class_is_built_and_called_as_vllms_runner_does() -> None:
    factory = _factory(RecordingProposer, {"num_speculative_tokens": 3})
    assert factory.call == "custom_class"
    assert factory.speculative_config == {
        "method": "custom_class",
        "model": f"{__name__}.RecordingProposer",
        "num_speculative_tokens": 3,
    }
    drafter = factory(20)
    rows = [
        DraftRow(req_id="x", token_ids=[5, 6, 7, 5], num_prompt_tokens=3, sampled=[5]),
        DraftRow(req_id="y", token_ids=[1, 2], num_prompt_tokens=2, sampled=[], discarded=[9]),
    ]
    assert drafter.propose(rows) == [[6, 7, 5], []]
    ((sampled, lengths, tokens, slot_mappings),) = drafter.proposer.calls
    assert sampled == [[5], []] and slot_mappings is None
    assert lengths.shape == (drafter.max_num_reqs,) and lengths[:3].tolist() == [4, 2, 0]
    assert tokens.shape == (drafter.max_num_reqs, 20) and tokens[:2, :5].tolist() == [[5, 6, 7, 5, 0], [1, 2, 0, 0, 0]]
    assert drafter_bounds(factory).passed
