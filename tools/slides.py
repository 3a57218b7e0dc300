"""Slides for every chapter, made from the executed chapters of the book build.

    python tools/slides.py [--executed DIR] [--out DIR]

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
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

from reader_notebooks import (  # one way to read MyST and print glue, shared with the reader notebooks
    ADMONITIONS, DROP_CLASS, FENCE_OPEN, LABEL_LINE, PLAIN_FENCE, Chapter, ReaderError, copy_code_block,
    load_glue, read_directive,
)

ROOT = Path(__file__).resolve().parents[1]
REVEAL = ROOT / "book" / "vendor-slides" / "reveal.js"
MATHJAX = ROOT / "book" / "vendor-slides" / "mathjax" / "tex-svg-full.js"  # no web fonts: slides open from file://

NOTES_WORDS = 160  # speaker notes stop after the sentence that passes this many words
LEAD_WORDS = 45  # a longer sentence is not put on a slide as its lead
CODE_LINES = 14  # a longer code listing stays in the book
SOLUTION_LINES = 12  # what a solution's code printed goes into the notes up to this many lines
KEY_SENTENCES = 3  # at most this many key sentences on a slide without a figure
SKIPPED_SECTIONS = {"sources"}  # reference lists: the book's page has them
HIDDEN_OUTPUT_TAGS = {"remove-output", "remove-cell", "hide-output"}


class SlideError(RuntimeError):
    """A chapter could not be turned into slides (e.g. a glued name is missing)."""


# ----------------------------------------------------------------------------
# Markdown, as MyST parses it
# ----------------------------------------------------------------------------


def _math_inline(self, tokens, idx, options, env):
    return f'<span class="math">\\({html.escape(tokens[idx].content)}\\)</span>'


def _math_display(self, tokens, idx, options, env):
    return f'<div class="math display">\\[{html.escape(tokens[idx].content.strip())}\\]</div>\n'


def _nothing(self, tokens, idx, options, env):
    return ""


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table").use(dollarmath_plugin, double_inline=True)
    md.add_render_rule("math_inline", _math_inline)
    md.add_render_rule("math_inline_double", _math_display)
    md.add_render_rule("math_block", _math_display)
    md.add_render_rule("math_block_label", _math_display)
    # a link shows its text only: a deck opens offline, and nothing in it points off the machine
    md.add_render_rule("link_open", _nothing)
    md.add_render_rule("link_close", _nothing)
    return md


MD = _markdown()


def render_blocks(tokens) -> str:
    return MD.renderer.render(list(tokens), MD.options, {})


def render_inline(children) -> str:
    return MD.renderer.renderInline(list(children), MD.options, {})


# ----------------------------------------------------------------------------
# TeX as plain text (speaker notes and titles are read, not typeset)
# ----------------------------------------------------------------------------

TEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "eta": "η",
    "theta": "θ", "lambda": "λ", "mu": "μ", "nu": "ν", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ",
    "phi": "φ", "varphi": "φ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ",
    "Lambda": "Λ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "times": "×", "cdot": "·", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠",
    "approx": "≈", "sim": "~", "pm": "±", "to": "→", "rightarrow": "→", "leftarrow": "←", "gets": "←",
    "dots": "…", "ldots": "…", "cdots": "⋯", "infty": "∞", "top": "ᵀ", "oplus": "⊕", "sum": "Σ",
    "prod": "Π", "partial": "∂", "ell": "ℓ", "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋",
    "bmod": " mod ", "mod": " mod ", "max": "max", "min": "min", "log": "log", "ln": "ln", "exp": "exp",
    "lim": "lim", "in": "∈", "mid": "|", "quad": " ", "qquad": "  ", ",": "\u2009", ";": " ", ":": " ",
    "!": "", " ": " ", "\\": "; ", "{": "{", "}": "}", "%": "%", "$": "$", "_": "_", "&": "&", "#": "#",
}
TEX_SIZES = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "biggl",
             "biggr", "Biggl", "Biggr", "displaystyle", "textstyle", "limits", "nolimits"}
TEX_TEXT = {"text", "mathrm", "textrm", "operatorname", "mathit", "mathbf", "textbf", "mathsf", "texttt",
            "boldsymbol", "mathcal", "emph", "textit"}
TEX_FRACS = {"frac", "tfrac", "dfrac", "cfrac"}
SUPERSCRIPT = str.maketrans("0123456789+-−=()in", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁱⁿ")
SUBSCRIPT = str.maketrans("0123456789+-−=()", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎")
TEX_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[{}^_&]|[^\\{}^_&]")


def plain_tex(tex: str) -> str:
    """A TeX formula written with Unicode, to be read aloud: ``2\\frac{p-1}{p}n\\beta`` -> ``2(p−1)/p nβ``.

    Covers the TeX the chapters use (fractions, roots, sub- and superscripts,
    ``\\text``, Greek, relations, ``aligned``); any other command is written
    as its name."""
    tokens = TEX_TOKEN.findall(tex)
    pos = 0

    def group() -> str:  # one argument: a {group} or a single token
        nonlocal pos
        while pos < len(tokens) and tokens[pos] == " ":
            pos += 1
        if pos >= len(tokens):
            return ""
        if tokens[pos] == "{":
            pos += 1
            return seq(until="}")
        return seq(count=1)

    def seq(until: str | None = None, count: int | None = None) -> str:
        nonlocal pos
        out = []
        taken = 0
        after_frac = False  # 2\frac{p-1}{p}n reads 2(p−1)/p·n
        while pos < len(tokens) and (count is None or taken < count):
            tok = tokens[pos]
            pos += 1
            taken += 1
            if after_frac and (tok[:1].isalnum() or TEX_SYMBOLS.get(tok[1:], "")[:1].isalpha()):
                out.append("·")
            after_frac = False
            if tok == "\\partial":  # ∂L, not ∂ L: it reads as one symbol
                while pos < len(tokens) and tokens[pos] == " ":
                    pos += 1
            if tok == until:
                break
            if tok == "{":
                out.append(seq(until="}"))
            elif tok == "}":
                continue
            elif tok in "^_":
                arg = group()
                out.append(_script(arg, up=tok == "^"))
            elif tok == "&":
                continue
            elif tok.startswith("\\"):
                name = tok[1:]
                if name in TEX_FRACS:
                    top, bottom = group(), group()
                    frac = f"{_wrap(top)}/{_wrap(bottom)}"
                    joined = "".join(out)
                    out.append(("·" if joined[-1:].isalnum() and frac[0].isalnum() else "") + frac)
                    after_frac = True
                    continue
                elif name == "sqrt":
                    out.append("√" + _wrap(group()))
                elif name in TEX_TEXT:
                    out.append(group())
                elif name in ("begin", "end"):
                    group()
                elif name in TEX_SIZES:
                    continue
                elif name in TEX_SYMBOLS:
                    out.append(TEX_SYMBOLS[name])
                else:
                    out.append(name)
            elif tok == "-":
                out.append("−")
            elif tok == "~":
                out.append(" ")
            else:
                out.append(tok)
        return "".join(out)

    text = seq()
    text = re.sub(r"\s*([=≤≥≈≠<>→←])\s*", r" \1 ", text)  # relations between spaces, as TeX sets them
    text = re.sub(r"([(\[⌈⌊])\s+", r"\1", text)
    text = re.sub(r"\s+([)\]⌉⌋,;])", r"\1", text)
    return re.sub(r"\s{2,}|[\t\n]", " ", text).strip(" ;")


def _wrap(text: str) -> str:
    """Parentheses around a fraction's part or a root's argument when it holds an operator outside
    parentheses: (p−1)/p, but 2(p−1)/p and n/B_intra."""
    text, depth = text.strip(), 0
    for c in text:
        depth += (c in "([{") - (c in ")]}")
        if depth == 0 and c in "+−-=<>≤≥≈ ,/·×":
            return f"({text})"
    return text


def _script(arg: str, *, up: bool) -> str:
    arg = arg.strip()
    if up and arg in ("*", "ᵀ", "′", "∗"):
        return arg.replace("∗", "*")
    table, chars = (SUPERSCRIPT, "0123456789+-−=()in") if up else (SUBSCRIPT, "0123456789+-−=()")
    if arg and all(c in chars for c in arg):
        return arg.translate(table)
    if not up and re.fullmatch(r"\w+", arg):
        return "_" + arg
    return ("^" if up else "_") + (arg if re.fullmatch(r"\w", arg) else f"({arg})")


# ----------------------------------------------------------------------------
# Sentences: the unit a slide quotes and the notes shorten to
# ----------------------------------------------------------------------------

ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "etc.", "Fig.", "Eq.", "approx.", "No.")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"”’)]*\s+")


def split_sentences(children) -> list[list]:
    """An inline token's children cut into sentences (lists of tokens); a cut falls only in plain text
    outside emphasis, after ``.``/``!``/``?`` followed by a capital, a number, code or math."""
    sentences, current, depth = [], [], 0
    children = _merged_text(children)
    for k, tok in enumerate(children):
        if tok.type.endswith("_open"):
            depth += 1
        elif tok.type.endswith("_close"):
            depth -= 1
        if tok.type != "text" or depth:
            current.append(tok)
            continue
        text, start = tok.content, 0
        for m in SENTENCE_END.finditer(text):
            after = text[m.end():]
            nxt = after[:1] if after else _first_char(children[k + 1:])
            if not nxt or not (nxt.isupper() or nxt.isdigit() or nxt in "`$(*“\""):
                continue
            if (text[:m.start()]).endswith(ABBREVIATIONS) or re.search(r"\b[A-Z]\.$", text[:m.start()]):
                continue
            so_far = plain_text(current) + text[start:m.start()]
            if so_far.count("(") > so_far.count(")"):  # a full stop inside parentheses: a citation, an aside
                continue
            piece = Token("text", "", 0, content=text[start:m.start()] + text[m.start():m.end()].rstrip())
            current.append(piece)
            sentences.append(current)
            current, start = [], m.end()
        if start < len(text):
            current.append(Token("text", "", 0, content=text[start:]))
    if current:
        sentences.append(current)
    return [s for s in sentences if plain_text(s).strip()]


def _merged_text(children) -> list:
    """Soft line breaks as spaces, and neighbouring text tokens as one."""
    out = []
    for tok in children:
        if tok.type == "softbreak":
            tok = Token("text", "", 0, content=" ")
        if tok.type == "text" and out and out[-1].type == "text":
            out[-1] = Token("text", "", 0, content=out[-1].content + tok.content)
        else:
            out.append(tok)
    return out


def _first_char(tokens) -> str:
    for tok in tokens:
        if tok.type == "text" and tok.content:
            return tok.content[0]
        if tok.type in ("code_inline", "math_inline"):
            return "`"
        if tok.type in ("strong_open", "em_open"):
            return "*"
        if tok.type == "softbreak":
            continue
    return ""


def plain_text(children) -> str:
    """What a sentence says, as text: code as written, math as ``plain_tex``, no markup."""
    out = []
    for tok in children:
        if tok.type in ("text", "code_inline"):
            out.append(tok.content)
        elif tok.type in ("math_inline", "math_inline_double"):
            out.append(plain_tex(tok.content))
        elif tok.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif tok.type == "html_inline":
            continue
        elif tok.children:
            out.append(plain_text(tok.children))
    return "".join(out)


def notes_inline(children) -> str:
    """A sentence as speaker-notes HTML: bold, italics and code kept, math as plain text, links as text."""
    out = []
    for tok in children:
        if tok.type == "text":
            out.append(html.escape(tok.content, quote=False))
        elif tok.type == "code_inline":
            out.append(f"<code>{html.escape(tok.content)}</code>")
        elif tok.type in ("math_inline", "math_inline_double"):
            out.append(html.escape(plain_tex(tok.content), quote=False))
        elif tok.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif tok.type in ("strong_open", "strong_close", "em_open", "em_close"):
            tag = "strong" if tok.type.startswith("strong") else "em"
            out.append(f"<{'/' if tok.type.endswith('close') else ''}{tag}>")
    return "".join(out).strip()


def words(text: str) -> int:
    return len(text.split())


# ----------------------------------------------------------------------------
# A chapter as a list of items
# ----------------------------------------------------------------------------


@dataclass
class Item:
    """One block of a chapter: a heading, a paragraph, a list, a formula, a figure, an admonition..."""

    kind: str
    tokens: list = field(default_factory=list)  # the block's markdown-it tokens
    level: int = 0  # a heading's level
    title: str = ""  # a heading's, admonition's or exercise's title (Markdown)
    html: str = ""  # a figure's or an output table's HTML; what a solution's code printed, as text
    body: list = field(default_factory=list)  # the items in an admonition or exercise
    solution: list = field(default_factory=list)  # an exercise's solution: its prose
    used: int = 0  # sentences of a paragraph already shown around a formula

    @property
    def inline(self):
        return next(t for t in self.tokens if t.type == "inline")

    def sentences(self) -> list[list]:
        return split_sentences(self.inline.children)[self.used:] if self.kind == "para" else []

    def text(self) -> str:
        """The item's words (for counting)."""
        return " ".join(plain_text(t.children or []) if t.type == "inline" else t.content for t in self.tokens)


