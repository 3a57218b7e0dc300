"""A laptop's day one with the workshop bundle, timed side by side in one run.

    .venv/bin/python benchmarks/bench_bundle.py [--bundle dist/workshop] [--chapter 01_ring]

1. the install: a fresh venv, then the kit's one command
   (``pip install --no-index --find-links wheels -r requirements.txt``);
2. a chapter's first run from an empty folder: the reader notebook alone in a
   new folder, a new HOME (no matplotlib font cache yet), run top to bottom
   with ``jupyter nbconvert --execute``;
3. the same chapter run again in that folder (caches warm), for the ratio;
4. the reader's own route: a venv with only JupyterLab from the kit, and the
   chapter's set-up cell installing the library from the kit's wheels
   (``DISTBOOK_WHEELS``) on its first run.

pip is cut off from every index (no PIP_* settings, no config file), as in a
room with no network. Builds the bundle (``scripts/bundle.sh``, reusing the
book build) if it is missing. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "MPLBACKEND"}
    return dict(env, PIP_CONFIG_FILE=os.devnull, **extra)


def timed(cmd, **kw) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)
    return time.perf_counter() - start


def run_chapter(py: Path, notebook: Path, folder: Path, home: Path, **env) -> float:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(notebook, folder / notebook.name)
    return timed([str(py), "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", notebook.name,
                  "--output", "ran.ipynb", "--ExecutePreprocessor.timeout=900"],
                 cwd=folder, env=clean_env(HOME=str(home), **env), capture_output=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "workshop")
    parser.add_argument("--chapter", default="01_ring", help="reader notebook stem (default: 01_ring)")
    args = parser.parse_args(argv)
    kit = args.bundle.resolve()
    if not (kit / "requirements.txt").exists():
        subprocess.run(["bash", "scripts/bundle.sh"], cwd=ROOT, check=True, env=dict(os.environ, OUT=str(kit)))
    notebook = kit / "notebooks" / f"{args.chapter}.ipynb"
    if not notebook.exists():
        sys.exit(f"bench_bundle.py: --chapter: no {notebook.name} in {kit / 'notebooks'}")
    wheels = sum(p.stat().st_size for p in (kit / "wheels").iterdir())
    print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; "
          f"kit wheels {wheels / 1e6:.0f} MB")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        venv = tmp / "laptop-venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        py = venv / "bin" / "python"
        install = timed([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", "wheels",
                         "-r", "requirements.txt"], cwd=kit, env=clean_env())
        first = run_chapter(py, notebook, tmp / "empty", tmp / "home")
        again = run_chapter(py, notebook, tmp / "empty", tmp / "home")

        lean = tmp / "jupyter-only-venv"
        subprocess.run([sys.executable, "-m", "venv", str(lean)], check=True)
        lpy = lean / "bin" / "python"
        subprocess.run([str(lpy), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(kit / "wheels"),
                        "jupyterlab", "ipykernel"], check=True, env=clean_env())
        via_cell = run_chapter(lpy, notebook, tmp / "empty2", tmp / "home2", DISTBOOK_WHEELS=str(kit / "wheels"))

    print(f"\n{'step':<58} {'seconds':>8} {'ratio':>6}")
    print(f"{'install from the kit (one command, fresh venv)':<58} {install:>8.1f}")
    print(f"{'chapter ' + args.chapter + ': first run from an empty folder':<58} {first:>8.1f} {first / again:>6.2f}")
    print(f"{'the same chapter again (warm caches)':<58} {again:>8.1f} {1:>6.2f}")
    print(f"{'first run, the set-up cell installing from the kit':<58} {via_cell:>8.1f} {via_cell / again:>6.2f}")
    print("(ratio: against the warm run)")


if __name__ == "__main__":
    main()
