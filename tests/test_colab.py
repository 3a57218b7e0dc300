"""Every reader notebook runs top to bottom in a stand-in for a fresh Colab runtime.

The stand-in (.venv-colab, made by scripts/setup_colab_env.sh): Python 3.12
with the packages Colab pins, `google.colab` imported at kernel start, no copy
of the book's library, pip installing into a prefix apart from the Python (as
Colab's /usr/local), and an Open MPI-style `mpiexec` next to the Python and
first on PATH that fails loudly if driven. Each notebook's set-up cell is
pointed at a snapshot of this working tree (``file://``), as a reader would
edit REPO_URL; it must install the library with pip, after which MPI ranks and
the benchmark subprocess (chapter 7) import it too.

The stand-in has Colab's torch too (PyPI's 2.13.0 for Python 3.12, the CUDA
build, on the CPU; scripts/setup_colab_env.sh), so every cell must run: the
FSDP2, DTensor and pipelining comparisons of chapters 10-12 included. Made
without it (an older stand-in), a cell may fail only because torch is
missing, or because it reads a name only such a cell defines; those are
listed in the output. Any other error fails the test.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT, copy_worktree, toc_chapters

pytestmark = [pytest.mark.colab, pytest.mark.slow]
#: roughly what these tests cost on CI's machine (a chapter in the Colab stand-in, each): tests/conftest.py starts the longest first
BOOK_PHASE_SECONDS = 60
#: Each worker makes its own stand-in runtime (about 20 s) rather than one worker running every chapter in turn,
#: which would end the suite minutes after the rest (tests/conftest.py groups a module with its own fixture).
SPREAD_OVER_WORKERS = True

VENV = ROOT / ".venv-colab"
CHAPTERS = [Path(c).name for c in toc_chapters() if (ROOT / f"{c}.ipynb").exists()]
CELL_TIMEOUT = 300
BENCH_CELL = "bench_engine, bench_ranks ="  # chapter 7's benchmark cell picks its engine on this line
#: Chapter 12's pipelining comparison (the one whose gloo ranks once aborted 2 runs in 8 on Colab's Python) runs
#: this many more times in a row in the same kernel after the chapter; DISTBOOK_COLAB_REPEAT=20 for a long trial.
REPEAT = int(os.environ.get("DISTBOOK_COLAB_REPEAT", "2"))
REPEAT_CELL = """
import time as _time
for _k in range({n}):
    _t = _time.perf_counter()
    _c = pipelining_beside_book(stages=PEER_STAGES, schedule="interleaved", microbatches=RUN_M, steps=RUN_STEPS,
                                seed=SEED)
    assert _c.max_loss_difference < 1e-9, _c.max_loss_difference
    print(f"REPEAT {{_k + 1}}/{n} ok in {{_time.perf_counter() - _t:.1f}} s")
"""


def snapshot_repo(dest: Path) -> str:
    """A git repository holding this working tree as it is now (tracked and new files); its commit."""
    copy_worktree(dest)
    git = ["git", "-C", str(dest), "-c", "user.name=test", "-c", "user.email=test@localhost"]
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "snapshot for the Colab test"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def point_setup_cell(nb, url: str, ref: str):
    """Edit the set-up cell's REPO_URL and REF lines, as a reader with their own copy would."""
    first = next(c for c in nb.cells if c.cell_type == "code")
    source, n_url = re.subn(r'^REPO_URL = "[^"]*"$', f'REPO_URL = "{url}"', first.source, flags=re.M)
    source, n_ref = re.subn(r'^REF = "[^"]*"(.*)$', rf'REF = "{ref}"\1', source, flags=re.M)
    assert (n_url, n_ref) == (1, 1), "the set-up cell must hold one REPO_URL line and one REF line"
    first.source = source


def assigned_names(source: str) -> set:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def torch_missing(error: dict) -> bool:
    text = f"{error['ename']}: {error['evalue']}"
    return bool(re.search(r"No module named '?torch(?![\w.])|pip install torch(?![\w.])|torch is not installed", text))


