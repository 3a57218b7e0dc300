"""Markdown, TeX and sentences as the slides read them (the lowest floor of ``tools/slides.py``).

- Markdown is parsed with markdown-it, the parser MyST itself uses, with its
  dollar math; links show their text only (a deck opens offline).
- TeX is written as plain Unicode text for what is read, not typeset: the
  speaker notes and the titles (:func:`plain_tex`).
- Sentences are the unit a slide quotes and the notes shorten to
  (:func:`split_sentences`, :func:`plain_text`, :func:`notes_inline`).
"""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin


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
