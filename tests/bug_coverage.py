"""Coverage of the upstream bug catalogue (``docs/bugs.md``): for every id, where the bug is brought
back (the fixture), what catches it (a test node id or an ``arctic-ref check`` battery) and how it
stands: test data beside its test, not part of the kit. ``tests/test_bug_catalogue.py`` holds this
table to the code: every id once, every cited test defined, and docs/bugs.md's table rendered from it.

Statuses:

- ``caught``: the fixture reintroduces the bug as an injected value; the check fails on it and
  passes on the intended code.
- ``inert``: the bug is observationally inert; its fixture must pass every check, and does.
- ``differs``: upstream's own code is the fixture (the check runs it beside ours, skipping where
  ``arctic-inference`` is absent); the intended behaviour is ours.
- ``rule``: the specification adopts upstream's behaviour (drop-in parity); a worked example,
  checked three ways with upstream, pins it.
- ``refused``: the input that triggers the bug is refused with ``ValueError`` naming the values.
- ``absent``: arctic_ref has no such component, so there is nothing to reintroduce it into.
- ``gpu``: the replay needs a GPU (``gpu_tests/``).
- ``open``: not replayed yet; the reason says why.
"""

from dataclasses import dataclass
from typing import Final, Literal

CoverageStatus = Literal["caught", "inert", "differs", "rule", "refused", "absent", "gpu", "open"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BugCoverage:
    id: str
    fixture: str
    """Where the bug is reintroduced ("—" where nothing is)."""
    check: str
    """``path::test`` nodes (comma-separated) or ``check:<battery>``."""
    status: CoverageStatus
    note: str = ""


_T = "tests/"
_V = "tests/vllm_engine/"
_S = "tests/vllm_sampler/"
CATALOGUE: Final[tuple[BugCoverage, ...]] = (
    BugCoverage(
        id="AI-1",
        fixture="`BugReplay` B4-literal (`testing/drafting/replays.py`)",
        check=f"{_T}spec/test_drafts.py::test_each_bug_replay_is_caught_by_its_own_check, check:draft-selection",
        status="inert",
        note="the literal double assignment; must pass, passes",
    ),
    BugCoverage(
        id="AI-2",
        fixture="`BugReplay` B1 (`duplicated_pattern`)",
        check=f"{_T}spec/test_drafts.py::test_each_bug_replay_is_caught_by_its_own_check, "
        f"{_T}runner/test_drafting.py::test_b1_is_caught_under_suffix_decoding_alone, check:draft-runner",
        status="caught",
    ),
    BugCoverage(
        id="AI-3",
        fixture="`BugReplay` B2 (`wipe_out`)",
        check=f"{_T}runner/test_drafting.py::test_each_replay_is_caught_in_the_runner, "
        f"{_T}runner/test_speculator.py::test_hybrid_choice_is_per_row_and_the_seed_blanking_is_caught, "
        "check:draft-runner",
        status="caught",
    ),
    BugCoverage(
        id="AI-4",
        fixture="`BugReplay` B3 and B3-runner (`batch_global_budget`, `batch_min_lengths`)",
        check=f"{_T}runner/test_speculator.py::test_lengths_are_cut_per_row_and_the_seed_batch_minimum_is_caught, "
        f"{_T}runner/test_drafting.py::test_each_replay_is_caught_in_the_runner, check:draft-runner",
        status="caught",
    ),
    BugCoverage(
        id="AI-5",
        fixture="upstream's `SuffixDecodingCache` (suffix X1)",
        check=f"{_T}suffix/test_upstream_differences.py::TestX1NoneSpecTokens, "
        f"{_T}suffix/test_examples.py::TestCache::test_max_spec_tokens_none_means_depth",
        status="differs",
        note="ours uses the depth; the kit's cache `bad-input` reports it",
    ),
    BugCoverage(
        id="AI-6",
        fixture="—",
        check=f"{_T}suffix/test_examples.py::TestCache::test_restart_of_cached_request_moves_it_to_fifo_end",
        status="rule",
        note="docs/suffix-decoding.md E15: the code evicts, and that is the rule",
    ),
    BugCoverage(
        id="AI-7",
        fixture="`LegacyLoopMutant` (v0.0.9's loop, which did match the full context)",
        check=f"{_T}suffix/test_mutants.py, {_T}suffix/test_examples.py::test_worked_tree_examples_of_the_kit",
        status="rule",
        note="docs/suffix-decoding.md E1/E2 adopt HEAD's rule; the v0.0.9 loop is caught",
    ),
    BugCoverage(
        id="AI-8",
        fixture="upstream's `check_integrity` (suffix X6)",
        check=f"{_T}suffix/test_upstream_differences.py::TestX6CheckIntegrityMutates",
        status="differs",
        note="ours is read-only",
    ),
    BugCoverage(
        id="AI-9",
        fixture="upstream's `estimate_memory` (suffix X7)",
        check=f"{_T}suffix/test_upstream_differences.py::TestX7EstimateMemory",
        status="differs",
        note="a figure of each implementation; not compared",
    ),
    BugCoverage(
        id="AI-10",
        fixture="upstream's `extend` with a reserved token (suffix X2)",
        check=f"{_T}suffix/test_upstream_differences.py::TestX2ReservedTokenInExtend, "
        f"{_T}suffix/test_examples.py::test_depth_zero_and_negative",
        status="differs",
        note="ours raises before any change; D <= 0 is consistent",
    ),
    BugCoverage(
        id="AI-11",
        fixture="—",
        check=f"{_T}test_cli.py::test_max_spec_tokens_and_offset_take_effect, "
        f"{_T}test_cli.py::test_jsonl_trace_with_lists_replays",
        status="rule",
        note="`arctic-ref simulate` passes both flags and reads list prompts; it has no "
        "`--evict-strategy`, so the zero-count eviction cannot occur",
    ),
    BugCoverage(
        id="AI-12",
        fixture="`TieRuleMutant` (`tests/suffix/test_mutants.py`)",
        check=f"{_T}suffix/test_mutants.py, check:suffix-naive",
        status="caught",
        note="the sibling tie rule; the kit's `probe_sibling_order` names the node",
    ),
    BugCoverage(
        id="AI-13",
        fixture="—",
        check=f"{_T}parallel/test_layout.py::test_shift_policy_messages_and_inclusive_threshold",
        status="rule",
        note="threshold 512, counting scheduled tokens (docs/parallel.md)",
    ),
    BugCoverage(
        id="AI-14",
        fixture="`RemovedShiftCapture` (`testing/layouts/shift_capture.py`)",
        check="gpu_tests/test_cuda_graphs.py::test_shift_capture_with_sp_and_the_ai14_replay",
        status="gpu",
        note="needs SP > 1 over NCCL: skipped with one GPU; not yet run (no multi-GPU machine was lent)",
    ),
    BugCoverage(
        id="AI-15",
        fixture="planted modules in a temporary package",
        check=f"{_T}test_bug_catalogue.py::test_ai15_duplicate_and_unimported_names_are_caught",
        status="caught",
        note="ruff F811 and mypy --strict (name-defined, no-redef), as CI runs them",
    ),
    BugCoverage(
        id="AI-16",
        fixture="`BugReplay` AI-16 (`fed_with_discarded`, the `suffix_feed` stage)",
        check=f"{_T}spec/test_drafts.py::test_each_bug_replay_is_caught_by_its_own_check, "
        f"{_T}runner/test_drafting.py::test_each_replay_is_caught_in_the_runner, "
        "check:draft-selection, check:draft-runner",
        status="caught",
        note="the runner offers each partial prefill's discarded sample (`DraftRow.discarded`, "
        "drawn greedily); shown under suffix decoding alone",
    ),
    BugCoverage(
        id="AI-17",
        fixture="`BugReplay` AI-17 and AI-17-rows (`suffix_ignores_gate`, "
        "`gate_counts_decoding_rows`, the `batch_gate` stage)",
        check=f"{_T}spec/test_drafts.py::test_each_bug_replay_is_caught_by_its_own_check, "
        f"{_T}runner/test_drafting.py::test_each_replay_is_caught_in_the_runner, "
        "check:draft-selection, check:draft-runner",
        status="caught",
        note="the runner workload gates at 3 rows, with a fifth request prefilled beside three decoding ones",
    ),
    BugCoverage(
        id="AI-18",
        fixture="—",
        check="—",
        status="absent",
        note="the reference scheduler never preempts (docs/runner.md §1.3)",
    ),
    BugCoverage(
        id="AI-19",
        fixture="`RawGatherComm` (`testing/layouts/exchanges.py`)",
        check="conformance/test_layouts.py::test_shift_logits_come_back_in_vocab_order",
        status="caught",
    ),
    BugCoverage(
        id="AI-20",
        fixture="—",
        check=f"{_T}parallel/test_layout.py::test_layout_validation_messages, "
        f"{_T}parallel/test_layout.py::test_model_validation_messages",
        status="refused",
    ),
    BugCoverage(
        id="AI-21",
        fixture="—",
        check="—",
        status="absent",
        note="the speculator runs eagerly; it has no CUDA-graph key to get wrong",
    ),
    BugCoverage(
        id="AI-22",
        fixture="—",
        check=f"{_T}runner/test_runner.py::test_greedy_speculation_is_lossless, check:spec-lossless",
        status="rule",
        note="in float64 greedy output with and without speculation is identical",
    ),
    BugCoverage(
        id="AI-23",
        fixture="`BugReplay` B4 (`inverted_min_score`)",
        check=f"{_T}spec/test_drafts.py::test_min_score_single_definition, "
        f"{_T}spec/test_drafts.py::test_each_bug_replay_is_caught_by_its_own_check",
        status="rule",
        note="docs/verification.md D5 adopts min_score 0 for `suffix`; a divergent copy is caught",
    ),
    BugCoverage(
        id="AI-24",
        fixture="—",
        check=f"{_T}suffix/test_examples.py::test_worked_tree_examples_of_the_kit",
        status="rule",
        note="docs/suffix-decoding.md E7 (`tree_mode_emits_rest_of_node`, equal to upstream)",
    ),
    BugCoverage(
        id="AI-25",
        fixture="—",
        check=f"{_T}parallel/test_cudagraph.py::test_runtime_padding_examples, "
        f"{_T}parallel/test_cudagraph.py::test_every_plan_is_consistent",
        status="rule",
        note="shift sizes stop at the threshold; every token count pads or runs eagerly",
    ),
    BugCoverage(
        id="V-1",
        fixture="kit mutant `float32_u_without_guard`",
        check=f"{_T}spec/test_kit.py::test_every_mutant_is_caught, "
        f"{_T}spec/test_rejection.py::test_zero_probability_draft_is_never_accepted_even_at_u_zero",
        status="caught",
    ),
    BugCoverage(
        id="V-2",
        fixture="kit mutant `draft_not_zeroed_in_residual` (the race's outcome: the zeroing not seen by the race)",
        check=f"{_T}spec/test_kit.py::test_every_mutant_is_caught, "
        "gpu_tests/test_fused_rejection.py::test_fused_path_under_the_v2_and_v6_conditions",
        status="caught",
        note="E3 catches the outcome; the race itself cannot be forced. On the GPU our fused "
        "path writes no input (E14) and equals the loop over 20 launches",
    ),
    BugCoverage(
        id="V-3",
        fixture="kit mutant `greedy_only_at_minus_one`",
        check=f"{_T}spec/test_kit.py::test_every_mutant_is_caught",
        status="caught",
    ),
    BugCoverage(
        id="V-4",
        fixture="`greedy_rows_divided_by_minus_one` (`testing/sampler/vllm_bugs.py`)",
        check=f"{_T}spec/test_kit.py::test_every_vllm_bug_replay_is_caught",
        status="caught",
        note="E5, E8",
    ),
    BugCoverage(
        id="V-5",
        fixture="`nan_rows_emit_out_of_vocab`",
        check=f"{_T}spec/test_kit.py::test_every_vllm_bug_replay_is_caught",
        status="caught",
        note="E15-NAN (the NaN-row check was added for this replay)",
    ),
    BugCoverage(
        id="V-6",
        fixture="`tail_tile_out_of_vocab` (tiles of 16 ids)",
        check=f"{_T}spec/test_kit.py::test_every_vllm_bug_replay_is_caught, "
        "gpu_tests/test_fused_rejection.py::test_fused_path_under_the_v2_and_v6_conditions",
        status="caught",
        note="E7; on the GPU our chunked race stays in the vocabulary with a zero tail chunk",
    ),
    BugCoverage(
        id="V-7",
        fixture="`placeholder_drafts_clamped`",
        check=f"{_T}spec/test_kit.py::test_every_vllm_bug_replay_is_caught, "
        f"{_T}spec/test_rejection.py::test_placeholder_drafts_raise_where_recent_vllm_rejects_them_silently",
        status="caught",
        note="E15-SHAPES",
    ),
    BugCoverage(
        id="V-8",
        fixture="`draft_probs_dropped`",
        check=f"{_T}spec/test_kit.py::test_every_vllm_bug_replay_is_caught",
        status="caught",
        note="E8",
    ),
    BugCoverage(
        id="V-9", fixture="—", check="—", status="absent", note="arctic_ref has no argmax-invariant logits processors"
    ),
    BugCoverage(
        id="V-10",
        fixture="`top_k_max_of_nothing`",
        check=f"{_T}spec/test_kit.py::test_every_vllm_bug_replay_is_caught",
        status="caught",
        note="E1 (the sampler raises)",
    ),
    BugCoverage(
        id="V-11",
        fixture="`RunnerReplay` V-11 (`drafts_one_slot_early`, the `row_tokens` stage; "
        "`testing/drafting/runner_replays.py`)",
        check=f"{_T}runner/test_drafting.py::test_each_runner_replay_breaks_a_runner_rule, check:draft-runner",
        status="caught",
        note="greedy losslessness fails; a representative wrong offset",
    ),
    BugCoverage(
        id="V-12",
        fixture="`MisplacedNgramDrafter`",
        check=f"{_T}runner/test_runner.py::test_ngram_drafter_rows_and_the_v12_replay, check:speculator",
        status="caught",
        note="`check_ngram_rows`: rows without a sample between rows with one",
    ),
    BugCoverage(id="V-13", fixture="—", check="—", status="absent", note="no preemption (docs/runner.md §1.3)"),
    BugCoverage(
        id="V-14",
        fixture="`RunnerReplay` V-14 (`discarded_counted_valid`, the `drafter_sample` stage)",
        check=f"{_T}runner/test_drafting.py::test_each_runner_replay_breaks_a_runner_rule, check:draft-runner",
        status="caught",
        note="D2 in the runner: a partial prefill gets a draft; padded speculation itself is not modelled",
    ),
    BugCoverage(id="V-15", fixture="—", check="—", status="absent", note="no preemption (docs/runner.md §1.3)"),
    BugCoverage(
        id="V-16",
        fixture="`NumSpecDefaults(suffix=24)` injected into `GenerateJob`",
        check=f"{_T}test_cli.py::test_num_spec_tokens_defaults_are_the_documented_ones_and_the_v16_replay_is_caught",
        status="caught",
        note="defaults measured by draft length against docs/runner.md and `--help`",
    ),
    BugCoverage(
        id="V-17",
        fixture="vLLM 0.32's CPU build itself (live)",
        check=f"{_V}test_broken_engines.py::test_the_control_passes_distribution",
        status="caught",
        note="live: the engine checks report a top-k-only case's crash as a known difference (a failure "
        "under --arctic-ref-strict); it remains with V-20 repaired",
    ),
    BugCoverage(
        id="V-18",
        fixture="vLLM 0.32's CPU kernel itself (live); the `VLLM_0_32` profile (`acceptance_dtype=float32`)",
        check=f"{_S}test_vllm_0_32_identity.py::test_where_the_profiles_part_vllm_takes_vllm_0_32s_side, "
        f"{_S}test_vllm_0_32_identity.py::test_v18_float32_cast_of_the_uniforms, "
        f"{_T}spec/test_profiles.py::test_acceptance_compares_in_the_profiles_dtype",
        status="differs",
        note="measured: 0 of 8,353 seeded corpus decisions differ from the float64 rule; a decision differs "
        "with probability at most 2^-24 p/q (docs/verification.md §2.5)",
    ),
    BugCoverage(
        id="V-19",
        fixture="vLLM 0.32's CPU build itself (live)",
        check=f"{_V}test_vllm_bugs.py::test_v19_a_second_engine_after_an_n_gram_one_does_not_build",
        status="caught",
        note="live; the engine checks' workers build n-gram engines last",
    ),
    BugCoverage(
        id="V-20",
        fixture="vLLM 0.32's CPU build itself (live); `broken_engines.vllm_engines:repaired` repairs it",
        check=f"{_V}test_vllm_bugs.py::test_v20_the_cpu_expand_kernel_leaves_float_and_int32_outputs_unwritten, "
        f"{_V}test_broken_engines.py::test_the_control_passes_distribution",
        status="caught",
        note="live: the engine checks distribution and seeded fail on vLLM 0.32 and 0.26 and pass on the repaired build",
    ),
    BugCoverage(
        id="V-21",
        fixture="the `VLLM_0_32` profile as a candidate (`rejection_sample(profile=VLLM_0_32)`); vLLM 0.32's "
        "`RejectionSampler.forward` itself (live)",
        check=f"{_T}spec/test_profiles.py::test_v21_replay_is_caught_by_e5, "
        f"{_S}test_kit_on_vllm_sampler.py::test_c_vllm_repaired_against_intended_fails_e5_only, "
        f"{_S}test_vllm_0_32_identity.py::test_where_the_profiles_part_vllm_takes_vllm_0_32s_side",
        status="caught",
        note="by E5's tied-maxima probe against INTENDED: a greedy row's token depends on whether its batch "
        "holds a random request",
    ),
    BugCoverage(
        id="V-22",
        fixture="vLLM 0.32's `RejectionSampler` bonus path itself (live)",
        check=f"{_S}test_vllm_0_32_bugs.py::test_f1_min_tokens_masks_the_bonus_position",
        status="absent",
        note="arctic_ref has no min_tokens; reproduced live with vLLM's InputBatch, logits processors and sampler",
    ),
    BugCoverage(
        id="V-23",
        fixture="vLLM 0.32's `NgramProposer` itself (live)",
        check="tests/vllm_drafter/test_vllm_drafter_plugin.py::test_vllms_ngram_overrun_is_v23_and_fails_under_strict, "
        "tests/vllm_drafter/test_vllm_drafter_plugin.py::test_vllms_proposers_as_a_user_runs_them",
        status="differs",
        note="the drafter check bounds reports it as a known difference on vLLM's own class (a failure under "
        "--arctic-ref-strict); vLLM's scheduler cuts the extra draft, so no output changes",
    ),
    BugCoverage(
        id="F-1",
        fixture="`broken_engines.vllm_engines:kv_of_rejected_drafts` (vLLM 0.32)",
        check=f"{_V}test_broken_engines.py::test_broken_engine_fails_its_check",
        status="caught",
        note="by the engine check lossless",
    ),
    BugCoverage(
        id="F-2",
        fixture="`broken_engines.vllm_engines:batch_corruption` (vLLM 0.32)",
        check=f"{_V}test_broken_engines.py::test_broken_engine_fails_its_check",
        status="caught",
        note="by the engine check distribution",
    ),
    BugCoverage(
        id="F-3",
        fixture="`broken_engines.vllm_engines:long_draft_corruption` (vLLM 0.32)",
        check=f"{_V}test_broken_engines.py::test_broken_engine_fails_its_check",
        status="caught",
        note="by the engine check lossless",
    ),
    BugCoverage(
        id="F-4",
        fixture="—",
        check=f"{_T}spec/test_rejection_rules.py::test_a_nan_in_a_greedy_row_of_a_mixed_batch_raises",
        status="refused",
        note="a NaN row is a ValueError (the kit's E15-NAN)",
    ),
    BugCoverage(
        id="F-5",
        fixture="vLLM 0.32's CPU kernel itself (live)",
        check=f"{_T}spec/test_rejection.py::test_placeholder_drafts_raise_where_recent_vllm_rejects_them_silently, "
        f"{_S}test_vllm_0_32_bugs.py::test_f2_cpu_random_kernel_reads_before_the_row_and_accepts_minus_one, "
        f"{_S}test_vllm_0_32_bugs.py::test_f2_forward_emits_a_hole_for_a_padded_request",
        status="refused",
        note="a −1 placeholder draft is a ValueError; vLLM 0.32's CPU kernel still accepts one (it reads the "
        "probability before the row)",
    ),
    BugCoverage(
        id="F-6",
        fixture="`broken_engines.vllm_engines:greedy_changes_with_ngram` (vLLM 0.32)",
        check=f"{_V}test_broken_engines.py::test_broken_engine_fails_its_check",
        status="caught",
        note="by the engine check lossless",
    ),
)


def render_table() -> str:
    """docs/bugs.md's coverage table, one row per id."""
    lines = ["| id | fixture | check | status |", "|---|---|---|---|"]
    for row in CATALOGUE:
        checks = ", ".join(f"`{c.strip()}`" if c.strip() != "—" else "—" for c in row.check.split(","))
        status = row.status if not row.note else f"{row.status}: {row.note}"
        lines.append(f"| {row.id} | {row.fixture} | {checks} | {status} |")
    return "\n".join(lines)
