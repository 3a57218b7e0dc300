#!/usr/bin/env bash
# Set up (scripts/setup.sh) and build the static book into _build/html.
# Every notebook is executed during the build; warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The chapters' kernels must use matplotlib's inline backend: under an
# inherited MPLBACKEND=Agg, plt.show() would leave every figure out.
unset MPLBACKEND
rm -rf _build/html _build/.doctrees _build/jupyter_execute
.venv/bin/jupyter-book build . -W -n --keep-going
echo "Built: $(pwd)/_build/html/index.html (open it in a browser; no network needed)"
