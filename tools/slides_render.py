"""Rendering a chapter's items as reveal.js slides: one slide per idea, a "Try it" slide per widget, the page.

:class:`DeckMaker` groups the items into sections under their headings and
makes the slides of each (an anchor slide per figure, table, formula,
listing, list, takeaway and caution; a slide of key sentences for prose
with none; the exercises and the summary); :data:`PAGE` is the reveal.js
page a deck's slides go into.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from slides_chapter import Item
from slides_choose import (NOTES_WORDS, anchor_lead, first_sentence, is_connector, key_sentences, list_inlines,
                           math_tex, notes_html, widget_lead, widget_notes)
from slides_text import MD, SlideError, plain_text, render_blocks, render_inline, words

CODE_LINES = 14  # a longer code listing stays in the book
SKIPPED_SECTIONS = {"sources"}  # reference lists: the book's page has them
TRY_IT_TITLE = re.compile(r"^(try it( yourself)?|explore|play with( it)?)\b[\s:,.!]*", re.I)


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


def math_html(item: Item) -> str:
    return f'<div class="math display">\\[{html.escape(math_tex(item))}\\]</div>'


def short_list_html(item: Item) -> str:
    """A list with each item cut to its first sentence."""
    tag = "ol" if item.tokens[0].type == "ordered_list_open" else "ul"
    lis = "".join(f"<li>{render_inline(first_sentence(inline)).strip()}</li>" for inline in list_inlines(item))
    return f"<{tag}>{lis}</{tag}>"


def tidy_readout(text: str) -> str:
    """A read-out flattened from HTML, with the spaces its tags left before punctuation taken out."""
    text = re.sub(r"\s+([:;,.!?)])", r"\1", text)
    return re.sub(r"\(\s+", "(", text)


ANCHORS = {"figure", "table", "math", "code", "list", "takeaway", "callout"}


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
                self.key_sentence_slide(title, pending)

    def anchor_slide(self, title: str, pending: list[Item], group: list[Item], after: Item | None):
        """One slide for a figure, table, formula (or formulas), listing, list, takeaway or caution."""
        anchor = group[0]
        lead, tail = anchor_lead(pending, anchor, after)
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

    def key_sentence_slide(self, title: str, prose: list[Item]):
        """A slide for prose with nothing to show: the sentence of each paragraph that states its idea."""
        chosen = key_sentences(prose)
        if not chosen:
            return
        body = "<ul class=\"points\">" + "".join(f"<li>{render_inline(s).strip()}</li>" for s in chosen) + "</ul>"
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
