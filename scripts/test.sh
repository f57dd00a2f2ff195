#!/usr/bin/env bash
# The test command: set-up, lint, type check, then the suite (Hypothesis profile ci, derandomized);
# then the vLLM stage (scripts/test-vllm.sh: its own environment, the engine checks on vLLM 0.32),
# unless ARCTIC_REF_SKIP_VLLM=1 or arguments select tests of the main suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ruff check arctic_ref tests benchmarks mutation
ruff format --check arctic_ref tests benchmarks mutation conformance gpu_tests examples
mypy --strict arctic_ref
HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}" python -m pytest -m "not slow" "$@"
if [ "${ARCTIC_REF_SKIP_VLLM:-0}" != "1" ] && [ "$#" -eq 0 ]; then
    bash scripts/test-vllm.sh -m "not slow"
fi
