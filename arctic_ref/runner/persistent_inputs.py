"""``PersistentInputs``: device tensors reused step after step, so graph-keyed consumers replay."""

from collections import OrderedDict
from typing import Final

import torch
from torch import Tensor

INPUT_SLOTS_CAPACITY: Final = 64

_Key = tuple[str, tuple[int, ...], torch.dtype, torch.device]


class PersistentInputs:
    """One buffer per (name, shape, dtype, device), overwritten by each ``put``. ``RejectionSampler``
    keys its CUDA graphs by input address, so a step whose inputs are written here replays the graph
    of an earlier step with the same shapes instead of running eagerly (the least recently used
    buffer goes when more than ``capacity`` are held)."""

    def __init__(self, capacity: int = INPUT_SLOTS_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._buffers: OrderedDict[_Key, Tensor] = OrderedDict()

    def put(self, name: str, value: Tensor) -> Tensor:
        """The buffer for ``value``'s name and layout, holding a copy of ``value``."""
        key = (name, tuple(value.shape), value.dtype, value.device)
        buffer = self._buffers.pop(key, None)
        if buffer is None:
            buffer = torch.empty_like(value, memory_format=torch.contiguous_format)
            while len(self._buffers) >= self.capacity:
                self._buffers.popitem(last=False)
        self._buffers[key] = buffer
        return buffer.copy_(value)
