"""``Heap``: libstdc++'s ``std::priority_queue`` as tree speculation uses it (docs/suffix-decoding.md §3.4)."""

from typing import Any, Generic, TypeVar

Item = TypeVar("Item", bound=tuple[Any, ...])  # item[0] is the priority


class Heap(Generic[Item]):
    """libstdc++'s ``std::priority_queue`` with comparator ``a[0] < b[0]`` (docs/suffix-decoding.md §3.4): a
    max-heap on ``item[0]`` alone whose ties are settled by exactly these array moves."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[Item] = []

    def push(self, item: Item) -> None:
        heap = self.items
        heap.append(item)
        i = len(heap) - 1
        while i > 0 and heap[(i - 1) // 2][0] < item[0]:
            heap[i] = heap[(i - 1) // 2]
            i = (i - 1) // 2
        heap[i] = item

    def pop(self) -> Item:
        heap = self.items
        top = heap[0]
        last = heap.pop()
        n = len(heap)
        if n == 0:
            return top
        i = 0  # slot 0 is a hole; move the larger child up until the hole is a leaf
        while 2 * i + 2 < n:
            c = 2 * i + 2
            if heap[c][0] < heap[c - 1][0]:
                c -= 1
            heap[i] = heap[c]
            i = c
        if n % 2 == 0 and i == (n - 2) // 2:
            heap[i] = heap[2 * i + 1]
            i = 2 * i + 1
        while i > 0 and heap[(i - 1) // 2][0] < last[0]:
            heap[i] = heap[(i - 1) // 2]
            i = (i - 1) // 2
        heap[i] = last
        return top

    def __len__(self) -> int:
        return len(self.items)
