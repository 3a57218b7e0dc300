"""The built book in headless Chromium (Debian's), with the network off.

Every page must load with no console errors and no request leaving
127.0.0.1; chapter pages must render their widgets from the saved state and
their to_jshtml animations must advance when played.
"""

from __future__ import annotations

import shutil
from urllib.parse import urlparse

import pytest

from conftest import toc_chapters

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
    # the network is off: every host name but the local server fails to resolve
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
CHAPTERS = [f"{c}.html" for c in toc_chapters()]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed (scripts/install_chromium.sh installs Debian's package)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


class PageVisit:
    """Open a page, recording console errors and every request's host."""

    def __init__(self, browser, url):
        self.errors, self.outside = [], []
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r):
            host = urlparse(r.request.url).hostname
            if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
                r.continue_()
            else:
                self.outside.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)
        self.page.goto(url, wait_until="load")
        self.page.wait_for_timeout(1500)

    def close(self):
        self.context.close()


def _all_pages(html):
    return sorted(str(p.relative_to(html)) for p in html.rglob("*.html") if "_static" not in p.parts)


def test_every_page_loads_offline_without_errors(browser, book_server):
    base, html = book_server
    pages = _all_pages(html)
    assert "index.html" in pages and all(c in pages for c in CHAPTERS)
    problems = []
    for rel in pages:
        visit = PageVisit(browser, f"{base}/{rel}")
        if visit.errors:
            problems.append(f"{rel}: console errors {visit.errors[:3]}")
        if visit.outside:
            problems.append(f"{rel}: requests left the machine {visit.outside[:3]}")
        visit.close()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_widgets_render_from_saved_state(browser, book_server, chapter):
    base, _ = book_server
    visit = PageVisit(browser, f"{base}/{chapter}")
    page = visit.page
    page.wait_for_selector(".widget-slider", timeout=15000)
    assert page.locator(".widget-slider").count() >= 1
    # every chapter's widget draws its picture as a PNG in the saved widget state
    imgs = page.locator(".widget-image")
    assert imgs.count() >= 1
    assert imgs.first.evaluate("img => img.naturalWidth") > 100
    visit.close()


def test_ring_play_button_advances_the_step_slider(browser, book_server):
    """The Play widget is linked to the step slider in the browser (jslink),
    so it animates the slider even without a kernel; Font Awesome must not
    break the button."""
    base, _ = book_server
    visit = PageVisit(browser, f"{base}/notebooks/01_ring.html")
    page = visit.page
    play = page.locator(".widget-play").first
    play.wait_for(timeout=15000)
    readout = page.locator(".widget-play").first.locator("xpath=..").locator(".widget-readout").first
    before = readout.inner_text().strip()
    play.locator("button").first.click()
    page.wait_for_timeout(2500)
    after = readout.inner_text().strip()
    assert before == "0" and after != before, (before, after)
    assert not visit.errors
    visit.close()


ANIMATED = [c for c in CHAPTERS if c.startswith(("notebooks/01_", "notebooks/08_"))]


def test_chapters_with_animations_have_them(book_server):
    _, html = book_server
    assert "notebooks/01_ring.html" in ANIMATED
    for chapter in ANIMATED:
        assert 'class="animation"' in (html / chapter).read_text(), chapter


@pytest.mark.parametrize("chapter", ANIMATED)
def test_animations_advance_when_played(browser, book_server, chapter):
    base, _ = book_server
    visit = PageVisit(browser, f"{base}/{chapter}")
    page = visit.page
    anim = page.locator("div.animation").first
    img = anim.locator("img").first
    first_src = img.get_attribute("src")
    assert first_src and first_src.startswith("data:image/png")
    anim.locator("button[title='Play']").click()
    page.wait_for_timeout(2500)
    assert img.get_attribute("src") != first_src
    assert int(anim.locator("input.anim-slider").input_value()) > 0
    assert not visit.errors
    visit.close()
