"""Time from "Run all" to the first widget, in the Colab stand-in, install included.

A reader in Colab opens a chapter and presses "Run all": the set-up cell
pip-installs the library (fetching it from REPO_URL), then the cells run until
the first live widget appears. This runs the reader notebooks from the last
book build (``_build/reader``) in ``.venv-colab`` (scripts/setup_colab_env.sh)
the same way tests/test_colab.py does, the set-up cell pointed at a
``file://`` snapshot of this working tree, and prints, side by side:

- cold: a fresh runtime, the library not installed (what a Colab reader sees,
  less Colab's own runtime start and GitHub's clone time);
- warm: the same kernel again after a restart, the library already installed
  (the set-up cell only checks it).

The target is <= 60 s cold. Usage::

    .venv/bin/python benchmarks/bench_colab.py [--reader _build/reader] [CHAPTER ...]

(default chapters: 01_ring and 06_mpi, the first with the MPI extra).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_colab import fresh_runtime, point_setup_cell, stand_in_environ  # noqa: E402

WIDGET = "application/vnd.jupyter.widget-view+json"


def time_to_first_widget(colab: dict, chapter: str) -> dict:
    """Seconds for the kernel to start, the set-up cell, and "Run all" up to the first widget."""
    nb = nbformat.read(colab["reader"] / f"{chapter}.ipynb", as_version=4)
    point_setup_cell(nb, colab["url"], colab["ref"])
    client = NotebookClient(nb, kernel_name="colab312", timeout=300,
                            resources={"metadata": {"path": str(colab["reader"])}})
    with stand_in_environ():
        t0 = time.perf_counter()
        with client.setup_kernel():
            t_kernel = time.perf_counter() - t0
            start = time.perf_counter()
            setup_seconds = None
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                client.execute_cell(cell, index)
                if setup_seconds is None:
                    setup_seconds = time.perf_counter() - start
                if any(WIDGET in out.get("data", {}) for out in cell.outputs):
                    return {"kernel": t_kernel, "setup": setup_seconds, "widget": time.perf_counter() - start,
                            "cell": index}
    raise RuntimeError(f"{chapter}: no widget in the reader notebook")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*", default=["01_ring", "06_mpi"])
    parser.add_argument("--reader", default=str(ROOT / "_build" / "reader"))
    args = parser.parse_args(argv)
    reader = Path(args.reader).resolve()
    if not reader.is_dir():
        sys.exit(f"no reader notebooks in {reader}: run scripts/build_book.sh first (or pass --reader)")
    print(f"{'chapter':<14}{'run':<6}{'kernel start':>13}{'set-up cell':>13}{'Run all -> widget':>19}"
          f"{'cold / warm':>13}")
    for chapter in args.chapters:
        with tempfile.TemporaryDirectory() as tmp:
            colab = fresh_runtime(Path(tmp), reader)
            cold = time_to_first_widget(colab, chapter)
            warm = time_to_first_widget(colab, chapter)
        for name, r in (("cold", cold), ("warm", warm)):
            ratio = f"{cold['widget'] / warm['widget']:.1f}x" if name == "cold" else ""
            print(f"{chapter:<14}{name:<6}{r['kernel']:>12.1f}s{r['setup']:>12.1f}s{r['widget']:>18.1f}s{ratio:>13}")
    print("target: cold 'Run all -> widget' <= 60 s (Colab's own runtime start and the GitHub clone come on top)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