def markdown_items(text: str) -> list[Item]:
    """The top-level blocks of a Markdown text (MyST directives already taken out)."""
    tokens = MD.parse(text)
    items, i = [], 0
    while i < len(tokens):
        tok = tokens[i]
        j = i
        if tok.nesting == 1:  # find the matching close at the same level
            depth = 0
            for j in range(i, len(tokens)):
                depth += tokens[j].nesting
                if depth == 0:
                    break
        block = tokens[i:j + 1]
        kind = {"heading_open": "heading", "paragraph_open": "para", "bullet_list_open": "list",
                "ordered_list_open": "list", "table_open": "table", "fence": "code", "code_block": "code",
                "math_block": "math", "math_block_label": "math", "html_block": "html",
                "blockquote_open": "quote"}.get(tok.type)
        if kind == "heading":
            items.append(Item("heading", block, level=int(tok.tag[1]), title=block[1].content))
        elif kind == "para" and len(block) == 3 and all(
                c.type in ("math_inline_double", "softbreak") for c in block[1].children):
            items.append(Item("math", block))  # $$...$$ written inside a paragraph
        elif kind:
            items.append(Item(kind, block))
        i = j + 1
    return items


def myst_blocks(source: str, where: str) -> list[tuple]:
    """MyST Markdown split into ("md", text) and ("directive", name, arg, options, body) blocks.

    Plain code blocks are kept whole (a ``#`` comment in one is not a heading),
    target labels are dropped, and directives may nest."""
    lines, out, text, i = source.split("\n"), [], [], 0
    while i < len(lines):
        line = lines[i]
        opened = FENCE_OPEN.match(line)
        if not opened:
            if PLAIN_FENCE.match(line):
                i = copy_code_block(lines, i, text)
                continue
            if not LABEL_LINE.match(line):
                text.append(line)
            i += 1
            continue
        if text:
            out.append(("md", "\n".join(text)))
            text = []
        name, arg, options, body, after = read_directive(lines, i)
        if after is None:
            raise SlideError(f"{where}: the {{{name}}} directive is never closed: {line!r}")
        i = after
        out.append(("directive", name, arg, options, "\n".join(body)))
    if text:
        out.append(("md", "\n".join(text)))
    return out


