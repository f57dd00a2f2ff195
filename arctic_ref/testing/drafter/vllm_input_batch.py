"""``VllmInputBatch``: the part of vLLM 0.32's ``InputBatch`` (``vllm/v1/worker/gpu_input_batch.py``)
that its CPU proposers read, built from one step's ``DraftRow`` values as the V1 runner
(``vllm/v1/worker/gpu_model_runner.py``) holds it when it calls the proposer: after
``_bookkeeping_sync`` has written this step's sampled tokens into ``token_ids_cpu`` and moved
``num_tokens_no_spec`` past them.

vLLM's own class needs a device, block tables, sampling state and the runner's request
bookkeeping to fill; none of that reaches ``NgramProposer`` or ``SuffixDecodingProposer``, so the
kit hands them this value instead: the same names, shapes and dtypes (buffers of ``max_num_reqs``
rows, as the runner passes its persistent buffers whole), row i being the batch's i-th request."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

import numpy as np
from numpy.typing import NDArray

from arctic_ref.spec.drafts import DraftRow


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmInputBatch:
    """Row i is request ``req_ids[i]``: ``token_ids_cpu[i, :num_tokens_no_spec[i]]`` is its prompt and
    output so far, the first ``num_prompt_tokens[i]`` of them its prompt. Rows past ``num_reqs`` and
    columns past a row's length are zero, as vLLM's buffers start."""

    req_ids: list[str]
    """vLLM's request ids are strings; each ``DraftRow.req_id`` becomes ``str(req_id)``."""
    req_id_to_index: dict[str, int]
    num_tokens_no_spec: NDArray[np.int32]
    """``[max_num_reqs]``: N of each row, this step's sampled tokens included."""
    num_prompt_tokens: NDArray[np.int32]
    """``[max_num_reqs]``."""
    token_ids_cpu: NDArray[np.int32]
    """``[max_num_reqs, max_model_len]``."""
    vocab_size: int

    @property
    def num_reqs(self) -> int:
        return len(self.req_ids)

    @classmethod
    def from_rows(cls, rows: Sequence[DraftRow], *, max_num_reqs: int, max_model_len: int, vocab_size: int) -> Self:
        """The batch of ``rows``, in their order. A ``ValueError`` naming the values where vLLM's
        runner could not hold them: more rows than ``max_num_reqs``, two rows whose ids are the same
        string, or a row longer than ``max_model_len`` (the runner's bookkeeping asserts that)."""
        if len(rows) > max_num_reqs:
            raise ValueError(f"{len(rows)} rows, more than max_num_reqs {max_num_reqs}")
        req_ids = [str(row.req_id) for row in rows]
        if len(set(req_ids)) != len(req_ids):
            raise ValueError(f"request ids {req_ids} repeat once made strings, as vLLM's request ids are")
        token_ids = np.zeros((max_num_reqs, max_model_len), dtype=np.int32)
        num_tokens = np.zeros(max_num_reqs, dtype=np.int32)
        num_prompt = np.zeros(max_num_reqs, dtype=np.int32)
        for i, row in enumerate(rows):
            if row.num_tokens > max_model_len:
                raise ValueError(
                    f"row {req_ids[i]} has {row.num_tokens} tokens, more than max_model_len {max_model_len}"
                )
            token_ids[i, : row.num_tokens] = row.token_ids
            num_tokens[i] = row.num_tokens
            num_prompt[i] = row.num_prompt_tokens
        return cls(
            req_ids=req_ids,
            req_id_to_index={req: i for i, req in enumerate(req_ids)},
            num_tokens_no_spec=num_tokens,
            num_prompt_tokens=num_prompt,
            token_ids_cpu=token_ids,
            vocab_size=vocab_size,
        )
