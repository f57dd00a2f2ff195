"""The drafter component: checks of any drafter under the protocol the runner uses (``propose(rows)``,
or ``propose_with_hidden(rows, sample_hidden, num_drafts)``), built by ``factory(max_model_len)`` or
``factory()``; or of a vLLM 0.32 proposer class, built and called as vLLM's runner builds and calls
it (``arctic_ref.testing.drafter.vllm_proposers``). On ours (the runner's ``SuffixDrafter``) the same
checks run; the checks of arctic_ref's own drafting rules are the ``drafting`` component's
(``arctic_ref.testing.drafting.checks``)."""

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from arctic_ref.check_options import CheckOptions
from arctic_ref.runner.drafters import Drafter, HiddenStateDrafter, SuffixDrafter
from arctic_ref.testing.check import Check, Verdict
from arctic_ref.testing.drafter.contract import drafter_bounds, drafter_lossless
from arctic_ref.testing.drafter.vllm_proposers import SETTING, VllmProposerFactory, load_vllm_proposer, runner_call
from arctic_ref.testing.loading import TargetError, arity, build, load_target, require_callable

DrafterFactory = Callable[[int], Drafter | HiddenStateDrafter]


def load(value: str, options: CheckOptions, base_dir: Path | None) -> DrafterFactory:
    """``make(max_model_len)`` over the factory ``value`` names, after one probe drafter showed a
    ``propose`` or ``propose_with_hidden`` method; or, where ``value`` names a vLLM proposer class,
    over that class (``load_vllm_proposer``), the only kind ``options.drafter_config`` applies to."""
    option = options.option("drafter")
    target = load_target(option, value, base_dir=base_dir)
    call = runner_call(target)
    if call is not None:
        return load_vllm_proposer(option, value, target, call, options)
    if options.drafter_config is not None:
        raise TargetError(
            f"{options.setting(SETTING)}={options.drafter_config}: applies to a vLLM proposer class, and "
            f"{option}={value} is not one (its propose has none of the signatures vLLM's runner calls)"
        )
    factory: Callable[..., Any] = require_callable(option, value, target)
    params = arity(option, value, factory, 1)
    probe = build(option, value, factory, *([256] * params))
    if not callable(getattr(probe, "propose", None)) and not callable(getattr(probe, "propose_with_hidden", None)):
        raise TargetError(
            f"{option}={value}: the {type(probe).__name__} it returns has neither propose nor propose_with_hidden"
        )
    return lambda max_model_len: build(option, value, factory, *([max_model_len] * params))


def checks(make: DrafterFactory | None, options: CheckOptions) -> list[Check]:
    """``make(max_model_len)`` builds a fresh drafter (each check gets its own); ``None`` checks ours."""
    vllm = make if isinstance(make, VllmProposerFactory) else None
    listed = _contract(
        make or _our_drafter,
        vllm.summary if vllm else "",
        one_past_known=vllm.known_one_past if vllm else "",
    )
    return listed


def _our_drafter(max_model_len: int) -> Drafter:
    return SuffixDrafter.build(max_model_len)


def _contract(make: DrafterFactory, setup: str, *, one_past_known: str = "") -> list[Check]:
    """The three contract checks; ``setup`` (how a vLLM proposer was built and called) is added to
    what each verdict says was compared. ``one_past_known``: the catalogue id excusing vLLM's own
    n-gram drafts of M − N ids in ``bounds`` (settled by the front door: a pass that says so, a
    failure under ``strict``)."""

    def noted(verdict: Verdict) -> Verdict:
        return replace(verdict, compared=f"{verdict.compared}; {setup}") if setup else verdict

    return [
        Check(
            component="drafter",
            id="bounds",
            run=lambda: noted(drafter_bounds(make, one_past_known=one_past_known)),
            meaning="one list per row, [] without a sample (D2), at most min(32, M-N-1) in-vocabulary ids (D8)",
        ),
        Check(
            component="drafter",
            id="lossless-8",
            run=lambda: noted(drafter_lossless(make, 8)),
            meaning="greedy output with your drafts equals the output without, at 8 tokens per step",
        ),
        Check(
            component="drafter",
            id="lossless-64",
            run=lambda: noted(drafter_lossless(make, 64)),
            meaning="greedy output with your drafts equals the output without, at 64 tokens per step",
        ),
    ]
