"""``arctic-ref generate`` behind the command line: a frozen job, validated in the parent (usage
errors before any process starts), then run SPMD on every rank (docs/runner.md §4)."""

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Literal, get_args

import torch

from arctic_ref.model.config import DTYPES, ModelConfig, tiny_config
from arctic_ref.model.weights import Weights, load_weights, random_weights
from arctic_ref.parallel.comm import build_groups
from arctic_ref.parallel.launch import RankInfo, spawn_ranks
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.runner.drafters import (
    Drafter,
    HiddenStateDrafter,
    NgramDrafter,
    NoDrafter,
    SpeculatorDrafter,
    SuffixDrafter,
)
from arctic_ref.runner.engine import EngineConfig, Kernel, RequestResult, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.runner.speculator import speculator_for
from arctic_ref.spec.drafts import arctic_config
from arctic_ref.spec.profile import MAX_SPEC_LEN

SpecMethod = Literal["none", "suffix", "ngram", "arctic"]
"""``generate --spec``: no drafts, suffix decoding, n-gram, or the Arctic MLP speculator."""
SPECS: tuple[SpecMethod, ...] = get_args(SpecMethod)


@dataclass(frozen=True, slots=True, kw_only=True)
class NumSpecDefaults:
    """``--num-spec-tokens`` when not given, per ``--spec``."""

    suffix: int = MAX_SPEC_LEN
    ngram: int = 3
    arctic: int = 3

    def items(self) -> list[tuple[SpecMethod, int]]:
        return [("suffix", self.suffix), ("ngram", self.ngram), ("arctic", self.arctic)]

    def of(self, spec: SpecMethod) -> int:
        return dict(self.items()).get(spec, 0)


DEFAULT_NUM_SPEC_TOKENS: Final = NumSpecDefaults()
"""The defaults as docs/runner.md §2.2–§2.4 document them (and ``--help`` prints them): suffix 32, n-gram
3, the Arctic speculator its n_predict, 3."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateJob:
    model: str = "tiny"  # "tiny" or a checkpoint directory
    seed: int = 0
    dtype: str = "float64"
    tp: int = 1
    sp: int = 1
    shift_threshold: int | None = None
    spec: SpecMethod = "none"
    num_spec_tokens: int | None = None
    prompts: tuple[tuple[int, ...], ...] | None = None  # None: the built-in prompts
    max_tokens: int = 32
    temperature: float = 0.0
    sampling_seed: int = 0
    device: str = "cpu"
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = ()
    kernels: Kernel = "reference"
    cuda_graphs: bool = False  # needs --device cuda
    spec_defaults: NumSpecDefaults = DEFAULT_NUM_SPEC_TOKENS
    """The defaults ``drafter`` uses (never set by the command line; a replay of bugs.md V-16
    injects a table that disagrees with the documented one)."""

    def model_config(self) -> ModelConfig:
        return tiny_config() if self.model == "tiny" else ModelConfig.load(Path(self.model))

    def engine(self) -> EngineConfig:
        """Every usage check (layout V1–V10, dtype, spec, prompts, devices) as ValueError."""
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype must be one of {sorted(DTYPES)} (got {self.dtype!r})")
        if self.spec not in SPECS:
            raise ValueError(f"--spec must be one of {list(SPECS)} (got {self.spec!r})")
        if self.spec == "arctic" and self.num_spec_tokens is not None and self.num_spec_tokens > 3:
            raise ValueError(f"--num-spec-tokens({self.num_spec_tokens}) > the speculator's n_predict(3)")
        if self.num_spec_tokens is not None and not 1 <= self.num_spec_tokens <= MAX_SPEC_LEN:
            raise ValueError(f"--num-spec-tokens({self.num_spec_tokens}) must be in [1, {MAX_SPEC_LEN}]")
        if self.max_tokens < 1 or self.temperature < 0:
            raise ValueError(f"--max-tokens({self.max_tokens}) must be >= 1 and --temperature({self.temperature}) >= 0")
        if self.tp < 1 or self.sp < 1:
            raise ValueError(f"--tp({self.tp}) and --sp({self.sp}) must be >= 1")
        if self.shift_threshold is not None and (self.shift_threshold < 0 or self.sp == 1):
            raise ValueError(
                f"--shift-threshold({self.shift_threshold}) must be >= 0 and needs --sp > 1 (got --sp {self.sp})"
            )
        config = self.model_config()
        layout = ParallelLayout(self.tp * self.sp, self.tp, self.sp)
        if self.device == "cuda" and layout.world_size > torch.cuda.device_count():
            raise ValueError(f"world size {layout.world_size} > visible GPUs ({torch.cuda.device_count()})")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"--device must be cpu or cuda (got {self.device!r})")
        if self.cuda_graphs and self.device != "cuda":
            raise ValueError(f"--cuda-graphs needs --device cuda (got {self.device!r})")
        prompts = self.prompt_ids(config)
        stops = [t for t in self.stop_token_ids if not 0 <= t < config.vocab_size]
        if stops:
            raise ValueError(f"--stop-token-ids {stops} must be in [0, {config.vocab_size})")
        bad = [(i, t) for i, p in enumerate(prompts) for t in p if not 0 <= t < config.vocab_size]
        if bad or any(not p for p in prompts):
            raise ValueError(f"prompt token ids must be in [0, {config.vocab_size}) and prompts non-empty: {bad[:5]}")
        max_len = min(config.max_position_embeddings, 1024)
        too_long = [i for i, p in enumerate(prompts) if len(p) >= max_len]
        if too_long:
            raise ValueError(f"prompts {too_long} are not shorter than max_model_len({max_len})")
        return EngineConfig(
            model=config,
            layout=layout,
            dtype=DTYPES[self.dtype],
            shift_threshold=self.shift_threshold,
            scheduler=SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=256, max_model_len=max_len),
            device=self.device,
            cuda_graphs=self.cuda_graphs,
            kernels=self.kernels,
        )

    def drafter(self, model: ModelConfig, max_model_len: int, device: torch.device) -> Drafter | HiddenStateDrafter:
        """none; suffix (max draft ``--num-spec-tokens``, default 32); ngram (k default 3, lookup
        5..5); arctic (the MLP speculator alone, random weights from seed + 1, k default n_predict).
        The defaults come from ``spec_defaults``."""
        k = self.num_spec_tokens or self.spec_defaults.of(self.spec)
        if self.spec == "arctic":
            speculator = speculator_for(
                model.hidden_size, model.vocab_size, "mlp", self.seed + 1, DTYPES[self.dtype], device
            )
            return SpeculatorDrafter(arctic_config(max_model_len, num_speculative_tokens=k), speculator)
        if self.spec == "suffix":
            return SuffixDrafter.build(max_model_len, k)
        if self.spec == "ngram":
            return NgramDrafter(max_model_len, num_spec_tokens=k)
        return NoDrafter()

    def prompt_ids(self, config: ModelConfig) -> list[list[int]]:
        return [list(p) for p in self.prompts] if self.prompts is not None else builtin_prompts(config.vocab_size)

    def weights(self, config: ModelConfig) -> Weights:
        if self.model == "tiny":
            return random_weights(config, self.seed)
        return load_weights(Path(self.model), config, torch.float64)


def read_prompts(path: Path) -> tuple[tuple[int, ...], ...]:
    """JSON lines, each ``{"prompt_token_ids": [...]}``; ValueError naming the file and the line of
    the first bad one, or the file when it holds no prompt."""
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error.msg} at column {error.colno})") from None
            ids = record.get("prompt_token_ids") if isinstance(record, dict) else None
            if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
                raise ValueError(f"{path}:{number}: prompt_token_ids must be a list of ints")
            out.append(tuple(ids))
    if not out:
        raise ValueError(f"{path}: no prompts (expected JSON lines with prompt_token_ids)")
    return tuple(out)


def generate_on_rank(info: RankInfo, job: GenerateJob) -> list[RequestResult] | None:
    """One rank's share: every rank schedules, samples and drafts identically; rank 0 reports."""
    engine = job.engine()
    device = torch.device(f"cuda:{info.rank}" if job.device == "cuda" else "cpu")
    if job.device == "cuda":
        engine = replace(engine, device=str(device))
    groups = build_groups(engine.layout, info.rank)
    drafter = job.drafter(engine.model, engine.scheduler.max_model_len, device)
    runner = build_runner(engine, job.weights(engine.model), groups, drafter)
    prompts = job.prompt_ids(engine.model)
    params = [
        SamplingParams(
            temperature=job.temperature,
            seed=job.sampling_seed + r if job.temperature > 0 else None,
            max_tokens=job.max_tokens,
            ignore_eos=job.ignore_eos,
            stop_token_ids=job.stop_token_ids,
        )
        for r in range(len(prompts))
    ]
    results = run_requests(runner, engine.scheduler, prompts, params)
    return results if info.rank == 0 else None


