"""transformers as an oracle for the model (docs/runner.md §3.7); import-guarded, since transformers is
a test dependency only."""

import tempfile
from pathlib import Path

import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights, save_pretrained
from arctic_ref.parallel.comm import RankGroups, SoloComm
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.runner.engine import EngineConfig, SampleRecord, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig

try:
    import transformers

    TRANSFORMERS_AVAILABLE = True
except ImportError:  # pragma: no cover - transformers is a test dependency
    TRANSFORMERS_AVAILABLE = False


def load_transformers_model(path: Path) -> "transformers.LlamaForCausalLM":
    """``LlamaForCausalLM`` in float64 with sdpa attention (``dtype=`` on 5.x, ``torch_dtype=`` on 4.x)."""
    major = int(transformers.__version__.split(".")[0])
    dtype_kw = {"dtype": torch.float64} if major >= 5 else {"torch_dtype": torch.float64}
    return transformers.LlamaForCausalLM.from_pretrained(path, attn_implementation="sdpa", **dtype_kw).eval()


def compare_with_transformers(
    *, vocab: int = 512, tied: bool = False, budget: int = 7, max_tokens: int = 8
) -> tuple[float, int]:
    """(max |Δlogits| over every sampled row, rows compared) of tiny against HF's sdpa forward over
    the full sequence, after chunked prefill of the built-in prompts; raises if greedy tokens differ."""
    config = tiny_config(tied=tied, vocab_size=vocab)
    weights = random_weights(config, 3)
    solo = SoloComm(0)
    engine = EngineConfig(
        model=config, layout=ParallelLayout(1, 1, 1), scheduler=SchedulerConfig(max_num_batched_tokens=budget)
    )
    records: list[SampleRecord] = []
    prompts = builtin_prompts(vocab)
    results = run_requests(
        build_runner(engine, weights, RankGroups(rank=0, tp=solo, sp=solo, shift=solo)),
        engine.scheduler,
        prompts,
        [SamplingParams(max_tokens=max_tokens)] * len(prompts),
        records=records,
    )
    with tempfile.TemporaryDirectory() as path:
        save_pretrained(Path(path), config, weights)
        hf = load_transformers_model(Path(path))
    worst = 0.0
    for result in results:
        prompt = prompts[result.prompt_index]
        with torch.no_grad():
            logits = hf(torch.tensor([prompt + list(result.output_token_ids)])).logits[0]
        if logits.dtype != torch.float64 or logits[len(prompt) - 1 : -1].argmax(-1).tolist() != list(
            result.output_token_ids
        ):
            raise AssertionError(f"prompt {result.prompt_index}: transformers disagrees (logits {logits.dtype})")
        for record in (r for r in records if r.prompt_index == result.prompt_index):
            worst = max(worst, float((record.logits - logits[record.num_tokens - 1]).abs().max()))
    return worst, len(records)
