"""The book's chapters as the registries read them: the table of contents and each chapter's own metadata.

A chapter is one notebook; what the instructor's guide, the browser tests and
the workshop's timings need to know of it lives in that notebook's metadata,
under :data:`KEY`, and nowhere else, so that a new chapter touches its own
files and the table of contents (CONTRIBUTING.md, "Adding a chapter")::

    "distbook": {
      "title": "14. Context parallelism",
      "plan_minutes": [30, 15],
      "goals": "explain why ...; derive ...",
      "show_live": "...", "leave": "...",
      "prose_asks": {"Raise the ranks": "ranks cp"},
      "run_all_seconds": 25.0, "run_all_on": "2026-12-04, a 2-core x86_64 Linux machine, Python 3.11.7"
    }

``title`` labels the chapter's block in the guide's schedules; ``plan_minutes``
are its minutes of teaching and of exercises; ``goals`` is what a learner can
do after it (one Markdown paragraph); ``show_live`` and ``leave`` are its row
of the guide's "what to show live" table; ``prose_asks`` maps each phrase by
which the chapter's widget paragraph asks the reader to move a control to
that control's label (``tests/test_browser.py`` moves each on the built
page); ``run_all_seconds`` is a fresh kernel's "Run all" measured by
``benchmarks/bench_workshop.py --write``, on the machine and date
``run_all_on`` names. :func:`chapters` reads them for every chapter of
``_toc.yml``, in book order, and checks each field (one line naming the
notebook and the key).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEY", "FIELDS", "Chapter", "chapter_problem", "chapters"]

KEY = "distbook"
"""The notebook metadata key the registries read."""
FIELDS = ("title", "plan_minutes", "goals", "show_live", "leave", "prose_asks", "run_all_seconds", "run_all_on")
"""The fields of a chapter's metadata, every one required."""


@dataclass(frozen=True)
class Chapter:
    """One chapter: its notebook (``"notebooks/01_ring"``, as ``_toc.yml`` names it), its part's caption, its
    metadata's fields."""

    file: str
    part: str
    title: str
    plan_minutes: tuple
    goals: str
    show_live: str
    leave: str
    prose_asks: dict
    run_all_seconds: float
    run_all_on: str

    @property
    def stem(self) -> str:
        """The notebook's name without its folder and suffix: ``"01_ring"``."""
        return Path(self.file).name


def _text(value) -> bool:
    return isinstance(value, str) and value.strip() != ""


def chapter_problem(meta) -> str | None:
    """What is wrong with a chapter's metadata block, in one line naming the key; ``None`` if nothing.

    >>> print(chapter_problem({"title": "1. The ring"}))
    plan_minutes is missing (the chapter's distbook metadata needs title, plan_minutes, goals, show_live, leave, prose_asks, run_all_seconds, run_all_on)
    """
    if not isinstance(meta, dict):
        return f"the notebook has no {KEY!r} metadata block (a dict of {', '.join(FIELDS)})"
    for name in FIELDS:
        if name not in meta:
            return f"{name} is missing (the chapter's {KEY} metadata needs {', '.join(FIELDS)})"
    extra = sorted(set(meta) - set(FIELDS))
    if extra:
        return f"unknown keys {extra}: the chapter's {KEY} metadata holds {', '.join(FIELDS)}"
    for name in ("title", "goals", "show_live", "leave", "run_all_on"):
        if not _text(meta[name]):
            return f"{name} must be a non-empty string, got {meta[name]!r}"
    plan = meta["plan_minutes"]
    if not (isinstance(plan, list) and len(plan) == 2 and all(isinstance(m, int) and m >= 0 for m in plan)):
        return f"plan_minutes must be [teaching, exercises], two whole minutes >= 0, got {plan!r}"
    asks = meta["prose_asks"]
    if not (isinstance(asks, dict) and all(_text(k) and _text(v) for k, v in asks.items())):
        return f"prose_asks must map phrases to control labels (strings), got {asks!r}"
    seconds = meta["run_all_seconds"]
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < 3600:
        return f"run_all_seconds must be a measured time in seconds, more than 0 and under 3600, got {seconds!r}"
    return None


def _toc_chapters(root: Path) -> list:
    """``(file, part caption)`` of every notebook chapter in ``_toc.yml``, in book order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [(c["file"], part["caption"]) for part in toc["parts"] for c in part["chapters"]
            if c["file"].startswith("notebooks/")]


def chapters(root) -> list:
    """Every chapter of the book at ``root`` (the repository), in book order, its metadata checked.

    Raises
    ------
    ValueError
        A chapter's metadata is missing or wrong: one line naming the notebook and the key.
    """
    root = Path(root)
    out = []
    for file, part in _toc_chapters(root):
        path = root / f"{file}.ipynb"
        meta = json.loads(path.read_text()).get("metadata", {}).get(KEY)
        problem = chapter_problem(meta)
        if problem:
            raise ValueError(f"{path.name}: {problem}")
        out.append(Chapter(file=file, part=part, **{**meta, "plan_minutes": tuple(meta["plan_minutes"])}))
    return out
