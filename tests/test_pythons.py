"""The library installs and passes its model tests on every Python the README names, not only .venv's.

For Python 3.12, Colab's, the Colab stand-in (``.venv-colab``, made by
scripts/setup_colab_env.sh: Colab's Python and pins, numpy 2.0.2,
matplotlib 3.10.0, ipywidgets 7.7.1, torch) gets the library as a Colab
reader's set-up cell installs it: a real wheel, pip-installed into a prefix
of its own apart from the Python (Colab's /usr/local), with pytest and
hypothesis beside it; the model layer's tests and doctests then run there,
against Colab's versions rather than the newest. Without a stand-in, and for
Python 3.13, a venv under ``build/`` made from pyenv's Python (or
``pythonX.Y`` on PATH) gets ``pip install <wheel>[widgets]``. The book's own
.venv is Python 3.11, where everything else runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, copy_worktree

#: The model layer's tests: no torch, no MPI, no browser (they need only the library and its `widgets` extra).
MODEL_TESTS = ["test_ring.py", "test_collectives.py", "test_topology.py", "test_walls.py", "test_roofline.py",
               "test_hardware.py", "test_cluster.py", "test_fmt.py", "test_check.py", "test_gpu_cluster.py",
               "test_overlap.py", "test_layers.py", "test_measure.py", "test_pictures.py"]
#: Test tools, at the versions requirements.txt pins.
TOOLS = ["pytest", "hypothesis"]


def _python(version: str) -> str | None:
    """Python ``version``: pyenv's (not its shims, which answer only for the selected versions), or on PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(pyenv.glob(f"{version}.*"), reverse=True):
        if (candidate / "bin" / "python").exists():
            return str(candidate / "bin" / "python")
    found = shutil.which(f"python{version}")
    if found and "shims" not in Path(found).parts:
        return found
    return None


def _pins(names) -> list[str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    pins = {line.split("==")[0].strip().lower(): line.strip() for line in lines if "==" in line
            and not line.lstrip().startswith("#")}
    return [pins.get(n, n) for n in names]


def _colab_stand_in() -> Path | None:
    """The Colab stand-in's Python, if scripts/setup_colab_env.sh made it here (it is Python 3.12)."""
    py = ROOT / ".venv-colab" / "bin" / "python"
    return py if py.exists() else None


def _wheel(tmp_path) -> Path:
    """This checkout built into a wheel, once (the venv installs it with its dependencies, then again over an
    older copy of the same version). Built from a copy of what the wheel is made of (the checkout's tracked
    and new files): setuptools builds in the source's own build/ folder, and two builds of one tree at once
    (both Pythons' tests side by side) broke each other's."""
    src = copy_worktree(tmp_path / "src", "distlib", "pyproject.toml", "README.md", "LICENSE")
    out = tmp_path / "wheel"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(out),
                            str(src)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = out.glob("distbook_distlib-*.whl")
    return wheel


def _install(py, args, cwd, env=None):
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", *args], capture_output=True, text=True,
                             timeout=900, cwd=cwd, env=env)
    assert install.returncode == 0, install.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_library_installs_and_passes_its_model_tests(version, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    wheel = _wheel(tmp_path)
    colab = _colab_stand_in() if version == "3.12" else None
    if colab is not None:
        # as a Colab reader's set-up cell installs it: into a prefix apart from the Python, whose packages
        # (Colab's pins) meet the library's needs, so pip adds none of its own
        py, prefix = colab, tmp_path / "local"
        _install(py, ["--prefix", str(prefix), "--no-compile", f"{wheel}[widgets]", *_pins(TOOLS)], tmp_path, env)
        env["PYTHONPATH"] = str(prefix / "lib" / "python3.12" / "site-packages")
    else:
        python = _python(version)
        if python is None:
            pytest.skip(f"no Python {version} on this machine (pyenv install {version}, or put python{version} on PATH)")
        venv = ROOT / "build" / f"venv-py{version.replace('.', '')}"
        py = venv / "bin" / "python"
        if not py.exists():
            subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
        _install(py, [f"{wheel}[widgets]", *_pins(TOOLS)], tmp_path)  # the dependencies, kept between runs
        _install(py, ["--force-reinstall", "--no-deps", str(wheel)], tmp_path)  # this checkout, over an older copy
    got = subprocess.run([str(py), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert got == version
    where = subprocess.run([str(py), "-c", "import distlib; print(distlib.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path, check=True, env=env).stdout.strip()
    assert "site-packages" in where, where  # the installed wheel, not this checkout
    if colab is not None:
        assert where.startswith(str(tmp_path)), where  # the prefix's copy, not one left in the stand-in
        pins = subprocess.run([str(py), "-c", "import numpy, matplotlib; print(numpy.__version__, matplotlib.__version__)"],
                              capture_output=True, text=True, check=True, env=env).stdout.split()
        print(f"\nPython 3.12 in the Colab stand-in: numpy {pins[0]}, matplotlib {pins[1]}")
    models = [str(p) for p in sorted(Path(where).parent.glob("*.py")) if not p.name.startswith("_")]
    run = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                          *[str(ROOT / "tests" / t) for t in MODEL_TESTS], "--doctest-modules", *models],
                         capture_output=True, text=True, timeout=1200, cwd=tmp_path, env=env)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout.splitlines()[-1] and " failed" not in run.stdout.splitlines()[-1], tail
