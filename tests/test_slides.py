"""The workshop's slides, tried the way an instructor teaches from them: in headless Chromium, from
``file://``, with the network off.

- the animation players' buttons show icons (a deck has no icon font to draw Font Awesome's);
- no slide is only a heading, every formula is typeset, and every slide fits the screen;
- every slide has speaker notes in plain words, taken from the chapter's own prose;
- each deck is titled with its chapter's title.

The decks under test are the book build's (``_build/slides``, written by
``book/_ext/workshop_kit.py``). To test decks without building the book, make
them from an earlier build's executed chapters and point ``DISTBOOK_SLIDES`` at
them::

    .venv/bin/python tools/slides.py --executed _build/jupyter_execute/notebooks --out /tmp/slides
    DISTBOOK_SLIDES=/tmp/slides .venv/bin/python -m pytest tests/test_slides.py
"""

from __future__ import annotations

import html
import io
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, PageVisit, toc_chapters

sys.path.insert(0, str(ROOT / "tools"))
import slides  # noqa: E402

STEMS = [Path(c).name for c in toc_chapters()]
SIZE = {"width": 1280, "height": 800}  # the size the decks are laid out at (Reveal.initialize)
RAW_MYST = re.compile(r"\{glue|:::|```\{|\{[a-z][\w:-]*\}`|\{(ref|numref|doc|eq|math|term)\}|^\([\w-]+\)=|"
                      r":label:|:class:|\{exercise|\{solution", re.M)
RAW_TEX = re.compile(r"\\[A-Za-z]+|\\[()\[\]]|\$[^$\s][^$]*\$")


@pytest.fixture(scope="module")
def slides_dir(request) -> Path:
    given = os.environ.get("DISTBOOK_SLIDES")
    if given:
        return Path(given)
    code, log, html_dir = request.getfixturevalue("book_build")
    if code != 0:
        pytest.fail("the book did not build:\n" + log[-4000:])
    return html_dir.parent / "slides"


def open_deck(browser, path: Path) -> PageVisit:
    """A deck at 1280 x 720, ready: reveal.js started, every formula typeset, transitions off."""
    visit = PageVisit(browser, path.as_uri(), context={"viewport": {"width": 1280, "height": 720}}, settle_ms=0)
    page = visit.page
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
    page.evaluate("() => MathJax.startup.promise")
    page.evaluate("() => Reveal.configure({transition: 'none', backgroundTransition: 'none'})")
    return visit


SLIDE_FACTS = """() => {
  const s = Reveal.getCurrentSlide();
  const body = s.cloneNode(true);
  body.querySelectorAll('aside.notes, h1, h2, h3, .kicker, script, style').forEach(e => e.remove());
  const notes = s.querySelector('aside.notes');
  const prose = notes ? notes.cloneNode(true) : null;
  if (prose) prose.querySelectorAll('code, pre').forEach(e => e.remove());
  const shown = [...body.querySelectorAll('img, svg:not(.anim-icon), mjx-container, table, pre, .animation')];
  return {
    title: (s.querySelector('h1, h2') || {textContent: ''}).textContent.trim(),
    words: body.textContent.trim().split(/\\s+/).filter(Boolean).length,
    shown: shown.length,
    height: s.scrollHeight, width: s.scrollWidth,
    text: s.innerText,
    untypeset: s.querySelectorAll('span.math:not(:has(mjx-container)), div.math:not(:has(mjx-container))').length,
    notes: notes ? notes.textContent.trim() : null,
    notes_prose: prose ? prose.textContent : '',
    speaker_notes: Reveal.getSlideNotes(s) || '',
  };
}"""


@pytest.fixture(scope="module")
def decks(slides_dir, browser) -> dict:
    """Every slide of every deck as the browser shows it: {stem: {"title", "slides": [facts], ...}}."""
    found = {}
    for stem in STEMS:
        path = slides_dir / f"{stem}.html"
        assert path.exists(), f"no deck for {stem} in {slides_dir}"
        visit = open_deck(browser, path)
        page = visit.page
        slides = []
        for k in range(page.evaluate("() => Reveal.getTotalSlides()")):
            page.evaluate(f"() => Reveal.slide({k})")
            slides.append(page.evaluate(SLIDE_FACTS))
        found[stem] = {"title": page.title(), "slides": slides, "errors": list(visit.errors),
                       "outside": list(visit.outside)}
        visit.close()
    return found


