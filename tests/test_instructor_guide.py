"""The instructor's guide and the learners' set-up page, read without a book build.

- "When things fail" keeps one entry, with what you see, why and the fix,
  for every failure a room has met (the issue that asked for the section
  lists them);
- both schedules open with the set-up block, computed from the guide's own
  named planning figures;
- the set-up page sits next to the guide in the table of contents, and its
  check runs and prints what the page says it prints;
- neither the book's intro nor the guide says that every multi-process run
  is on 127.0.0.1 (chapter 9's cluster is not).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "book" / "instructor.md"
SETUP = ROOT / "book" / "setup.md"

#: failure -> a pattern its entry's heading must match
FAILURES = {
    "a failed build": r"\bbuild\b",
    "the wrong Python or OS": r"Python.*operating system",
    "the Live code prompt": r"Live code",
    "widgets shown as text": r"[Ww]idgets show as text",
    "a dead kernel": r"kernel dies",
    "no user namespaces": r"user namespaces",
    "chapter 9 without root": r"Chapter 9",
    "the offline Extension Manager": r"Extension Manager",
    "workshop.sh in the background (SIGINT ignored)": r"workshop\.sh.*background",
}


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a MyST page (up to the next ``## ``)."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def entries(body: str) -> dict:
    """``### `` heading -> its text."""
    parts = re.split(r"^### (.+)$", body, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def test_when_things_fail_has_an_entry_for_every_failure_the_room_met():
    found = entries(section(GUIDE.read_text(), "When things fail"))
    missing = [name for name, pattern in FAILURES.items() if not any(re.search(pattern, h) for h in found)]
    assert not missing, f"no 'When things fail' entry for {missing}; headings: {list(found)}"
    for heading, text in found.items():
        for part in ("*What you see.*", "*Why.*", "*Fix.*"):
            assert part in text, f"entry {heading!r} has no {part}"


def guide_cells() -> list[str]:
    return re.findall(r"^```\{code-cell\} ipython3\n(.*?)^```$", GUIDE.read_text(), flags=re.S | re.M)


def run_guide_cells(book: Path = GUIDE.parent) -> dict:
    """Run the guide's code cells in order, as the book build's kernel does (from ``book``, the book/ folder)."""
    ns: dict = {}
    here = os.getcwd()
    os.chdir(book)
    try:
        for cell in guide_cells():
            exec("\n".join(line for line in cell.splitlines() if not line.startswith(":tags:")), ns)
    finally:
        os.chdir(here)
    return ns


def test_both_schedules_open_with_the_setup_block_from_named_planning_figures():
    ns = run_guide_cells()
    setup = ns["SETUP"]
    assert [minutes for _, minutes in setup] == [ns["SETUP_CHECK_MIN"], ns["INSTALL_FROM_KIT_MIN"]]
    assert all(minutes > 0 for _, minutes in setup)
    assert re.search(r"check", setup[0][0]) and re.search(r"kit", setup[1][0])
    for rows, total in ((ns["half"], ns["half_minutes"]), (ns["full"], ns["full_minutes"])):
        assert [(label, minutes) for _, label, minutes in rows[: len(setup)]] == list(setup), rows[:3]
        assert rows[0][0] == "09:00"
        assert total == sum(m for _, _, m in rows[:-1])  # the set-up minutes count in the day's length
    # the install time is not a measurement: the data says so where it is set
    cell = next(c for c in guide_cells() if "INSTALL_FROM_KIT_MIN =" in c)
    assert "PLANNING FIGURES" in cell
    # and the prose takes the set-up minutes from the data, never typed
    prose = section(GUIDE.read_text(), "Two schedules")
    assert "{glue:text}`ws_setup_min`" in prose and "{glue:text}`ws_install_min`" in prose


def test_the_setup_page_sits_next_to_the_instructor_guide():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert "book/setup" in files and abs(files.index("book/setup") - files.index("book/instructor")) == 1


def setup_check() -> tuple[str, list[str]]:
    """The set-up check's code and the output the page shows for it."""
    body = SETUP.read_text().split("(setup-check)=", 1)[1]
    code = re.search(r"^```python\n(.*?)^```$", body, flags=re.S | re.M).group(1)
    shown = re.search(r"^```text\n(.*?)^```$", body, flags=re.S | re.M).group(1)
    return code, shown.strip().splitlines()


def _same(line: str) -> str:
    return re.sub(r"\((private|host) network\)", "(... network)", line)


@pytest.mark.slow
@pytest.mark.engines
def test_the_setup_check_runs_and_prints_what_the_page_shows(tmp_path):
    code, shown = setup_check()
    script = tmp_path / "check_setup.py"
    script.write_text(code)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    printed = run.stdout.strip().splitlines()
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert printed[-1] == "All set.", run.stdout
    # every line but the first (the Python and the system) as the page shows it
    assert [_same(line) for line in printed[1:]] == [_same(line) for line in shown[1:]], run.stdout
    assert printed[0].startswith("Python ") and shown[0].startswith("Python ")


def test_the_intro_pages_do_not_put_every_run_on_loopback():
    """Chapter 9's cluster runs in private network namespaces, on 10.99.0.x, as root."""
    intro = (ROOT / "book" / "intro.md").read_text()
    guide_intro = GUIDE.read_text().split("\n## ", 1)[0]
    for name, text in (("intro.md", intro), ("instructor.md", guide_intro)):
        flat = " ".join(text.split())
        assert "`127.0.0.1` only" not in flat, name
        assert "chapter 9" in flat and "namespaces" in flat, name


def test_the_slurm_exercise_shows_the_steps_the_benchmark_timed():
    """The guide's Slurm table is read from book/slurm_exercise_timings.json: it must hold the benchmark's steps."""
    import json

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_slurm import EXERCISE
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    stored = json.loads((ROOT / "book" / "slurm_exercise_timings.json").read_text())
    assert [(s["step"], s["command"]) for s in stored["steps"]] == EXERCISE, \
        "the exercise changed: rerun sudo .venv/bin/python benchmarks/bench_slurm.py --exercise --write"
    assert all(s["seconds"] >= 0 for s in stored["steps"]) and stored["cluster_up_seconds"] > 0
    starts = stored["pmi2_starts"]
    assert 0 <= starts["srun --mpi=pmi2"] <= starts["tries"] and 0 <= starts["mpiexec in salloc"] <= starts["tries"]
    body = section(GUIDE.read_text(), "A Slurm exercise for the room")
    assert "-m distlib.minicluster shell --nodes 2" in body and "--slurm" in body
    assert "slurm_exercise_timings.json" in body


def _days(ns) -> dict:
    """Day number -> the chapters (stems) its schedule teaches: 1 the full day, 2 and on the later days."""
    titles = {c.title: c.stem for c in ns["BOOK"]}
    days = {1: [titles[label] for _, label, _ in ns["full"] if label in titles]}
    for n, (rows, _) in enumerate(ns["LATER"].values(), start=2):
        days[n] = [titles[label] for _, label, _ in rows if label in titles]
    return days


def test_every_chapter_of_the_toc_is_timed_and_taught_on_one_day():
    """Every chapter of _toc.yml has its measured Run-all time in the guide's table and its block on exactly
    one day; the last part (Part V) is the third day, its chapters in toc order; the prose's chapter lists are
    read from the schedules."""
    from distlib.static.chapters import _toc_chapters

    ns = run_guide_cells()
    toc = [Path(f).name for f, _ in _toc_chapters(ROOT)]
    assert list(ns["run_s"]) == toc and all(s > 0 for s in ns["run_s"].values())
    days = _days(ns)
    assert sorted(s for stems in days.values() for s in stems) == sorted(toc)
    parts = [p for _, p in _toc_chapters(ROOT)]
    assert list(ns["LATER"])[-1] == parts[-1] and len(days) >= 3
    assert days[3] == [Path(f).name for f, p in _toc_chapters(ROOT) if p == parts[-1]]
    # every block's minutes are the chapter's plan plus its Run all rounded up
    for rows, _ in ns["LATER"].values():
        for _, label, minutes in rows:
            c = next((c for c in ns["BOOK"] if c.title == label), None)
            if c:
                assert minutes == sum(c.plan_minutes) + -(-c.run_all_seconds // 60)
    text = GUIDE.read_text()
    assert "{glue:text}`ws_half_home`" in text and "{glue:text}`ws_full_chapters`" in text
    assert ns["chapter_numbers"](["03_a", "04_b", "07_c", "08_d", "09_e", "10_f", "14_g", "16_h"]) == \
        "3, 4, 7 to 10, 14 and 16"


def test_a_chapter_added_to_the_toc_gets_its_timing_and_its_day(tmp_path):
    """A chapter 17 added to Part V in _toc.yml and notebooks/ joins the third day, with no edit to the guide."""
    import json
    import shutil

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    part = next(p for p in toc["parts"] if any(c["file"] == "notebooks/14_context" for c in p["chapters"]))
    before = [c["file"].split("/")[-1] for c in part["chapters"]]
    part["chapters"].append({"file": "notebooks/17_next"})
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (tmp_path / "notebooks").mkdir()
    for nb in (ROOT / "notebooks").glob("*.ipynb"):  # the metadata is all the guide reads
        meta = json.loads(nb.read_text())["metadata"]
        (tmp_path / "notebooks" / nb.name).write_text(json.dumps({"cells": [], "metadata": meta}))
    meta = json.loads((ROOT / "notebooks" / "14_context.ipynb").read_text())["metadata"]
    meta["distbook"] = {**meta["distbook"], "title": "17. Next", "run_all_seconds": 125.0}
    (tmp_path / "notebooks" / "17_next.ipynb").write_text(json.dumps({"cells": [], "metadata": meta}))
    shutil.copytree(GUIDE.parent, tmp_path / "book", ignore=shutil.ignore_patterns("vendor*", "live", "js", "_ext"))
    ns = run_guide_cells(tmp_path / "book")
    assert "17_next" in ns["run_s"]
    days = _days(ns)
    assert days[3] == [*before, "17_next"], days
    rows = list(ns["LATER"].values())[-1][0]
    assert ("17. Next" in [label for _, label, _ in rows]
            and ns["chapter_numbers"](days[3]) == f"{before[0][:2]} to 17")
