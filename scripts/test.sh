#!/usr/bin/env bash
# Set up and run every test: the library's unit, property and doc tests; the
# widgets headless; nbval over every chapter; the book build with warnings as
# errors; the built pages in headless Chromium with the network off; real MPI
# and torch.distributed processes; then the chapters again under the stack
# Google Colab pins.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_colab_env.sh
bash scripts/install_chromium.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0
.venv/bin/python -m pytest tests distlib notebooks --doctest-modules \
  --nbval-lax --nbval-cell-timeout=180 -p no:cacheprovider "$@"
echo "== the chapters under Colab's pinned stack (ipywidgets 7.7.1, ipykernel 6.17.1, IPython 7.34.0) =="
.venv-colab/bin/python -m pytest notebooks --nbval-lax --nbval-cell-timeout=180 -p no:cacheprovider