def chapter_title(stem: str) -> str:
    """The chapter's H1, from its source notebook, in plain words (Markdown marks dropped)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    heading = next(line for line in first.source.splitlines() if line.startswith("# "))
    return re.sub(r"[`*_$]", "", heading[2:]).strip()


def five_word_runs(text: str) -> set:
    words = re.findall(r"[a-z]+", text.lower())
    return {" ".join(words[i:i + 5]) for i in range(len(words) - 4)}


# --- the animation players ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
def test_the_slides_controls_carry_icons(slides_dir, browser):
    """Each of an animation player's nine buttons draws a glyph of its own: something of a real size,
    with ink in it, and no two alike (matplotlib's player names Font Awesome icons, which a deck
    opened from a file has no font for: there they drew nothing). The buttons still work."""
    players = 0
    for stem in STEMS:
        source = (slides_dir / f"{stem}.html").read_text()
        if 'class="animation"' not in source:
            continue
        assert not re.search(r'<i class="fa\b', source), f"{stem}: Font Awesome markup left in the deck"
        visit = open_deck(browser, slides_dir / f"{stem}.html")
        for k in visit.page.evaluate("() => Reveal.getSlides().map((s, k) => s.querySelector('.animation') ? k : -1)"
                                     ".filter(k => k >= 0)"):
            check_player(visit.page, f"{stem} slide {k}", k)
            players += 1
        assert not visit.outside, visit.outside[:3]
        assert not visit.errors, visit.errors[:3]
        visit.close()
    assert players >= 1, "no deck has an animation"


def check_player(page, where: str, k: int):
    from PIL import Image

    page.evaluate(f"() => Reveal.slide({k})")
    buttons = page.locator(".present .anim-buttons button")
    assert buttons.count() == 9, where
    inks = set()
    for b in range(9):
        button = buttons.nth(b)
        label = button.get_attribute("aria-label")
        glyph = button.locator("svg, i").first
        box = glyph.bounding_box()
        assert box and box["width"] >= 8 and box["height"] >= 8, f"{where}: the {label!r} button has no glyph"
        shot = Image.open(io.BytesIO(button.screenshot())).convert("L")
        w, h = shot.size
        inner = shot.crop((4, 4, w - 4, h - 4))  # inside the button's border
        ink = sum(inner.histogram()[:110])  # dark pixels
        assert ink >= 12, f"{where}: the {label!r} button shows no icon ({ink} dark pixels)"
        inks.add(inner.tobytes())
    assert len(inks) == 9, f"{where}: two buttons show the same icon"
    buttons.nth(7).click()  # "Last frame" moves the slider to the end
    slider = page.locator(".present input.anim-slider")
    assert slider.input_value() == slider.get_attribute("max"), where


# --- what each slide holds --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
def test_no_slide_is_only_a_heading(decks):
    bare = [(stem, k, s["title"]) for stem, d in decks.items() for k, s in enumerate(d["slides"])
            if s["words"] < 3 and not s["shown"]]
    assert not bare, bare


@pytest.mark.slow
@pytest.mark.browser
def test_every_formula_is_typeset_and_every_slide_fits(decks):
    for stem, deck in decks.items():
        assert not deck["errors"], (stem, deck["errors"][:3])
        assert not deck["outside"], (stem, deck["outside"][:3])
        for k, s in enumerate(deck["slides"]):
            assert s["untypeset"] == 0, (stem, k, s["title"])
            assert not re.search(r"\\\(|\\\[|\\frac|\\text", s["text"]), (stem, k, s["title"], "raw TeX shown")
            assert s["height"] <= SIZE["height"] and s["width"] <= SIZE["width"], (stem, k, s["title"], s)


@pytest.mark.slow
@pytest.mark.browser
def test_every_slide_has_speaker_notes_from_the_chapter_in_plain_words(decks):
    for stem, deck in decks.items():
        nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        prose = five_word_runs("\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))
        for k, s in enumerate(deck["slides"]):
            where = (stem, k, s["title"])
            assert s["notes"] is not None, (*where, "no <aside class='notes'>")
            assert len(s["notes"].split()) >= 8, (*where, s["notes"])
            assert s["speaker_notes"].strip(), (*where, "the speaker view gets no notes")
            assert not RAW_MYST.search(s["notes"]), (*where, RAW_MYST.search(s["notes"]).group(0))
            raw_tex = RAW_TEX.search(s["notes_prose"])
            assert not raw_tex, (*where, raw_tex.group(0))
            assert five_word_runs(s["notes"]) & prose, (*where, "notes not from the chapter", s["notes"][:200])


# --- titles -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
def test_every_deck_is_titled_with_its_chapter_title(decks, slides_dir):
    index = (slides_dir / "index.html").read_text()
    for stem, deck in decks.items():
        title = chapter_title(stem)
        assert re.fullmatch(r"\d+\. [A-Z][^`*_$#{}\\]+", title), title
        assert deck["title"] == title, (stem, deck["title"])
        assert deck["slides"][0]["title"] == title, (stem, deck["slides"][0]["title"])
        assert f'href="{stem}.html">{html.escape(title)}</a>' in index, stem
    # chapter 9's deck was once titled by a shell comment in one of its code blocks
    assert decks["09_mini_cluster"]["title"] == "9. A cluster on one machine"


# --- the rules, on small chapters (no browser, no book build) ----------------------


def small_chapter(*markdown: str, outputs=()):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(m) for m in markdown]
    for html_output in outputs:
        cell = nbformat.v4.new_code_cell("")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": html_output})]
        nb.cells.append(cell)
    return nb


LEARN = ":::{admonition} What you will learn\n- one thing\n:::\n\nThe chapter starts with a sentence of its own."


def test_a_comment_in_a_code_block_is_neither_the_title_nor_a_slide():
    nb = small_chapter(f"# 3. A title\n\n{LEARN}",
                       "## Running it\n\nStart one agent per node:\n\n```bash\n# on node 0 and on node 1\n"
                       "torchrun --nnodes 2\n```\n")
    title, sections, _ = slides.chapter_slides(nb, {}, "03_x")
    assert title == "3. A title"
    assert not any("<h1>on node 0" in s or "<h2>on node 0" in s for s in sections)
    assert "# on node 0 and on node 1" in sections[1]  # shown as code, under its section


def test_a_heading_with_nothing_under_it_heads_the_next_slide():
    nb = small_chapter(f"# 1. T\n\n{LEARN}", "## Worked problems\n\n### Parts\n\nEvery part has a sentence. "
                       "And a second one.")
    _, sections, _ = slides.chapter_slides(nb, {}, "01_x")
    assert len(sections) == 2
    assert '<p class="kicker">Worked problems</p><h2>Parts</h2>' in sections[1]


def test_a_formula_inside_a_sentence_is_shown_inside_it_and_the_notes_read_it_out():
    nb = small_chapter(f"# 1. T\n\n{LEARN}",
                       "## Bytes\n\nEach rank sends\n\n$$\n2\\frac{p-1}{p}n\n$$\n\nbytes in all. Then it stops.")
    _, sections, _ = slides.chapter_slides(nb, {}, "01_x")
    slide = sections[1]
    assert slide.index("Each rank sends") < slide.index("\\[2\\frac{p-1}{p}n\\]") < slide.index("bytes in all.")
    notes = slide.split('<aside class="notes">')[1]
    assert "2(p−1)/p·n" in notes and "\\frac" not in notes


def test_a_glued_1_at_the_start_of_a_line_does_not_begin_a_list():
    nb = small_chapter(f"# 1. T\n\n{LEARN}", "## Loads\n\nThe worst load is\n{glue:text}`worst`. With the other "
                       "order it is higher.")
    _, sections, _ = slides.chapter_slides(nb, {"worst": "1"}, "01_x")
    assert "<ol" not in sections[1] and "The worst load is 1." in sections[1]


@pytest.mark.parametrize("tex, plain", [
    (r"2\frac{p-1}{p}n\beta", "2(p−1)/p·nβ"),
    (r"T = 2(p-1)\,\alpha + 2\frac{p-1}{p}\,\frac{n}{B_\text{link}}", "T = 2(p−1) α + 2(p−1)/p n/B_link"),
    (r"n^* = \alpha/\beta = \alpha B", "n* = α/β = α B"),
    (r"2\lceil\log_2 p\rceil", "2⌈log₂ p⌉"),
    (r"3.14 \times 10^{23}", "3.14 × 10²³"),
    (r"\frac{\partial L}{\partial W} = X^\top \frac{\partial L}{\partial Y}", "∂L/∂W = Xᵀ ∂L/∂Y"),
])
def test_formulas_in_the_notes_are_written_as_plain_text(tex, plain):
    assert slides.plain_tex(tex).replace("\u2009", " ") == plain  # \, is a thin space


def test_the_player_icons_are_drawn_and_an_unknown_one_stops_the_build():
    page = "".join(f'<button><i class="fa fa-{name}"></i></button>' for name in
                   ("minus", "fast-backward", "step-backward", "play fa-flip-horizontal", "pause", "play",
                    "step-forward", "fast-forward", "plus"))
    drawn = slides.player_with_icons(page)
    assert "<i " not in drawn and drawn.count('<svg class="anim-icon"') == 9
    assert len(set(re.findall(r' d="([^"]+)"', drawn))) == 9
    with pytest.raises(slides.SlideError, match="fa-repeat"):
        slides.player_with_icons('<i class="fa fa-repeat"></i>')
