"""The workshop's slides, tried the way an instructor teaches from them: in headless Chromium, from
``file://``, with the network off.

- the animation players' buttons show icons (a deck has no icon font to draw Font Awesome's);
- no slide is only a heading, every formula is typeset, and every slide fits the screen;
- every slide has speaker notes in plain words, taken from the chapter's own prose;
- each deck is titled with its chapter's title;
- each widget a chapter shows has a "Try it" slide: the picture the static book opens it with,
  embedded in the deck, its alt text, the controls a reader moves, and nothing outside the deck.

The decks under test are the book build's (``_build/slides``, written by
``book/_ext/workshop_kit.py``). To test decks without building the book, make
them from an earlier build's executed chapters and point ``DISTBOOK_SLIDES`` at
them, and ``DISTBOOK_HTML`` at that build's pages (the Try-it tests check each
widget's picture against the frames there)::

    .venv/bin/python tools/slides.py --executed _build/jupyter_execute/notebooks --out /tmp/slides
    DISTBOOK_SLIDES=/tmp/slides DISTBOOK_HTML=_build/html .venv/bin/python -m pytest tests/test_slides.py
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
#: roughly what these tests cost on CI's machine (the decks made from the build, then read in Chromium, on one
#: worker): tests/conftest.py starts the longest first among the tests that read the build
BOOK_PHASE_SECONDS = 190
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


def test_a_sentence_that_only_announces_the_next_does_not_stand_for_its_paragraph():
    nb = small_chapter(f"# 1. T\n\n{LEARN}",
                       "## Costs\n\nTwo things stand out. The ring sends the fewest bytes of all of them.\n\n"
                       "Now the bytes sent. Each rank ships almost its whole buffer out twice.\n\n"
                       "One message: latency plus bytes over the bandwidth of the link.")
    _, sections, _ = slides.chapter_slides(nb, {}, "01_x")
    points = sections[1].split('<aside class="notes">')[0]
    assert "The ring sends the fewest bytes" in points and "Each rank ships" in points
    assert "Two things stand out" not in points and "Now the bytes sent" not in points
    assert "One message: latency plus bytes" in points  # a colon makes it a statement, not an announcement


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


# --- widgets: a "Try it" slide with the picture the static book opens each one with ---------


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def chapters_built(request, slides_dir) -> tuple[Path, Path]:
    """(executed chapters, built HTML chapters) of the build the decks were made from."""
    if os.environ.get("DISTBOOK_SLIDES") and not os.environ.get("DISTBOOK_HTML"):
        pytest.fail("DISTBOOK_SLIDES names decks made from an earlier build: set DISTBOOK_HTML to that build's "
                    "_build/html as well, so the widgets' pictures can be checked against it")
    code, log, html_dir = request.getfixturevalue("book_build")  # DISTBOOK_HTML: no build, that one
    if code != 0:
        pytest.fail("the book did not build:\n" + log[-4000:])
    return html_dir.parent / "jupyter_execute" / "notebooks", html_dir / "notebooks"


def shown_widgets(nb) -> list[dict]:
    """Each widget a chapter shows, in order: the models under it (every frame, not only the first
    view's), read here without tools/slides.py."""
    models = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    found = []
    for cell in nb.cells:
        hidden = {"remove-output", "remove-cell", "hide-output"} & set(cell.metadata.get("tags", []))
        if cell.cell_type != "code" or hidden:
            continue
        for output in cell.get("outputs", []):
            if WIDGET_VIEW not in output.get("data", {}):
                continue
            under, todo = {}, [output["data"][WIDGET_VIEW]["model_id"]]
            while todo:
                mid = todo.pop()
                if mid in under or mid not in models:
                    continue
                under[mid] = models[mid]
                todo += [c[len("IPY_MODEL_"):] for c in models[mid]["state"].get("children", [])]
            found.append(under)
    return found


def try_it_sections(deck_html: str) -> list[str]:
    return re.findall(r'<section class="try-it-slide">.*?</section>', deck_html, re.S)


@pytest.mark.slow
@pytest.mark.book
def test_every_widget_has_a_try_it_slide_with_its_first_view_embedded(slides_dir, chapters_built):
    """One "Try it" slide per widget a chapter shows, in order. Its picture is embedded (``data:``) and is
    the frame the static book loads with the page (the one frame not ``loading="lazy"``: the first
    view), with that frame's alt text; it names the controls a reader moves, and not the greyed-out ones."""
    import base64

    executed, pages = chapters_built
    total = 0
    for stem in STEMS:
        nb = nbformat.read(executed / f"{stem}.ipynb", as_version=4)
        widgets = shown_widgets(nb) if "widgets" in nb.metadata else []
        sections = try_it_sections((slides_dir / f"{stem}.html").read_text())
        assert len(sections) == len(widgets), (stem, f"{len(widgets)} widgets, {len(sections)} Try-it slides")
        total += len(widgets)
        for k, (section, models) in enumerate(zip(sections, widgets)):
            where = f"{stem} widget {k + 1}"
            imgs = re.findall(r"<img\b[^>]*>", section)
            assert len(imgs) == 1, (where, len(imgs))
            src = re.search(r'src="([^"]*)"', imgs[0]).group(1)
            alt = html.unescape(re.search(r'alt="([^"]*)"', imgs[0]).group(1))
            assert src.startswith("data:image/png;base64,"), (where, src[:60])
            first = [re.search(r"<img\b[^>]*>", m["state"]["value"]).group(0) for m in models.values()
                     if m["model_name"] == "HTMLModel" and 'class="distlib-frame"' in m["state"].get("value", "")
                     and 'loading="lazy"' not in m["state"]["value"]]
            assert len(first) == 1, (where, f"{len(first)} frames load with the page")
            frame = pages / re.search(r'src="([^"]*)"', first[0]).group(1)
            assert base64.b64decode(src.split(",", 1)[1]) == frame.read_bytes(), (where, "not the first view")
            first_alt = html.unescape(re.search(r'alt="([^"]*)"', first[0]).group(1))
            assert alt.strip() and alt == " ".join(first_alt.split()), (where, alt, first_alt)
            named = set(re.findall(r"<li><strong>([^<]+)</strong>", section))
            live = {m["state"]["description"] for m in models.values()
                    if m["state"].get("description") and "disabled" in m["state"] and not m["state"]["disabled"]}
            fixed = {m["state"]["description"] for m in models.values()
                     if m["state"].get("description") and m["state"].get("disabled")}
            assert named & live, (where, "names no control", named, live)
            assert not named & fixed, (where, "a greyed-out control is named as one to move", named & fixed)
            notes = section.split('<aside class="notes">')[1]
            assert len(re.sub(r"<[^>]+>", " ", notes).split()) >= 8, (where, notes)
    assert total >= 9, f"only {total} widgets in the whole book"


@pytest.mark.slow
@pytest.mark.browser
def test_try_it_slides_show_their_picture_whole_offline(slides_dir, browser):
    """Each Try-it slide, from ``file://`` with the network off: the picture loads (from the deck itself:
    nothing the deck names lies outside its folder), is shown whole and large enough to read beside
    its text, and nothing spills off the slide."""
    decks = 0
    for stem in STEMS:
        path = slides_dir / f"{stem}.html"
        source = path.read_text()
        if 'class="try-it-slide"' not in source:
            continue
        decks += 1
        for named in re.findall(r'(?:src|href)="([^"]+)"', source):
            if named.startswith(("data:", "#")):
                continue
            assert not re.match(r"[a-z][\w+.-]*:|//|/", named, re.I), (stem, "names something outside the deck", named)
            target = (slides_dir / named.split("#")[0]).resolve()
            assert target.is_relative_to(slides_dir.resolve()) and target.exists(), (stem, named)
        visit = open_deck(browser, path)
        page = visit.page
        slides_at = page.evaluate("() => Reveal.getSlides()"
                                  ".map((s, k) => s.classList.contains('try-it-slide') ? k : -1).filter(k => k >= 0)")
        assert slides_at, stem
        for k in slides_at:
            page.evaluate(f"() => Reveal.slide({k})")
            facts = page.evaluate("""() => {
              const s = Reveal.getCurrentSlide(), img = s.querySelector('img.widget-frame');
              const side = s.querySelector('.try-side'), scale = Reveal.getScale();
              const r = e => { const b = e.getBoundingClientRect();
                               return {l: b.left, t: b.top, r: b.right, b: b.bottom, h: b.height / scale}; };
              return {loaded: !!img && img.complete && img.naturalWidth > 0, img: img && r(img), side: side && r(side),
                      slide: r(s), height: s.scrollHeight, width: s.scrollWidth,
                      alt: img ? img.alt : '', controls: s.querySelectorAll('.widget-controls li').length};
            }""")
            where = (stem, k)
            assert facts["loaded"], (where, "the picture did not load")
            assert facts["alt"].strip() and facts["controls"] >= 1, (where, facts)
            img, side, slide = facts["img"], facts["side"], facts["slide"]
            assert img["l"] >= 0 and img["t"] >= 0 and img["r"] <= 1280 and img["b"] <= 720, (where, "cut off", img)
            assert 250 <= img["h"] <= 640, (where, "picture too small or too big for the slide", img)
            assert side["l"] >= img["r"] - 1, (where, "text over the picture", img, side)
            assert facts["height"] <= SIZE["height"] and facts["width"] <= SIZE["width"], (where, facts)
        assert not visit.outside, (stem, visit.outside[:3])
        assert not visit.errors, (stem, visit.errors[:3])
        assert all(u.startswith(("file:", "data:", "blob:")) for u in visit.requested), (stem, visit.requested[:3])
        visit.close()
    assert decks >= 1, "no deck has a Try-it slide"


# --- widgets, on small chapters (no browser, no book build) --------------------------


def ref(mid: str) -> str:
    return f"IPY_MODEL_{mid}"


def widget_chapter(tmp_path, *, picture: bool = True, disabled: bool = False, keep_state: bool = True):
    """A chapter that shows a widget the way the static book saves one: controls, then a Stack whose
    selected frame (the first view) is eager and whose other frame is lazy; frames are files."""
    frames = tmp_path / "pages" / "widget-frames"
    frames.mkdir(parents=True)
    (frames / "first.png").write_bytes(b"\x89PNG first view")
    (frames / "other.png").write_bytes(b"\x89PNG another frame")

    def frame(name, lazy):
        return {"model_name": "HTMLModel", "state": {"value": (
            f'<picture class="distlib-picture"><source media="(max-width: 651px)" srcset="widget-frames/n-{name}.png">'
            f'<img class="distlib-frame" src="widget-frames/{name}.png" alt="four GPUs, step 0 &amp; no bytes sent" '
            f'{"loading=" + chr(34) + "lazy" + chr(34) + " " if lazy else ""}width="420" height="440"></picture>')}}

    models = {
        "root": {"model_name": "VBoxModel", "state": {"children": [ref("controls"), ref("stack")]}},
        "controls": {"model_name": "VBoxModel",
                     "state": {"children": [ref("p"), ref("play"), ref("step"), ref("mfu")]}},
        "p": {"model_name": "SelectionSliderModel",
              "state": {"description": "GPUs (p)", "index": 1, "_options_labels": ["2", "4", "8"],
                        "disabled": disabled}},
        "play": {"model_name": "PlayModel", "state": {"description": "Play step", "value": 0, "disabled": disabled}},
        "step": {"model_name": "IntSliderModel", "state": {"description": "step", "value": 0, "disabled": disabled}},
        "mfu": {"model_name": "FloatSliderModel", "state": {"description": "MFU", "value": 0.4, "disabled": True}},
        "stack": {"model_name": "StackModel", "state": {"children": [ref("lazy"), ref("eager")], "selected_index": 1}},
        "lazy": frame("other", True),
        "eager": frame("first", False),
    }
    if not picture:
        models["stack"]["state"]["children"] = []
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# 1. The ring\n\n{LEARN}"),
                nbformat.v4.new_markdown_cell("## Steps\n\nThe ring moves chunks. It never stops.\n\n"
                                              "$$\n2\\frac{p-1}{p}n\n$$"),
                nbformat.v4.new_markdown_cell("Drag the **step** slider to watch the chunks move. Each box is a "
                                              "GPU.\n\nAmber cells hold partial sums, green ones the full sum.")]
    cell = nbformat.v4.new_code_cell("w")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        WIDGET_VIEW: {"model_id": "root", "version_major": 2, "version_minor": 0}, "text/plain": "RingWidget(...)"})]
    nb.cells.append(cell)
    nb.cells.append(nbformat.v4.new_markdown_cell("## Later\n\nAnother idea, with a sentence. And one more."))
    if keep_state:
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
            "state": {k: {"model_module": "@jupyter-widgets/controls", **m} for k, m in models.items()},
            "version_major": 2, "version_minor": 0}}
    return nb, tmp_path / "pages"


