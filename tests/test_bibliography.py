"""The bibliography: every cited key exists, every entry is cited, and the reader
notebooks and slides print citations as the book does (author-year)."""

import re
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import reader_notebooks as rn  # noqa: E402

CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")


def cited_keys() -> set:
    keys = set()
    sources = [c.source for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
               for c in nbformat.read(p, as_version=4).cells if c.cell_type == "markdown"]
    sources += [p.read_text() for p in sorted((ROOT / "book").glob("*.md"))]
    for text in sources:
        for group in CITE.findall(text):
            keys |= {k.strip() for k in group.split(",")}
    return keys


def test_every_cited_key_is_in_the_bib_and_every_entry_is_cited():
    bib = rn.load_bibliography()
    used = cited_keys()
    assert used, "the chapters cite their sources"
    assert not used - set(bib), f"cited but not in references.bib: {sorted(used - set(bib))}"
    assert not set(bib) - used, f"in references.bib but never cited: {sorted(set(bib) - used)}"


def test_every_entry_has_a_title_and_a_way_to_find_it():
    for key, entry in rn.load_bibliography().items():
        f = entry.fields
        assert f.get("title"), key
        assert f.get("doi") or f.get("url") or f.get("journal") or f.get("booktitle"), key


BIB = {}


@pytest.fixture(autouse=True)
def small_bib(tmp_path):
    path = tmp_path / "t.bib"
    path.write_text("""
@article{two, author = {Patarasuk, Pitch and Yuan, Xin}, title = {Bandwidth {optimal}}, journal = {JPDC},
  volume = {69}, number = {2}, pages = {117--124}, year = {2009}, doi = {10.1/x}}
@article{three, author = {Thakur, Rajeev and Rabenseifner, Rolf and Gropp, William}, title = {MPICH},
  journal = {IJHPCA}, year = {2005}}
@misc{thread, author = {{NVIDIA/nccl-tests issue 212}}, title = {GitHub issue thread},
  url = {https://github.com/NVIDIA/nccl-tests/issues/212}}
@misc{accent, author = {Dao, Tri and R{\\'e}, Christopher and others}, title = {Flash}, year = {2022}}
""")
    BIB.clear()
    BIB.update(rn.load_bibliography(path))


@pytest.mark.parametrize("role, text", [
    ("{cite:p}`two`", "(Patarasuk and Yuan, 2009)"),
    ("{cite}`two`", "(Patarasuk and Yuan, 2009)"),
    ("{cite:t}`two`", "Patarasuk and Yuan (2009)"),
    ("{cite:t}`three`", "Thakur *et al.* (2005)"),
    ("{cite:ts}`three`", "Thakur, Rabenseifner, and Gropp (2005)"),
    ("{cite:ps}`three`", "(Thakur, Rabenseifner, and Gropp, 2005)"),
    ("{cite:p}`two,three`", "(Patarasuk and Yuan, 2009; Thakur *et al.*, 2005)"),
    ("{cite:p}`thread`", "(NVIDIA/nccl-tests issue 212, n.d.)"),
    ("{cite:t}`accent`", "Dao *et al.* (2022)"),
])
def test_cite_roles_read_like_the_book(role, text):
    nb = rn.reader_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"See {role}.")]), {},
                            name="t", bibliography=BIB)
    assert nb.cells[0].source == f"See {text}."


def test_a_chapter_that_cites_ends_with_its_references_in_order_of_first_citation():
    cells = [nbformat.v4.new_markdown_cell("A {cite:t}`three`, then {cite:p}`two,three`."),
             nbformat.v4.new_markdown_cell("## Summary\n\nDone.")]
    nb = rn.reader_notebook(nbformat.v4.new_notebook(cells=cells), {}, name="t", bibliography=BIB)
    last = nb.cells[-1].source
    assert last.startswith("## References\n\n")
    lines = last.split("\n")[2:]
    assert lines == [
        "- Rajeev Thakur, Rolf Rabenseifner, and William Gropp (2005). MPICH. *IJHPCA*.",
        "- Pitch Patarasuk and Xin Yuan (2009). Bandwidth optimal. *JPDC*, 69(2), 117–124. <https://doi.org/10.1/x>",
    ]
    assert not rn.raw_myst(last)


def test_a_chapter_that_cites_nothing_gets_no_references_cell():
    nb = rn.reader_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("No sources.")]), {},
                            name="t", bibliography=BIB)
    assert [c.source for c in nb.cells] == ["No sources."]


def test_an_unknown_key_stops_the_build():
    with pytest.raises(rn.ReaderError, match="citation key nope is not in references.bib"):
        rn.reader_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("{cite:p}`nope`")]), {},
                           name="t", bibliography=BIB)


def test_slides_print_the_same_citation_text():
    import slides

    reader = slides.ChapterReader("t", {}, first_exercise=1)
    reader.chapter.bibliography = BIB
    assert reader.chapter.inline("See {cite:t}`two`.") == "See Patarasuk and Yuan (2009)."


def test_an_entry_whose_title_asks_a_question_keeps_its_question_mark():
    bib = rn.load_bibliography()
    questions = [k for k, e in bib.items() if _plain_title(e).rstrip().endswith("?")]
    assert questions, "references.bib has titles ending in '?' (GitHub threads); this test needs one"
    for key in questions:
        line = rn.reference_entry(bib[key])
        assert "?." not in line, line
        assert _plain_title(bib[key]).strip() in line
    for key, entry in bib.items():
        line = rn.reference_entry(entry)
        assert ".." not in line.replace("...", ""), line


def _plain_title(entry) -> str:
    return rn._plain(entry.fields["title"])
