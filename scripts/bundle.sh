#!/usr/bin/env bash
# Write dist/workshop/: everything a workshop room needs, for a USB stick.
#   wheels/           the room's packages (requirements-room.txt: the chapters'
#                     libraries and JupyterLab, no build or test tooling), all
#                     their dependencies and the book's library, as wheels
#   requirements.txt  those packages and the library: one command installs all,
#                     pip install --no-index --find-links wheels -r requirements.txt
#   book/             the built book (open book/index.html; no network needed)
#   notebooks/        the reader notebooks
#   slides/           one reveal.js deck per chapter
#   workshop.sh       starts JupyterLab and the book on 127.0.0.1 (see README.md)
#   README.md         which laptops the wheels serve, checked, and what the
#                     others do
# Run it on a machine with a network (PyPI), of the kind the room's laptops
# are: wheels such as torch and numpy are built for one operating system,
# processor and Python, and pip cannot fetch another platform's faithfully
# (it evaluates dependencies' markers for the machine it runs on; torch's
# CUDA packages are one example). The kit serves the Pythons named in
#   PYTHONS="python3.12 python3.13"   interpreters on this machine, each
#                                     3.11 or later (default: .venv's Python)
# and its README lists which, each one checked by a dry-run install from
# wheels/ alone. For a room of mixed laptops, name the others:
#   LAPTOPS="macos-arm64 windows-x86_64"   (tools/room_laptops.py lists the
#                                     kinds; a Linux kind gets PyPI's torch,
#                                     the CUDA build, gigabytes of nvidia-*)
# and their wheels are resolved for their platform by uv (which reads the
# markers for the target, not for this machine), downloaded from PyPI into
# wheels/, and checked by resolving again from wheels/ alone; the README says
# which laptops are served and, for the others, why not (a package with no
# wheel there). Or run this on one machine of each kind and copy their
# wheels/ folders into one: pip picks each laptop's own.
# On Linux x86_64, PyPI's torch wheel for any Python but this machine's local
# one carries CUDA (gigabytes); PyTorch's own index has CPU-only ones
# (PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu).
# The book: an existing build is reused (the script says which commit it is
# from, and warns when that is not HEAD); with none it builds one.
# REBUILD=1 always rebuilds; SKIP_BUILD=1 never builds (and fails without one).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-dist/workshop}
BOOK_DIR=${BOOK_DIR:-_build/html}
READER_DIR=${READER_DIR:-_build/reader}
SLIDES_DIR=${SLIDES_DIR:-_build/slides}

