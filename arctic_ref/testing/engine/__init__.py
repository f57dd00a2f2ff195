"""The engine component: a whole serving engine with vLLM's offline ``LLM`` interface, checked end
to end against arctic_ref's reference (docs/user-guide.md, "Check your engine")."""
