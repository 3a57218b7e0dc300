"""Choosing what a slide says: the sentence that leads it, the key sentences of prose, the speaker notes.

A slide quotes the chapter's own sentences. The lead of a figure, table or
formula is the sentence that introduces it (:func:`anchor_lead`); prose with
nothing to show gives the first sentence of each paragraph that can stand on
a slide (:func:`key_sentences`, :func:`good_lead`); a widget's lead is the
sentence that says what to move (:func:`widget_lead`). The speaker notes are
the prose of the slide, shortened (:func:`notes_html`, :func:`widget_notes`).
"""

from __future__ import annotations

import html
import re

from slides_chapter import Item
from slides_text import notes_inline, plain_tex, plain_text, split_sentences, words

NOTES_WORDS = 160  # speaker notes stop after the sentence that passes this many words
LEAD_WORDS = 45  # a longer sentence is not put on a slide as its lead
KEY_SENTENCES = 3  # at most this many key sentences on a slide without a figure
MOVE_WORDS = re.compile(r"\b(drag|slide|move|try|pick|switch|raise|lower|set|press|change|choose|select|step "
                        r"through|watch|see|compare|toggle|click|increase|decrease|show|shows)\b", re.I)
IMPERATIVE = re.compile(r"(Drag|Slide|Move|Try|Pick|Switch|Raise|Lower|Set|Press|Change|Choose|Select|Step "
                        r"through|Watch|Compare|Toggle|Click|Increase|Decrease)\b")


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


def first_sentence(inline) -> list:
    sentences = split_sentences(inline.children)
    return sentences[0] if sentences else []


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


def anchor_lead(pending: list[Item], anchor: Item, after: Item | None) -> tuple:
    """The sentence that introduces an anchor (a figure, table, formula, listing...), and for a formula in
    mid-sentence the rest of it: ``(lead, tail)``, either ``None``."""
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


def key_sentences(prose: list[Item]) -> list:
    """The sentences a slide of prose with nothing to show puts up: of each paragraph, the first that can stand
    on a slide (and does not end in a colon); else each paragraph's first; at most :data:`KEY_SENTENCES`."""
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
    return chosen[:KEY_SENTENCES]


def is_connector(item: Item) -> bool:
    """A paragraph that only carries a sentence from one formula to the next ("so the speedup is bounded:")."""
    if item.kind != "para" or len(item.sentences()) != 1:
        return False
    first = item.sentences()[0]
    text = plain_text(first).strip()
    return (first[0].type == "text" and first[0].content.lstrip()[:1].islower() and text.endswith((":", ","))
            and words(text) <= 25)
