"""Every chapter's set-up cell installs the library with the pip a reader may have, not only ours.

Python 3.12.1's ``venv`` (and 3.11.7's, here) brings pip 23.2.1, which
rejects ``name @ git+file:///path`` ("It looks like a path"); a reader who
points ``REPO_URL`` at a clone, as the README says to offline, must still
get the library.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OLD_PIP = "23.2.1"


def _setup_install_part(stem: str) -> str:
    """The set-up cell of chapter ``stem`` up to (not including) its ``import distlib``."""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    source = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    head, sep, _ = source.partition("import distlib as dl")
    assert sep, "the set-up cell no longer imports distlib"
    return head


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None,
                    reason="needs the repository's git history to install from")
def test_the_setup_cell_installs_from_a_file_url_with_an_old_pip(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", f"pip=={OLD_PIP}"], check=True, timeout=300,
                   capture_output=True)
    version = subprocess.run([str(py), "-m", "pip", "--version"], capture_output=True, text=True).stdout
    assert version.startswith(f"pip {OLD_PIP}")
    code = tmp_path / "setup_cell.py"
    code.write_text(_setup_install_part("01_ring"))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    env = {**os.environ, "DISTBOOK_REPO_URL": ROOT.as_uri(), "DISTBOOK_REF": head,
           "PIP_NO_DEPS": "1"}  # the library alone: its dependencies are not what an old pip mis-parses
    run = subprocess.run([str(py), str(code)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    shown = subprocess.run([str(py), "-m", "pip", "show", "distbook-distlib"], capture_output=True, text=True)
    assert "Name: distbook-distlib" in shown.stdout


@pytest.mark.slow
def test_the_setup_cell_installs_offline_from_a_wheels_folder(tmp_path):
    """DISTBOOK_WHEELS: a folder of wheels (the workshop bundle's) is all the set-up cell needs.

    The library's wheel is built into a folder; the set-up cell, run in a fresh
    venv with pip told never to use an index, installs it from there and
    names the folder. (``PIP_NO_DEPS``: the dependencies' wheels are not what
    this checks; the bundle test installs them the same way.)
    """
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)],
                   check=True, timeout=600, capture_output=True)
    assert list(wheels.glob("distbook_distlib-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    code = tmp_path / "setup_cell.py"
    code.write_text(_setup_install_part("01_ring"))
    env = {**os.environ, "DISTBOOK_WHEELS": str(wheels), "DISTBOOK_REPO_URL": "https://example.invalid/nowhere",
           "PIP_NO_DEPS": "1", "PIP_NO_INDEX": "1"}
    run = subprocess.run([str(py), str(code)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert f"from {wheels}" in run.stdout and "Successfully installed" in run.stdout, run.stdout
    shown = subprocess.run([str(py), "-m", "pip", "show", "distbook-distlib"], capture_output=True, text=True)
    assert "Name: distbook-distlib" in shown.stdout
