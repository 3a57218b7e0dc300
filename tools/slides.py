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
"""

from __future__ import annotations

import argparse
import base64
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
# Widgets: the picture the static book opens each one with
# ----------------------------------------------------------------------------

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: the controls a reader moves (a Play button moves the slider it is linked to)
CONTROL_MODELS = {"SelectionSliderModel", "IntSliderModel", "FloatSliderModel", "FloatLogSliderModel",
                  "DropdownModel", "ToggleButtonsModel", "RadioButtonsModel", "SelectModel", "CheckboxModel",
                  "ToggleButtonModel", "IntRangeSliderModel", "FloatRangeSliderModel", "SelectionRangeSliderModel",
                  "BoundedIntTextModel", "BoundedFloatTextModel", "IntTextModel", "FloatTextModel", "PlayModel"}
#: a container that shows one child at a time: the static book's grid of frames is nested Stacks
ONE_CHILD_MODELS = {"StackModel", "TabModel", "AccordionModel"}
IMG_TAG = re.compile(r"<img\b[^>]*>", re.I)
MOVE_WORDS = re.compile(r"\b(drag|slide|move|try|pick|switch|raise|lower|set|press|change|choose|select|step "
                        r"through|watch|see|compare|toggle|click|increase|decrease|show|shows)\b", re.I)
IMPERATIVE = re.compile(r"(Drag|Slide|Move|Try|Pick|Switch|Raise|Lower|Set|Press|Change|Choose|Select|Step "
                        r"through|Watch|Compare|Toggle|Click|Increase|Decrease)\b")
TRY_IT_TITLE = re.compile(r"^(try it( yourself)?|explore|play with( it)?)\b[\s:,.!]*", re.I)


@dataclass
class Control:
    """A control of a widget's first view: what it is called, the value it opens at, whether it moves."""

    description: str
    value: str = ""
    live: bool = True
    player: bool = False  # a Play button (it moves the slider named ``description``)


@dataclass
class WidgetView:
    """What the static book shows of a widget when its page opens: the first view's picture and controls.

    ``picture``: a ``data:`` URI, or "" where the widget state carries none (a widget the static
    book shows disabled, or whose state the notebook did not keep)."""

    picture: str = ""
    alt: str = ""
    width: int = 0
    height: int = 0
    controls: list = field(default_factory=list)
    state_kept: bool = True


def widget_states(nb) -> dict:
    """The executed notebook's saved widget models, by model id (empty if it kept none)."""
    saved = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {})
    return saved.get("state", {}) if isinstance(saved, dict) else {}


def _model_ref(value) -> str | None:
    return value[len("IPY_MODEL_"):] if isinstance(value, str) and value.startswith("IPY_MODEL_") else None


def widget_view(model_id: str, models: dict, *, pages: Path | None, where: str) -> WidgetView:
    """The first view of the widget ``model_id``: follow each Stack's selected child down from the widget.

    The static book (``distlib/widgets/_base.py``) keeps a grid of frames in nested ``Stack``
    widgets whose selected indices are the controls' start values; the frame found there is the
    one the page loads eagerly. Its ``<img>`` names a file next to the page (``widget-frames/``,
    read from ``pages``, the built HTML chapters' folder) or is already a ``data:`` URI; a live
    widget's ``Image`` carries its PNG in the state's buffers. Either way the picture comes back
    as a ``data:`` URI, so the deck needs nothing beside it."""
    if model_id not in models:
        return WidgetView(state_kept=False)
    view = WidgetView()
    seen = set()

    def visit(mid: str | None):
        if mid is None or mid in seen or mid not in models:
            return
        seen.add(mid)
        model = models[mid]
        name, state = model.get("model_name", ""), model.get("state", {})
        if name in CONTROL_MODELS:
            view.controls.append(_control(name, state))
        elif name == "HTMLModel" and not view.picture:
            img = IMG_TAG.search(str(state.get("value", "")))
            if img:
                _take_picture(view, img.group(0), pages, where)
        elif name == "ImageModel" and not view.picture:
            data = next((b.get("data", "") for b in model.get("buffers", []) if b.get("path") == ["value"]), "")
            if data:
                fmt = state.get("format", "png")
                view.picture = f"data:image/{'svg+xml' if fmt == 'svg' else fmt};base64,{data}"
                view.width, view.height = _int(state.get("width")), _int(state.get("height"))
        children = state.get("children", [])
        if name in ONE_CHILD_MODELS:
            index = state.get("selected_index")
            children = [children[index]] if isinstance(index, int) and 0 <= index < len(children) else []
        for child in children:
            visit(_model_ref(child))

    visit(model_id)
    return view


