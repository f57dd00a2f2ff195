"""The engine component: a whole serving engine with vLLM's offline ``LLM`` interface, checked end
to end (docs/user-guide.md, "Check your engine"). ``--arctic-ref-engine=vllm:LLM`` names vLLM's own
class; a factory of yours that takes vLLM's keyword arguments works the same way. On ours (no
value) the checks run on ``arctic_ref.runner.llm.LLM``, the reference runner as an engine."""

from pathlib import Path

from arctic_ref.check_options import CheckOptions
from arctic_ref.testing.check import Check
from arctic_ref.testing.engine import engine_loading
from arctic_ref.testing.engine.cases import DRAFT_METHODS
from arctic_ref.testing.engine.distribution import ALPHA, distribution_check
from arctic_ref.testing.engine.drafts_check import drafts_check
from arctic_ref.testing.engine.engine_target import EngineTarget
from arctic_ref.testing.engine.lossless import lossless_check, reference_check
from arctic_ref.testing.engine.seeded import seeded_check
from arctic_ref.testing.engine.session import EngineSession


def load(value: str, options: CheckOptions, base_dir: Path | None) -> EngineTarget:
    """The target ``value`` names, shown to import and to serve the model (a probe build)."""
    return engine_loading.load_engine(
        options.option("engine"),
        value,
        model=options.engine_model,
        dtype=options.engine_dtype,
        base_dir=base_dir,
        model_option=options.setting("engine-model"),
    )


def checks(target: EngineTarget | None, options: CheckOptions) -> list[Check]:
    """The five engine checks over one shared session (the engine's runs are reused between them)."""
    if target is None:
        target = engine_loading.load_engine(
            options.option("engine"),
            engine_loading.OUR_ENGINE,
            model=options.engine_model,
            dtype=options.engine_dtype,
            base_dir=None,
            probe=False,
            model_option=options.setting("engine-model"),
        )
    session = EngineSession(target=target, level=options.level)
    methods = DRAFT_METHODS

    return [
        Check(
            component="engine",
            id="lossless",
            run=lambda: lossless_check(session, methods),
            meaning="greedy tokens with drafting on equal those with drafting off, for n-gram and suffix drafts, "
            "over draft lengths, batch sizes, chunked prefill, prefix caching, preemption and max_model_len",
        ),
        Check(
            component="engine",
            id="reference",
            run=lambda: reference_check(session),
            meaning="spec-off greedy tokens equal the checkpoint's float64 greedy tokens, except at near-ties",
        ),
        Check(
            component="engine",
            id="drafts",
            run=lambda: drafts_check(session, methods),
            meaning="the engine's draft, draft-token and accepted counters, request by request, equal what its "
            "drafter's documented semantics predict from its own output (n-gram and suffix)",
        ),
        Check(
            component="engine",
            id="distribution",
            run=lambda: distribution_check(session, methods),
            meaning=f"at T > 0 the first tokens follow the float64 distribution (chi-square), spec on matches spec off, "
            f"and n-gram acceptance matches the exact probabilities; family-wise alpha {ALPHA:g}",
        ),
        Check(
            component="engine",
            id="seeded",
            run=lambda: seeded_check(session, methods),
            meaning="a seeded request gives the same tokens in two builds of the engine (batch composition reported)",
        ),
    ]