def output_item(output) -> Item | None:
    """A figure, animation or table from a code cell's output, or None."""
    data = output.get("data", {})
    page = data.get("text/html", "")
    if 'class="animation"' in page:
        # the book's page carries a phone player too (distlib.plots.animation_html): a slide shows the wide one
        wide = re.match(r'\s*<div class="distlib-only-wide">(.*)</div><div class="distlib-only-narrow">', page, re.S)
        return Item("figure", html=player_with_icons(wide.group(1) if wide else page))
    if "image/png" in data:
        alt = re.search(r'<img [^>]*alt="([^"]*)"', page)  # distlib's <picture> describes the figure
        return Item("figure", html=f'<img class="figure" src="data:image/png;base64,{data["image/png"]}" '
                                   f'alt="{alt.group(1) if alt else "figure"}">')
    if "image/svg+xml" in data:
        return Item("figure", html=data["image/svg+xml"])
    if page.lstrip().startswith("<table"):
        return Item("table", html=page)
    return None


def join_glue_lines(source: str) -> str:
    """A glue role that begins a line of a paragraph joined to the line before it (a soft break is a
    space): filled in, a value such as ``1`` before ". With..." would begin a numbered list."""
    out, in_code = [], False
    for line in source.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            in_code = not in_code
        previous = out[-1] if out else ""
        if (not in_code and line.startswith("{glue") and previous.strip()
                and not re.match(r"^\s*(#|:::|```|~~~|\$\$|\||:\w)", previous)):
            out[-1] = previous.rstrip() + " " + line
        else:
            out.append(line)
    return "\n".join(out)