def _int(value) -> int:
    try:
        return int(str(value).removesuffix("px"))
    except ValueError:
        return 0


def _attribute(tag: str, name: str) -> str:
    found = re.search(rf'\s{name}="([^"]*)"', tag)
    return html.unescape(found.group(1)) if found else ""


def _take_picture(view: WidgetView, tag: str, pages: Path | None, where: str):
    src = _attribute(tag, "src")
    view.alt = " ".join(_attribute(tag, "alt").split())
    view.width, view.height = _int(_attribute(tag, "width")), _int(_attribute(tag, "height"))
    if src.startswith("data:"):
        view.picture = src
        return
    if re.match(r"^([a-z][\w+.-]*:|/)", src, re.I):
        raise SlideError(f"{where}: a widget's first picture is at {src!r}: a deck can embed only a file "
                         "beside the chapter's page")
    if pages is None:
        raise SlideError(f"{where}: a widget's first picture is the file {src!r} beside the chapter's page, "
                         "and no built HTML folder was given (--html)")
    path = pages / src
    if not path.is_file():
        raise SlideError(f"{where}: a widget's first picture {path} is missing: build the book's HTML first, "
                         "or give its chapters' folder with --html")
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
            ".webp": "image/webp", ".gif": "image/gif"}.get(path.suffix.lower())
    if mime is None:
        raise SlideError(f"{where}: the widget picture {path.name} is of a kind the slides do not embed")
    view.picture = f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _control(name: str, state: dict) -> Control:
    """A control as the slide names it: its description and the value it opens at."""
    description = " ".join(str(state.get("description") or "").split())
    labels, index = state.get("_options_labels"), state.get("index")
    if name == "PlayModel":
        value = ""
    elif labels is not None:
        value = labels[index] if isinstance(index, int) and 0 <= index < len(labels) else ""
        if not description:  # a row of buttons without a name: its choices name it
            description = " / ".join(labels)
    elif name in ("CheckboxModel", "ToggleButtonModel"):
        value = "on" if state.get("value") else "off"
    elif isinstance(state.get("value"), float):
        value = f"{state['value']:.3g}"
    else:
        value = str(state.get("value", ""))
    return Control(description or "a control", value, live=not state.get("disabled", False),
                   player=name == "PlayModel")


def controls_html(controls: list) -> str:
    """The controls a reader moves, each with the value it opens at: "Move: GPUs (p) at 4; step at 0
    (or press Play)", one to a line."""
    live = [c for c in controls if c.live]
    players = {re.sub(r"^Play\s+", "", c.description) for c in live if c.player}
    named = []
    for c in live:
        if c.player:
            if c.description.removeprefix("Play ").strip() not in {x.description for x in live if not x.player}:
                named.append("<strong>Play</strong>")
            continue
        text = f"<strong>{html.escape(c.description)}</strong>" + (f" at {html.escape(c.value)}" if c.value else "")
        if c.description in players:
            text += " (or press Play)"
        named.append(text)
    if named:
        return _control_list("Move", named)
    fixed = [f"<strong>{html.escape(c.description)}</strong>" for c in controls if not c.player]
    return _control_list("Its controls, which need a kernel", fixed) if fixed else ""


