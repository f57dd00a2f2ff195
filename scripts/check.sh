#!/usr/bin/env bash
# The main job: set-up, then every conformance battery on embedded defaults (non-zero on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
arctic-ref check "$@"
