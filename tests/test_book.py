"""The static book builds with warnings as errors and carries what readers need."""

import os
import re
import sys
from types import SimpleNamespace

import pytest

from conftest import ROOT, build_jobs, toc_chapters

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import build_book  # noqa: E402
import offline_book  # noqa: E402

pytestmark = pytest.mark.book


def test_book_builds_with_warnings_as_errors(book_build):
    code, log, html = book_build
    assert code == 0, log[-6000:]
    assert (html / "index.html").exists()


def test_every_chapter_page_exists(book_build):
    _, _, html = book_build
    chapters = toc_chapters()
    assert len(chapters) >= 4
    for chapter in chapters:
        assert (html / f"{chapter}.html").exists()


def test_widget_js_is_served_by_the_book_not_a_cdn(book_build):
    _, _, html = book_build
    page = (html / "notebooks" / "01_ring.html").read_text()
    assert "cdn.jsdelivr.net" not in page and "cdnjs.cloudflare.com" not in page
    assert re.search(r'src="\.\./_static/embed\.js', page)
    assert (html / "_static" / "embed.js").stat().st_size > 1_000_000
    # MathJax too comes from the book
    assert 'src="../_static/mathjax/tex-chtml.js' in page and "cdn.jsdelivr" not in page
    # No page loads Font Awesome's JavaScript (the theme's CSS draws its icons
    # from the web font), and the MathJax 2 shim for the widget manager loads
    # before the widget manager
    assert "fontawesome.js" not in page and (html / "_static" / "styles" / "pydata-sphinx-theme.css").exists()
    assert re.search(r'<script src="\.\./_static/offline-shims\.js', page)
    # the saved widget state is on the page, so widgets render without a kernel
    assert "application/vnd.jupyter.widget-state+json" in page
    assert page.count("application/vnd.jupyter.widget-view+json") >= 2


def test_glued_numbers_are_in_the_prose(book_build):
    _, _, html = book_build
    page = (html / "notebooks" / "01_ring.html").read_text()
    assert "glue:" not in page  # every glue role was resolved
    text = re.sub(r"<[^>]+>", " ", page)
    assert re.search(r"The ratio\s+V\s*/\s*S\s+is\s+1\.00\s+for two GPUs", text.replace("\n", " ")) or \
        re.search(r"is\s+1\.00\s+for two GPUs", text)


def test_colab_launch_button_points_at_the_repository(book_build):
    _, _, html = book_build
    page = (html / "notebooks" / "01_ring.html").read_text()
    # the published branch (scripts/publish.sh), where the reader copy sits next to the page
    assert "colab.research.google.com/github/distbook/distributed-training-book/blob/gh-pages/notebooks/01_ring.ipynb" in page


def test_no_page_names_a_cdn_for_its_scripts(book_build):
    """sphinx-thebe's inline configuration named unpkg.com on every page; nothing here uses it."""
    _, _, html = book_build
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(errors="replace")
        scripts = re.findall(r"<script[^>]*>.*?</script>", text, flags=re.S)
        bad = [s[:120] for s in scripts if re.search(r"unpkg\.com|cdn\.jsdelivr\.net|cdnjs\.cloudflare\.com", s)]
        assert not bad, (page.relative_to(html), bad)
        assert "sphinx-thebe.js" not in text


def test_exercises_are_numbered_per_chapter_in_the_pages_and_the_reader_notebooks(book_build):
    """Chapter c's exercises read "Exercise c.1", "c.2", ... on its page and in its reader copy."""
    _, _, html = book_build
    for chapter in toc_chapters():
        number = int(re.match(r"(\d+)_", chapter.rsplit("/", 1)[-1]).group(1))
        page = (html / f"{chapter}.html").read_text()
        shown = re.findall(r"Exercise (\d+(?:\.\d+)?)", page)
        if not shown:
            continue
        assert {s.split(".")[0] for s in shown} == {str(number)}, (chapter, sorted(set(shown))[:5])
        assert f"Exercise {number}.1" in page
        reader = (html.parent / "reader" / f"{chapter.rsplit('/', 1)[-1]}.ipynb").read_text()
        assert f"Exercise {number}.1" in reader and not re.search(r"Exercise (?!%d\.)\d" % number, reader)


