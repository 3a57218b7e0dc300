#!/usr/bin/env bash
# Make .venv with everything pinned in requirements.txt, install the book's
# library (distlib) into it, and fetch the widget JavaScript the book serves.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
.venv/bin/python scripts/check_distlib.py
.venv/bin/python -m pip install -q --no-deps -e .
.venv/bin/python scripts/check_distlib.py --after-install
bash scripts/fetch_vendor_js.sh
