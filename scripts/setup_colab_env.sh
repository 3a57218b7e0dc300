#!/usr/bin/env bash
# Make .venv-colab, a stand-in for a fresh Google Colab runtime, in which
# tests/test_colab.py runs every reader notebook top to bottom:
# - Python 3.12 with the packages Colab pins (requirements-colab.txt) and
#   Colab's pip (24.1.2), and a stub `google.colab` package;
# - NO copy of the book's library: each notebook's set-up cell installs it;
# - pip installs into .venv-colab/local (as Colab's pip installs into
#   /usr/local), whose site-packages is on sys.path and whose bin/ is not the
#   Python's own folder;
# - an Open MPI-style `mpiexec` next to the Python, where Colab has Open MPI's
#   /usr/bin/mpiexec; it answers --version like Open MPI and fails loudly
#   (exit 99, leaving a marker file) if anything drives it. The test also puts
#   it first on PATH.
# Python: $COLAB_PYTHON, else pyenv's 3.12.x, else python3.12 on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv-colab
PY=${COLAB_PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in "$HOME"/.pyenv/versions/3.12*/bin/python "$(command -v python3.12 || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then PY=$candidate; break; fi
  done
fi
if [ -z "$PY" ]; then
  echo "setup_colab_env.sh: no Python 3.12 found (Colab runs 3.12); set COLAB_PYTHON=/path/to/python3.12" >&2
  exit 1
fi
if ! "$V/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
  rm -rf "$V"
  "$PY" -m venv "$V"
fi
rm -f "$V/pip.conf"  # the pinned stack goes into the base, like Colab's preinstalled packages
"$V/bin/python" -m pip install -q pip==24.1.2
"$V/bin/python" -m pip install -q -r requirements-colab.txt
SITE=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ABS=$(cd "$V" && pwd)

# google.colab, importable as in Colab (and imported at kernel start by the test)
mkdir -p "$SITE/google/colab"
cat > "$SITE/google/colab/__init__.py" <<'EOF'
"""Stand-in for Colab's `google.colab` package (only what the book's notebooks may touch)."""
from . import output  # noqa: F401
EOF
cat > "$SITE/google/colab/output.py" <<'EOF'
"""Stand-in for `google.colab.output`: the custom widget manager switch."""
custom_widget_manager = False


def enable_custom_widget_manager():
    global custom_widget_manager
    custom_widget_manager = True


def disable_custom_widget_manager():
    global custom_widget_manager
    custom_widget_manager = False
EOF

# pip's target, like Colab's /usr/local: packages on sys.path, scripts in local/bin
echo "$ABS/local/lib/python3.12/site-packages" > "$SITE/colab_local.pth"
printf '[install]\nprefix = %s/local\n' "$ABS" > "$V/pip.conf"
rm -rf "$V/local"
mkdir -p "$V/local/lib/python3.12/site-packages" "$V/local/bin"

# Open MPI's mpiexec, next to the Python
cat > "$V/bin/mpiexec" <<EOF
#!/bin/sh
if [ "\$1" = "--version" ] || [ "\$1" = "-V" ]; then echo "mpiexec (Open MPI) 4.1.2"; exit 0; fi
echo "\$*" >> "$ABS/openmpi-driven"
echo "this is the Open MPI mpiexec of the Colab stand-in: the library must not drive it (args: \$*)" >&2
exit 99
EOF
chmod +x "$V/bin/mpiexec"
rm -f "$V/openmpi-driven"
if "$V/bin/python" -P -c 'import distlib' 2>/dev/null; then
  echo "setup_colab_env.sh: a distlib is importable in $V, but a fresh Colab has none" >&2
  exit 1
fi
echo "Colab stand-in ready: $ABS ($("$V/bin/python" --version))"
