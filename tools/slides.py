"""Slides for every chapter, made from the executed chapters of the book build.

    python tools/slides.py [--executed DIR] [--out DIR]

Reads the notebooks the book build executed (``_build/jupyter_execute/
notebooks/*.ipynb``, with their ``*.glue.json``) and writes one reveal.js deck
per chapter into ``_build/slides/`` plus an ``index.html``. A deck carries:
the chapter's title and "What you will learn"; one slide per section with its
takeaways, figures and animations (the code that made them is left out); the
worked problems' questions (not their solutions); and the summary. Glued
numbers are filled in. reveal.js and MathJax are copied next to the decks, so
they open from a file with no network (``scripts/slides.sh`` runs this).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat

from reader_notebooks import escape_markdown, format_glue, load_glue  # one way to read and print glue

ROOT = Path(__file__).resolve().parents[1]
REVEAL = ROOT / "book" / "vendor-slides" / "reveal.js"
MATHJAX = ROOT / "book" / "vendor-slides" / "mathjax" / "tex-svg-full.js"  # no web fonts: slides open from file://

GLUE_ROLE = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")
ROLE = re.compile(r"\{(?:ref|numref|doc|eq|term|math)\}`([^`]*)`")
FENCE = re.compile(r"^\s*(:{3,}|`{3,})\s*\{([\w-]+)\}\s*(.*)$")
CLOSE = re.compile(r"^\s*(:{3,}|`{3,})\s*$")


class SlideError(RuntimeError):
    """A chapter could not be turned into slides (e.g. a glued name is missing)."""


def fill_glue(text: str, values: dict, where: str) -> str:
    """``{glue:text}`` roles replaced by their values, formatted and escaped as the reader notebooks do."""
    def one(m):
        name, spec = m.group(1), m.group(2) or ""
        if values.get(name) is None:
            raise SlideError(f"{where}: glued value {name!r} is not in the chapter's glue.json")
        return escape_markdown(format_glue(values[name], spec))

    return GLUE_ROLE.sub(one, text)


def plain_roles(text: str) -> str:
    """MyST cross-reference roles become their visible text."""
    def one(m):
        inner = m.group(1)
        label = re.match(r"(.*?)\s*<[^>]+>$", inner)
        return label.group(1) if label else inner
    return ROLE.sub(one, text)


def blocks(source: str):
    """Split MyST markdown into ("text", lines) and (directive, title, lines) blocks."""
    out, lines, i = [], source.splitlines(), 0
    text: list[str] = []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if not re.match(r"^\(.+\)=\s*$", lines[i]):  # drop MyST target labels
                text.append(lines[i])
            i += 1
            continue
        if text:
            out.append(("text", "", text))
            text = []
        fence, name, title = m.group(1), m.group(2), m.group(3).strip()
        body, i = [], i + 1
        while i < len(lines) and not (CLOSE.match(lines[i]) and lines[i].strip() == fence):
            if not re.match(r"^\s*:[\w-]+:", lines[i]):  # directive options
                body.append(lines[i])
            i += 1
        out.append((name, title, body))
        i += 1
    if text:
        out.append(("text", "", text))
    return out


def md_section(markdown: str) -> str:
    """A reveal.js section whose Markdown the markdown plugin renders."""
    safe = markdown.replace("</textarea>", "&lt;/textarea&gt;")
    return f'<section data-markdown><textarea data-template>\n{safe}\n</textarea></section>'


def output_html(output) -> str | None:
    """A figure or animation from a code cell's output, or None."""
    data = output.get("data", {})
    if "image/png" in data:
        return f'<img class="figure" src="data:image/png;base64,{data["image/png"]}" alt="figure">'
    if "image/svg+xml" in data:
        return data["image/svg+xml"]
    page = data.get("text/html", "")
    if 'class="animation"' in page:
        # the book's page carries a phone player too (distlib.plots.animation_html): a slide shows the wide one
        wide = re.match(r'\s*<div class="distlib-only-wide">(.*)</div><div class="distlib-only-narrow">', page, re.S)
        return wide.group(1) if wide else page
    return None


