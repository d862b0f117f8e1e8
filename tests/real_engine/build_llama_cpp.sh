#!/usr/bin/env bash
# Build llama.cpp once for both real engines the tests use (CPU only):
#   - the llama-cpp-python wheel (the `llamacpp` extra), into $WHEELS;
#   - llama.cpp's `llama-server`, into ${MACHI_LLAMA_SERVER_DIR:-~/.cache/machi/llama-server/<version>}.
# The wheel is built from the unpacked sdist with its CMake build tree kept; `llama-server` is then one more
# target of that same tree, linked against the libllama/libggml the wheel was built from, so llama.cpp is
# compiled once (about 10-15 min on 2 cores) instead of twice. The server's shared libraries are copied next
# to it and `llama-server` is a small launcher that points the loader at them.
# Usage: tests/real_engine/build_llama_cpp.sh PYTHON VERSION WHEELS
set -euo pipefail

PYTHON="$1"
VERSION="$2"
WHEELS="$3"
DEST="${MACHI_LLAMA_SERVER_DIR:-$HOME/.cache/machi/llama-server/$VERSION}"
JOBS="${JOBS:-$(nproc)}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "building llama.cpp $VERSION once: the python wheel, then llama-server from the same build tree" >&2
source "$(dirname "$0")/llama_sdist.sh"
src="$(unpack_llama_sdist "$PYTHON" "$VERSION" "$work")"
build="$work/build"

# 1. The wheel (shared libllama/libggml inside it), keeping the CMake build tree.
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
    "$PYTHON" -m pip wheel --quiet --no-deps "$src" -w "$WHEELS" -C build-dir="$build" >&2

# 2. llama-server: the same tree with the server target on; only the server's own sources compile now.
cmake "$build" -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >&2
cmake --build "$build" --target llama-server -j "$JOBS" >&2

binary="$(find "$build" -type f -name llama-server -perm -u+x | head -n 1)"
[ -n "$binary" ] || { echo "llama-server was not built" >&2; exit 1; }
mkdir -p "$DEST.tmp/lib"
cp "$binary" "$DEST.tmp/lib/llama-server"
# The shared libraries it links from the build tree (libllama, libggml*, ...), found the way the loader does.
libdirs="$(find "$build" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)"
LD_LIBRARY_PATH="$libdirs" ldd "$binary" | awk -v tree="$build" 'index($3, tree) == 1 {print $3}' \
    | xargs -r -I{} cp -L {} "$DEST.tmp/lib/"
cat >"$DEST.tmp/llama-server" <<'LAUNCHER'
#!/bin/sh
# llama-server built by build_llama_cpp.sh; its libllama/libggml are in lib/ beside this launcher.
here="$(dirname "$(readlink -f "$0")")"
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/lib/llama-server" "$@"
LAUNCHER
chmod 0755 "$DEST.tmp/llama-server"
"$DEST.tmp/llama-server" --version >&2  # it loads and runs from its new place
rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"  # atomic enough: a half-copied server is never taken for a cached one
echo "$DEST/llama-server"
