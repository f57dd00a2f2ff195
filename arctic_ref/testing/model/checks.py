"""The model component: arctic_ref's Llama forward against Hugging Face transformers (docs/runner.md
§3.7). It checks ours only: there is no option yet that points it at a model of yours."""

from arctic_ref.check_options import CheckOptions
from arctic_ref.testing.check import Check, Verdict
from arctic_ref.testing.model.oracle import TRANSFORMERS_AVAILABLE, compare_with_transformers


def checks(options: CheckOptions) -> list[Check]:
    return [
        Check(
            component="model",
            id="model-hf",
            title="model-hf: tiny vs transformers (float64, chunks of 7)",
            meaning="tiny (untied, vocab 509, chunked prefill): logits within 1e-9 of transformers'",
            run=model_vs_transformers,
        )
    ]


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
