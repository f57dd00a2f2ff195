"""The model component: transformers as an oracle for arctic_ref's model (docs/runner.md §3.7)."""
