"""Keep the chapter notebooks in their committed shape.

    python tools/nb.py sync-setup [NB ...]   rewrite each notebook's set-up cell (pip-installs
                                             the library from _config.yml's repository.url)
    python tools/nb.py refresh NB [NB ...]   execute on a fresh kernel, keep only
                                             the outputs of nbval-checked cells
    python tools/nb.py check [NB ...]        exit 1 if a notebook is not in
                                             committed shape (used by the tests)

The committed shape: outputs and execution counts only on cells tagged
``nbval-check-output`` (their outputs are nbval's expected values; nbval
ignores a stored output without an execution count); minimal metadata;
the first code cell equal to the set-up cell generated from ``_config.yml``.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHECK_TAG = "nbval-check-output"
SETUP_TAG = "colab-setup"

# A chapter that starts MPI ranks or the benchmark needs the `mpi` extra
# (mpi4py and the mpich wheel, whose own mpiexec distlib uses); the worker
# programs of distlib.examples are started on MPI ranks too (chapter 8's
# pipelined CG ran only where an earlier chapter had installed MPICH). torch is not an
# extra of the set-up cell: Colab has it, and elsewhere `pip install torch`
# would fetch a CUDA build of several GB (see README for the CPU-only index).
NEEDS_MPI = re.compile(r"\b(distlib\.engines|distlib\.train|distlib\.bench|distlib\.minicluster|distlib\.examples|mpi4py|"
                       r"run_mpi|try_mpi)\b")
SOURCE_REF = "main"  # the reader copies (tools/reader_notebooks.py) pin the built commit instead


def repository_url() -> str:
    """The book's repository: the one place it is set is _config.yml's repository.url."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return config["repository"]["url"]


def needs_mpi(nb) -> bool:
    """Whether any code cell but the set-up cell uses MPI."""
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"][1:]
    return any(NEEDS_MPI.search(source) for source in code)


def setup_source(stem: str, *, mpi: bool = False) -> str:
    """The set-up cell for notebook ``stem`` (``mpi``: also install the MPI extra)."""
    extras = "widgets,mpi" if mpi else "widgets"
    needed = ["distbook-distlib", "mpi4py", "mpich"] if mpi else ["distbook-distlib"]
    return f'''# Set-up (made by tools/nb.py): pip-installs the book's library, distlib, for this kernel and
# the processes it starts. Offline? Set REPO_URL (or DISTBOOK_REPO_URL) to a clone on this machine,
# e.g. "file:///home/me/book", or DISTBOOK_WHEELS to a folder of wheels (the workshop bundle's).
REPO_URL = "{repository_url()}"
REF = "{SOURCE_REF}"  # a commit, tag or branch of REPO_URL
import importlib, importlib.metadata, importlib.util, os, re, subprocess, sys
try:
    for name in {needed!r}:
        importlib.metadata.version(name)  # already installed: the book's .venv, or an earlier run
except importlib.metadata.PackageNotFoundError:
    url, ref = os.environ.get("DISTBOOK_REPO_URL", REPO_URL), os.environ.get("DISTBOOK_REF", REF)
    url, wheels = ("file://localhost/" + url[8:] if url.startswith("file:///") else url), os.environ.get("DISTBOOK_WHEELS")
    spec = f"distbook-distlib[{extras}]" + ("" if wheels else f" @ git+{{url}}@{{ref}}")  # file://localhost: pip < 24
    widgets, log, where = importlib.util.find_spec("ipywidgets"), [], ["--no-index", "-f", wheels] if wheels else []
    print(f"pip install {{spec}} {{'from ' + wheels + ' ' if wheels else ''}}(this can take a minute)", flush=True)
    pip = subprocess.Popen([sys.executable, "-m", "pip", "install", "--progress-bar", "off", spec, *where],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in pip.stdout:  # pip's progress, a line per package
        log.append(line); line.startswith(("Collecting", "Successfully")) and print(" ", line.strip()[:150], flush=True)
    causes = {{r"Failed to establish|Could not resolve|Name or service|Temporary failure|unreachable|timed out":
              "pip cannot reach the network", r"find command 'git'":
              "git is not installed", r"not appear to be a git|does not exist|not found": f"{{url}} is not a repository "
              "git can clone (REPO_URL)", r"No matching distribution": "a package is missing from the wheels or index"}}
    if pip.wait():
        why = next((w for pat, w in causes.items() if re.search(pat, "".join(log))), "pip failed")
        raise RuntimeError(f"Set-up failed: {{why}}. Offline? Set DISTBOOK_WHEELS to a folder of wheels or REPO_URL to "
                           f"a clone on this machine (file:///path/to/it).\\npip's last lines:\\n{{''.join(log)[-1500:]}}") from None
    importlib.invalidate_caches()
    if widgets is None and "google.colab" not in sys.modules:  # the page loaded before the widget front end existed
        print("ipywidgets was installed just now: reload this page, then Kernel > Restart Kernel and Run All Cells.")
import distlib as dl
if not hasattr(dl, "simulate_ring_allreduce"):
    raise ImportError(f"'import distlib' found {{dl.__file__}}, PyPA's unrelated 'distlib', not this book's library: "
                      "pip uninstall -y distlib, then run this cell again.")
from distlib.static.kernel import crisp_inline_figures; sharp = crisp_inline_figures()  # 2x PNGs: sharp on phones'''


