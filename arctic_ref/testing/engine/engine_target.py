"""An engine under test, and one run of it.

An engine is anything with vLLM's offline ``LLM`` interface: built from vLLM's keyword arguments
(``model``, ``speculative_config``, ``seed``, ``max_num_seqs``, ``max_model_len``, ``dtype``, …), with
``generate(prompts, sampling_params)`` over token-id prompts (``{"prompt_token_ids": [...]}``) and
``get_metrics()`` (vLLM's ``vllm.v1.metrics.reader`` values: each has a ``name`` and a ``value`` or
``values``). ``EngineTarget`` names the engine (built in worker processes, ``worker``);
``EngineSetup`` is one configuration and ``EngineRequest`` one request, as frozen values; what a run
gave is an ``EngineRun``, or an ``EngineFailure`` naming the configuration and the engine's
exception, which the checks report as a failed case."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

SPEC_METRICS: Final = (
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens",
    "vllm:spec_decode_num_accepted_tokens_per_pos",
)
"""vLLM's speculative-decoding counters (``vllm/v1/spec_decode/metrics.py``), cumulative."""
PREEMPTIONS_METRIC: Final = "vllm:num_preemptions"


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineTarget:
    """The engine a run checks, by name: ``MODULE:ATTR`` is imported in each worker process
    (``arctic_ref.testing.engine.worker``), where ``ATTR(**kwargs)`` builds an engine and the
    package's own ``SamplingParams`` builds its sampling parameters."""

    name: str
    """As the user named it (``vllm:LLM``), or ``arctic_ref.runner.llm:LLM`` for ours."""
    option: str
    """The option that named it, as the user typed it (``--arctic-ref-engine``, ``--impl engine``):
    a worker that cannot load it says so naming this option, as the checking process would."""
    model: str
    """The checkpoint every build serves."""
    base_dir: str | None = None
    """Put first on the worker's ``sys.path`` (the directory the run was started from)."""
    fixed_kwargs: Mapping[str, object] = field(default_factory=dict)
    """Keyword arguments every build gets (the CPU settings, the dtype)."""
    identity: str = ""
    """The distribution and version that provide the factory (``known_bugs.engine_identity``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSetup:
    """One engine configuration: vLLM's keyword arguments that the checks vary."""

    speculative_config: Mapping[str, object] | None = None
    max_num_seqs: int = 8
    max_model_len: int = 512
    max_num_batched_tokens: int | None = None
    """None: the engine's default."""
    enable_prefix_caching: bool | None = None
    """None: the engine's default."""
    num_gpu_blocks_override: int | None = None
    """A KV budget in blocks (small enough to force preemption), or None for the engine's."""
    seed: int = 0
    repeat: int = 0
    """Not an engine argument: a second build of the same setup (the ``seeded`` check's) has
    ``repeat`` 1, so the session does not answer it from the first build's run."""

    def kwargs(self) -> dict[str, object]:
        out: dict[str, object] = {
            "seed": self.seed,
            "max_num_seqs": self.max_num_seqs,
            "max_model_len": self.max_model_len,
        }
        optional = {
            "speculative_config": None if self.speculative_config is None else dict(self.speculative_config),
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "enable_prefix_caching": self.enable_prefix_caching,
            "num_gpu_blocks_override": self.num_gpu_blocks_override,
        }
        return out | {k: v for k, v in optional.items() if v is not None}

    @property
    def label(self) -> str:
        """``ngram k=4, max_num_seqs=8, prefix caching off`` and so on: the setup as a report names it."""
        spec = self.speculative_config
        parts = ["spec off" if spec is None else f"{spec.get('method')} k={spec.get('num_speculative_tokens')}"]
        parts.append(f"max_num_seqs={self.max_num_seqs}")
        parts.append(f"max_model_len={self.max_model_len}")
        if self.max_num_batched_tokens is not None:
            parts.append(f"max_num_batched_tokens={self.max_num_batched_tokens}")
        if self.enable_prefix_caching is not None:
            parts.append(f"prefix caching {'on' if self.enable_prefix_caching else 'off'}")
        if self.num_gpu_blocks_override is not None:
            parts.append(f"KV blocks={self.num_gpu_blocks_override}")
        if self.repeat:
            parts.append(f"build {self.repeat + 1}")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineRequest:
    """One request: a token-id prompt and vLLM's sampling parameters (``top_k``/``top_p`` None:
    not passed, the engine's default applies). EOS never stops it (``ignore_eos``)."""

    prompt: tuple[int, ...]
    max_tokens: int
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def sampling_kwargs(self) -> dict[str, object]:
        out: dict[str, object] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "ignore_eos": True,
        }
        optional = {"top_k": self.top_k, "top_p": self.top_p, "seed": self.seed}
        return out | {k: v for k, v in optional.items() if v is not None}

    @property
    def label(self) -> str:
        parts = [f"T={self.temperature:g}"]
        parts += [
            f"{k}={v}" for k, v in (("top_k", self.top_k), ("top_p", self.top_p), ("seed", self.seed)) if v is not None
        ]
        return f"{len(self.prompt)}-token prompt, max_tokens={self.max_tokens}, " + " ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecCounters:
    """vLLM's speculative-decoding counters at one moment (or the difference of two)."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: tuple[int, ...] = ()

    def minus(self, earlier: "SpecCounters") -> "SpecCounters":
        width = max(len(self.accepted_per_pos), len(earlier.accepted_per_pos))
        mine = self.accepted_per_pos + (0,) * (width - len(self.accepted_per_pos))
        theirs = earlier.accepted_per_pos + (0,) * (width - len(earlier.accepted_per_pos))
        return SpecCounters(
            drafts=self.drafts - earlier.drafts,
            draft_tokens=self.draft_tokens - earlier.draft_tokens,
            accepted=self.accepted - earlier.accepted,
            accepted_per_pos=tuple(a - b for a, b in zip(mine, theirs, strict=True)),
        )

    def trimmed(self) -> "SpecCounters":
        """Trailing zero positions dropped (engines size the vector differently)."""
        per_pos = list(self.accepted_per_pos)
        while per_pos and per_pos[-1] == 0:
            per_pos.pop()
        return SpecCounters(
            drafts=self.drafts, draft_tokens=self.draft_tokens, accepted=self.accepted, accepted_per_pos=tuple(per_pos)
        )

    def __str__(self) -> str:
        return (
            f"drafts {self.drafts}, draft tokens {self.draft_tokens}, accepted {self.accepted}, "
            f"per position {list(self.accepted_per_pos)}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineRun:
    """What one engine run gave: each request's tokens, the counters' growth over the run and over
    each ``generate`` call, the preemptions it reported (None: not reported), and its seconds."""

    tokens: tuple[tuple[int, ...], ...]
    counters: SpecCounters
    per_call: tuple[SpecCounters, ...]
    preemptions: int | None
    seconds: float
    failure: str = ""
    """Why the run stopped early: the engine raised in the batch after the last one in
    ``per_call`` (which holds only the batches that finished). Empty when every batch finished."""


class EngineFailure(Exception):
    """The engine raised, or returned something that is not vLLM's output shape: the case and the
    engine's exception, in one message."""


