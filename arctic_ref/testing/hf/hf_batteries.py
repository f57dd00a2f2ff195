"""The model battery of ``arctic-ref check``: tiny against transformers."""

from arctic_ref.testing.battery import BatteryResult, Outcome
from arctic_ref.testing.hf.oracle import TRANSFORMERS_AVAILABLE, compare_with_transformers


def model_vs_transformers() -> BatteryResult:
    """runner.md §3.7 on tiny (untied, vocab 509, chunked prefill): logits within 1e-9 of HF."""
    if not TRANSFORMERS_AVAILABLE:
        return BatteryResult(
            name="model-hf: tiny vs transformers",
            outcome=Outcome.SKIP,
            compared=0,
            detail="transformers is not installed",
        )
    worst, compared = compare_with_transformers(vocab=509, budget=7)
    return BatteryResult(
        name="model-hf: tiny vs transformers (float64, chunks of 7)",
        compared=compared,
        outcome=Outcome.PASS if worst <= 1e-9 else Outcome.FAIL,
        figures={"max |Δlogits|": f"{worst:.1e}"},
    )