def _control_list(label: str, named: list) -> str:
    return (f'<div class="widget-controls"><p>{label}:</p><ul>'
            + "".join(f"<li>{n}</li>" for n in named) + "</ul></div>")


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
    widget: WidgetView | None = None  # a widget's first view; its ``body`` is the prose of the cell before it

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

    def __init__(self, name: str, values: dict, *, first_exercise: int, models: dict | None = None,
                 pages: Path | None = None):
        self.name = name
        self.chapter = Chapter(name, values, first=first_exercise)
        self.exercises = 0
        self.in_solution: Item | None = None  # the exercise whose solution is being read
        self.items: list[Item] = []
        self.models = models or {}  # the notebook's saved widget state, by model id
        self.pages = pages  # the built HTML chapters' folder: the widgets' pictures are files there
        self.cell_prose: list[Item] = []  # the last Markdown cell's prose after its last heading

    def read(self, nb) -> list[Item]:
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                try:
                    source = self.chapter.inline(join_glue_lines(cell.source))
                except ReaderError as exc:
                    raise SlideError(str(exc)) from exc
                start = len(self.items)
                for item in self.blocks(source):
                    self.add(item)
                added = self.items[start:]
                heads = [k for k, i in enumerate(added) if i.kind == "heading"]
                self.cell_prose = [i for i in added[heads[-1] + 1 if heads else 0:] if i.kind in ("para", "list")]
            elif cell.cell_type == "code" and self.in_solution is not None:
                printed = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")
                if printed.strip() and printed.count("\n") <= SOLUTION_LINES:
                    self.in_solution.solution.append(Item("printed", html=printed.strip("\n")))
            elif cell.cell_type == "code":
                if HIDDEN_OUTPUT_TAGS & set(cell.metadata.get("tags", [])):
                    continue
                for output in cell.get("outputs", []):
                    if WIDGET_VIEW in output.get("data", {}):
                        self.items.append(self.widget_item(output))
                        continue
                    item = output_item(output)
                    if item:
                        self.items.append(item)
        return self.items

    def widget_item(self, output) -> Item:
        """A widget shown by a code cell: its first view, and the prose of the Markdown cell before it."""
        model_id = output["data"][WIDGET_VIEW].get("model_id", "")
        view = widget_view(model_id, self.models, pages=self.pages, where=self.name)
        prose = list(self.cell_prose) or [i for i in self.items if i.kind == "para"][-1:]
        return Item("widget", body=prose, widget=view)

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


#: a short sentence that only announces what follows ("Two things stand out.", "Now the bytes sent.",
#: "The overlap numbers need care."): on a slide it says nothing, so the paragraph's next sentence leads
ANNOUNCES = re.compile(r"((One|Two|Three|Four|Five|Six) \w+s\b[^:]*|Now\b[^:]*|[^:]*\bneeds? care)[.:]?")
ANNOUNCE_WORDS = 6


def announces(text: str) -> bool:
    """True for a sentence of a few words that only announces the next ones (see :data:`ANNOUNCES`)."""
    return words(text) <= ANNOUNCE_WORDS and bool(ANNOUNCES.fullmatch(text.strip()))


def good_lead(sentence) -> bool:
    """A sentence that can stand alone on a slide: not an aside in parentheses, not the end of a sentence
    a formula began, not one that points at something the slide does not show, not one that only
    announces the next sentences, not too long."""
    text = plain_text(sentence).strip()
    starts_lower = sentence[0].type == "text" and sentence[0].content.lstrip()[:1].islower()
    return (bool(text) and not text.startswith("(") and not starts_lower and words(text) <= LEAD_WORDS
            and not re.match(r"(Here (is|are)|Read |Step through)", text) and not announces(text))


def widget_lead(prose: list[Item]):
    """The sentence that tells the reader what to do with a widget: the first that starts with a verb
    ("Drag the step slider..."), else the first that names a control or what the picture shows."""
    sentences = [s for i in prose for s in i.sentences() if 4 <= words(plain_text(s)) <= LEAD_WORDS]
    for sentence in sentences:
        if IMPERATIVE.match(plain_text(sentence).strip()):
            return sentence
    for sentence in sentences:
        starts_lower = sentence[0].type == "text" and sentence[0].content.lstrip()[:1].islower()
        if MOVE_WORDS.search(plain_text(sentence)) and not starts_lower:
            return sentence
    return None


def widget_notes(prose: list[Item], budget: int = NOTES_WORDS) -> str:
    """Speaker notes for a widget: the paragraphs of the cell before it that say what to move or what
    to look for (all their sentences), else its last paragraph; ``budget`` words at most."""
    paras = [i for i in prose if i.kind == "para"]
    chosen = [i for i in paras if any(MOVE_WORDS.search(plain_text(s)) for s in i.sentences())] or paras[-1:]
    parts, count = [], 0
    for item in chosen:
        kept = []
        for sentence in item.sentences():
            if count >= budget:
                break
            kept.append(notes_inline(sentence))
            count += words(plain_text(sentence))
        if kept:
            parts.append(f"<p>{' '.join(kept)}</p>")
    return "".join(parts)


