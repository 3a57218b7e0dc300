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
# (mpi4py and the mpich wheel, whose own mpiexec distlib uses). torch is not an
# extra of the set-up cell: Colab has it, and elsewhere `pip install torch`
# would fetch a CUDA build of several GB (see README for the CPU-only index).
NEEDS_MPI = re.compile(r"\b(distlib\.engines|distlib\.bench|mpi4py|run_mpi|try_mpi)\b")
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
    return f'''# Set-up (made by tools/nb.py): installs the book's library, distlib, with pip, so that
# every process this notebook starts (MPI ranks, the benchmark) can import it too.
# Offline, or using your own copy? Set REPO_URL (or the environment variable
# DISTBOOK_REPO_URL) to a clone on this machine, e.g. "file:///home/me/book", or
# DISTBOOK_WHEELS to a folder of wheels (the workshop bundle's) to install from it alone.
REPO_URL = "{repository_url()}"
REF = "{SOURCE_REF}"  # a commit, tag or branch of REPO_URL
import importlib, importlib.metadata, importlib.util, os, re, subprocess, sys
try:
    for name in {needed!r}:
        importlib.metadata.version(name)  # already installed: the book's .venv, or an earlier run
except importlib.metadata.PackageNotFoundError:
    url, ref = os.environ.get("DISTBOOK_REPO_URL", REPO_URL), os.environ.get("DISTBOOK_REF", REF)
    wheels = os.environ.get("DISTBOOK_WHEELS", "")
    if url.startswith("file:///"):  # pip before 24 rejects "name @ git+file:///..."; it takes this
        url = "file://localhost/" + url[len("file:///"):]
    spec = f"distbook-distlib[{extras}]" + ("" if wheels else f" @ git+{{url}}@{{ref}}")
    where = ["--no-index", "--find-links", wheels] if wheels else []
    had_widgets = importlib.util.find_spec("ipywidgets") is not None
    print(f"Installing {{spec}}{{' from ' + wheels if wheels else ''}} with pip; this can take a minute.", flush=True)
    run = subprocess.Popen([sys.executable, "-m", "pip", "install", "--progress-bar", "off", *where, spec],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said = []
    for line in run.stdout:  # pip's progress, one line per package
        said.append(line)
        if line.startswith(("Collecting", "Installing collected", "Successfully installed")):
            print("  " + line.strip()[:160], flush=True)
    if run.wait():
        log = "".join(said)
        why = ("pip cannot reach the network (no connection, or REPO_URL's host is unknown)"
               if re.search(r"resolve|connect|Network is unreachable|Temporary failure|No route", log) else
               "git is not installed, and pip needs it for REPO_URL" if "Cannot find command 'git'" in log else
               f"a wheel is missing from {{wheels}}" if wheels and "No matching distribution" in log else
               "pip could not install it")
        raise RuntimeError(f"Set-up failed: {{why}}. Offline? Set DISTBOOK_WHEELS to a folder of wheels, or "
                           f"REPO_URL to a clone on this machine (file:///path/to/it).\\n"
                           f"pip's last lines:\\n{{log[-1500:]}}") from None
    importlib.invalidate_caches()
    if not had_widgets and "google.colab" not in sys.modules:
        print("ipywidgets was installed just now, under this open page: reload the page in your browser "
              "and run the notebook again from the top, or its widgets will show as text.", flush=True)
import distlib as dl
if not hasattr(dl, "simulate_ring_allreduce"):
    raise ImportError(f"'import distlib' found {{dl.__file__}}, PyPA's unrelated 'distlib', not this "
                      "book's library: pip uninstall -y distlib, then run this cell again.")'''


def _tags(cell) -> list:
    return list(cell.get("metadata", {}).get("tags", []))


def normalize(nb, stem: str):
    """Return ``nb`` in committed shape (outputs kept only on checked cells)."""
    nb = copy.deepcopy(nb)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    }
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
