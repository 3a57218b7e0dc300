"""The library installs and passes its model tests on every Python the README names, not only .venv's.

For each of Python 3.12 and 3.13 found on this machine (pyenv's, or
``pythonX.Y`` on PATH), a venv under ``build/`` gets the library as a reader
would install it (``pip install .[widgets]``: a real wheel build, its data
files included, not the source tree) and runs the model layer's tests and
doctests against that copy. The book's own .venv is Python 3.11, where
everything else runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_library_installs_and_passes_its_model_tests(version, tmp_path):
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine (pyenv install {version}, or put python{version} on PATH)")
    venv = ROOT / "build" / f"venv-py{version.replace('.', '')}"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    got = subprocess.run([str(py), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert got == version
    for args in ([f"{ROOT}[widgets]", *_pins(TOOLS)],  # the dependencies, kept between runs
                 ["--force-reinstall", "--no-deps", "--no-cache-dir", str(ROOT)]):  # this checkout, built anew
        install = subprocess.run([str(py), "-m", "pip", "install", "-q", *args],
                                 capture_output=True, text=True, timeout=900, cwd=tmp_path)
        assert install.returncode == 0, install.stderr[-3000:]
    where = subprocess.run([str(py), "-c", "import distlib; print(distlib.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path, check=True).stdout.strip()
    assert "site-packages" in where, where  # the installed wheel, not this checkout
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MPLBACKEND"] = "Agg"
    models = [str(p) for p in sorted(Path(where).parent.glob("*.py")) if not p.name.startswith("_")]
    run = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                          *[str(ROOT / "tests" / t) for t in MODEL_TESTS], "--doctest-modules", *models],
                         capture_output=True, text=True, timeout=1200, cwd=tmp_path, env=env)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout.splitlines()[-1] and " failed" not in run.stdout.splitlines()[-1], tail