def tidy_readout(text: str) -> str:
    """A read-out flattened from HTML, with the spaces its tags left before punctuation taken out."""
    text = re.sub(r"\s+([:;,.!?)])", r"\1", text)
    return re.sub(r"\(\s+", "(", text)


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
        for item in front.items if front else []:
            if item.kind == "widget":
                self.widget_slide("", item)
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
                for item in section.items:
                    if item.kind == "widget":
                        self.widget_slide(section.title, item)
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
        last_anchor = None  # the last slide an anchor made here (a widget's slide takes no prose from others)
        while k < len(items):
            item = items[k]
            if item.kind == "widget":  # a slide of its own, between the others, which it leaves as they were
                self.widget_slide(section.title, item)
                # the prose that tells the reader what to move is the widget slide's now: no second slide of it
                pending = [p for p in pending if not any(p is b for b in item.body)]
                k += 1
                continue
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
            last_anchor = self.slides[-1]
            pending, made = [], made + 1
            k += 1
        if pending:
            prose_words = sum(words(i.text()) for i in pending)
            if made and len(pending) <= 2 and prose_words <= 120:
                last = last_anchor
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

    def widget_slide(self, section_title: str, item: Item):
        """"Try it": a widget's first view as the static book opens it, the controls a reader moves, and
        the chapter's words on what to move and what to look for. A widget whose state carries no
        picture says so in one line instead. The slide takes the heading over it as a kicker but
        leaves it to the slide it belongs to."""
        view = item.widget
        topic = TRY_IT_TITLE.sub("", section_title.strip())
        if topic:
            topic = heading_html(topic[:1].upper() + topic[1:])
        else:  # a section called "Try it": the chapter's subject
            topic = html.escape(re.sub(r"^\d+\.\s*", "", self.title))
        lead = widget_lead(item.body)
        lead_html = f'<p class="lead">{render_inline(lead).strip()}</p>' if lead else ""
        controls = controls_html(view.controls)
        if view.picture:
            alt = html.escape(view.alt or f"{re.sub(r'<[^>]+>', '', topic)}: the widget as it opens", quote=True)
            size = f' width="{view.width}" height="{view.height}"' if view.width and view.height else ""
            body = (f'<div class="try-it"><div class="try-picture"><img class="widget-frame" src="{view.picture}" '
                    f'alt="{alt}"{size}></div>\n<div class="try-side">{lead_html}{controls}</div></div>')
        else:
            why = ("the book's static page shows this widget without a picture: it needs a running kernel"
                   if view.state_kept else "the notebook kept no state for this widget: it shows only with a kernel")
            body = (f'<p class="no-picture">No picture here: {why} (open the chapter in Colab or Jupyter).</p>\n'
                    f"{lead_html}{controls}")
        notes = widget_notes(item.body)
        if view.alt:  # the numbers the widget reads out beside the picture, for the one who presents it
            notes += f"<p>As it opens, the widget reads: {html.escape(tidy_readout(view.alt), quote=False)}</p>"
        if not notes:
            notes = "<p>The widget is shown as it opens; move its controls in the chapter's notebook.</p>"
        kicker = self.kicker
        self.slides.append(Slide(f"Try it: {topic}", body, notes, "try-it-slide", kicker))

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
            if item.kind == "widget":
                self.widget_slide(section.title, item)
                continue
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


def chapter_slides(nb, values: dict, name: str, *, first_exercise: int = 1,
                   pages: Path | None = None) -> tuple[str, list[str], int]:
    """The title, the slides (HTML sections) and the number of exercises of one executed chapter.

    ``pages``: the built HTML chapters' folder, where the widgets' pictures are."""
    reader = ChapterReader(name, values, first_exercise=first_exercise, models=widget_states(nb), pages=pages)
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
.reveal .try-it {{ display: flex; gap: 36px; align-items: center; justify-content: center; }}
.reveal .try-picture {{ flex: 0 1 auto; min-width: 0; }}
.reveal section img.widget-frame {{ display: block; width: auto; height: auto; max-width: 720px; max-height: 620px;
  margin: 0; border: 0; box-shadow: none; }}
.reveal .try-side {{ flex: 1 1 380px; max-width: 480px; }}
.reveal .try-side p {{ margin: 0 0 .7em; }}
.reveal .try-side p.lead {{ font-size: .8em; }}
.reveal .widget-controls {{ font-size: .72em; }}
.reveal .widget-controls p {{ margin: 0 0 .2em; }}
.reveal .widget-controls ul {{ margin: 0 0 0 1.1em; }} .reveal .widget-controls li {{ margin: .1em 0; }}
.reveal p.no-picture {{ font-size: .8em; border-left: 8px solid #888; padding: .3em .8em; background: #f4f4f4; }}
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
