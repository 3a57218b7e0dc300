"""Book figures: clean build, cached rebuild, and each notebook's run time.

    .venv/bin/python benchmarks/bench_book.py

Targets from the backbone issue: clean build <= 3 min on 2 cores, each
notebook <= 60 s. Prints figures; asserts nothing.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
JB = Path(sys.executable).with_name("jupyter-book")


def build(out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(JB), "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"],
                   check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - t0


def run_notebook(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - t0


def main():
    print(f"{'notebook':<28} {'seconds':>8}  target 60 s")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        dt = run_notebook(path)
        print(f"{path.name:<28} {dt:>8.1f}  {'ok' if dt <= 60 else 'MISS'}")
    with tempfile.TemporaryDirectory() as tmp:
        clean = build(Path(tmp))
        cached = build(Path(tmp))
    print(f"\nclean book build   {clean:>8.1f} s  (target 180 s: {'ok' if clean <= 180 else 'MISS'})")
    print(f"cached rebuild     {cached:>8.1f} s  ({clean / cached:.1f}x faster than clean)")


if __name__ == "__main__":
    main()
