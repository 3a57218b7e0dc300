#!/usr/bin/env bash
# Make .venv-colab with the widget and kernel stack Google Colab pins
# (requirements-colab.txt), to run the chapters the way Colab does.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv-colab/bin/python ] || "$PYTHON" -m venv .venv-colab
.venv-colab/bin/python -m pip install -q -r requirements-colab.txt
.venv-colab/bin/python scripts/check_distlib.py
.venv-colab/bin/python -m pip install -q --no-deps -e .
.venv-colab/bin/python scripts/check_distlib.py --after-install
