"""Reading an executed chapter for its slides: its cells as a list of items, its widgets' first views.

- :class:`ChapterReader` turns the notebook's cells into :class:`Item` s
  (headings, paragraphs, lists, formulas, figures, tables, admonitions,
  exercises with their solutions), its MyST roles resolved and its glue
  filled in as the reader notebooks do (``tools/reader_notebooks.py``);
- :func:`widget_view` finds the picture the static book opens a widget with
  and the controls it shows, from the notebook's saved widget state;
- :func:`player_with_icons` draws the animation player's buttons as inline
  SVG (matplotlib's player asks for Font Awesome, which a deck opened from a
  file has not got).
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from reader_notebooks import (  # one way to read MyST and print glue, shared with the reader notebooks
    ADMONITIONS, DROP_CLASS, FENCE_OPEN, LABEL_LINE, PLAIN_FENCE, Chapter, ReaderError, copy_code_block,
    read_directive,
)
from slides_text import MD, SlideError, plain_text, split_sentences

SOLUTION_LINES = 12  # what a solution's code printed goes into the notes up to this many lines
HIDDEN_OUTPUT_TAGS = {"remove-output", "remove-cell", "hide-output"}


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
            raise SlideError(f"the animation player asks for the icon fa-{name}, which the slides cannot draw: "
                             "add it to ICON_PATHS in tools/slides_chapter.py")
        return (f'<svg class="anim-icon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" '
                f'focusable="false"><path fill="currentColor" d="{ICON_PATHS[name]}"/></svg>')

    return FA_ICON.sub(icon, page)
