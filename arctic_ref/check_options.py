"""The kit's vocabulary, light enough for the pytest plugin and the CLI to import at start-up
(standard library only): the components, what each option means, and ``CheckOptions``, the settings
every front door (``arctic-ref check``, ``--impl``, the pytest plugin) passes to the component
modules as one frozen value. Each choice is a ``Literal``; the front doors offer ``get_args`` of it,
so no choice is spelled twice."""

from dataclasses import dataclass
from typing import Final, Literal, get_args

Component = Literal["suffix-cache", "suffix-tree", "sampler", "exchange", "drafter", "model", "engine"]
"""What a check tests, in the order ``arctic-ref check`` runs them."""
COMPONENTS: tuple[Component, ...] = get_args(Component)
TargetComponent = Literal["suffix-cache", "suffix-tree", "sampler", "exchange", "drafter", "engine"]
"""The components that also take an implementation of yours (``--arctic-ref-<component>``)."""
TARGET_COMPONENTS: tuple[TargetComponent, ...] = get_args(TargetComponent)
TARGET_HELP: Final[dict[TargetComponent, str]] = {
    "suffix-cache": "MODULE:FACTORY returning an object with arctic-inference 0.3.0's SuffixDecodingCache API; "
    "the factory takes no arguments or (max_tree_depth, max_cached_requests)",
    "suffix-tree": "MODULE:FACTORY returning an object with arctic-inference 0.3.0's SuffixTree API; "
    "the factory takes no arguments or (max_depth)",
    "sampler": "MODULE:FUNCTION with vLLM's rejection_sample argument list (arctic_ref.spec.rejection_sample), "
    "or MODULE:CLASS with vLLM 0.32's RejectionSampler interface (vllm.v1.sample.rejection_sampler:RejectionSampler, "
    "or a class of yours), built and called as vLLM's V1 runner does",
    "exchange": "MODULE:FACTORY returning a Ulysses exchange (seq_to_heads(x, comm), heads_to_seq(y, comm)), "
    "built on every rank and run inside the reference forward over the layout matrix",
    "drafter": "MODULE:FACTORY returning a drafter with propose(rows) or propose_with_hidden(rows, hidden, "
    "num_drafts); the factory takes no arguments or (max_model_len). Or MODULE:CLASS of a vLLM 0.32 proposer "
    "(vllm.v1.spec_decode.ngram_proposer:NgramProposer, ...suffix_decoding:SuffixDecodingProposer, a subclass, or "
    "a class with one of the propose signatures vLLM's runner calls), built from a VllmConfig and called as vLLM calls it",
    "engine": "MODULE:FACTORY with vLLM's offline LLM interface (vllm:LLM, or a function taking vLLM's keyword "
    "arguments): generate(prompts, sampling_params) over token-id prompts, and get_metrics()",
}
"""What ``--arctic-ref-<component>`` (and ``--impl <component>=``) takes."""

Level = Literal["quick", "full"]
"""The sampler kit's level: quick (400 exact cases, 50,000 requests per statistical test) or full."""
Device = Literal["cpu", "cuda"]
SamplerProfileName = Literal["intended", "vllm-0.9.2", "vllm-0.32"]
"""The intended numerics, or vLLM 0.9.2's (docs/verification.md §2.4)."""
Backend = Literal["gloo", "nccl"]
"""The exchange's process groups: gloo on CPU, or NCCL with one GPU per rank."""
SamplerCategory = Literal["semantics", "strict"]
"""The sampler checks' categories: what any correct sampler computes, or arctic_ref's stricter input
contract (``arctic_ref.testing.sampler.table``), which a user may leave out."""
HypothesisProfile = Literal["dev", "ci", "nightly"]
"""The project's Hypothesis profiles (``arctic_ref.testing.profiles``)."""

LEVELS: tuple[Level, ...] = get_args(Level)
DEVICES: tuple[Device, ...] = get_args(Device)
SAMPLER_PROFILE_NAMES: tuple[SamplerProfileName, ...] = get_args(SamplerProfileName)
BACKENDS: tuple[Backend, ...] = get_args(Backend)
SAMPLER_CATEGORIES: tuple[SamplerCategory, ...] = get_args(SamplerCategory)
HYPOTHESIS_PROFILES: tuple[HypothesisProfile, ...] = get_args(HypothesisProfile)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOptions:
    level: Level = "quick"
    device: Device = "cpu"
    profile: SamplerProfileName = "intended"
    strict: bool = False
    """Fail on documented upstream differences (X1–X7) too."""
    statistics: bool = True
    """Run the sampler kit's statistical checks (S1–S5)."""
    backend: Backend = "gloo"
    leave_out: tuple[SamplerCategory, ...] = ()
    """Sampler check categories reported as skipped instead of run (``strict``: our stricter contract)."""
    hypothesis_profile: HypothesisProfile = "ci"
    engine_model: str | None = None
    """The checkpoint the engine checks serve (a Hugging Face Llama directory); None: the kit's own."""
    engine_dtype: str = "float32"
    """The ``dtype`` every engine build gets."""
    drafter_config: str | None = None
    """A JSON object of vLLM ``speculative_config`` keys that a vLLM proposer class checked as a drafter
    is built with, over the adapter's defaults (``arctic_ref.testing.drafts.vllm_proposers``); None:
    the defaults. Refused for a ``propose(rows)`` drafter."""
    option_prefix: str = "--arctic-ref-"
    """How an option is named in messages: ``--arctic-ref-`` for pytest, ``--impl `` for the CLI."""
    setting_prefix: str = "--arctic-ref-"
    """How a setting (``drafter-config``) is named in messages: ``--arctic-ref-`` for pytest, ``--``
    for the CLI."""

    def option(self, component: str) -> str:
        """The option that names ``component``'s implementation, as the user typed it."""
        return f"{self.option_prefix}{component}"

    def setting(self, name: str) -> str:
        """The option of the setting ``name`` (``drafter-config``), as the user typed it."""
        return f"{self.setting_prefix}{name}"
