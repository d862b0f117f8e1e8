#!/usr/bin/env bash
# Tools for the Unity protocol tests: Mono's C# compiler and runtime with Debian's Newtonsoft.Json (to compile
# unity_protocol/csharp against the stubs and run the round trip), and quicktype pinned to the version the
# committed DTOs were generated with (backend/protocol/codegen.py QUICKTYPE_VERSION).
set -euo pipefail
cd "$(dirname "$0")/.."

QUICKTYPE_VERSION="$(.venv/bin/python -c 'from backend.protocol.codegen import QUICKTYPE_VERSION; print(QUICKTYPE_VERSION)' 2>/dev/null || echo 26.0.0)"
TOOLS="${MACHI_TOOLS_DIR:-$HOME/.cache/machi-tools}"

if ! command -v mcs >/dev/null || ! command -v mono >/dev/null || ! ls /usr/lib/cli/Newtonsoft.Json*/Newtonsoft.Json.dll >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        mono-mcs mono-runtime libnewtonsoft-json-cil-dev >/dev/null
fi

if [ ! -x "$TOOLS/quicktype/node_modules/.bin/quicktype" ] \
    || [ "$("$TOOLS/quicktype/node_modules/.bin/quicktype" --version | awk '{print $3}')" != "$QUICKTYPE_VERSION" ]; then
    npm install --silent --no-audit --no-fund --prefix "$TOOLS/quicktype" "quicktype@$QUICKTYPE_VERSION"
fi
echo "unity tools: $(mcs --version), quicktype $("$TOOLS/quicktype/node_modules/.bin/quicktype" --version | awk '{print $3}')"
