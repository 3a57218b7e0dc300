"""The workshop bundle (scripts/bundle.sh), used as a room uses it.

One documented command installs everything into a fresh venv from the
bundle's wheels alone (pip cut off from every index), the room gets none of
the project's build and test tooling, and the reader notebooks of a Part IV and
a Part V chapter then run with the network gone (a network namespace with only loopback, as
root). The kit carries PyTorch's CPU build, and its README says so, with the
wheel's size and the chapters that use it. Other laptops' wheels
(``LAPTOPS``, tools/room_laptops.py) are resolved for their own platform.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, toc_chapters
from distlib.static.chapters import KEY, _toc_chapters


def _parts() -> list:
    import yaml

    return [p["caption"] for p in yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"]]


pytestmark = pytest.mark.slow
#: roughly what these tests cost on CI's machine (the bundle, then a room installed from it, on one worker): tests/conftest.py starts the longest first
BOOK_PHASE_SECONDS = 330
STEMS = [Path(c).name for c in toc_chapters()]
TOOLING = ("jupyter-book", "sphinx", "pytest", "playwright", "hypothesis", "nbval", "ghp-import", "myst-nb")


def room_chapters(parts=(3, 4)) -> list:
    """The chapters the room runs: of each of the toc's fourth and fifth parts (Part IV, Part V), the quickest
    measured "Run all" (each chapter's metadata; distlib/static/chapters.py)."""
    names = _parts()
    out = []
    for k in parts:
        timed = {Path(f).name: json.loads((ROOT / f"{f}.ipynb").read_text())["metadata"][KEY]["run_all_seconds"]
                 for f, p in _toc_chapters(ROOT) if p == names[k]}
        out.append(min(timed, key=timed.get))
    return out



@pytest.fixture(scope="module")
def bundle(built, tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "workshop"
    env = dict(os.environ, SKIP_BUILD="1", OUT=str(out), BOOK_DIR=str(built / "html"),
               READER_DIR=str(built / "reader"), SLIDES_DIR=str(built / "slides"))
    done = subprocess.run(["bash", "scripts/bundle.sh"], cwd=ROOT, env=env, timeout=1200,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _clean_env(**extra):
    """No PIP_* settings and no pip config file: pip can reach no index, only what it is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "MPLBACKEND"}
    return dict(env, PIP_CONFIG_FILE=os.devnull, **extra)


def test_the_bundle_lists_the_library_and_no_tooling(bundle):
    requirements = (bundle / "requirements.txt").read_text().lower()
    assert "distbook-distlib[widgets,mpi,torch]==" in requirements
    names = {p.name.split("-")[0].lower().replace("_", "-") for p in (bundle / "wheels").glob("*.whl")}
    assert {"distbook-distlib", "torch", "jupyterlab", "mpich", "mpi4py", "ipywidgets"} <= names
    assert not names & set(TOOLING), f"build/test tooling in the room's wheels: {sorted(names & set(TOOLING))}"
    assert sorted(p.name for p in (bundle / "notebooks").glob("*.ipynb")) == [f"{s}.ipynb" for s in STEMS]
    assert (bundle / "book" / "index.html").exists() and (bundle / "slides" / "index.html").exists()
    readme = (bundle / "README.md").read_text()
    here = f"Python {sys.version_info[0]}.{sys.version_info[1]} on "
    assert here in readme, "the README says which laptops the wheels were checked for"
    assert "pip install --no-index --find-links wheels -r requirements.txt" in readme
    # PyTorch's CPU build, named with its size, beside the chapters whose code uses it; no CUDA libraries
    torch = sorted((bundle / "wheels").glob("torch-*.whl"))
    assert torch and all("+cpu" in p.name for p in torch), [p.name for p in torch]
    assert not list((bundle / "wheels").glob("nvidia_*.whl")), "a CUDA build of torch came into the kit"
    for p in torch:
        assert f"`{p.name}`: {p.stat().st_size / 1e6:.1f} MB, the CPU build" in readme, readme
    uses = next(line for line in readme.splitlines() if line.startswith("PyTorch, for the chapters"))
    assert "10_zero" in uses and "16_failures" in uses and "01_ring" not in uses, uses


def test_the_bundle_refuses_a_python_it_cannot_serve(built, tmp_path):
    env = dict(os.environ, SKIP_BUILD="1", OUT=str(tmp_path / "w"), PYTHONS="no-such-python3",
               BOOK_DIR=str(built / "html"), READER_DIR=str(built / "reader"), SLIDES_DIR=str(built / "slides"))
    done = subprocess.run(["bash", "scripts/bundle.sh"], cwd=ROOT, env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "PYTHONS" in done.stderr and "no-such-python3" in done.stderr, done.stderr[-500:]


def test_one_command_installs_the_room_and_a_part_iv_and_a_part_v_chapter_run_offline(bundle, tmp_path):
    venv = tmp_path / "room-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # the bundle README's one command, run from the bundle's folder (--no-compile: the same packages and files,
    # their bytecode left to the first import; compiling torch's took about 25 s of this test's CPU time)
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-compile", "--no-index", "--find-links", "wheels",
                    "-r", "requirements.txt"], cwd=bundle, check=True, env=_clean_env(), timeout=1200)
    installed = {d["metadata"]["name"].lower() for d in json.loads(subprocess.run(
        [py, "-m", "pip", "inspect"], capture_output=True, text=True, check=True, env=_clean_env()).stdout)["installed"]}
    assert "distbook-distlib" in installed and "torch" in installed
    assert not installed & set(TOOLING), sorted(installed & set(TOOLING))
    # the room's torch is the CPU build and computes (the chapters that use it start gloo ranks on the CPU)
    torch = subprocess.run([py, "-c", "import torch; print(torch.__version__, torch.ones(3).sum().item(), "
                            "torch.distributed.is_gloo_available())"], capture_output=True, text=True, timeout=300)
    pin = next(line.split("==")[1] for line in (ROOT / "requirements-room.txt").read_text().splitlines()
               if line.startswith("torch=="))
    assert torch.stdout.split() == [f"{pin}+cpu", "3.0", "True"], torch.stdout + torch.stderr[-2000:]
    # a participant's folder: the reader notebooks alone, outside the repository
    room = tmp_path / "laptop"
    room.mkdir()
    chapters = room_chapters()
    assert len(chapters) == 2 and chapters[0] < "14" <= chapters[1], chapters  # one of Part IV, one of Part V
    for chapter in chapters:
        shutil.copy(bundle / "notebooks" / f"{chapter}.ipynb", room)
    run = [py, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", *(f"{c}.ipynb" for c in chapters),
           "--output-dir", "ran", "--ExecutePreprocessor.timeout=300"]
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ip"):
        # no network at all: a fresh namespace holds only loopback (the kernel talks over it)
        run = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *run]
    # a participant is not root: the chapters' mini-cluster cells say in a line why they cannot run
    done = subprocess.run(run, cwd=room, env=_clean_env(HOME=str(tmp_path), DISTLIB_MINICLUSTER="0"),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    for chapter in chapters:
        ran = json.loads((room / "ran" / f"{chapter}.ipynb").read_text())
        errors = [o for c in ran["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        assert not errors, (chapter, errors[:1])
        first = next(c for c in ran["cells"] if c["cell_type"] == "code")
        setup = "".join(o.get("text", "") for o in first.get("outputs", []) if o.get("output_type") == "stream")
        assert "pip install" not in setup, f"{chapter}: the library came from the bundle, so the set-up cell installs nothing"


def _pypi_reachable() -> bool:
    import socket

    try:
        socket.create_connection(("pypi.org", 443), timeout=10).close()
        return True
    except OSError:
        return False


def test_other_laptops_get_wheels_resolved_for_their_own_platform(tmp_path):
    """tools/room_laptops.py (LAPTOPS in scripts/bundle.sh) on two packages that tell platforms apart: terminado
    needs pywinpty on Windows and ptyprocess elsewhere (markers pip would read for this Linux machine), psutil is
    compiled per platform. Windows and Apple laptops each get their own, checked from the folder alone; a package
    with no wheel for a laptop leaves it unserved, named with the reason; bad input is named."""
    if not _pypi_reachable():
        pytest.skip("pypi.org cannot be reached from here (the script resolves and downloads from PyPI)")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    req = tmp_path / "requirements.txt"
    req.write_text("terminado==0.18.1\npsutil==7.2.2\n")
    tool = [sys.executable, str(ROOT / "tools" / "room_laptops.py"), "--wheels", str(wheels)]
    done = subprocess.run([*tool, "--requirements", str(req), "--python", "3.12",
                           "--laptops", "windows-x86_64 macos-arm64"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout.splitlines()
    assert said == ["- Python 3.12 on Windows on x86_64 (resolved from `wheels/` alone for that platform)",
                    "- Python 3.12 on macOS 14 or later on Apple silicon (arm64) (resolved from `wheels/` alone for "
                    "that platform)"], said
    names = sorted(p.name for p in wheels.glob("*.whl"))
    assert any(n.startswith("pywinpty-") and n.endswith("win_amd64.whl") for n in names), names
    assert any(n.startswith("ptyprocess-") for n in names), names  # the Apple laptop's, through its marker
    assert any(n.startswith("psutil-") and "win_amd64" in n for n in names), names
    assert any(n.startswith("psutil-") and "macosx" in n and "arm64" in n for n in names), names
    assert not any("linux" in n for n in names), names  # only the laptops named
    # no wheel of mpich for Windows: that laptop is not served, and the line says why
    (tmp_path / "mpi.txt").write_text("mpich==5.0.2\n")
    done = subprocess.run([*tool, "--requirements", str(tmp_path / "mpi.txt"), "--python", "3.12",
                           "--laptops", "windows-x86_64"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("- not served: Python 3.12 on Windows on x86_64: ") and "mpich" in done.stdout \
        and "win_amd64" in done.stdout, done.stdout
    assert not list(wheels.glob("mpich-*")), "nothing is downloaded for a laptop that cannot be served"
    for args, name, allowed in ((["--python", "3.12", "--laptops", "windows"], "--laptops", "windows-x86_64"),
                                (["--python", "3.9", "--laptops", "windows-x86_64"], "--python", "3.11")):
        bad = subprocess.run([*tool, "--requirements", str(req), *args], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and name in bad.stderr and allowed in bad.stderr, bad.stderr
