#!/usr/bin/env bash
# The test command: set-up, lint, type check, then the suite (Hypothesis profile ci, derandomized).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ruff check arctic_ref tests benchmarks mutation
ruff format --check arctic_ref tests benchmarks mutation conformance gpu_tests examples
mypy --strict arctic_ref
HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}" python -m pytest -m "not slow" "$@"
