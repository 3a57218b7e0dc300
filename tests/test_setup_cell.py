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
