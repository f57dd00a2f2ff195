"""The built-in prompts of ``generate`` and ``check`` (docs/runner.md §4 item 1), 97 tokens in all."""

import torch


def builtin_prompts(vocab: int) -> list[list[int]]:
    """P0 = 1..16; P1 = [11..15]×6; P2 = 48 ids from a CPU generator seeded 1234; P3 = [7, 7, 7]."""
    g = torch.Generator("cpu").manual_seed(1234)
    return [list(range(1, 17)), [11, 12, 13, 14, 15] * 6, torch.randint(1, vocab, (48,), generator=g).tolist(), [7] * 3]