def fresh_runtime(tmp: Path, reader: Path) -> dict:
    """Reset the stand-in to a fresh Colab runtime and register its kernel ("colab312").

    Makes pip a prefix of its own, empty (no library installed), snapshots the working tree
    into ``tmp/repo`` for the set-up cells to install from, and points
    JUPYTER_PATH at a kernel spec whose PATH puts the fake Open MPI first.
    Raises RuntimeError when the stand-in is missing or not Python 3.12.
    """
    python = VENV / "bin" / "python"
    if not python.exists():
        raise RuntimeError("no Colab stand-in: run scripts/setup_colab_env.sh (scripts/test.sh does)")
    out = subprocess.run([str(python), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                         text=True, check=True).stdout
    if out.strip() != "(3, 12)":
        raise RuntimeError(f".venv-colab runs Python {out.strip()}, not 3.12: run scripts/setup_colab_env.sh")
    # pip's prefix, Colab's /usr/local, empty: one per runtime (per xdist worker), on the kernel's sys.path
    # through PYTHONPATH, since workers running notebooks side by side must not empty each other's (a shared
    # .venv-colab/local, emptied by each worker's fixture, took the library away from the others' kernels)
    local = tmp / "local"
    site_packages = local / "lib" / "python3.12" / "site-packages"
    site_packages.mkdir(parents=True)
    (local / "bin").mkdir()
    (VENV / "openmpi-driven").unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}  # as the kernel gets
    probe = subprocess.run([str(python), "-P", "-c", "import distlib"], capture_output=True, cwd="/", env=clean)
    if probe.returncode == 0:
        raise RuntimeError("the Colab stand-in must not have the library preinstalled")
    has_torch = subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode == 0

    ref = snapshot_repo(tmp / "repo")
    kernels = tmp / "jupyter" / "kernels" / "colab312"
    kernels.mkdir(parents=True)
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab  # as in Colab's kernel\n")
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and Path(p).resolve() != (ROOT / ".venv" / "bin").resolve()]
    env = {
        # Open MPI's mpiexec first (next to the Python), then pip's scripts, then the system
        "PATH": os.pathsep.join([str(VENV / "bin"), str(local / "bin"), *keep]),
        "IPYTHONDIR": str(tmp / "ipython"),
        "HOME": os.environ.get("HOME", str(tmp)),
        "PYTHONNOUSERSITE": "1",
        "PIP_PREFIX": str(local),  # over .venv-colab/pip.conf's prefix: this runtime's own
        "PYTHONPATH": str(site_packages),  # for the kernel and the ranks and subprocesses it starts
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # ipykernel 6.17's debugger warning about frozen modules
    }
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [*colab_capabilities(), str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab stand-in (Python 3.12)", "language": "python", "env": env,
    }))
    os.environ["JUPYTER_PATH"] = str(tmp / "jupyter")
    return {"reader": reader, "url": f"file://{tmp / 'repo'}", "ref": ref, "python": python, "local": local,
            "torch": has_torch}


@pytest.fixture(scope="module")
def colab(book_build, tmp_path_factory):
    code, log, html = book_build
    assert code == 0, log[-4000:]
    old = os.environ.get("JUPYTER_PATH")
    try:
        yield fresh_runtime(tmp_path_factory.mktemp("colab"), html.parent / "reader")
    except RuntimeError as exc:
        pytest.fail(str(exc))
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old


def stand_in_environ():
    """os.environ without what scripts/test.sh sets for the book's own venv (restored on exit)."""
    import contextlib

    @contextlib.contextmanager
    def cm():
        # MPLBACKEND from scripts/test.sh would override Colab's inline backend
        saved = {k: os.environ.pop(k) for k in ("MPLBACKEND", "PYTHONPATH", "VIRTUAL_ENV") if k in os.environ}
        try:
            yield
        finally:
            os.environ.update(saved)

    return cm()


def colab_capabilities() -> list:
    """The argv prefix that gives the kernel (and every process it starts) the capabilities of Colab's root.

    Colab runs its kernel as root inside a Docker container whose capability bounding set has no
    CAP_NET_ADMIN (chown dac_override fowner fsetid kill setgid setuid setpcap net_bind_service net_raw
    sys_chroot sys_ptrace sys_admin mknod audit_write setfcap, as `amicontained` printed it there:
    tailscale/tailscale issue 634): it can make no network link, so the chapters' mini-cluster cells must say
    so in a line and go on, as they do there. As root here, ``setpriv`` drops it from the bounding set; a
    machine without setpriv, or a test run that is not root, has no CAP_NET_ADMIN to drop.
    """
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return []
    return [setpriv, "--bounding-set", "-net_admin"]


def run_in_colab(colab, chapter: str, extra_cells=(), before=None):
    """Run a reader notebook in the stand-in; ``before``: {text of a cell: a cell to run just before it}."""
    nb = nbformat.read(colab["reader"] / f"{chapter}.ipynb", as_version=4)
    point_setup_cell(nb, colab["url"], colab["ref"])
    for marker, source in (before or {}).items():
        k = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and marker in c.source)
        nb.cells.insert(k, nbformat.v4.new_code_cell(source))
    nb.cells.extend(nbformat.v4.new_code_cell(src) for src in extra_cells)
    with stand_in_environ():
        start = time.perf_counter()
        NotebookClient(nb, kernel_name="colab312", timeout=CELL_TIMEOUT, allow_errors=True,
                       resources={"metadata": {"path": str(colab["reader"])}}).execute()
        seconds = time.perf_counter() - start
    return nb, seconds


