"""Notebooks are stored in committed shape and their set-up cells are current."""

import json
import re
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
def test_setup_cell_installs_the_library_from_the_one_repository_url(path):
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    cells = json.loads(path.read_text())["cells"]
    first_code = next(c for c in cells if c["cell_type"] == "code")
    source = "".join(first_code["source"])
    assert re.search(rf'^REPO_URL = "{re.escape(url)}"$', source, re.M)
    assert re.search(r'^REF = "[^"]+"', source, re.M)
    # pip installs the library (so subprocesses and MPI ranks import it), no sys.path tricks
    spec = re.search(r'spec = f"distbook-distlib\[([\w,]+)\]" \+ \(""  ?if wheels else f" @ git\+\{url\}@\{ref\}"\)',
                     source)
    assert spec and '"pip", "install"' in source and "sys.path" not in source
    extras = set(spec.group(1).split(","))
    # torch is never installed by the set-up cell (Colab has it; elsewhere it is GBs of CUDA) ...
    assert "torch" not in extras
    # ... and MPI only where a chapter starts MPI ranks or the benchmark
    uses_mpi = any(nbtool.NEEDS_MPI.search("".join(c["source"])) for c in cells if c["cell_type"] == "code"
                   and c is not first_code)
    assert extras == ({"widgets", "mpi"} if uses_mpi else {"widgets"})
    assert len(source.splitlines()) <= 35, "the set-up cell stays short"  # 35: crisp figures, since #21


def test_chapters_1_to_5_install_without_torch_or_mpi():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"] + project["optional-dependencies"]["widgets"])
    assert "torch" not in core and "mpi" not in core
    for path in NOTEBOOKS[:5]:
        first = next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        assert 'spec = f"distbook-distlib[widgets]"' in "".join(first["source"])


def test_setup_cell_says_what_to_do_when_the_fetch_fails(tmp_path):
    """Run the real set-up cell where the library looks uninstalled and REPO_URL cannot be fetched.

    ``python -S`` hides site-packages from the cell (so the library looks
    absent); the pip it starts sees them as usual, and fails on the URL.
    """
    source = nbtool.setup_source("01_ring")
    missing = f"file://{tmp_path / 'no-such-clone'}"
    r = subprocess.run([sys.executable, "-S", "-c", source], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "DISTBOOK_REPO_URL": missing, "HOME": str(tmp_path)},
                       timeout=300, cwd=tmp_path)
    assert r.returncode != 0
    # as pip before 24 can parse it: file://localhost/..., not file:///...
    said = "git+file://localhost" + str(tmp_path / "no-such-clone")
    # the cause comes first, in one line; then what to do; then pip's own last lines
    first = next(line for line in r.stderr.splitlines() if line.startswith("RuntimeError"))
    assert first.startswith(f"RuntimeError: Set-up failed: {said.removeprefix('git+')} is not a repository git "
                            "can clone"), first
    assert "Offline" in first and "DISTBOOK_WHEELS" in first and "file:///" in first, first
    assert "pip's last lines" in r.stderr


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


# ---- what the registries read of each chapter: its own metadata (distlib/static/chapters.py) ----------------


def test_every_chapter_carries_what_the_registries_read():
    from distlib.static.chapters import chapters

    book = chapters(ROOT)  # raises naming the notebook and the key when one is missing or wrong
    assert [c.file for c in book] == [f"notebooks/{p.stem}" for p in NOTEBOOKS]
    assert all(c.prose_asks or c.stem == "06_mpi" for c in book)  # chapter 6's widget-free pages ask nothing
    assert len({c.title for c in book}) == len(book)


@pytest.mark.parametrize("meta, says", [
    (None, "no 'distbook' metadata block"),
    ({"title": "x"}, "plan_minutes is missing"),
    ({**dict.fromkeys(("title", "goals", "show_live", "leave", "run_all_on"), "x"), "plan_minutes": [30],
      "prose_asks": {}, "run_all_seconds": 3.0}, "plan_minutes must be [teaching, exercises]"),
    ({**dict.fromkeys(("title", "goals", "show_live", "leave", "run_all_on"), "x"), "plan_minutes": [30, 15],
      "prose_asks": {"move it": 3}, "run_all_seconds": 3.0}, "prose_asks must map phrases to control labels"),
    ({**dict.fromkeys(("title", "goals", "show_live", "leave", "run_all_on"), "x"), "plan_minutes": [30, 15],
      "prose_asks": {}, "run_all_seconds": 0}, "run_all_seconds must be a measured time"),
    ({**dict.fromkeys(("title", "goals", "show_live", "leave", "run_all_on"), "x"), "plan_minutes": [30, 15],
      "prose_asks": {}, "run_all_seconds": 3.0, "teach": 5}, "unknown keys ['teach']"),
])
def test_a_chapter_with_wrong_metadata_is_one_line_naming_the_key(meta, says):
    from distlib.static.chapters import chapter_problem

    problem = chapter_problem(meta)
    assert problem is not None and says in problem and "\n" not in problem


def test_refresh_keeps_a_chapters_metadata():
    nb = nbtool.nbformat.read(NOTEBOOKS[0], as_version=4)
    assert nbtool.normalize(nb, NOTEBOOKS[0].stem).metadata["distbook"] == nb.metadata["distbook"]


def test_no_registry_outside_a_chapter_lists_the_chapters():
    """What the guide, the browser tests and the timings need of a chapter is read from the chapter: a new
    chapter's stem appears in no such file (the guide names only the first day's nine, its fixed curriculum)."""
    guide = (ROOT / "book" / "instructor.md").read_text()
    for path in NOTEBOOKS[9:]:
        assert path.stem not in guide, f"book/instructor.md names {path.stem}: read it from the chapter's metadata"
    assert "notebooks/1" not in (ROOT / "tests" / "test_browser.py").read_text()
    assert not (ROOT / "book" / "workshop_timings.json").exists()