BOOK_KEY = "distbook"
"""The notebook metadata the book's registries read: the instructor's plan, the prose's asks, the run time."""


def _tags(cell) -> list:
    return list(cell.get("metadata", {}).get("tags", []))


def normalize(nb, stem: str):
    """Return ``nb`` in committed shape (outputs kept only on checked cells)."""
    nb = copy.deepcopy(nb)
    book = nb.metadata.get(BOOK_KEY)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    }
    if book is not None:  # what the book's registries read of this chapter (CONTRIBUTING.md, "Adding a chapter")
        nb.metadata[BOOK_KEY] = book
    nb.nbformat, nb.nbformat_minor = 4, 5
    code_seen = False
    for i, cell in enumerate(nb.cells):
        tags = _tags(cell)
        cell.metadata = {"tags": tags} if tags else {}
        cell["id"] = f"c{i:03d}"
        if cell.cell_type != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        if not code_seen:
            code_seen = True
            cell.source = setup_source(stem, mpi=needs_mpi(nb))
            cell.metadata = {"tags": sorted(set(tags) | {SETUP_TAG})}
        if CHECK_TAG in tags:
            # nbval skips the comparison for a cell with no execution count
            # ("unrun reference"), so checked cells keep theirs.
            for out in cell.get("outputs", []):
                out.pop("execution_count", None)
                if "metadata" in out:
                    out["metadata"] = {}
        else:
            cell.execution_count = None
            cell.outputs = []
    return nb


def problems(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    found = []
    if nbformat.writes(normalize(nb, path.stem)) != nbformat.writes(nb):
        found.append(f"{path.name}: not in committed shape (run: python tools/nb.py refresh {path})")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and CHECK_TAG in _tags(cell) and not cell.get("outputs"):
            found.append(f"{path.name}: cell {i} is tagged {CHECK_TAG} but stores no output")
    return found


def execute(nb, path: Path, timeout: int = 300):
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return nb


def _paths(args) -> list[Path]:
    return [Path(a).resolve() for a in args] if args else sorted(NOTEBOOKS.glob("*.ipynb"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["sync-setup", "refresh", "check"])
    parser.add_argument("notebooks", nargs="*")
    args = parser.parse_args(argv)
    status = 0
    for path in _paths(args.notebooks):
        nb = nbformat.read(path, as_version=4)
        if args.command == "sync-setup":
            nbformat.write(normalize(nb, path.stem), path)
        elif args.command == "refresh":
            nb = normalize(nb, path.stem)  # fresh set-up cell before running it
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = []
            nbformat.write(normalize(execute(nb, path), path.stem), path)
            print(f"refreshed {path.relative_to(ROOT)}")
        else:
            for problem in problems(path):
                print(problem)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
