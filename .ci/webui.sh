#!/usr/bin/env bash
# Browser tests (tests/webui) need Debian's chromium and a CJK font so screenshots render Japanese.
# Playwright drives the system chromium (no browser download); the Python package comes from the dev extra.
set -euo pipefail

if [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -q "Noto Sans CJK"; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null
/usr/bin/chromium --version
