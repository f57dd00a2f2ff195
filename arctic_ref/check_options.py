"""The kit's vocabulary, light enough for the pytest plugin and the CLI to import at start-up
(standard library only): the components, ``CheckOptions``, the settings every front door
(``arctic-ref check``, ``--impl``, the pytest plugin) passes to the component modules as one frozen
value, and ``SETTINGS``, the one declaration of the options that fill it. ``add_settings`` adds them
to pytest's parser (``--arctic-ref-level``) and to the CLI's (``--level``), as pytest-benchmark's
``add_*_options(addoption, prefix)`` do, and ``check_options`` reads them back, so an option is
declared once for both doors. Each choice is a ``Literal``; the options offer ``get_args`` of it,
so no choice is spelled twice."""

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any, Final, Literal, get_args

Component = Literal[
    "suffix-cache", "suffix-tree", "sampler", "exchange", "drafter", "drafting", "model", "layouts", "engine"
]
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
    is built with, over the adapter's defaults (``arctic_ref.testing.drafter.vllm_proposers``); None:
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


SettingKind = Literal["value", "flag", "off-flag", "repeatable"]
"""How an option fills its field: ``value`` (the value given), ``flag`` (True when given), ``off-flag``
(False when given: ``--no-statistics`` clears ``statistics``), ``repeatable`` (every value given, a tuple)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """One option of every front door: ``--arctic-ref-<name>`` in pytest, ``--<name>`` in
    ``arctic-ref check``. Its default is the default of the ``CheckOptions`` field it fills."""

    name: str
    field: str
    """The ``CheckOptions`` field it fills."""
    help: str
    kind: SettingKind = "value"
    choices: tuple[str, ...] = ()
    metavar: str | None = None

    def flag(self, prefix: str) -> str:
        """The option as typed: ``prefix`` is ``--arctic-ref-`` (pytest) or ``--`` (the CLI)."""
        return f"{prefix}{self.name}"

    def dest(self, prefix: str) -> str:
        """The attribute the parsed option is found under (argparse's rule, which pytest keeps)."""
        return self.flag(prefix).lstrip("-").replace("-", "_")

    @property
    def default(self) -> Any:
        """The field's default, as ``CheckOptions()`` has it."""
        (field,) = (f for f in fields(CheckOptions) if f.name == self.field)
        assert field.default is not MISSING, self.field
        return field.default


SETTINGS: Final[tuple[Setting, ...]] = (
    Setting(
        name="level",
        field="level",
        choices=LEVELS,
        help="sampler kit level: quick (400 exact cases, 50,000 requests per statistical test) or full",
    ),
    Setting(name="device", field="device", choices=DEVICES, help="device of the sampler kit"),
    Setting(
        name="profile",
        field="profile",
        choices=SAMPLER_PROFILE_NAMES,
        help="sampler profile: the intended numerics, or vLLM 0.9.2's, or vLLM 0.32's (its CPU build)",
    ),
    Setting(
        name="backend",
        field="backend",
        choices=BACKENDS,
        help="the exchange's process groups: gloo on CPU, nccl with one GPU per rank",
    ),
    Setting(
        name="no-statistics",
        field="statistics",
        kind="off-flag",
        help="sampler: the exact checks only (S1-S5 pass untested); for a fast pre-commit run",
    ),
    Setting(
        name="leave-out",
        field="leave_out",
        kind="repeatable",
        choices=SAMPLER_CATEGORIES,
        metavar="CATEGORY",
        help="sampler: report this category's checks as skipped (strict: arctic_ref's stricter input contract, "
        "E15-SHAPES, E15-FLAGS, E15-NAN); repeatable",
    ),
    Setting(
        name="strict",
        field="strict",
        kind="flag",
        help="fail on documented upstream differences (X1-X7) too; they are reported either way",
    ),
    Setting(
        name="engine-model",
        field="engine_model",
        metavar="DIR",
        help="engine: the Hugging Face Llama checkpoint every engine build serves (default: the kit's own, "
        "seeded random weights with head_dim 32)",
    ),
    Setting(name="engine-dtype", field="engine_dtype", metavar="DTYPE", help="engine: the dtype every build gets"),
    Setting(
        name="drafter-config",
        field="drafter_config",
        metavar="JSON",
        help="drafter: the speculative_config (a JSON object of vLLM's keys) a vLLM proposer class is built with, "
        'over the defaults ({"method": "suffix"}; {"method": "ngram", "num_speculative_tokens": 4})',
    ),
    Setting(
        name="hypothesis-profile",
        field="hypothesis_profile",
        choices=HYPOTHESIS_PROFILES,
        help="Hypothesis profile of the state machines (ci: derandomized, the default)",
    ),
)
"""Every setting of ``CheckOptions`` a user can give, in the order ``--help`` lists them."""
_NAMING_FIELDS: Final = ("option_prefix", "setting_prefix")
assert sorted(s.field for s in SETTINGS) == sorted(f.name for f in fields(CheckOptions) if f.name not in _NAMING_FIELDS)
assert all(s.default is (s.kind == "off-flag") for s in SETTINGS if s.kind in ("flag", "off-flag"))


def add_settings(addoption: Callable[..., object], prefix: str) -> None:
    """Declare every setting with ``addoption``: pytest's ``group.addoption`` with prefix
    ``--arctic-ref-``, or argparse's ``add_argument`` with prefix ``--``."""
    for setting in SETTINGS:
        extra: dict[str, Any] = {}
        if setting.choices:
            extra["choices"] = setting.choices
        if setting.metavar:
            extra["metavar"] = setting.metavar
        if setting.kind in ("flag", "off-flag"):
            extra["action"] = "store_true"
        elif setting.kind == "repeatable":
            extra.update(action="append", default=[])
        else:
            extra["default"] = setting.default
        addoption(setting.flag(prefix), help=setting.help, **extra)


def check_options(parsed: object, prefix: str, *, option_prefix: str, setting_prefix: str) -> CheckOptions:
    """The ``CheckOptions`` that ``add_settings(..., prefix)`` options parsed into ``parsed`` (an
    argparse namespace: the CLI's, or pytest's ``config.option``) say; ``option_prefix`` and
    ``setting_prefix`` name options in messages as that front door spells them."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        value = getattr(parsed, setting.dest(prefix))
        if setting.kind == "off-flag":
            value = not value
        elif setting.kind == "repeatable":
            value = tuple(value)
        values[setting.field] = value
    return CheckOptions(**values, option_prefix=option_prefix, setting_prefix=setting_prefix)
