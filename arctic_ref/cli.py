"""``arctic-ref check | generate | simulate``: the command line (the only place that reads argv)."""

import argparse
import json
import logging
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeAlias

from arctic_ref.check_options import TARGET_COMPONENTS, add_settings, check_options
from arctic_ref.model.config import DTYPES
from arctic_ref.parallel.launch import RankFailed
from arctic_ref.runner.engine import KERNELS
from arctic_ref.runner.generate import (
    DEFAULT_NUM_SPEC_TOKENS,
    SPECS,
    GenerateJob,
    format_results,
    generate,
    read_prompts,
)
from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.plot import plot_replay
from arctic_ref.suffix.simulate import Replay, SimulationConfig, SuffixCacheLike, replay, summarize
from arctic_ref.suffix.trace_file import TraceRequest, read_trace
from arctic_ref.suffix.upstream import UpstreamSuffixDecodingCache
from arctic_ref.suffix.workload import code_edit_trace


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _ProgressBar:
    """A one-line progress bar on stderr, redrawn at most every 0.2 s."""

    def __init__(self, total: int, label: str) -> None:
        self.total = max(total, 1)
        self.label = label
        self.last = 0.0

    def __call__(self, index: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.2 and index + 1 < self.total:
            return
        self.last = now
        done = (index + 1) * 30 // self.total
        end = "\n" if index + 1 >= self.total else ""
        print(
            f"\r{self.label} [{'#' * done}{'.' * (30 - done)}] {index + 1}/{self.total}",
            end=end,
            file=sys.stderr,
            flush=True,
        )


def _check(args: argparse.Namespace) -> int:
    # The kit needs the 'testing' extra (Hypothesis, SciPy), which generate and simulate do not: it
    # is imported when check runs, so that a base install's other commands work.
    try:
        from arctic_ref.testing import check, check_report, front_door
    except ImportError as error:
        _say(f"arctic-ref check: {error}")
        return 2
    if args.report is not None:
        check_report.check_report_path(args.report)
    impls = [*args.impl, *(f"engine={engine}" for engine in args.engine)]
    only = [part for part in (args.only or "").split(",") if part]
    if impls:
        options = check_options(args, "--", option_prefix="--impl ", setting_prefix="--")
        built = front_door.impl_checks(impls, options, Path.cwd())  # TargetError (a ValueError): exit 2
        if only:
            built = front_door.select_each(built, only)
        _say(f"arctic-ref check: {sum(len(c) for _, c in built)} checks of {', '.join(impls)}")
        runs = [
            run
            for spec, checks in built
            for run in front_door.run_checks(checks, _say, strict=options.strict, source=spec)
        ]
        noun = "implementations"
    else:
        # A setting is named as typed here (--engine-model); our own engine target keeps the name
        # CheckOptions gives it by default (--arctic-ref-engine), which no user types.
        options = check_options(args, "--", option_prefix="--arctic-ref-", setting_prefix="--")
        _say("arctic-ref check: every component's checks on arctic_ref's own implementation")
        checks = front_door.our_checks(options)
        if only:
            checks = front_door.select(checks, only)
        runs = front_door.run_checks(checks, _say, strict=options.strict)
        noun = "checks"
    print(check_report.format_report(runs))
    failed = [run for run in runs if run.verdict.outcome is check.Outcome.FAIL]
    ids = len(dict.fromkeys(run.source or run.check.qualified_id for run in runs))
    print(f"\n{ids} {noun}, {len(runs)} rows: {len(runs) - len(failed)} passed or skipped, {len(failed)} failed")
    if args.report is not None:
        check_report.write_report(runs, args.report)
        _say(f"report written to {args.report}")
    return 1 if failed else 0


def _load(args: argparse.Namespace) -> list[TraceRequest]:
    if args.trace is not None:
        return read_trace(args.trace)
    return code_edit_trace(requests=args.requests, seed=args.seed)


def _factories(impl: str) -> list[tuple[str, Callable[[int, int], SuffixCacheLike]]]:
    out: list[tuple[str, Callable[[int, int], SuffixCacheLike]]] = []
    if impl in ("reference", "both"):
        out.append(("reference", SuffixDecodingCache))
    if impl in ("upstream", "both"):
        if UpstreamSuffixDecodingCache is None:
            raise SystemExit("--impl upstream/both needs arctic-inference 0.3.0 (see README)")
        out.append(("upstream", UpstreamSuffixDecodingCache))
    return out


def _simulate_flag_problems(args: argparse.Namespace) -> list[str]:
    """Impossible simulate parameters, named as the user typed them."""
    rules = [
        ("--requests", args.requests, args.requests >= 1, ">= 1"),
        ("--max-spec-tokens", args.max_spec_tokens, args.max_spec_tokens >= 0, ">= 0"),
        ("--max-spec-factor", args.max_spec_factor, args.max_spec_factor >= 0, ">= 0"),
        ("--min-token-prob", args.min_token_prob, 0 <= args.min_token_prob <= 1, "in [0, 1]"),
        ("--max-cached-requests", args.max_cached_requests, args.max_cached_requests >= -1, ">= -1 (-1: no limit)"),
        ("--warm", args.warm, args.warm >= 0, ">= 0"),
        ("--repeat", args.repeat, args.repeat >= 1, ">= 1"),
    ]
    return [f"{flag}({value}) must be {bound}" for flag, value, ok, bound in rules if not ok]


def _simulation_config(args: argparse.Namespace) -> SimulationConfig:
    problems = _simulate_flag_problems(args)
    if problems:
        raise ValueError("; ".join(problems))
    return SimulationConfig(
        max_depth=args.max_depth,
        max_spec_tokens=args.max_spec_tokens,
        max_spec_factor=args.max_spec_factor,
        max_spec_offset=args.max_spec_offset,
        min_token_prob=args.min_token_prob,
        max_cached_requests=args.max_cached_requests,
        use_tree_spec=args.tree,
        no_prompt=args.no_prompt,
        warm=args.warm,
    )


def _replay_rounds(
    args: argparse.Namespace,
    impls: list[tuple[str, Callable[[int, int], SuffixCacheLike]]],
    trace: list[TraceRequest],
    config: SimulationConfig,
) -> tuple[dict[str, list[Replay]], dict[str, Any]]:
    """``args.repeat`` replays of each implementation, interleaved A B A B … so drift hits both
    alike; the replays by implementation, and each one's last cache."""
    runs: dict[str, list[Replay]] = {name: [] for name, _ in impls}
    caches: dict[str, Any] = {}
    for round_index in range(args.repeat):
        for name, make in impls:
            cache = make(config.max_depth, config.max_cached_requests)
            bar = _ProgressBar(len(trace), f"{name} round {round_index + 1}/{args.repeat}")
            runs[name].append(replay(cache, trace, config, keep_drafts=len(impls) > 1, on_request=bar))
            caches[name] = cache
    return runs, caches


def _compare_with_upstream(runs: dict[str, list[Replay]], summary: dict[str, Any]) -> int:
    """The speed ratios and the draft comparison of ``--impl both`` into ``summary``; 1 when a
    draft differs (named on stderr), else 0."""
    ours, theirs = runs["reference"], runs["upstream"]
    summary["spec_ratio"] = statistics.median(
        (summarize(a)["spec_us_per_call"] or 0.0) / (summarize(b)["spec_us_per_call"] or 1.0)
        for a, b in zip(ours, theirs, strict=True)
    )
    summary["update_ratio"] = statistics.median(
        (summarize(a)["update_us_per_token"] or 0.0) / (summarize(b)["update_us_per_token"] or 1.0)
        for a, b in zip(ours, theirs, strict=True)
    )
    mismatch = next((i for i, (a, b) in enumerate(zip(ours[0].drafts, theirs[0].drafts, strict=True)) if a != b), None)
    summary["drafts_identical"] = mismatch is None and len(ours[0].drafts) == len(theirs[0].drafts)
    summary["drafts_compared"] = len(ours[0].drafts)
    if summary["drafts_identical"]:
        return 0
    step = ours[0].steps[mismatch] if mismatch is not None else None
    _say(
        f"first differing draft: step {mismatch} {step}: reference {ours[0].drafts[mismatch or 0]} "
        f"upstream {theirs[0].drafts[mismatch or 0]}"
    )
    return 1


SUMMARY_KEYS = (
    "requests",
    "steps",
    "tokens_per_step",
    "accepted_per_step",
    "acceptance_rate",
    "spec_ratio",
    "update_ratio",
    "drafts_identical",
)
"""The summary fields ``simulate`` also prints on stderr, one per line."""


def _simulate(args: argparse.Namespace) -> int:
    config = _simulation_config(args)
    trace = _load(args)
    impls = _factories(args.impl)
    runs, caches = _replay_rounds(args, impls, trace, config)
    first_name = impls[0][0]
    summary: dict[str, Any] = {"impl": args.impl, "config": asdict(config), **summarize(runs[first_name][0])}
    for name in runs:
        summary[f"{name}_spec_us_per_call"] = statistics.median(
            summarize(r)["spec_us_per_call"] or 0.0 for r in runs[name]
        )
        summary[f"{name}_update_us_per_token"] = statistics.median(
            summarize(r)["update_us_per_token"] or 0.0 for r in runs[name]
        )
    reference_cache = caches.get("reference")
    if isinstance(reference_cache, SuffixDecodingCache):
        summary["global_num_nodes"] = reference_cache._global_tree.num_nodes()
        summary["global_live_tokens"] = reference_cache._global_tree.count([])
    status = _compare_with_upstream(runs, summary) if len(impls) == 2 else 0
    if args.memory:
        tracemalloc.start()
        replay(impls[0][1](config.max_depth, config.max_cached_requests), trace, config)
        summary["peak_mem_bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    if args.steps_out is not None:
        with args.steps_out.open("w", encoding="utf-8") as out:
            for step in runs[first_name][0].steps:
                out.write(json.dumps(asdict(step)) + "\n")
    if args.plot is not None:
        plot_replay(runs[first_name][0].steps, args.plot)
    print(json.dumps(summary, indent=2))
    _say(
        "\n".join(
            f"{k:>20}  {summary[k]:.3f}" if isinstance(summary.get(k), float) else f"{k:>20}  {summary.get(k)}"
            for k in SUMMARY_KEYS
            if k in summary
        )
    )
    return status


def _generate(args: argparse.Namespace) -> int:
    job = GenerateJob(
        model=args.model,
        seed=args.seed,
        dtype=args.dtype,
        tp=args.tp,
        sp=args.sp,
        shift_threshold=args.shift_threshold,
        spec=args.spec,
        num_spec_tokens=args.num_spec_tokens,
        prompts=read_prompts(args.prompts) if args.prompts else None,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        sampling_seed=args.sampling_seed,
        device=args.device,
        kernels=args.kernels,
        cuda_graphs=args.cuda_graphs,
        ignore_eos=args.ignore_eos,
        stop_token_ids=tuple(args.stop_token_ids or ()),
    )
    engine = job.engine()
    _say(
        f"arctic-ref generate: {engine.layout.world_size} rank(s), tp {args.tp} sp {args.sp}, {args.dtype}, "
        f"spec {args.spec}, {'greedy' if args.temperature == 0 else f'temperature {args.temperature}'}"
    )
    try:
        results = generate(job)
    except RankFailed as error:
        _say(f"arctic-ref generate: {error}")
        return 1
    if args.json:
        for r in results:
            print(
                json.dumps(
                    {
                        "prompt_index": r.prompt_index,
                        "output_token_ids": list(r.output_token_ids),
                        "num_steps": r.num_steps,
                        "num_draft_tokens": r.num_draft_tokens,
                        "num_accepted_tokens": r.num_accepted_tokens,
                        "finish_reason": r.finish_reason,
                    }
                )
            )
    else:
        print(format_results(results, job.prompt_ids(engine.model)))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arctic-ref", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_check(commands)
    _add_generate(commands)
    _add_simulate(commands)
    return parser


Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _add_check(commands: Commands) -> None:
    check = commands.add_parser("check", help="every component's checks on embedded defaults; non-zero exit on failure")
    check.add_argument(
        "--only",
        help="comma-separated check ids (layout), qualified ids (suffix-tree/bad-input) or groups (layouts); "
        "with --impl, among your implementations' checks",
    )
    check.add_argument(
        "--impl",
        action="append",
        default=[],
        metavar="COMPONENT=MODULE:ATTR",
        help="check your implementation instead of ours (repeatable); COMPONENT is one of "
        f"{', '.join(TARGET_COMPONENTS)} (as the pytest plugin's options)",
    )
    check.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="check a serving engine with vLLM's LLM interface end to end (vllm:LLM; repeatable); "
        "the same as --impl engine=MODULE:ATTR",
    )
    add_settings(check.add_argument, "--")  # the plugin's --arctic-ref-<setting> options, as --<setting>
    check.add_argument("--report", type=Path, metavar="PATH", help="also write the table as .md, .json or JUnit .xml")
    check.set_defaults(run=_check)


def _add_generate(commands: Commands) -> None:
    gen = commands.add_parser("generate", help="generate with a layout and drafter (docs/runner.md §4)")
    gen.add_argument("--model", default="tiny", help="tiny, or a directory with config.json and safetensors")
    gen.add_argument("--seed", type=int, default=0, help="weights of tiny")
    gen.add_argument("--dtype", choices=list(DTYPES), default="float64")
    gen.add_argument("--tp", type=int, default=1)
    gen.add_argument("--sp", type=int, default=1)
    gen.add_argument("--shift-threshold", type=int, default=None, help="enable shift parallelism (needs --sp > 1)")
    gen.add_argument("--spec", choices=SPECS, default="none")
    gen.add_argument(
        "--num-spec-tokens",
        type=int,
        default=None,
        help="the most drafts per step; default per --spec: "
        + ", ".join(f"{m} {k}" for m, k in DEFAULT_NUM_SPEC_TOKENS.items()),
    )
    gen.add_argument("--prompts", type=Path, help='JSON lines, each {"prompt_token_ids": [...]}')
    gen.add_argument("--max-tokens", type=int, default=32)
    gen.add_argument("--ignore-eos", action="store_true", help="the checkpoint's eos_token_id does not stop")
    gen.add_argument(
        "--stop-token-ids",
        type=lambda text: [int(t) for t in text.split(",")],
        help="comma-separated ids that stop a request (kept as its last token)",
    )
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.add_argument("--sampling-seed", type=int, default=0)
    gen.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    gen.add_argument(
        "--kernels",
        choices=KERNELS,
        default="reference",
        help="packed: the fused forward's structure with torch ops (any device); triton: with the Triton kernels"
        " (--device cuda)",
    )
    gen.add_argument("--cuda-graphs", action="store_true", help="capture and replay CUDA graphs (--device cuda)")
    gen.add_argument("--json", action="store_true", help="one JSON object per request, prompt order")
    gen.set_defaults(run=_generate)


def _add_simulate(commands: Commands) -> None:
    sim = commands.add_parser("simulate", help="replay a trace through suffix decoding (docs/suffix-decoding.md §8)")
    source = sim.add_mutually_exclusive_group()
    source.add_argument("--trace", type=Path, help="JSONL: prompt_token_ids, response_token_ids, optional req_id")
    source.add_argument("--workload", choices=["code-edit"], default="code-edit", help="the built-in trace (default)")
    sim.add_argument("--requests", type=int, default=60)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--max-depth", type=int, default=64)
    sim.add_argument("--max-spec-tokens", type=int, default=32)
    sim.add_argument("--max-spec-factor", type=float, default=1.0)
    sim.add_argument("--max-spec-offset", type=float, default=0.0)
    sim.add_argument("--min-token-prob", type=float, default=0.1)
    sim.add_argument("--max-cached-requests", type=int, default=-1)
    sim.add_argument("--tree", action="store_true", help="tree drafts (default: path drafts, as the runner and vLLM)")
    sim.add_argument(
        "--no-prompt", action="store_true", help="local trees start empty; the context still has the prompt"
    )
    sim.add_argument("--warm", type=int, default=0, help="the first K requests only fill the cache")
    sim.add_argument("--impl", choices=["reference", "upstream", "both"], default="reference")
    sim.add_argument("--repeat", type=int, default=1)
    sim.add_argument("--steps-out", type=Path, help="per-step JSONL")
    sim.add_argument("--memory", action="store_true", help="tracemalloc peak of a separate replay")
    sim.add_argument("--plot", type=Path, help="PNG of acceptance and draft length over the steps")
    sim.set_defaults(run=_simulate)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = _parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except (ValueError, OSError) as error:
        _say(f"arctic-ref {args.command}: {error}")
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
