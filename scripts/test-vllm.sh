#!/usr/bin/env bash
# The vLLM stage of the test command: set-up of .venv-vllm (scripts/setup-vllm.sh), the tests that
# need vLLM (tests/vllm_engine; tests/vllm_sampler and tests/vllm_drafter, which also run the sampler
# and drafter checks on vLLM's own classes through the plugin), then the engine checks through the
# pytest plugin, run as a user runs them: on vLLM 0.32 (n-gram and suffix drafting) and on
# arctic_ref's reference runner.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-vllm.sh
export VLLM_ENABLE_V1_MULTIPROCESSING=0
HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}" python -m pytest -q -p no:cacheprovider tests/vllm_engine tests/vllm_sampler tests/vllm_drafter tests/runner/test_vllm_drafting.py tests/spec/test_sampling_vllm.py "$@"
# From an empty directory, as a user's CI job would run it.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && python -m pytest -q -p no:cacheprovider --arctic-ref-engine=vllm:LLM --arctic-ref-engine=arctic_ref.runner.llm:LLM)
