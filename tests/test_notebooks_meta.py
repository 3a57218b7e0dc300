"""Notebooks are stored in committed shape and their set-up cells are current."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
sys.path.insert(0, str(ROOT / "tools"))
import nb as nbtool  # noqa: E402


def test_there_are_chapters_and_all_are_in_the_toc():
    toc = (ROOT / "_toc.yml").read_text()
    assert NOTEBOOKS, "no chapter notebooks"
    for path in NOTEBOOKS:
        assert f"notebooks/{path.stem}" in toc, f"{path.name} missing from _toc.yml"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_shape(path):
    assert nbtool.problems(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_setup_cell_uses_the_one_repository_url(path):
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    cells = json.loads(path.read_text())["cells"]
    first_code = next(c for c in cells if c["cell_type"] == "code")
    source = "".join(first_code["source"])
    assert f'REPO_URL = "{url}"' in source
    # Colab's own torch, numpy and matplotlib are never reinstalled
    for pkg in ("torch", "numpy", "matplotlib", "ipywidgets"):
        assert f"'{pkg}" not in source.split("extras =")[1].split("\n")[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_has_checked_cells_a_widget_and_exercises(path):
    cells = json.loads(path.read_text())["cells"]
    checked = [c for c in cells if "nbval-check-output" in c.get("metadata", {}).get("tags", [])]
    assert len(checked) >= 2, "chapters check the stored output of their key numeric cells"
    text = "".join("".join(c["source"]) for c in cells)
    assert "{exercise}" in text and "{solution-start}" in text
    assert "dl.glue(" in text and "{glue:" in text
    assert "Takeaway" in text


def test_setup_detects_pypa_distlib_clash(tmp_path):
    """A fake PyPA 'distlib' in the environment stops set-up with an explanation."""
    site = tmp_path / "site"
    (site / "distlib-0.3.9.dist-info").mkdir(parents=True)
    (site / "distlib-0.3.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: distlib\nVersion: 0.3.9\n")
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_distlib.py")], env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "PyPA's 'distlib'" in r.stderr and "pip uninstall distlib" in r.stderr
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_distlib.py")],
                       env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
