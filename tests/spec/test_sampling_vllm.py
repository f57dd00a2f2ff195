"""``filter_row`` (the runner's top-k then top-p mask) against vLLM 0.32's own
``apply_top_k_top_p_pytorch``, the path vLLM's CPU sampler takes (``v1/sample/ops/topk_topp_sampler.py``;
no Triton CPU backend). Runs where vLLM is installed (the vLLM venv: ``.venv-vllm/bin/python -m pytest
tests/spec/test_sampling_vllm.py``) and skips elsewhere."""

import pytest
import torch

from arctic_ref.spec.sampling import filter_row

topk_topp = pytest.importorskip("vllm.v1.sample.ops.topk_topp_sampler", reason="vLLM is not installed")
ROWS = 3000


def test_the_mask_equals_vllms_on_random_rows_with_ties() -> None:
    g = torch.Generator().manual_seed(0)
    differ = []
    for index in range(ROWS):
        vocab = int(torch.randint(2, 300, (1,), generator=g))
        x = torch.randn(vocab, generator=g) * float(torch.rand(1, generator=g) * 6)
        if index % 3 == 0:
            x = torch.round(x)  # ties, at the top-k threshold and in top-p's sort
        k = vocab if index % 5 == 0 else int(torch.randint(1, vocab + 1, (1,), generator=g))
        p = 1.0 if index % 4 == 0 else float(torch.rand(1, generator=g)) * 0.99 + 0.01
        ours = filter_row(x.clone(), k, p)
        theirs = topk_topp.apply_top_k_top_p_pytorch(
            x.clone().unsqueeze(0),
            torch.tensor([k]) if k < vocab else None,
            torch.tensor([p], dtype=torch.float32) if p < 1.0 else None,
            allow_cpu_sync=True,
        ).squeeze(0)
        if not torch.equal(ours, theirs):
            differ.append((index, vocab, k, p))
    assert not differ, f"{len(differ)} of {ROWS} rows differ from vLLM's mask: {differ[:5]}"
