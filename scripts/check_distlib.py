"""Stop set-up when PyPA's `distlib` would collide with this book's `distlib`.

Both packages install into site-packages/distlib/. PyPA's (a dependency of
virtualenv and pre-commit) would overwrite or shadow the book's library and
every chapter would fail with puzzling AttributeErrors, so say so plainly.
"""

import importlib.metadata as md
import sys

try:
    md.distribution("distlib")
except md.PackageNotFoundError:
    pass
else:
    sys.exit(
        "set-up stopped: PyPA's 'distlib' package is installed in this environment "
        f"({sys.prefix}). It uses the same import name as this book's library "
        "('distlib', distributed as 'distbook-distlib'), so one would overwrite the other.\n"
        "Use a fresh virtual environment for the book (scripts/setup.sh makes .venv), "
        "or remove it here with: pip uninstall distlib"
    )

if "--after-install" in sys.argv:
    import distlib

    if not hasattr(distlib, "simulate_ring_allreduce"):
        sys.exit(f"set-up stopped: 'import distlib' finds {distlib.__file__}, not this book's library.")
    print(f"distlib OK: {distlib.__file__}")
