"""The outputs stored in the chapters equal what a fresh run prints.

Each chapter keeps outputs only on cells tagged ``nbval-check-output``
(tools/nb.py): deterministic text, such as a printed schedule or a table of
model results, that the prose relies on. The book build executes every chapter
from scratch on a fresh kernel (``execute_notebooks: force``, cell timeout 180 s,
no errors allowed) and keeps what it ran in ``_build/jupyter_execute``; this
compares each stored output with that run, cell by cell, the way
``pytest --nbval-lax`` would (streams joined per name, results by their
text/plain), without executing every chapter a second time.
"""

from __future__ import annotations

import difflib

import nbformat
import pytest

from conftest import ROOT, toc_chapters

CHAPTERS = [c for c in toc_chapters() if c.startswith("notebooks/")]


def _text(outputs) -> list[tuple[str, str]]:
    """Outputs as nbval-lax compares them: each stream's text joined, each result's text/plain."""
    out, streams = [], {}
    for o in outputs:
        if o.output_type == "stream":
            if o.name not in streams:
                streams[o.name] = len(out)
                out.append([f"stream:{o.name}", ""])
            out[streams[o.name]][1] += o.text
        elif o.output_type in ("execute_result", "display_data"):
            out.append([o.output_type, o.get("data", {}).get("text/plain", "")])
        elif o.output_type == "error":
            out.append(["error", f"{o.ename}: {o.evalue}"])
    return [tuple(x) for x in out]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_stored_outputs_are_what_the_build_printed(book_build, chapter):
    code, log, html = book_build
    if code != 0:
        pytest.fail("the book did not build:\n" + log[-4000:])
    stored = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4)
    ran = nbformat.read(html.parent / "jupyter_execute" / f"{chapter}.ipynb", as_version=4)
    by_id = {c.get("id"): c for c in ran.cells}
    checked = [c for c in stored.cells if c.cell_type == "code" and c.get("outputs")]
    assert checked, f"{chapter} has no cell whose output is checked"
    problems = []
    for cell in checked:
        fresh = by_id.get(cell.get("id"))
        assert fresh is not None, f"{chapter}: cell {cell.get('id')} is missing from the build's run"
        want, got = _text(cell.outputs), _text(fresh.get("outputs", []))
        if want != got:
            diff = difflib.unified_diff("\n".join(f"{k}: {t}" for k, t in want).splitlines(),
                                        "\n".join(f"{k}: {t}" for k, t in got).splitlines(),
                                        "stored", "fresh run", lineterm="", n=1)
            problems.append(f"cell {cell.get('id')} ({cell.source.splitlines()[0][:60]!r}):\n" + "\n".join(diff))
    assert not problems, f"{chapter}: {len(problems)} of {len(checked)} checked cells changed\n" + "\n\n".join(problems)
