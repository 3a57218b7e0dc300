"""The reader notebooks the book build writes to _build/reader/ read like the book.

Checked against the chapter sources and myst-nb's glue.json, independently of
tools/reader_notebooks.py's own checks: no raw MyST, every glued value in the
prose, no stored outputs, solutions folded under their own headings, the
set-up cell pinned, and the download and launch buttons serving these copies.
"""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from myst_nb.core.variables import format_plain_text

from conftest import ROOT, toc_chapters

sys.path.insert(0, str(ROOT / "tools"))
import reader_notebooks as rn  # noqa: E402

CHAPTERS = [c for c in toc_chapters() if (ROOT / f"{c}.ipynb").exists()]
GLUE_ROLE = re.compile(r"\{glue:text\}`([^`]+)`")
RAW_MYST = re.compile(r"\{[a-z][\w:-]*\}`|^:::|^```\{|\{glue|^\([\w-]+\)=\s*$|\{solution|\{exercise|:label:|:class:",
                      re.M)
HEADING = re.compile(r"^(#{1,6}) ")


def prose(text: str) -> str:
    """Markdown without fenced or inline code, and with backslash escapes undone."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"\\(.)", r"\1", text)


@pytest.fixture(scope="module")
def reader(book_build):
    code, log, html = book_build
    assert code == 0, log[-4000:]
    return html.parent / "reader", html


def load(reader_dir, chapter):
    return nbformat.read(reader_dir / f"{Path(chapter).name}.ipynb", as_version=4)


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_raw_myst_and_no_outputs(reader, chapter):
    nb = load(reader[0], chapter)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            left = RAW_MYST.findall(prose(cell.source))
            assert not left, f"raw MyST {left} in: {cell.source[:200]}"
            assert "rocket" not in cell.source.lower()
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
            assert "nbval-check-output" not in cell.metadata.get("tags", [])


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_glued_value_is_in_the_prose(reader, chapter):
    reader_dir, html = reader
    glue = json.loads((html.parent / "jupyter_execute" / f"{chapter}.glue.json").read_text())
    source = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4)
    text = "\n".join(prose(c.source) for c in load(reader_dir, chapter).cells if c.cell_type == "markdown")
    roles = [m for c in source.cells if c.cell_type == "markdown" for m in GLUE_ROLE.findall(c.source)]
    assert roles, "every chapter glues numbers into its prose"
    for role in roles:
        key, _, spec = role.rpartition(":") if ":" in role else (role, "", "")
        value = format_plain_text(glue[key]["data"]["text/plain"], spec)
        assert value in text, f"{role} -> {value!r} missing from the reader copy"
    # and in the same order as the roles in the source (so each sits where it belongs)
    position = 0
    for role in roles:
        key, _, spec = role.rpartition(":") if ":" in role else (role, "", "")
        value = format_plain_text(glue[key]["data"]["text/plain"], spec)
        found = text.find(value, position)
        assert found >= 0, f"{value!r} ({role}) out of order"
        position = found


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solutions_fold_under_their_own_headings(reader, chapter):
    nb = load(reader[0], chapter)
    source = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4)
    n_solutions = sum(c.source.count("{solution-start}") for c in source.cells if c.cell_type == "markdown")
    headings = [k for k, c in enumerate(nb.cells) if c.cell_type == "markdown"
                and re.match(r"^#{2,6} Solution to Exercise \d+(?:\.\d+)?$", c.source)]
    assert len(headings) == n_solutions > 0
    assert nb.metadata["colab"]["collapsed_sections"] == [nb.cells[k].metadata["id"] for k in headings]
    solution_code = 0
    for k in headings:
        cell = nb.cells[k]
        assert cell.metadata["jp-MarkdownHeadingCollapsed"] is True and cell.metadata["heading_collapsed"] is True
        level = len(HEADING.match(cell.source).group(1))
        body = []
        for nxt in nb.cells[k + 1:]:
            m = HEADING.match(nxt.source) if nxt.cell_type == "markdown" else None
            if m and len(m.group(1)) <= level:
                break  # the fold ends at the next exercise or section ...
            body.append(nxt)
        assert body and all(c.metadata.get("hidden") for c in body)  # ... and hides exactly the solution
        solution_code += sum(c.cell_type == "code" for c in body)
        exercise = nb.cells[:k][::-1]
        assert any(re.match(rf"^#{{{level - 1}}} Exercise \d+(?:\.\d+)?", c.source) for c in exercise if c.cell_type == "markdown")
    assert solution_code >= 1
    # no code cell lost or moved: the reader's code cells are the source's, in order
    src_code = [c.source for c in source.cells if c.cell_type == "code"][1:]
    assert [c.source for c in nb.cells if c.cell_type == "code"][1:] == src_code


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_setup_cell_is_pinned_to_the_built_commit(reader, chapter):
    nb = load(reader[0], chapter)
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert re.search(rf'^REPO_URL = "{re.escape(url)}"$', first.source, re.M)
    ref = re.search(r'^REF = "([^"]*)"', first.source, re.M).group(1)
    assert re.fullmatch(r"[0-9a-f]{40}", ref) and ref == nb.metadata["distbook"]["commit"]


@pytest.mark.book
def test_download_and_launch_buttons_serve_the_reader_copies(reader):
    reader_dir, html = reader
    branch = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["branch"]
    for chapter in CHAPTERS:
        copy = (reader_dir / f"{Path(chapter).name}.ipynb").read_text()
        page = (html / f"{chapter}.html").read_text()
        assert f'href="../_sources/{chapter}.ipynb"' in page  # the download button's file ...
        assert (html / "_sources" / f"{chapter}.ipynb").read_text() == copy  # ... is the reader copy
        assert f"/blob/{branch}/{chapter}.ipynb" in page  # the launch button's file on the published branch ...
        assert (html / f"{chapter}.ipynb").read_text() == copy  # ... is the reader copy, published with the site


# ----------------------------------------------------------------------------
# The converter on small cases (no build needed)
# ----------------------------------------------------------------------------


def notebook(*markdown, code_first=True):
    cells = [nbformat.v4.new_code_cell('REPO_URL = "x"\nREF = "main"  # a ref')] if code_first else []
    cells += [nbformat.v4.new_markdown_cell(m) for m in markdown]
    return nbformat.v4.new_notebook(cells=cells)


def test_glue_is_formatted_as_myst_nb_does_and_escaped():
    nb = rn.reader_notebook(notebook("a {glue:text}`x:.1%` b {glue:text}`s` c"), {"x": "0.256", "s": "'2*3 $'"},
                            name="t", ref="f" * 40)
    assert nb.cells[1].source == r"a 25.6% b 2\*3 \$ c"
    assert 'REF = "' + "f" * 40 + '"' in nb.cells[0].source


def test_admonitions_become_block_quotes_with_one_line_display_math():
    nb = rn.reader_notebook(notebook(":::{admonition} Takeaway\n:class: tip\nSo\n\n$$\na = b\n+ c\n$$\n:::"), {},
                            name="t")
    assert nb.cells[1].source == "> **💡 Takeaway**\n>\n> So\n>\n> $$a = b + c$$"


def test_web_only_notes_are_left_out():
    nb = rn.reader_notebook(notebook("Before.\n\n:::{note}\n:class: web-only\nUse the rocket.\n:::\n\nAfter."), {},
                            name="t")
    assert nb.cells[1].source == "Before.\n\n\nAfter."


@pytest.mark.parametrize("markdown, message", [
    ("{glue:text}`missing`", "glue key 'missing'"),
    (":::{figure} x.png\n:::", "unknown MyST directive {figure}"),
    ("{cite}`knuth`", "citation key knuth is not in references.bib"),
    ("{footcite}`knuth`", "unknown MyST role {footcite}"),
    (":::{note}\nnever closed", "never closed"),
    ("## W\n\n:::{exercise}\n:label: e\nQ\n:::\n\n:::{solution-start} e\n:::\nA\n:::{solution-end}\n:::\n\nMore prose.",
     "the solution's fold would hide it"),
])
def test_what_cannot_be_converted_stops_the_build(markdown, message):
    with pytest.raises(rn.ReaderError, match=re.escape(message)):
        rn.reader_notebook(notebook(markdown), {}, name="t")


def test_exercise_numbers_follow_the_book():
    md = "## W\n\n:::{exercise}\n:label: e\nQ {glue:text}`v:.0f`\n:::\n\n:::{solution-start} e\n:::\nA\n:::{solution-end}\n:::"
    nb = rn.reader_notebook(notebook(md, "## Summary"), {"v": "2.4"}, name="t", exercise_numbers={"e": "12"})
    sources = [c.source for c in nb.cells]
    assert sources[1:] == ["## W", "### Exercise 12\n\nQ 2", "#### Solution to Exercise 12", "A", "## Summary"]
    assert nb.cells[4].metadata == {"hidden": True}
    assert nb.metadata["colab"]["collapsed_sections"] == [nb.cells[3].id]


def test_exercises_are_numbered_per_chapter_without_the_books_numbers():
    md = ("## W\n\n:::{exercise}\n:label: a\nQ1\n:::\n\n:::{exercise}\n:label: b\nQ2\n:::\n\n"
          "See {ref}`b`.")
    nb = rn.reader_notebook(notebook(md), {}, name="06_mpi")
    text = "\n".join(c.source for c in nb.cells)
    assert "### Exercise 6.1\n" in text and "### Exercise 6.2\n" in text and "See Exercise 6.2." in text
