"""F-1 (vllm-ascend#17149): the target conditions on the KV of a rejected draft.

In a verify step of a row with drafts d_0..d_{n-1} at positions N..N+n-1, the target writes the KV
of every draft. If d_a is the first rejected one, the step emits d_0..d_{a-1} and a recovered
token t at position N+a, and the KV slot N+a holds d_a's keys and values until the next step
recomputes it from t (vLLM rolls ``num_computed_tokens`` back to N+a for that: scheduler.py,
``update_from_output``). The field bug skipped that recomputation, so later tokens attended to
d_a where t was emitted.

Replayed in the model runner's token buffer: after each step's bookkeeping, the rejected draft d_a
is written back at position N+a of ``input_batch.token_ids_cpu``, which the next step's forward
reads its inputs from. Position N+a's KV is then computed from d_a, with the same prefix and
position as the verify step computed it: the KV the field bug kept. Tokens already emitted are
not changed (they come from the sampler's output, not from this buffer); the scheduler's own
bookkeeping is untouched, so the engine stays consistent and nothing hangs. (Leaving
``num_computed_tokens`` un-rolled-back in the scheduler instead leaves a request with no token
to schedule once its drafts run out, and the engine spins.)"""

from typing import Any


def keep_rejected_draft_kv(runner: Any) -> None:
    """Plant the fault on a ``GPUModelRunner``/``CPUModelRunner`` instance (synchronous scheduling)."""
    original = runner._bookkeeping_sync

    def bookkeeping_sync(scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(scheduler_output, *args, **kwargs)
        valid_sampled_token_ids: list[list[int]] = result[3]
        batch = runner.input_batch
        for req_id, drafts in scheduler_output.scheduled_spec_decode_tokens.items():
            index = batch.req_id_to_index.get(req_id)
            if index is None or index >= len(valid_sampled_token_ids):
                continue
            emitted = valid_sampled_token_ids[index]
            accepted = len(emitted) - 1
            if emitted and accepted < len(drafts) and drafts[accepted] >= 0:
                recovered_at = int(batch.num_tokens_no_spec[index]) - 1
                batch.token_ids_cpu[index, recovered_at] = drafts[accepted]
        return result

    runner._bookkeeping_sync = bookkeeping_sync