class ChapterReader:
    """A chapter's cells turned into items, with its roles resolved and its glue filled in."""

    def __init__(self, name: str, values: dict, *, first_exercise: int):
        self.name = name
        self.chapter = Chapter(name, values, first=first_exercise)
        self.exercises = 0
        self.in_solution: Item | None = None  # the exercise whose solution is being read
        self.items: list[Item] = []

    def read(self, nb) -> list[Item]:
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                try:
                    source = self.chapter.inline(join_glue_lines(cell.source))
                except ReaderError as exc:
                    raise SlideError(str(exc)) from exc
                for item in self.blocks(source):
                    self.add(item)
            elif cell.cell_type == "code" and self.in_solution is not None:
                printed = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")
                if printed.strip() and printed.count("\n") <= SOLUTION_LINES:
                    self.in_solution.solution.append(Item("printed", html=printed.strip("\n")))
            elif cell.cell_type == "code":
                if HIDDEN_OUTPUT_TAGS & set(cell.metadata.get("tags", [])):
                    continue
                for output in cell.get("outputs", []):
                    item = output_item(output)
                    if item:
                        self.items.append(item)
        return self.items

    def add(self, item: Item):
        if item.kind == "solution-start":
            self.in_solution = next((i for i in reversed(self.items) if i.kind == "exercise"), None)
            if self.in_solution is None:
                raise SlideError(f"{self.name}: a solution with no exercise before it")
        elif item.kind == "solution-end":
            self.in_solution = None
        elif self.in_solution is not None:
            self.in_solution.solution.append(item)
        else:
            self.items.append(item)

    def blocks(self, source: str) -> list[Item]:
        items = []
        for block in myst_blocks(source, self.name):
            if block[0] == "md":
                items += markdown_items(block[1])
                continue
            _, name, arg, options, body = block
            classes = options.get("class", "").split()
            if name == "solution-start":
                items.append(Item("solution-start"))
            elif name == "solution-end":
                items.append(Item("solution-end"))
            elif name == "solution":
                items += [Item("solution-start"), *self.blocks(body), Item("solution-end")]
            elif name == "exercise":
                self.exercises += 1
                number = self.chapter.next_exercise_number()  # "6.1": numbered per chapter, as the book does
                label = options.get("label", "") or f"(exercise {self.exercises})"
                if label:
                    self.chapter.exercises[label] = number
                title = f"Exercise {number}" + (f": {arg}" if arg else "")
                items.append(Item("exercise", title=title, body=self.blocks(body)))
            elif name in ADMONITIONS:
                if DROP_CLASS in classes:
                    continue
                title = arg or ADMONITIONS[name][0]
                kind = ("learn" if title.lower().startswith("what you will learn")
                        else "takeaway" if title.lower().startswith("takeaway") else "callout")
                items.append(Item(kind, title=title, body=self.blocks(body)))
            elif name == "math":
                items += markdown_items(f"$$\n{body}\n$$")
            elif name in ("code-block", "code"):
                items += markdown_items(f"```{arg}\n{body}\n```")
            else:
                raise SlideError(f"{self.name}: the slides do not know the MyST directive {{{name}}}")
        return items


# ----------------------------------------------------------------------------
# Items into slides
# ----------------------------------------------------------------------------