def read_counters(metrics: Sequence[Any]) -> tuple[SpecCounters, int | None]:
    """(the speculative counters, preemptions or None when the engine does not report them) from
    ``get_metrics()``; counters an engine does not report read 0. Values summed over label sets."""
    totals: dict[str, float] = {}
    vectors: dict[str, list[int]] = {}
    for metric in metrics:
        name = getattr(metric, "name", None)
        if name in SPEC_METRICS[:3] or name == PREEMPTIONS_METRIC:
            totals[name] = totals.get(name, 0) + float(getattr(metric, "value", 0))
        elif name == SPEC_METRICS[3]:
            values = [int(v) for v in getattr(metric, "values", [])]
            have = vectors.setdefault(name, [])
            have.extend([0] * (len(values) - len(have)))
            for i, v in enumerate(values):
                have[i] += v
    counters = SpecCounters(
        drafts=int(totals.get(SPEC_METRICS[0], 0)),
        draft_tokens=int(totals.get(SPEC_METRICS[1], 0)),
        accepted=int(totals.get(SPEC_METRICS[2], 0)),
        accepted_per_pos=tuple(vectors.get(SPEC_METRICS[3], [])),
    )
    preemptions = totals.get(PREEMPTIONS_METRIC)
    return counters, None if preemptions is None else int(preemptions)
