"""transformers as an oracle for the model (runner.md §3.7)."""
