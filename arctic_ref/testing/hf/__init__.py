"""transformers as an oracle for the model (docs/runner.md §3.7)."""
