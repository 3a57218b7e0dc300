#!/usr/bin/env bash
# The browser tests drive Debian's Chromium headless.
set -euo pipefail
if command -v chromium >/dev/null; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "The browser tests need Chromium: sudo apt-get install chromium" >&2; exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