def test_citations_link_to_the_books_bibliography(book_build):
    """{cite} in a chapter prints author and year in round brackets, as the reader notebooks do,
    linked to its entry on the References page, which lists every cited source."""
    _, _, html = book_build
    page = (html / "notebooks" / "01_ring.html").read_text()
    text = re.sub(r"<[^>]+>", "", page)
    assert "(Patarasuk and Yuan, 2009)" in text
    assert re.search(r'href="[^"]*references\.html#id\d+"', page) or "references.html#" in page
    refs = re.sub(r"<[^>]+>", "", (html / "book" / "references.html").read_text())
    assert "Bandwidth optimal all-reduce algorithms for clusters of workstations" in refs
    assert "Thakur" in refs and "nccl-tests" in refs


def test_the_build_reads_the_chapters_in_chunks_each_holding_a_share_of_them(book_build):
    """tools/build_book.py asks Sphinx to read in parallel; had an extension refused, Sphinx would have read one
    document after another (and said so, an error under -W)."""
    code, log, _ = book_build
    if code != 0 or os.environ.get("DISTBOOK_HTML") or build_jobs() == "1":
        pytest.skip("no parallel build to look at in this run")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
    chunks = re.findall(r"reading sources\.\.\. \[\s*\d+%\] (\S+) \.\. (\S+)", plain)
    assert len(chunks) >= 2, "the build read its documents one at a time"
    assert "doing serial read" not in plain
    # dealt out, the notebooks first: every chunk starts with a chapter (sorted, the first held only short pages)
    assert all(start.startswith("notebooks/") for start, _ in chunks), chunks


def test_the_build_scripts_jobs_setting_is_checked():
    assert build_book.jobs_from_env({}) == max(1, min(build_book.DEFAULT_JOBS, len(os.sched_getaffinity(0))))
    assert build_book.jobs_from_env({"DISTBOOK_BUILD_JOBS": " 1 "}) == 1
    for bad, said in (("0", "from 1 to 32, not 0"), ("33", "not 33"), ("four", "whole number from 1 to 32, not 'four'")):
        with pytest.raises(SystemExit, match="DISTBOOK_BUILD_JOBS must be") as exc:
            build_book.jobs_from_env({"DISTBOOK_BUILD_JOBS": bad})
        assert said in str(exc.value)


def test_the_chapters_are_dealt_over_the_chunks_sphinx_will_cut():
    from sphinx.util.parallel import make_chunks

    pages = [f"book/p{k}" for k in range(5)]
    chapters = [f"notebooks/{k:02d}" for k in range(1, 15)]
    env = SimpleNamespace(doc2path=lambda doc: f"/book/{doc}.ipynb" if doc.startswith("notebooks/") else f"/{doc}.md")
    for jobs in (2, 3, 4, 6, 8):
        docs = sorted(pages + chapters)
        offline_book._chapters_spread_over_chunks(SimpleNamespace(parallel=jobs), env, docs)
        assert sorted(docs) == sorted(pages + chapters)  # the same documents, in another order
        cut = make_chunks(docs, jobs)
        assert [len(c) for c in cut] == [len(c) for c in make_chunks(sorted(docs), jobs)]
        for size in {len(c) for c in cut}:  # chunks of one size hold as many chapters, give or take one
            counts = [sum(d.startswith("notebooks/") for d in c) for c in cut if len(c) == size]
            assert max(counts) - min(counts) <= 1, (jobs, cut)
    one = sorted(pages + chapters)
    offline_book._chapters_spread_over_chunks(SimpleNamespace(parallel=1), env, one)
    assert one == sorted(pages + chapters)  # one process: Sphinx's own order


def test_a_chapter_failing_in_a_reading_process_is_shown_with_its_own_traceback(capsys):
    """Sphinx's parent process names only the notebook; the reading process's traceback holds the cell."""
    from sphinx.errors import SphinxParallelError

    said = "CellExecutionError: An error occurred while executing the following cell:\nsrun -N2 ..."

    def failing(*args, jobs, **kwargs):
        assert jobs == 3
        return SphinxParallelError("ExecutionError: notebooks/09_mini_cluster.ipynb", said)

    result = build_book._build_saying_why(failing, 3, "src", "out")
    assert isinstance(result, SphinxParallelError)  # Jupyter Book still reports it and fails the build
    assert said in capsys.readouterr().err
    assert build_book._build_saying_why(lambda *a, jobs, **k: 0, 3) == 0
