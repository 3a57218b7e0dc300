#!/usr/bin/env bash
# Write dist/workshop/: everything a workshop room needs, for a USB stick.
#   wheels/      every pinned requirement and the book's library, as wheels:
#                pip install --no-index --find-links wheels -r requirements.txt
#   book/        the built book (open book/index.html; no network needed)
#   notebooks/   the reader notebooks
#   slides/      one reveal.js deck per chapter
#   workshop.sh  starts JupyterLab and the book on 127.0.0.1 (see README.md)
# Run it on a machine with a network and with the operating system, processor
# and Python (3.11) of the room's laptops: wheels such as torch and numpy are
# built for one platform. Builds the book first unless SKIP_BUILD=1.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-dist/workshop}
BOOK_DIR=${BOOK_DIR:-_build/html}
READER_DIR=${READER_DIR:-_build/reader}
SLIDES_DIR=${SLIDES_DIR:-_build/slides}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/build_book.sh
else
  bash scripts/setup.sh
fi
for d in "$BOOK_DIR" "$READER_DIR" "$SLIDES_DIR"; do
  [ -d "$d" ] || { echo "bundle.sh: $d is missing: build the book first (bash scripts/build_book.sh)" >&2; exit 1; }
done

rm -rf "$OUT"
mkdir -p "$OUT/wheels"
# Every requirement as a wheel (pip builds one where PyPI has only a source
# archive), then the library itself.
.venv/bin/python -m pip wheel -q --wheel-dir "$OUT/wheels" -r requirements.txt -c constraints.txt
.venv/bin/python -m pip wheel -q --no-deps --wheel-dir "$OUT/wheels" .
cp requirements.txt constraints.txt "$OUT/"
cp -r "$BOOK_DIR" "$OUT/book"
mkdir -p "$OUT/notebooks"
cp "$READER_DIR"/*.ipynb "$OUT/notebooks/"
cp -r "$SLIDES_DIR" "$OUT/slides"
cp scripts/workshop.sh "$OUT/workshop.sh"
python_version=$(.venv/bin/python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
platform=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_platform())')
cat > "$OUT/README.md" <<EOF
# Workshop kit: Distributed training, from the ring up

Everything here works with no network. The wheels were made for Python
$python_version on $platform; a laptop needs the same.

## Read
- The book: open \`book/index.html\` in a browser.
- The slides: open \`slides/index.html\`.

## Run the notebooks (once per laptop, about two minutes)

    python3 -m venv .venv
    .venv/bin/pip install --no-index --find-links wheels -r requirements.txt
    .venv/bin/pip install --no-index --find-links wheels distbook-distlib
    bash workshop.sh

\`workshop.sh\` copies the notebooks to \`workshop/\` (your edits are kept
there between runs), starts JupyterLab on 127.0.0.1 and the book beside it,
and prints two addresses: JupyterLab, and the book with a **Live code**
button on each chapter. Ctrl-C stops both. \`PORT=8900 bash workshop.sh\` if
port 8888 is taken.

Laptops on another platform can still read the book and the slides; to run
the notebooks they need the repository's online set-up (its README).
EOF
size=$(du -sh "$OUT" | cut -f1)
wheels=$(ls "$OUT/wheels" | wc -l)
echo "bundle: $OUT ($size, $wheels wheels)"
