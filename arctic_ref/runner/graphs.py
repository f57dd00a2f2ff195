"""CUDA-graph capture and replay of one model's forward at one padded size (docs/runner.md §4, §6
item 6; docs/parallel.md §4.2). Inputs are copied into static buffers; attention uses the static
``BatchedAttention`` form; the KV cache is the runner's own (graphs write into it in place)."""

from dataclasses import dataclass

import torch
from torch import Tensor

from arctic_ref.model.attention import AttentionMetadata, BatchedAttention, batched_metadata
from arctic_ref.model.kv_cache import KVCache
from arctic_ref.model.llama import ForwardFn, ForwardInputs, LlamaShard, forward
from arctic_ref.parallel.graph_capture import capture_graph
from arctic_ref.parallel.plan import StepPlan


@dataclass(slots=True)
class CapturedForward:
    """One captured graph: ``size`` rows, ``context`` key slots per row."""

    size: int
    context: int
    inputs: ForwardInputs  # static buffers, attention in BatchedAttention form
    hidden: Tensor  # the graph's output buffer [size, hidden]
    graph: torch.cuda.CUDAGraph

    @classmethod
    def capture(
        cls,
        model: LlamaShard,
        cache: KVCache,
        plan: StepPlan,
        context: int,
        device: torch.device,
        pool: tuple[int, int] | None = None,
        forward_fn: ForwardFn = forward,
    ) -> "CapturedForward":
        size = plan.num_input_tokens
        static = ForwardInputs(
            input_ids=torch.zeros(size, dtype=torch.int64, device=device),
            positions=torch.zeros(size, dtype=torch.int64, device=device),
            slot_mapping=torch.full((size,), -1, dtype=torch.int64, device=device),
            attention=BatchedAttention(
                context_slots=torch.zeros(size, context, dtype=torch.int64, device=device),
                real=torch.zeros(size, dtype=torch.bool, device=device),
            ),
        )
        graph, hidden = capture_graph(lambda: forward_fn(model, static, cache, plan), device, pool)
        return cls(size=size, context=context, inputs=static, hidden=hidden, graph=graph)

    def replay(self, inputs: ForwardInputs) -> Tensor:
        """Copy a step's inputs (eager form) into the static buffers, replay, return the output
        buffer (valid until the next replay)."""
        if inputs.input_ids.shape[0] != self.size:
            raise ValueError(f"inputs have {inputs.input_ids.shape[0]} rows, the graph {self.size}")
        static = self.inputs
        assert isinstance(static.attention, BatchedAttention)
        attention = inputs.attention
        if isinstance(attention, AttentionMetadata):
            attention = batched_metadata(attention, self.size, self.context, static.input_ids.device)
        static.input_ids.copy_(inputs.input_ids)
        static.positions.copy_(inputs.positions)
        static.slot_mapping.copy_(inputs.slot_mapping)
        static.attention.context_slots.copy_(attention.context_slots)
        static.attention.real.copy_(attention.real)
        self.graph.replay()
        return self.hidden
