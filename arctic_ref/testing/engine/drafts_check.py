"""The ``drafts`` check: an engine's speculative counters, request by request, equal those its
drafter's documented semantics predict from the engine's own output (``draft_replay``)."""

from dataclasses import replace

from arctic_ref.runner.vllm_drafting import VllmDraftSemantics, new_vllm_drafter
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.engine.cases import DraftMethod, greedy, prompts, speculative_config
from arctic_ref.testing.engine.draft_replay import replay_request
from arctic_ref.testing.engine.engine_target import EngineFailure, EngineRequest, EngineSetup
from arctic_ref.testing.engine.lossless import engine_failed
from arctic_ref.testing.engine.session import EngineSession

DRAFTS_MAX_MODEL_LEN = 128


def drafts_requests(vocab: int, many: int) -> tuple[EngineRequest, ...]:
    """Greedy requests, the last of which runs into ``max_model_len``."""
    plain = greedy(prompts(vocab, many, (16, 40), 5), 40)
    (long_prompt,) = prompts(vocab, 1, (72, 80), 6)
    return (*plain, EngineRequest(prompt=long_prompt, max_tokens=DRAFTS_MAX_MODEL_LEN))


def drafts_check(session: EngineSession, methods: tuple[DraftMethod, ...]) -> Verdict:
    reference = session.reference()
    requests = drafts_requests(reference.config.vocab_size, 12 if session.level == "full" else 6)
    configs = [(m, k) for m, k in (("ngram", 4), ("suffix", 8)) if m in methods]
    if session.level == "full":
        configs += [(m, k) for m, k in (("ngram", 8), ("suffix", 16)) if m in methods]
    setups = [
        EngineSetup(max_num_seqs=1, max_model_len=DRAFTS_MAX_MODEL_LEN, speculative_config=speculative_config(m, k))
        for m, k in configs
    ]
    results = session.complete_runs([(setup, [[r] for r in requests]) for setup in setups])
    compared = 0
    figures: dict[str, str] = {}
    for setup, result in zip(setups, results, strict=True):
        if isinstance(result, EngineFailure):
            return engine_failed(session.target.identity, "drafts", result, setup.label)
        assert setup.speculative_config is not None
        semantics = VllmDraftSemantics.parse(setup.speculative_config, max_model_len=DRAFTS_MAX_MODEL_LEN)
        drafter = new_vllm_drafter(semantics)
        total = None
        for index, (request, output, got) in enumerate(zip(requests, result.tokens, result.per_call, strict=True)):
            continuation = reference.greedy_extension(
                list(request.prompt) + list(output), semantics.num_speculative_tokens + 1
            )
            predicted, steps = replay_request(
                drafter, f"req-{index}", request.prompt, output, continuation, max_model_len=DRAFTS_MAX_MODEL_LEN
            )
            compared += 1
            if predicted.trimmed() != got:
                first = "; ".join(
                    f"at N={s.num_tokens}: drafts {list(s.drafts)} accepted {s.accepted}" for s in steps[:4]
                )
                return Verdict(
                    passed=False,
                    compared=f"speculative counters per request vs {semantics.summary}",
                    count=compared,
                    detail=(
                        f"{setup.label}, request {index} ({request.label}): the engine counted {got}; "
                        f"its semantics predict {predicted} (first steps: {first})"
                    ),
                    replay=f"drafts, {setup.label}, requests 0..{index} one at a time",
                )
            total = (
                predicted
                if total is None
                else replace(
                    total,
                    drafts=total.drafts + predicted.drafts,
                    draft_tokens=total.draft_tokens + predicted.draft_tokens,
                    accepted=total.accepted + predicted.accepted,
                )
            )
        if total is not None:
            rate = total.accepted / max(1, total.draft_tokens)
            figures[setup.label.split(",")[0]] = (
                f"{total.drafts} drafts, {total.draft_tokens} tokens, {rate:.0%} accepted"
            )
    return Verdict(
        passed=True,
        compared=f"vLLM's speculative counters of {len(requests)} requests, one at a time, vs the replayed semantics",
        count=compared,
        figures=figures,
    )
