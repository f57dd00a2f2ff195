"""The ``seeded`` check: a seeded request at T > 0 gives the same tokens in two builds of the same
engine (a failure otherwise); whether it also keeps them when sent again beside other requests, in
another order, is reported and not failed (vLLM documents per-request seeds, not batch
invariance, and a suffix drafter's cache has grown by the second call, so the drafts differ)."""

import random
from dataclasses import replace

from arctic_ref.testing.check import Verdict
from arctic_ref.testing.engine.cases import DraftMethod, prompts, speculative_config
from arctic_ref.testing.engine.engine_target import EngineFailure, EngineRequest, EngineSetup
from arctic_ref.testing.engine.known_bugs import explain
from arctic_ref.testing.engine.lossless import engine_failed
from arctic_ref.testing.engine.session import EngineSession


def seeded_check(session: EngineSession, methods: tuple[DraftMethod, ...]) -> Verdict:
    vocab = session.reference().config.vocab_size
    seeded = tuple(
        EngineRequest(prompt=p, max_tokens=24, temperature=0.8, seed=1000 + i)
        for i, p in enumerate(prompts(vocab, 8, (12, 32), 11))
    )
    others = tuple(EngineRequest(prompt=p, max_tokens=24, temperature=1.0) for p in prompts(vocab, 5, (12, 32), 12))
    order = list(range(len(seeded)))
    random.Random(0).shuffle(order)
    mixed = tuple([seeded[i] for i in order] + list(others))
    notes: list[str] = []
    compared = 0
    for method in methods:
        setup = EngineSetup(max_num_seqs=8, speculative_config=speculative_config(method, 4))
        first, second = session.complete_runs([(setup, [seeded, mixed]), (replace(setup, repeat=1), [seeded])])
        for run in (first, second):
            if isinstance(run, EngineFailure):
                return engine_failed(session.target.identity, "seeded", run, setup.label)
        assert not isinstance(first, EngineFailure) and not isinstance(second, EngineFailure)
        a, b = first.tokens[: len(seeded)], second.tokens
        compared += len(seeded)
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                at = next((i for i, (u, v) in enumerate(zip(x, y, strict=False)) if u != v), min(len(x), len(y)))
                detail = (
                    f"{setup.label}: request {index} ({seeded[index].label}) differs at position {at}: "
                    f"{list(x[at : at + 4])} vs {list(y[at : at + 4])}"
                )
                return Verdict(
                    passed=False,
                    compared=f"seeded requests in two builds of {setup.label}",
                    count=compared,
                    detail=detail,
                    known_difference=explain(session.target.identity, "seeded", detail),
                )
        moved = first.tokens[len(seeded) : 2 * len(seeded)]
        kept = sum(moved[order.index(i)] == a[i] for i in range(len(seeded)))
        notes.append(
            f"{method}: {kept}/{len(seeded)} kept their tokens when resent shuffled beside {len(others)} others"
        )
    return Verdict(
        passed=True,
        compared="seeded requests at T=0.8 in two builds of the same engine",
        count=compared,
        figures={"batch composition (reported)": "; ".join(notes)},
    )