@dataclass
class Slide:
    title: str  # HTML
    body: str  # HTML
    notes: str  # HTML
    classes: str = ""
    kicker: str = ""  # HTML: the heading this slide's section sits under, when that had no slide of its own
    level: int = 2

    def html(self) -> str:
        kicker = f'<p class="kicker">{self.kicker}</p>' if self.kicker else ""
        cls = f' class="{self.classes}"' if self.classes else ""
        return (f"<section{cls}>{kicker}<h{self.level}>{self.title}</h{self.level}>\n{self.body}\n"
                f'<aside class="notes">{self.notes}</aside></section>')


@dataclass
class Section:
    title: str  # Markdown
    level: int
    items: list = field(default_factory=list)


def heading_html(markdown: str) -> str:
    return MD.renderInline(markdown).strip()


def heading_plain(markdown: str) -> str:
    tokens = MD.parseInline(markdown)
    return plain_text(tokens[0].children if tokens else []).strip()


def notes_html(items: list[Item], budget: int = NOTES_WORDS) -> str:
    """Speaker notes from the chapter's prose: each paragraph's first two sentences (all of a short one),
    each list item's first, display formulas as plain text; they stop after ``budget`` words."""
    parts, count = [], 0
    for item in items:
        if count >= budget:
            break
        if item.kind == "para":
            sentences = item.sentences()
            keep = sentences if words(" ".join(plain_text(s) for s in sentences)) <= 50 else sentences[:2]
            text = " ".join(notes_inline(s) for s in keep)
            if text:
                parts.append(f"<p>{text}</p>")
                count += words(" ".join(plain_text(s) for s in keep))
        elif item.kind == "list":
            lines = [first_sentence(inline) for inline in list_inlines(item)]
            parts.append("<ul>" + "".join(f"<li>{notes_inline(s)}</li>" for s in lines if s) + "</ul>")
            count += sum(words(plain_text(s)) for s in lines if s)
        elif item.kind == "math":
            formula = plain_tex(math_tex(item))
            parts.append(f"<p>{html.escape(formula, quote=False)}</p>")
            count += words(formula)
        elif item.kind == "printed":  # what a worked solution's code printed: the answer's numbers
            parts.append(f"<pre>{html.escape(item.html)}</pre>")
            count += words(item.html)
        elif item.kind in ("takeaway", "callout", "learn"):
            inner = notes_html(item.body, budget - count)
            parts.append(inner)
            count += words(re.sub(r"<[^>]+>", " ", inner))
    return "".join(parts)


def list_inlines(item: Item) -> list:
    """The inline token of each top-level list item's first paragraph."""
    level, firsts = item.tokens[0].level + 1, []
    for tok in item.tokens:
        if tok.type == "list_item_open" and tok.level == level:
            firsts.append(None)
        elif tok.type == "inline" and firsts and firsts[-1] is None:
            firsts[-1] = tok
    return [t for t in firsts if t is not None]


def math_tex(item: Item) -> str:
    """A display formula's TeX (written as a ``$$`` block or as ``$$...$$`` inside a paragraph)."""
    tok = item.tokens[0] if item.tokens[0].type.startswith("math") else item.inline.children[0]
    return tok.content.strip()


def math_html(item: Item) -> str:
    return f'<div class="math display">\\[{html.escape(math_tex(item))}\\]</div>'


def first_sentence(inline) -> list:
    sentences = split_sentences(inline.children)
    return sentences[0] if sentences else []


def short_list_html(item: Item) -> str:
    """A list with each item cut to its first sentence."""
    tag = "ol" if item.tokens[0].type == "ordered_list_open" else "ul"
    lis = "".join(f"<li>{render_inline(first_sentence(inline)).strip()}</li>" for inline in list_inlines(item))
    return f"<{tag}>{lis}</{tag}>"


def good_lead(sentence) -> bool:
    """A sentence that can stand alone on a slide: not an aside in parentheses, not the end of a sentence
    a formula began, not one that points at something the slide does not show, not too long."""
    text = plain_text(sentence).strip()
    starts_lower = sentence[0].type == "text" and sentence[0].content.lstrip()[:1].islower()
    return (bool(text) and not text.startswith("(") and not starts_lower and words(text) <= LEAD_WORDS
            and not re.match(r"(Here (is|are)|Read |Step through)", text))


ANCHORS = {"figure", "table", "math", "code", "list", "takeaway", "callout"}


