"""The model component: arctic_ref's Llama forward against Hugging Face transformers (docs/runner.md
§3.7). It checks ours only: there is no option yet that points it at a model of yours."""

from arctic_ref.check_options import CheckOptions
from arctic_ref.testing.check import Check
from arctic_ref.testing.hf.hf_batteries import model_vs_transformers


def model_checks(options: CheckOptions) -> list[Check]:
    return [
        Check(
            component="model",
            id="model-hf",
            title="model-hf: tiny vs transformers (float64, chunks of 7)",
            meaning="tiny (untied, vocab 509, chunked prefill): logits within 1e-9 of transformers'",
            run=model_vs_transformers,
        )
    ]