have_build() { [ -f "$BOOK_DIR/index.html" ] && ls "$READER_DIR"/*.ipynb >/dev/null 2>&1 && [ -d "$SLIDES_DIR" ]; }
if [ "${REBUILD:-0}" = 1 ] || { [ "${SKIP_BUILD:-0}" != 1 ] && ! have_build; }; then
  bash scripts/build_book.sh
else
  bash scripts/setup.sh
fi
for d in "$BOOK_DIR" "$READER_DIR" "$SLIDES_DIR"; do
  [ -d "$d" ] || { echo "bundle.sh: $d is missing: build the book first (bash scripts/build_book.sh)" >&2; exit 1; }
done
# The reader notebooks pin the commit they were built from (their REF).
built=$(grep -ho 'REF = \\"[0-9a-f]\{40\}' "$READER_DIR"/*.ipynb | head -1 | grep -o '[0-9a-f]\{40\}' || true)
head=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$built" ] && [ -n "$head" ] && [ "$built" != "$head" ]; then
  echo "bundle.sh: warning: the book in $BOOK_DIR was built from ${built:0:12}, not HEAD (${head:0:12}); REBUILD=1 rebuilds it" >&2
fi
echo "bundle.sh: using the book built from ${built:0:12}"

py=.venv/bin/python
version=$($py -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
pythons=()
for interp in ${PYTHONS:-$py}; do
  command -v "$interp" >/dev/null || { echo "bundle.sh: PYTHONS: no interpreter '$interp' on this machine" >&2; exit 1; }
  "$interp" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
    { echo "bundle.sh: PYTHONS: '$interp' is $("$interp" -V 2>&1 | head -1); the library needs Python 3.11 or later" >&2; exit 1; }
  "$interp" -m pip --version >/dev/null 2>&1 || { echo "bundle.sh: PYTHONS: '$interp' has no pip (python -m ensurepip)" >&2; exit 1; }
  pythons+=("$interp")
done

rm -rf "$OUT"
mkdir -p "$OUT/wheels"
# Every room package as a wheel for each Python (pip builds one where the
# index has only a source archive), then the library itself (pure Python).
for interp in "${pythons[@]}"; do
  "$interp" -m pip wheel -q --wheel-dir "$OUT/wheels" -r requirements-room.txt -c constraints.txt
done
$py -m pip wheel -q --no-deps --wheel-dir "$OUT/wheels" .
{
  echo "# The workshop room's packages (pinned) and the book's library: install with"
  echo "#   pip install --no-index --find-links wheels -r requirements.txt"
  echo "distbook-distlib[widgets,mpi,torch]==$version"
  grep -v '^#' requirements-room.txt | grep -v '^$'
} > "$OUT/requirements.txt"

# Which laptops the wheels serve: for each Python, resolve everything from
# wheels/ alone (a dry run into a scratch target, so nothing is installed).
served=()
for interp in "${pythons[@]}"; do
  target=$("$interp" -c 'import platform, sys; print(f"Python {sys.version_info[0]}.{sys.version_info[1]} on {platform.system()} {platform.machine()}")')
  if "$interp" -m pip install -q --dry-run --ignore-installed --no-index --find-links "$OUT/wheels" \
        --target "$OUT/.dry-run" -r "$OUT/requirements.txt" > "$OUT/.check.log" 2>&1; then
    served+=("$target")
  else
    echo "bundle.sh: the wheels do not install for $target:" >&2; grep -v '^WARNING' "$OUT/.check.log" >&2; exit 1
  fi
done
rm -rf "$OUT/.dry-run" "$OUT/.check.log"
# Other laptops' wheels (LAPTOPS), for the same Pythons, each kind checked as above but for its own platform.
laptops=""
if [ -n "${LAPTOPS:-}" ]; then
  pyargs=()
  for interp in "${pythons[@]}"; do
    pyargs+=(--python "$("$interp" -c 'import sys; print("%d.%d" % sys.version_info[:2])')")
  done
  laptops=$($py tools/room_laptops.py --wheels "$OUT/wheels" --requirements "$OUT/requirements.txt" \
    --constraints constraints.txt "${pyargs[@]}" --laptops "$LAPTOPS")
fi

# What the wheels carry for PyTorch: its wheel(s), their size, whether a CUDA
# build came with them (nvidia-* wheels), and the chapters whose code runs it
# (read from the reader notebooks' code cells).
kit_facts=$($py - "$OUT/wheels" "$READER_DIR" <<'PY'
import json, re, sys
from pathlib import Path
wheels, reader = Path(sys.argv[1]), Path(sys.argv[2])
mb = lambda n: f"{n / 1e6:.1f} MB"
all_bytes = sum(p.stat().st_size for p in wheels.glob("*.whl"))
torch = sorted(wheels.glob("torch-*.whl"))
cuda = sorted(wheels.glob("nvidia_*.whl"))
uses = [nb.stem for nb in sorted(reader.glob("*.ipynb"))
        if any(c["cell_type"] == "code" and re.search(r"\btorch\b|torchrun|\bgloo\b", "".join(c["source"]))
               for c in json.loads(nb.read_text())["cells"])]
print(f"{len(list(wheels.glob('*.whl')))} wheels, {mb(all_bytes)} in all.")
print()
if torch:
    print(f"PyTorch, for the chapters whose code cells use it ({', '.join(uses) or 'none'}):")
    for p in torch:
        build = "the CPU build" if "+cpu" in p.name or not cuda else "a CUDA build"
        print(f"- `{p.name}`: {mb(p.stat().st_size)}, {build}")
    if cuda:
        print(f"- with {len(cuda)} nvidia-* wheels of CUDA libraries, {mb(sum(p.stat().st_size for p in cuda))}")
else:
    print(f"No PyTorch wheel: the chapters whose code cells use it ({', '.join(uses)}) need one for those cells.")
PY
)

cp constraints.txt "$OUT/"
cp -r "$BOOK_DIR" "$OUT/book"
mkdir -p "$OUT/notebooks"
cp "$READER_DIR"/*.ipynb "$OUT/notebooks/"
cp -r "$SLIDES_DIR" "$OUT/slides"
cp scripts/workshop.sh "$OUT/workshop.sh"
{
cat <<EOF
# Workshop kit: Distributed training, from the ring up

Everything here works with no network.

## Read
- The book: open \`book/index.html\` in a browser (any computer, any phone).
- The slides: open \`slides/index.html\`.

## Which laptops can run the notebooks from this kit

The wheels were checked to install, every package, from this folder alone,
for:

EOF
for t in "${served[@]}"; do echo "- $t"; done
cat <<EOF

(Checked: for each Python above, \`pip install --dry-run --no-index
--find-links wheels -r requirements.txt\` resolved every package from this
folder alone.)
EOF
if [ -n "$laptops" ]; then
cat <<EOF

Other laptops, their wheels resolved for their own platform (uv, reading each
package's markers for that platform) and checked by resolving every package
again from this folder alone (\`tools/room_laptops.py\`; no such laptop ran
them here):

$laptops
EOF
fi
cat <<EOF

## What the wheels carry

$kit_facts

Another laptop (another Python, another operating system) reads the book and
the slides from this kit, and runs the notebooks in Google Colab (each chapter
page's rocket button) or from the repository's online set-up (its README).
The chapters that start MPI ranks (6 onwards) need MPICH's wheel, which has
no Windows build; chapter 9's mini cluster needs Linux and root.

## Run the notebooks (once per laptop)

    python3 -m venv .venv
    .venv/bin/pip install --no-index --find-links wheels -r requirements.txt
    bash workshop.sh

The first command makes an environment beside this file; the second installs the
book's library and everything the chapters use from \`wheels/\` alone;
\`workshop.sh\` copies the notebooks to \`workshop/\` (your edits are kept
there between runs), starts JupyterLab on 127.0.0.1 and the book beside it,
and prints two addresses: JupyterLab, and the book with a **Live code**
button on each chapter. Ctrl-C stops both. \`PORT=8900 bash workshop.sh\` if
port 8888 is taken.

Without \`workshop.sh\`: open a notebook from \`notebooks/\` in your own
Jupyter and set the environment variable \`DISTBOOK_WHEELS\` to this kit's
\`wheels\` folder before starting it; the notebook's first cell then installs
the library from there, with no network.
EOF
} > "$OUT/README.md"
size=$(du -sh "$OUT" | cut -f1)
wheels=$(ls "$OUT/wheels" | wc -l)
echo "bundle: $OUT ($size, $wheels wheels), for: ${served[*]}"
