"""The model battery of ``arctic-ref check``: tiny against transformers."""

from arctic_ref.testing.check import Verdict
from arctic_ref.testing.hf.oracle import TRANSFORMERS_AVAILABLE, compare_with_transformers


def model_vs_transformers() -> Verdict:
    """docs/runner.md §3.7 on tiny (untied, vocab 509, chunked prefill): logits within 1e-9 of HF."""
    if not TRANSFORMERS_AVAILABLE:
        return Verdict(
            compared="model-hf: tiny vs transformers",
            passed=True,
            skipped="transformers is not installed",
        )
    worst, compared = compare_with_transformers(vocab=509, budget=7)
    return Verdict(
        compared="model-hf: tiny vs transformers (float64, chunks of 7)",
        count=compared,
        passed=worst <= 1e-9,
        figures={"max |Δlogits|": f"{worst:.1e}"},
    )