def generate(job: GenerateJob, *, timeout_s: float = 600.0) -> list[RequestResult]:
    engine = job.engine()  # usage errors here, before any process starts
    backend = "nccl" if job.device == "cuda" else "gloo"
    results = spawn_ranks(
        generate_on_rank, job, world_size=engine.layout.world_size, backend=backend, timeout_s=timeout_s
    )[0]
    assert results is not None
    return list(results)


def format_results(results: Sequence[RequestResult], prompts: Sequence[Sequence[int]]) -> str:
    rows = [("prompt", "prompt len", "outputs", "steps", "drafts", "accepted", "acceptance")]
    for r in results:
        rate = f"{r.num_accepted_tokens / r.num_draft_tokens:.2f}" if r.num_draft_tokens else "-"
        rows.append(
            (
                str(r.prompt_index),
                str(len(prompts[r.prompt_index])),
                str(len(r.output_token_ids)),
                str(r.num_steps),
                str(r.num_draft_tokens),
                str(r.num_accepted_tokens),
                rate,
            )
        )
    drafts = sum(r.num_draft_tokens for r in results)
    accepted = sum(r.num_accepted_tokens for r in results)
    rows.append(
        (
            "total",
            str(sum(len(p) for p in prompts)),
            str(sum(len(r.output_token_ids) for r in results)),
            str(sum(r.num_steps for r in results)),
            str(drafts),
            str(accepted),
            f"{accepted / drafts:.2f}" if drafts else "-",
        )
    )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    verify = sum(r.num_verify_steps for r in results)
    emitted = f"\nmean tokens emitted per verify step: {(accepted + verify) / verify:.2f}" if verify else ""
    return "\n".join("  ".join(cell.rjust(widths[i]) for i, cell in enumerate(row)) for row in rows) + emitted
