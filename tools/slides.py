"""Slides for every chapter, made from the executed chapters of the book build.

    python tools/slides.py [--executed DIR] [--out DIR] [--html DIR]

Reads the notebooks the book build executed (``_build/jupyter_execute/
notebooks/*.ipynb``, with their ``*.glue.json``) and writes one reveal.js deck
per chapter into ``_build/slides/`` plus an ``index.html``. A deck is made to
teach from:

- the title slide: the chapter's H1, in plain words, and "What you will learn";
- a slide per idea. Each section gives one slide for every figure, animation,
  table, display formula, short code listing, list, takeaway and caution it
  holds, under the section's title and led by the chapter's own sentence that
  introduces it (a sentence a formula interrupts is shown around it). A
  section with none of these gives one slide of its key sentences: the first
  sentence of each paragraph. No slide is only a heading: a heading with
  nothing under it heads the next section's slides instead;
- a "Try it" slide for each widget a chapter shows, where the chapter says "move the
  slider...": the picture the static book opens the widget with (its first view: the frame
  of the build's grid at the controls' start values, a file beside the built page in
  ``_build/html/notebooks/widget-frames/``, embedded here as a ``data:`` URI), the controls a
  reader moves with the values they open at, the chapter's sentence on what to do, and in the
  notes the paragraph(s) of the cell before it that say what to move and what to look for. A
  widget whose state keeps no picture says so in one line;
- each worked problem's question, numbered as in the book, and the summary;
- speaker notes (``<aside class="notes">``, the ``s`` key) on every slide:
  the chapter's prose for that slide, the first sentences of each paragraph,
  glued numbers filled in and formulas written as plain text;
- the animations' players with their buttons drawn as inline SVG: matplotlib's
  player asks for Font Awesome, an icon font a deck opened from a file has
  not got (and a browser would refuse to load one from ``file://``).

Glued numbers are filled in as the reader notebooks fill them in
(``tools/reader_notebooks.py``). The Markdown is rendered here with
markdown-it, the parser MyST itself uses, so the decks need no Markdown
plugin; MathJax typesets the formulas in the browser. reveal.js and MathJax
are copied next to the decks, so they open from a file with no network.
``book/_ext/workshop_kit.py`` runs this after every HTML build;
``tests/test_slides.py`` opens the decks in a browser.

This module writes the deck's files (:func:`build`, the command line); the
work is done beside it, by concern:

- ``slides_text.py``: Markdown, TeX as plain text, sentences;
- ``slides_chapter.py``: reading the executed chapter (items, widgets' first views, the player's icons);
- ``slides_choose.py``: choosing a slide's lead and key sentences, and its speaker notes;
- ``slides_render.py``: the slides of a chapter and the reveal.js page.
"""

from __future__ import annotations

import argparse
import html
import shutil
import sys
from pathlib import Path

import nbformat

from reader_notebooks import load_glue
from slides_chapter import ChapterReader, player_with_icons, widget_states
from slides_render import PAGE, DeckMaker
from slides_text import SlideError, plain_tex

__all__ = ["SlideError", "ChapterReader", "chapter_slides", "build", "main", "plain_tex", "player_with_icons"]

ROOT = Path(__file__).resolve().parents[1]
REVEAL = ROOT / "book" / "vendor-slides" / "reveal.js"
MATHJAX = ROOT / "book" / "vendor-slides" / "mathjax" / "tex-svg-full.js"  # no web fonts: slides open from file://


# ----------------------------------------------------------------------------
# Decks
# ----------------------------------------------------------------------------


def chapter_slides(nb, values: dict, name: str, *, first_exercise: int = 1,
                   pages: Path | None = None) -> tuple[str, list[str], int]:
    """The title, the slides (HTML sections) and the number of exercises of one executed chapter.

    ``pages``: the built HTML chapters' folder, where the widgets' pictures are."""
    reader = ChapterReader(name, values, first_exercise=first_exercise, models=widget_states(nb), pages=pages)
    title, slides = DeckMaker(name, reader.read(nb)).make()
    return title, [s.html() for s in slides], reader.exercises


INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Slides</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body {{ font-family: sans-serif; max-width: 40em; margin: 2em auto; padding: 0 1em; }}</style>
</head><body>
<h1>Slides, one deck per chapter</h1>
<p>Made from the executed chapters; they open from a file with no network.
Keys: arrows to move, <kbd>s</kbd> speaker view (with the notes), <kbd>f</kbd> full screen,
<kbd>Esc</kbd> overview.</p>
<ul>
{items}
</ul>
</body></html>
"""


def build(executed: Path, out: Path, *, pages: Path | None = None) -> list[Path]:
    """Write a deck per executed chapter into ``out``; return the deck paths.

    ``pages``: the built HTML chapters (the widgets' pictures are files beside them); by default
    the build's ``html/`` folder beside ``jupyter_execute/``: ``_build/html/notebooks``."""
    if pages is None:
        pages = executed.parent.parent / "html" / executed.name
    notebooks = sorted(executed.glob("*.ipynb"))
    if not notebooks:
        raise SlideError(f"no executed chapters in {executed}: build the book first (scripts/build_book.sh)")
    for needed in (REVEAL / "dist" / "reveal.js", MATHJAX):
        if not needed.exists():
            raise SlideError(f"{needed} is missing: run scripts/fetch_vendor_js.sh")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REVEAL, out / "reveal.js", dirs_exist_ok=True)
    (out / "mathjax").mkdir(exist_ok=True)
    shutil.copy2(MATHJAX, out / "mathjax" / MATHJAX.name)
    decks, items, first_exercise = [], [], 1
    for path in notebooks:  # book order
        nb = nbformat.read(path, as_version=4)
        values = load_glue(path.with_suffix(".glue.json"))
        title, sections, exercises = chapter_slides(nb, values, path.stem, first_exercise=first_exercise,
                                                    pages=pages)
        first_exercise += exercises
        deck = out / f"{path.stem}.html"
        deck.write_text(PAGE.format(title=html.escape(title), sections="\n".join(sections)))
        decks.append(deck)
        items.append(f'<li><a href="{deck.name}">{html.escape(title)}</a> ({len(sections)} slides)</li>')
    (out / "index.html").write_text(INDEX.format(items="\n".join(items)))
    return decks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=ROOT / "_build" / "jupyter_execute" / "notebooks",
                        help="the book build's executed chapters (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides",
                        help="where the decks go (default: %(default)s)")
    parser.add_argument("--html", type=Path, default=None,
                        help="the built HTML chapters, where the widgets' pictures are (default: html/ beside "
                             "the executed chapters' folder, e.g. _build/html/notebooks)")
    args = parser.parse_args(argv)
    try:
        decks = build(args.executed, args.out, pages=args.html)
    except SlideError as exc:
        print(f"slides: {exc}", file=sys.stderr)
        return 1
    print(f"slides: {len(decks)} decks in {args.out} (open index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
