#!/usr/bin/env bash
# Set up (scripts/setup.sh) and build the static book into _build/html.
# Every notebook is executed during the build; warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The chapters' kernels must use matplotlib's inline backend: under an
# inherited MPLBACKEND=Agg, plt.show() would leave every figure out.
unset MPLBACKEND
rm -rf _build/html _build/.doctrees _build/jupyter_execute _build/reader _build/slides
# tools/reader_notebooks.py runs after the HTML build (a Sphinx extension named
# in _config.yml) and fails it on anything it cannot turn into plain Markdown;
# so does book/_ext/workshop_kit.py, which makes the slides.
# tools/build_book.py is `jupyter-book build` with Sphinx reading several chapters at once
# (DISTBOOK_BUILD_JOBS processes, default one a core, at most 4; 1 reads them one after another).
.venv/bin/python tools/build_book.py . -W -n --keep-going
ls _build/reader/*.ipynb > /dev/null 2>&1 || { echo "build_book.sh: no reader notebooks in _build/reader" >&2; exit 1; }
echo "Built: $(pwd)/_build/html/index.html (open it in a browser; no network needed)"
echo "Reader notebooks (glue filled in, no raw MyST, no outputs): $(pwd)/_build/reader/"