def test_a_widget_gets_a_try_it_slide_with_its_first_view_and_the_controls_to_move(tmp_path):
    import base64

    nb, pages = widget_chapter(tmp_path)
    _, sections, _ = slides.chapter_slides(nb, {}, "01_x", pages=pages)
    tried = [s for s in sections if 'class="try-it-slide"' in s]
    assert len(tried) == 1
    slide = tried[0]
    assert "<h2>Try it: Steps</h2>" in slide
    src = re.search(r'<img class="widget-frame" src="([^"]+)"', slide).group(1)
    assert base64.b64decode(src.removeprefix("data:image/png;base64,")) == b"\x89PNG first view"
    assert 'alt="four GPUs, step 0 &amp; no bytes sent"' in slide
    assert "<li><strong>GPUs (p)</strong> at 4</li>" in slide
    assert "<li><strong>step</strong> at 0 (or press Play)</li>" in slide
    assert "MFU" not in slide.split('<aside class="notes">')[0]  # greyed out: not one to move
    notes = slide.split('<aside class="notes">')[1]
    assert "Drag the <strong>step</strong> slider to watch the chunks move." in notes
    assert "The ring moves chunks" not in notes  # another cell's prose
    assert "As it opens, the widget reads: four GPUs, step 0 &amp; no bytes sent" in notes
    # the slide comes where the widget is; the other slides are those made without the widget, except that
    # the prose telling the reader what to move is the widget slide's alone (not a second slide or note)
    without = nbformat.from_dict(nb)
    without.cells[3].outputs = []
    _, before, _ = slides.chapter_slides(without, {}, "01_x", pages=pages)
    others = [s for s in sections if s is not slide]
    title = lambda html: re.search(r"<h\d[^>]*>(.*?)</h\d>", html, re.S).group(1)  # noqa: E731
    assert [title(s) for s in others] == [title(s) for s in before if "Drag the" not in s.split("<aside")[0]]
    assert not any("Drag the" in s for s in others), "the widget's prose is on its own slide only"
    assert any("Drag the" in s for s in before)
    assert sections.index(slide) == 2 and "<h2>Later</h2>" in sections[3]


@pytest.mark.parametrize("case", ["no picture", "no state"])
def test_a_widget_with_no_picture_says_so_in_one_line(tmp_path, case):
    nb, pages = widget_chapter(tmp_path, picture=False, disabled=True, keep_state=case != "no state")
    _, sections, _ = slides.chapter_slides(nb, {}, "01_x", pages=pages)
    slide = next(s for s in sections if 'class="try-it-slide"' in s)
    body = slide.split('<aside class="notes">')[0]
    assert "<img" not in body
    assert len(re.findall(r'<p class="no-picture">[^\n]+</p>', body)) == 1
    assert "Drag the <strong>step</strong> slider" in body  # what the chapter asks, still on the slide
    if case == "no picture":
        assert "<li><strong>GPUs (p)</strong></li>" in body  # named, as controls that need a kernel


def test_a_widget_picture_missing_from_the_built_pages_stops_the_slides(tmp_path):
    nb, pages = widget_chapter(tmp_path)
    (pages / "widget-frames" / "first.png").unlink()
    with pytest.raises(slides.SlideError, match="first.png"):
        slides.chapter_slides(nb, {}, "01_x", pages=pages)