class DeckMaker:
    """The slides of one chapter, from its items."""

    def __init__(self, name: str, items: list[Item]):
        self.name = name
        self.items = items
        self.slides: list[Slide] = []
        self.title = name
        self.kicker = ""  # a heading that had nothing under it, carried to the next slide
        self.previous = None  # (lead, notes) of the section's last anchor, for a figure that follows at once

    # -- the deck ---------------------------------------------------------------

    def make(self) -> tuple[str, list[Slide]]:
        sections = self.sections()
        front = sections.pop(0) if sections and sections[0].level == 1 else None
        self.title_slide(front)
        for section in sections:
            if section.title.strip().lower() in SKIPPED_SECTIONS:
                continue
            if not section.items:
                self.kicker = heading_html(section.title)
                continue
            if any(i.kind == "exercise" for i in section.items):
                self.exercises(section)
            elif section.title.strip().lower() == "summary":
                self.summary(section)
            else:
                self.section(section)
        for slide in self.slides:
            if not re.sub(r"<[^>]+>", "", slide.body).strip() and "<img" not in slide.body \
                    and "<svg" not in slide.body:
                raise SlideError(f"{self.name}: the slide {slide.title!r} would be only a heading")
        return self.title, self.slides

    def sections(self) -> list[Section]:
        sections: list[Section] = []
        for item in self.items:
            if item.kind == "heading" and item.level <= 3:
                sections.append(Section(item.title, item.level))
            elif sections:
                sections[-1].items.append(item)
            else:
                sections.append(Section("", 1, [item]))
        return sections

    def add(self, title: str, body: str, notes: str, classes: str = "", level: int = 2):
        if not notes.strip():
            raise SlideError(f"{self.name}: no prose for the speaker notes of the slide {title!r}")
        self.slides.append(Slide(title, body, notes, classes, self.kicker, level))
        self.kicker = ""

    # -- kinds of section -------------------------------------------------------

    def title_slide(self, front: Section | None):
        if front is None or not front.title:
            raise SlideError(f"{self.name}: the chapter has no '# ' title before its first section")
        self.title = heading_plain(front.title)
        learn = next((i for i in front.items if i.kind == "learn"), None)
        # the chapter's opening prose, less the paragraph about installing the library (for the reader at home)
        intro = [i for i in front.items if i.kind == "para" and not re.search(r"code cell.*install", i.text())]
        body = ""
        if learn is not None:
            body = f'<h3>{heading_html(learn.title)}</h3>\n{render_items(learn.body)}'
        elif intro:
            body = f'<p class="lead">{render_inline(intro[0].sentences()[0])}</p>'
        notes = notes_html(intro) + notes_html(learn.body if learn else [])
        self.add(heading_html(front.title), body, notes, "title-slide", level=1)

    def section(self, section: Section):
        title = heading_html(section.title)
        pending: list[Item] = []
        made = 0
        self.previous = None
        items = list(section.items)
        k = 0
        while k < len(items):
            item = items[k]
            if item.kind not in ANCHORS or (item.kind == "code" and item_lines(item) > CODE_LINES):
                if item.kind in ("para", "list", "quote"):
                    pending.append(item)
                k += 1
                continue
            group = [item]  # formulas one after another share a slide, and so do two a short clause joins
            while item.kind == "math" and k + 1 < len(items):
                if items[k + 1].kind == "math":
                    k += 1
                elif (k + 2 < len(items) and items[k + 2].kind == "math" and is_connector(items[k + 1])):
                    k += 2
                    group.append(items[k - 1])
                else:
                    break
                group.append(items[k])
            after = items[k + 1] if k + 1 < len(items) else None
            self.anchor_slide(title, pending, group, after)
            pending, made = [], made + 1
            k += 1
        if pending:
            prose_words = sum(words(i.text()) for i in pending)
            if made and len(pending) <= 2 and prose_words <= 120:
                last = self.slides[-1]
                last.notes += notes_html(pending, budget=NOTES_WORDS // 2)
            else:
                self.key_sentences(title, pending)

    def anchor_slide(self, title: str, pending: list[Item], group: list[Item], after: Item | None):
        """One slide for a figure, table, formula (or formulas), listing, list, takeaway or caution."""
        anchor = group[0]
        lead, tail = self.lead(pending, anchor, group[-1], after)
        parts = [f'<p class="lead">{render_inline(lead).strip()}</p>'] if lead else []
        notes_items = list(pending)
        classes = ""
        if anchor.kind == "figure":
            parts.append(f'<div class="figure">{anchor.html}</div>')
            classes = "figure-slide"
        elif anchor.kind == "table":
            parts.append(anchor.html if anchor.html else render_blocks(anchor.tokens))
            classes = "table-slide"
        elif anchor.kind == "math":
            parts += [math_html(g) if g.kind == "math" else f'<p class="lead">{render_inline(g.inline.children)}</p>'
                      for g in group]
            notes_items += group
        elif anchor.kind == "code":
            parts.append(render_blocks(anchor.tokens))
        elif anchor.kind == "list":
            parts.append(short_list_html(anchor))
            notes_items.append(anchor)
        elif anchor.kind == "takeaway":
            parts = [f'<div class="takeaway">{render_items(anchor.body)}</div>']
            notes_items = notes_items or anchor.body
            self.kicker = self.kicker or title
            title = heading_html(anchor.title)
        elif anchor.kind == "callout":
            parts = [f'<div class="callout">{callout_html(anchor.body)}</div>']
            notes_items = notes_items + anchor.body
            self.kicker = self.kicker or title
            title = heading_html(anchor.title)
        if tail:
            parts.append(f'<p class="lead">{render_inline(tail).strip()}</p>')
            notes_items.append(after)
        notes = notes_html(notes_items) or notes_html(anchor.body)
        if not pending and self.previous and anchor.kind == "figure":  # a second figure of the same prose
            lead, notes = self.previous
            if lead:
                parts.insert(0, f'<p class="lead">{render_inline(lead).strip()}</p>')
        self.previous = (lead, notes)
        self.add(title, "\n".join(parts), notes, classes)
        if tail:
            after.used += 1

    def lead(self, pending: list[Item], anchor: Item, last: Item, after: Item | None):
        """The sentence that introduces an anchor, and for a formula in mid-sentence the rest of it."""
        if anchor.kind in ("takeaway", "callout"):
            return None, None
        before = pending[-1] if pending and pending[-1].kind == "para" else None
        if before is not None and before.sentences():
            last_sentence = before.sentences()[-1]
            end = plain_text(last_sentence).rstrip()
            if end.endswith((":", ",")) or not end.endswith((".", "!", "?", ".)", "?)")):  # it goes on below
                tail = None
                if after is not None and after.kind == "para" and after.sentences():
                    first = after.sentences()[0]
                    if first[0].type == "text" and first[0].content.lstrip()[:1].islower():
                        tail = first  # the sentence goes on after the formula or listing
                if words(plain_text(last_sentence)) <= LEAD_WORDS:
                    return last_sentence, tail
        if anchor.kind in ("figure", "table"):  # the sentence nearest a figure is the one that presents it
            for item in reversed(pending):
                for sentence in reversed(item.sentences()):
                    if good_lead(sentence):
                        return sentence, None
        for item in pending:  # otherwise the paragraph's topic sentence
            for sentence in item.sentences()[:1]:
                if good_lead(sentence):
                    return sentence, None
        return None, None

    def key_sentences(self, title: str, prose: list[Item]):
        """A slide for prose with nothing to show: the sentence of each paragraph that states its idea."""
        chosen = []
        for item in prose:  # the first sentence of each paragraph that can stand on a slide
            if item.kind != "para":
                continue
            sentence = next((s for s in item.sentences()
                             if good_lead(s) and not plain_text(s).rstrip().endswith(":")), None)
            if sentence:
                chosen.append(sentence)
        if not chosen:
            chosen = [s for i in prose if i.kind == "para" for s in i.sentences()[:1]]
        if not chosen:
            return
        body = "<ul class=\"points\">" + "".join(
            f"<li>{render_inline(s).strip()}</li>" for s in chosen[:KEY_SENTENCES]) + "</ul>"
        self.add(title, body, notes_html(prose))

    def exercises(self, section: Section):
        intro: list[Item] = []
        for item in section.items:
            if item.kind != "exercise":
                if item.kind == "para":
                    intro.append(item)
                continue
            prose = [i for i in item.solution if i.kind in ("para", "list", "math", "printed")]
            notes = notes_html(intro) + (f"<p><strong>Solution.</strong></p>{notes_html(prose)}" if prose
                                          else notes_html(item.body))
            self.add(heading_html(item.title), render_items(item.body), notes, "exercise")
            intro = []

    def summary(self, section: Section):
        self.add(heading_html(section.title), render_items(section.items), notes_html(section.items),
                 "summary")


def is_connector(item: Item) -> bool:
    """A paragraph that only carries a sentence from one formula to the next ("so the speedup is bounded:")."""
    if item.kind != "para" or len(item.sentences()) != 1:
        return False
    first = item.sentences()[0]
    text = plain_text(first).strip()
    return (first[0].type == "text" and first[0].content.lstrip()[:1].islower() and text.endswith((":", ","))
            and words(text) <= 25)


def item_lines(item: Item) -> int:
    return item.tokens[0].content.count("\n") if item.tokens else 0


def render_items(items: list[Item]) -> str:
    """Items shown as the chapter writes them (an admonition's or exercise's body, the summary)."""
    out = []
    for item in items:
        if item.kind in ("figure", "table") and item.html:
            out.append(item.html)
        elif item.tokens:
            out.append(render_blocks(item.tokens))
    return "\n".join(out)


def callout_html(items: list[Item]) -> str:
    """A caution box's words: all of a short one, the first two sentences of a long one."""
    if sum(words(i.text()) for i in items) <= 80:
        return render_items(items)
    paras = [i for i in items if i.kind == "para"]
    sentences = [s for i in paras for s in i.sentences()][:2]
    return "<p>" + " ".join(render_inline(s).strip() for s in sentences) + "</p>"


# ----------------------------------------------------------------------------
# The animation player's icons
# ----------------------------------------------------------------------------

ICON_PATHS = {  # 16 x 16, drawn for the slides: matplotlib's player names Font Awesome 4 icons
    "play": "M4 2.5v11L13 8z",
    "play flip": "M12 2.5v11L3 8z",
    "pause": "M3.5 2.5h3v11h-3zM9.5 2.5h3v11h-3z",
    "step-forward": "M2.5 2.5v11L10 8zM11 2.5h2.5v11H11z",
    "step-backward": "M13.5 2.5v11L6 8zM2.5 2.5H5v11H2.5z",
    "fast-forward": "M1 2.5v11L6.5 8zM6.5 2.5v11L12 8zM12.5 2.5H15v11h-2.5z",
    "fast-backward": "M15 2.5v11L9.5 8zM9.5 2.5v11L4 8zM1 2.5h2.5v11H1z",
    "minus": "M2.5 6.75h11v2.5h-11z",
    "plus": "M6.75 2.5h2.5v4.25h4.25v2.5H9.25v4.25h-2.5V9.25H2.5v-2.5h4.25z",
}
FA_ICON = re.compile(r'<i class="fa fa-([\w-]+)((?: fa-[\w-]+)*)"\s*>\s*</i>')


def player_with_icons(page: str) -> str:
    """matplotlib's ``to_jshtml`` player with each Font Awesome ``<i>`` replaced by an inline SVG icon."""
    def icon(m):
        name = m.group(1) + (" flip" if "fa-flip-horizontal" in m.group(2) else "")
        if name not in ICON_PATHS:
            raise SlideError(f"the animation player asks for the icon fa-{name}, which tools/slides.py cannot "
                             "draw: add it to ICON_PATHS")
        return (f'<svg class="anim-icon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" '
                f'focusable="false"><path fill="currentColor" d="{ICON_PATHS[name]}"/></svg>')

    return FA_ICON.sub(icon, page)


# ----------------------------------------------------------------------------
# Decks
# ----------------------------------------------------------------------------


def chapter_slides(nb, values: dict, name: str, *, first_exercise: int = 1) -> tuple[str, list[str], int]:
    """The title, the slides (HTML sections) and the number of exercises of one executed chapter."""
    reader = ChapterReader(name, values, first_exercise=first_exercise)
    title, slides = DeckMaker(name, reader.read(nb)).make()
    return title, [s.html() for s in slides], reader.exercises


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="reveal.js/dist/reveal.css">
<link rel="stylesheet" href="reveal.js/dist/theme/white.css">
<style>
.reveal {{ font-size: 30px; }}
.reveal h1 {{ font-size: 1.7em; }} .reveal h2 {{ font-size: 1.3em; }} .reveal h3 {{ font-size: 1.0em; }}
.reveal h1, .reveal h2, .reveal h3 {{ text-transform: none; }}
.reveal .slides section {{ box-sizing: border-box; padding: 0 40px; }}
.reveal .kicker {{ font-size: .65em; color: #666; margin: 0 0 .2em; text-align: center; }}
.reveal p {{ text-align: left; }}
.reveal p.lead {{ font-size: .8em; margin: .2em 0 .5em; }}
.reveal ul, .reveal ol {{ display: block; text-align: left; margin: 0 0 0 1.2em; }}
.reveal li {{ margin: .25em 0; }}
.reveal .points li {{ margin: .5em 0; }}
.reveal .title-slide ul, .reveal .summary ul, .reveal .summary ol {{ font-size: .72em; }}
.reveal .exercise p {{ font-size: .85em; }}
.reveal .takeaway, .reveal .callout {{ border-left: 8px solid #009E73; padding: .3em .8em; background: #f3faf7; }}
.reveal .callout {{ border-left-color: #D55E00; background: #fdf5ef; }}
.reveal .takeaway p, .reveal .callout p {{ margin: .3em 0; }}
.reveal .figure {{ text-align: center; }}
.reveal section img.figure {{ max-height: 560px; max-width: 100%; margin: 0; border: 0; box-shadow: none; }}
.reveal .figure-slide p.lead {{ font-size: .7em; }}
.reveal .math.display {{ margin: .4em 0; }}
.reveal pre {{ font-size: .68em; width: 100%; box-shadow: none; }}
.reveal code {{ font-size: .92em; }}
.reveal pre code {{ max-height: 560px; }}
.reveal table {{ font-size: .72em; margin: .3em auto; }}
.reveal .animation img {{ width: auto !important; height: 440px !important; max-width: 100%; }}
.reveal .anim-buttons button {{ width: 46px; height: 34px; padding: 0; margin: 0 1px; color: #222;
  display: inline-flex; align-items: center; justify-content: center; vertical-align: middle; }}
.reveal .anim-icon {{ width: 18px; height: 18px; }}
.reveal .anim-state {{ font-size: .6em; }}
.reveal input[type=range].anim-slider {{ width: 420px; }}
</style>
</head><body>
<div class="reveal"><div class="slides">
{sections}
</div></div>
<script src="reveal.js/dist/reveal.js"></script>
<script src="reveal.js/plugin/notes/notes.js"></script>
<script src="reveal.js/plugin/math/math.js"></script>
<script>
Reveal.initialize({{
  hash: true, slideNumber: true, width: 1280, height: 800, transition: "fade", transitionSpeed: "fast",
  mathjax3: {{ mathjax: "mathjax/tex-svg-full.js",
              tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]] }} }},
  plugins: [RevealNotes, RevealMath.MathJax3],
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
Keys: arrows to move, <kbd>s</kbd> speaker view (with the notes), <kbd>f</kbd> full screen,
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
    decks, items, first_exercise = [], [], 1
    for path in notebooks:  # book order
        nb = nbformat.read(path, as_version=4)
        values = load_glue(path.with_suffix(".glue.json"))
        title, sections, exercises = chapter_slides(nb, values, path.stem, first_exercise=first_exercise)
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
