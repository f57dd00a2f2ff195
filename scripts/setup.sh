#!/usr/bin/env bash
# Set-up shared by scripts/check.sh and scripts/test.sh: a virtual environment (ARCTIC_REF_VENV,
# default .venv) with the CPU build of torch, the upstream oracle arctic-inference 0.3.0 built from
# source, and the project with its testing, test, lint and plot extras. Skipped when nothing changed.
set -euo pipefail
venv="${ARCTIC_REF_VENV:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
venv="$(cd "$venv" && pwd)"
# Upstream's CMake step finds Python, and through it nanobind, on PATH.
export PATH="$venv/bin:$PATH"
stamp="$venv/.arctic-ref-setup"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    log="$venv/setup.log"
    echo "setting up $venv (pip's output goes to $log) ..." >&2
    : > "$log"
    pip install -q --disable-pip-version-check --upgrade pip >> "$log" 2>&1 || true
    # torch first, pinned to the CPU wheel on this machine's disk, so no CUDA build is pulled.
    pip install -q --disable-pip-version-check torch==2.13.0 numpy 'nanobind==2.9.2' cmake ninja setuptools wheel \
        grpcio-tools 'protobuf==5.29.6' >> "$log" 2>&1 || true
    pip install -q --disable-pip-version-check --no-build-isolation 'arctic-inference==0.3.0' >> "$log" 2>&1 || true
    pip install -q --disable-pip-version-check -e '.[testing,test,lint,plot]' >> "$log" 2>&1 || true
    python -c "import torch, arctic_ref; from arctic_inference.suffix_decoding import _C" \
        || { tail -n 40 "$log" >&2; echo "set-up failed (the whole log: $log)" >&2; exit 1; }
    echo "$want" > "$stamp"
fi
