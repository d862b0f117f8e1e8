#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (CPU only, no tests/examples/web UI) from the llama.cpp sources vendored
# in the llama-cpp-python sdist of the version installed in the venv, so the OpenAI-compatible server the
# tests talk to is the same llama.cpp as the embedded provider. Cached outside the repo and reused:
#   ${MACHI_LLAMA_SERVER_DIR:-~/.cache/machi/llama-server/<version>}/llama-server
# Prints the binary's path on its last line. Usage: tests/real_engine/build_llama_server.sh [PYTHON]
set -euo pipefail

PYTHON="${1:-${PYTHON:-.venv/bin/python}}"
VERSION="$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')"
DEST="${MACHI_LLAMA_SERVER_DIR:-$HOME/.cache/machi/llama-server/$VERSION}"
BINARY="$DEST/llama-server"

if [ -x "$BINARY" ]; then
    echo "$BINARY"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "building llama-server $VERSION (CPU only) in $work" >&2
source "$(dirname "$0")/llama_sdist.sh"
src="$(unpack_llama_sdist "$PYTHON" "$VERSION" "$work")vendor/llama.cpp"

cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_OPENMP=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >&2
cmake --build "$work/build" --target llama-server -j "${JOBS:-$(nproc)}" >&2

mkdir -p "$DEST"
install -m 0755 "$work/build/bin/llama-server" "$BINARY.tmp"
mv "$BINARY.tmp" "$BINARY"  # atomic: a half-copied binary is never taken for a cached one
echo "$BINARY"