def chapter_slides(nb, values: dict, name: str) -> tuple[str, list[str]]:
    """The title and the slides (HTML sections) of one executed chapter."""
    sections: list[str] = []
    title, section = name, None
    in_solution = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            source = plain_roles(fill_glue(cell.source, values, name))
            for kind, head, lines in blocks(source):
                body = "\n".join(lines).strip()
                if kind == "solution-start":
                    in_solution = True
                    continue
                if kind == "solution-end":
                    in_solution = False
                    continue
                if in_solution:
                    continue
                if kind == "text":
                    for chunk in re.split(r"(?m)^(?=#{1,2} )", body):
                        first = chunk.splitlines()[0] if chunk.strip() else ""
                        if first.startswith("# "):
                            title = first[2:].strip()
                            sections.append(md_section(f"# {title}"))
                        elif first.startswith("## "):
                            section = first[3:].strip()
                            if section.lower() == "summary":
                                sections.append(md_section(chunk))
                            else:
                                sections.append(md_section(f"## {section}"))
                elif kind == "admonition" and head.lower().startswith(("what you will learn", "takeaway")):
                    sections.append(md_section(f"### {head}\n\n{body}"))
                elif kind == "exercise":
                    sections.append(md_section(f"### Problem{': ' + head if head else ''}\n\n{body}"))
        elif cell.cell_type == "code" and not in_solution:
            for output in cell.get("outputs", []):
                shown = output_html(output)
                if shown:
                    head = f"<h3>{html.escape(section or title)}</h3>"
                    sections.append(f'<section class="figure-slide">{head}{shown}</section>')
    return title, sections


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="reveal.js/dist/reveal.css">
<link rel="stylesheet" href="reveal.js/dist/theme/white.css">
<style>
.reveal {{ font-size: 30px; }}
.reveal h1 {{ font-size: 1.8em; }} .reveal h2 {{ font-size: 1.4em; }} .reveal h3 {{ font-size: 1.05em; }}
.reveal section img.figure {{ max-height: 80vh; max-width: 100%; margin: 0; border: 0; box-shadow: none; }}
.reveal .figure-slide h3 {{ margin-bottom: .3em; }}
.reveal .slides section {{ box-sizing: border-box; padding: 0 48px; }}
.reveal ul, .reveal ol {{ display: block; text-align: left; margin: 0 0 0 1.2em; }}
.reveal p {{ text-align: left; }}
.reveal .animation img {{ max-height: 65vh; }}
</style>
</head><body>
<div class="reveal"><div class="slides">
{sections}
</div></div>
<script src="reveal.js/dist/reveal.js"></script>
<script src="reveal.js/plugin/markdown/markdown.js"></script>
<script src="reveal.js/plugin/notes/notes.js"></script>
<script src="reveal.js/plugin/math/math.js"></script>
<script>
Reveal.initialize({{
  hash: true, slideNumber: true, width: 1280, height: 800,
  mathjax3: {{ mathjax: "mathjax/tex-svg-full.js",
              tex: {{ inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]] }} }},
  plugins: [RevealMarkdown, RevealNotes, RevealMath.MathJax3],
}});
</script>
</body></html>
"""

INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Slides</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body {{ font-family: sans-serif; max-width: 40em; margin: 2em auto; padding: 0 1em; }}</style>
</head><body>
<h1>Slides, one deck per chapter</h1>
<p>Made from the executed chapters; they open from a file with no network.
Keys: arrows to move, <kbd>s</kbd> speaker view, <kbd>f</kbd> full screen,
<kbd>Esc</kbd> overview.</p>
<ul>
{items}
</ul>
</body></html>
"""


def build(executed: Path, out: Path) -> list[Path]:
    """Write a deck per executed chapter into ``out``; return the deck paths."""
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
    decks, items = [], []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        values = load_glue(path.with_suffix(".glue.json"))
        title, sections = chapter_slides(nb, values, path.stem)
        deck = out / f"{path.stem}.html"
        deck.write_text(PAGE.format(title=html.escape(title), sections="\n".join(sections)))
        decks.append(deck)
        items.append(f'<li><a href="{deck.name}">{html.escape(title)}</a> ({len(sections)} slides)</li>')
    (out / "index.html").write_text(INDEX.format(items="\n".join(items)))
    return decks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=ROOT / "_build" / "jupyter_execute" / "notebooks")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    args = parser.parse_args(argv)
    try:
        decks = build(args.executed, args.out)
    except SlideError as exc:
        print(f"slides: {exc}", file=sys.stderr)
        return 1
    print(f"slides: {len(decks)} decks in {args.out} (open index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
