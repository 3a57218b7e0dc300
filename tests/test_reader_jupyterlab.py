"""A reader notebook opened in real JupyterLab, in headless Chromium, reads like the book.

The glued numbers show, no raw MyST shows, the Takeaway box renders as a block
quote, and each solution starts folded under its heading (JupyterLab's
collapsible headings, from the notebook's ``jp-MarkdownHeadingCollapsed``).
A screenshot of each view is left in the test's temporary folder (path printed).
"""

from __future__ import annotations

import re
import shutil
import sys

import pytest

from conftest import JupyterLab

pytestmark = [pytest.mark.browser, pytest.mark.book]

pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (it is in requirements.txt)")
pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def lab(built, tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    work = root / "work"
    work.mkdir()
    shutil.copy2(built / "reader" / "01_ring.ipynb", work / "01_ring.ipynb")
    server = JupyterLab(sys.executable, root, work)
    yield server.url, server.token, root
    server.stop()


def test_reader_notebook_in_jupyterlab(lab, browser):
    url, token, root = lab
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/lab/tree/01_ring.ipynb?token={token}&reset")
    page.wait_for_selector(".jp-MarkdownCell .jp-RenderedMarkdown h2", timeout=90_000)
    page.wait_for_timeout(2000)  # let MathJax typeset
    shot = root / "jupyterlab_01_ring.png"
    page.screenshot(path=str(shot))
    notebook = page.locator(".jp-Notebook").first
    text = notebook.inner_text()
    # glued numbers in the prose, no raw MyST anywhere
    assert re.search(r"The ratio .* is 1\.00 for two GPUs", text.replace("\n", " "))
    for raw in ("{glue", ":::", "{exercise}", "{solution", ":class:", "{note}"):
        assert raw not in text, raw
    # admonitions are block quotes with a bold title
    assert page.locator(".jp-RenderedMarkdown blockquote strong", has_text="Takeaway").count() >= 1
    # exercises are headings; each solution heading is there, its body folded away
    assert page.locator(".jp-RenderedMarkdown h3", has_text=re.compile(r"^Exercise 1\.1\b")).count() == 1
    solution = page.locator(".jp-MarkdownCell", has_text=re.compile(r"Solution to Exercise 1\.1\b")).first
    solution.scroll_into_view_if_needed()
    assert solution.is_visible()
    answer = page.locator(".jp-RenderedMarkdown p", has_text="The buffer is").first  # solution 1's text
    assert not answer.is_visible()
    hidden = page.locator(".jp-showHiddenCellsButton")
    assert hidden.count() >= 3, "each solution shows a 'cells hidden' button"
    page.screenshot(path=str(root / "jupyterlab_01_ring_solutions.png"))
    hidden.first.click()  # unfold the first solution: its text appears
    page.wait_for_timeout(1500)
    page.screenshot(path=str(root / "jupyterlab_01_ring_unfolded.png"))
    assert answer.is_visible()
    context.close()
    print(f"\nscreenshots: {shot} and {root / 'jupyterlab_01_ring_solutions.png'}")