def classify(nb) -> tuple[list, list]:
    """(cells skipped for want of torch, real failures), each as (index, first line, error)."""
    skipped, failures, torch_names = [], [], set()
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if not errors:
            continue
        err = errors[0]
        head = cell.source.strip().splitlines()[0][:70]
        missing_name = re.match(r"name '(\w+)' is not defined", err["evalue"]) if err["ename"] == "NameError" else None
        if torch_missing(err) or (missing_name and missing_name.group(1) in torch_names):
            skipped.append((k, head, f"{err['ename']}: {err['evalue'][:120]}"))
            torch_names |= assigned_names(cell.source)
        else:
            failures.append((k, head, f"{err['ename']}: {err['evalue']}\n" + "\n".join(err["traceback"])[-3000:]))
    return skipped, failures


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reader_notebook_runs_in_colab(colab, chapter):
    checks, before = [], {}
    if chapter == "06_mpi":  # which launcher the library chose inside the kernel
        checks = ["from distlib.engines import find_mpiexec\nprint('MPIEXEC=' + find_mpiexec())"]
    if chapter == "09_mini_cluster":  # as Colab's root, the kernel can make no network link
        checks = ["from distlib.minicluster import minicluster_support\nprint('MINICLUSTER=', minicluster_support())"]
    if chapter == "12_pipelines" and colab["torch"] and REPEAT > 0:
        checks = [REPEAT_CELL.format(n=REPEAT)]
    if chapter == "07_nccl" and not colab["torch"]:
        # The bench cell picks its engine from `gpus`, which the (skipped) torch cell sets from
        # torch.cuda.device_count(). Without torch PyTorch sees no GPU: say so, as that cell would.
        before = {BENCH_CELL: "gpus = 0  # (Colab test) no torch here, so PyTorch sees no CUDA GPU"}
    # where the kernel found the library, for the message below if it was not pip's prefix
    checks = [*checks, "import distlib, importlib.metadata as _m\nprint('DISTLIB_FROM=' + distlib.__file__, "
              "_m.distribution('distbook-distlib').locate_file(''))"]
    nb, seconds = run_in_colab(colab, chapter, checks, before)
    skipped, failures = classify(nb)
    print(f"\n{chapter}: {seconds:.0f} s in the Colab stand-in; {len(skipped)} cells skipped for want of torch")
    for k, head, why in skipped:
        print(f"  skipped cell {k} ({head!r}): {why}")
    assert not failures, "\n\n".join(f"cell {k} ({head!r}) failed:\n{why}" for k, head, why in failures)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert not any(o.get("output_type") == "error" for o in setup.outputs)
    # the library came from pip, into pip's prefix, not from this checkout
    site = colab["local"] / "lib" / "python3.12" / "site-packages"
    said = "".join(o.get("text", "") for c in (setup, nb.cells[-1]) for o in c.outputs)
    assert any(site.glob("distbook_distlib-*.dist-info")), (
        f"the set-up cell did not pip-install the library into {site} (holding {sorted(p.name for p in site.iterdir())[:12]}); "
        f"the set-up cell and the last cell printed:\n{said[-1500:]}")
    assert not (VENV / "openmpi-driven").exists(), (VENV / "openmpi-driven").read_text()
    if chapter == "09_mini_cluster" and colab_capabilities():
        assert "MINICLUSTER= a mini cluster needs CAP_NET_ADMIN" in "".join(
            o.get("text", "") for o in nb.cells[-2].outputs), nb.cells[-2].outputs
    torch_chapter = any("torch" in c.source for c in nb.cells if c.cell_type == "code")
    if not torch_chapter or colab["torch"]:
        assert not skipped, ("the stand-in has Colab's torch: no cell may skip" if colab["torch"] else
                             "only chapters that use torch may skip cells")
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    if figures:  # the set-up cell made them crisp: retina PNGs say their display width, half their pixels
        import base64
        import struct

        png = base64.b64decode(figures[0]["data"]["image/png"])
        pixels = struct.unpack(">I", png[16:20])[0]
        shown = figures[0].get("metadata", {}).get("image/png", {}).get("width")
        assert shown and abs(pixels - 2 * shown) <= 2, (pixels, figures[0].get("metadata"))
    if chapter == "06_mpi":
        printed = "".join(o.get("text", "") for o in nb.cells[-2].outputs)
        assert f"MPIEXEC={colab['local']}/bin/mpiexec" in printed.replace(str(colab["local"].resolve()),
                                                                          str(colab["local"]))
    if chapter == "12_pipelines" and colab["torch"] and REPEAT > 0:
        said = "".join(o.get("text", "") for o in nb.cells[-2].outputs)
        assert said.count(" ok in ") == REPEAT, said[-2000:]
        print(said)
    if chapter == "07_nccl":  # the benchmark ran: its MPI ranks (or subprocess) imported the pip-installed library
        bench = next(c for c in nb.cells if c.cell_type == "code" and BENCH_CELL in c.source)
        assert not any(o.get("output_type") == "error" for o in bench.outputs)
        text = "".join(o.get("text", "") for o in bench.outputs)
        assert "busbw" in text or "algbw" in text, text[-2000:]
