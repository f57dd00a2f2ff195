"""Benchmarks are not part of the default test run: ``pytest benchmarks`` (tox -e bench)."""
