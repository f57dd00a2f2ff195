"""Deliberately broken serving engines built on vLLM 0.32 itself (issue 38, "Proof that it catches
bugs"): each factory builds vLLM's own ``LLM`` and then breaks one thing inside that instance, so
that arctic_ref's engine checks must fail it on a named check. See ../README.md for the table."""
