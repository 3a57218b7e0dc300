"""Reader notebooks: the chapters as plain Jupyter notebooks that read like the book.

The chapter sources in ``notebooks/`` are MyST notebooks: ``{glue:text}`` roles,
``:::{admonition}`` fences, sphinx-exercise exercises and solutions. Colab,
JupyterLab and the classic Notebook show all of that as raw text. This step
writes one reader copy per chapter to ``_build/reader/`` (same file names):

- every glued value written into the prose, formatted exactly as myst-nb
  formats it in the book (read from ``_build/jupyter_execute/<doc>.glue.json``);
- admonitions as block quotes with a bold title; exercises as numbered headings;
- each solution under its own heading "Solution to Exercise N", stored
  collapsed for JupyterLab / Notebook 7 (``jp-MarkdownHeadingCollapsed``), for
  Colab (``colab.collapsed_sections``) and for the classic Notebook's
  collapsible-headings extension (``heading_collapsed`` / ``hidden``); code
  cells can't sit inside ``<details>``, so a heading is what folds them;
- notes that only concern the web pages (``:class: web-only``) left out;
- no stored outputs, no execution counts, no nbval tags;
- the set-up cell pinned to the commit the book was built from.

Anything it cannot turn into plain Markdown (an unknown role or directive, a
missing glue key, raw MyST left over) stops it with an error naming the
chapter and the text, so the book build fails loudly rather than ship raw MyST.

It runs as a Sphinx extension after every HTML build (``_config.yml``:
``sphinx.local_extensions``), and also writes each reader copy over the
download button's ``_sources/<doc>.ipynb`` and next to the chapter's page
(``<doc>.ipynb`` in the site), where the launch buttons point once the site
is published (``scripts/publish.sh``). By hand::

    python tools/reader_notebooks.py [BUILD_DIR]   # default _build
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BIBFILE = ROOT / "references.bib"  # the book's bibliography (_config.yml: bibtex_bibfiles)
CITE_ROLES = {"cite": "p", "cite:p": "p", "cite:t": "t", "cite:ps": "ps", "cite:ts": "ts"}

ADMONITIONS = {  # directive -> (default title, emoji shown before it)
    "admonition": ("", ""), "note": ("Note", "ℹ️"), "tip": ("Tip", "💡"), "hint": ("Hint", "💡"),
    "important": ("Important", "❗"), "warning": ("Warning", "⚠️"), "caution": ("Caution", "⚠️"),
    "attention": ("Attention", "⚠️"), "danger": ("Danger", "⛔"), "error": ("Error", "⛔"),
    "seealso": ("See also", "🔗"),
}
CLASS_EMOJI = {"tip": "💡", "hint": "💡", "warning": "⚠️", "caution": "⚠️", "attention": "⚠️",
               "important": "❗", "danger": "⛔", "error": "⛔", "note": "ℹ️", "seealso": "🔗"}
DROP_CLASS = "web-only"
DROP_TAGS = {"nbval-check-output", "colab-setup", "remove-cell", "hide-input", "hide-output", "remove-input",
             "remove-output", "hide-cell", "nbval-ignore-output", "raises-exception"}

FENCE_OPEN = re.compile(r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[A-Za-z][\w-]*)\}[ \t]*(?P<arg>.*)$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
ROLE = re.compile(r"(?<!`)\{(?P<name>[A-Za-z][\w:-]*)\}`(?P<text>[^`]*)`")
LABEL_LINE = re.compile(r"^\((?P<label>[^()\s]+)\)=[ \t]*$")
HEADING = re.compile(r"^(?P<hashes>#{1,6})[ \t]+\S")
RAW_MYST = [
    (re.compile(r"\{[A-Za-z][\w:-]*\}`"), "a MyST role"),
    (re.compile(r"^:{3,}", re.M), "a ':::' fence"),
    (re.compile(r"^`{3,}\{", re.M), "a directive fence"),
    (re.compile(r"^\([^()\s]+\)=\s*$", re.M), "a label"),
    (re.compile(r"glue:"), "a glue reference"),
]


class ReaderError(ValueError):
    """The chapter holds MyST this step cannot turn into plain Markdown."""


# ----------------------------------------------------------------------------
# Glue values
# ----------------------------------------------------------------------------


def load_glue(path: Path) -> dict:
    """``{key: text/plain}`` from myst-nb's ``<doc>.glue.json`` ({} if the chapter glues nothing)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {key: value.get("data", {}).get("text/plain") for key, value in data.items()}


def format_glue(text: str, fmt_spec: str) -> str:
    """A glued value as myst-nb's ``{glue:text}`` role prints it (same function when available)."""
    try:
        from myst_nb.core.variables import format_plain_text
    except ImportError:  # pragma: no cover - the book's environment has myst-nb
        format_plain_text = None
    if format_plain_text is not None:
        return format_plain_text(text, fmt_spec)
    from ast import literal_eval  # pragma: no cover

    try:  # pragma: no cover
        value = literal_eval(text)
    except (SyntaxError, ValueError):  # pragma: no cover
        value = text
    return format(value if fmt_spec[-1:] not in "eEfFgGn%" else float(value), fmt_spec)  # pragma: no cover


def escape_markdown(text: str) -> str:
    """Text pasted into Markdown stays literal: no emphasis, code, links or math from it."""
    return re.sub(r"([\\`*_\[\]<>$|])", r"\\\1", text)


# ----------------------------------------------------------------------------
# Citations (author-year, as sphinxcontrib-bibtex's author_year style prints them)
# ----------------------------------------------------------------------------


def load_bibliography(path: Path = BIBFILE) -> dict:
    """``{key: pybtex Entry}`` from the book's ``.bib`` file ({} if there is none)."""
    if not Path(path).exists():
        return {}
    from pybtex.database import parse_file

    return dict(parse_file(str(path)).entries)


def _plain(latex: str) -> str:
    """A BibTeX field as plain text: accents decoded, protecting braces dropped."""
    import codecs

    import latexcodec  # noqa: F401  (registers the "ulatex" codec; a pybtex dependency)

    return re.sub(r"[{}]", "", codecs.decode(latex, "ulatex")).strip()


def _names(entry, *, full: bool, last_only: bool = True) -> str:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    if not people:
        return f"*{_plain(entry.fields.get('title', '?'))}*"
    others = any(str(p) == "others" for p in people)
    people = [p for p in people if str(p) != "others"]
    if last_only:
        names = [_plain(" ".join(p.prelast_names + p.last_names)) for p in people]
    else:
        names = [_plain(" ".join(p.first_names + p.middle_names + p.prelast_names + p.last_names)) for p in people]
    if (len(names) > 2 or others) and not full:
        return f"{names[0]} *et al.*"
    if others:
        return ", ".join(names) + " *et al.*"
    return names[0] if len(names) == 1 else (
        " and ".join(names) if len(names) == 2 else ", ".join(names[:-1]) + ", and " + names[-1])


def cite_text(keys: list[str], bibliography: dict, *, mode: str = "p") -> str:
    """``{cite:p}`` -> "(Patarasuk and Yuan, 2009)", ``{cite:t}`` -> "Patarasuk and Yuan (2009)";
    ``ps``/``ts`` list every author. Several keys are joined with "; " (p) or ", " (t)."""
    missing = [k for k in keys if k not in bibliography]
    if missing:
        raise KeyError(", ".join(missing))
    full = mode in ("ps", "ts")
    parts = []
    for key in keys:
        entry = bibliography[key]
        year = entry.fields.get("year", "n.d.")
        names = _names(entry, full=full)
        parts.append(f"{names}, {year}" if mode in ("p", "ps") else f"{names} ({year})")
    return f"({'; '.join(parts)})" if mode in ("p", "ps") else ", ".join(parts)


def _sentence(text: str) -> str:
    """``text`` ended with a full stop, unless it already ends with one, a question or an exclamation
    mark ("Why is X slow?" stays as it is, not "Why is X slow?.")."""
    bare = text.rstrip("*")
    return text if bare.endswith((".", "?", "!")) else text + "."


def reference_entry(entry) -> str:
    """One bibliography line in Markdown: authors (year). Title. Venue. URL."""
    f = entry.fields
    text = f"{_names(entry, full=True, last_only=False)} ({f.get('year', 'n.d.')}). {_sentence(_plain(f.get('title', '')))}"
    venue = f.get("journal") or f.get("booktitle") or f.get("howpublished")
    if venue:
        venue = f"*{_plain(venue)}*"
        if f.get("volume"):
            venue += f", {f['volume']}" + (f"({f['number']})" if f.get("number") else "")
        if f.get("pages"):
            venue += f", {f['pages'].replace('--', '–')}"
        text += f" {_sentence(venue)}"
    link = f"https://doi.org/{f['doi']}" if f.get("doi") else f.get("url")
    return text + (f" <{link}>" if link else "")


def references_cell_source(keys: list[str], bibliography: dict) -> str:
    """The "References" cell a reader notebook ends with: every entry the chapter cites, in order of
    first citation."""
    lines = [f"- {reference_entry(bibliography[key])}" for key in keys]
    return "## References\n\n" + "\n".join(lines)


# ----------------------------------------------------------------------------
# Markdown conversion
# ----------------------------------------------------------------------------


PLAIN_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def copy_code_block(lines: list, i: int, out: list) -> int:
    """Append the plain code block that opens at ``lines[i]`` to ``out``, through its closing fence
    (code is copied, never read as MyST); return the index of the line after it."""
    fence = PLAIN_FENCE.match(lines[i]).group(1)
    out.append(lines[i])
    i += 1
    while i < len(lines) and not lines[i].strip().startswith(fence):
        out.append(lines[i])
        i += 1
    if i < len(lines):
        out.append(lines[i])
    return i + 1


def read_directive(lines: list, i: int) -> tuple:
    """The MyST directive whose fence opens at ``lines[i]``: ``(name, arg, options, body lines,
    index of the line after its closing fence)``, that index None if it is never closed. Nested
    directives with the same fence stay in the body."""
    opened = FENCE_OPEN.match(lines[i])
    fence, name, arg = opened.group("fence"), opened.group("name"), opened.group("arg").strip()
    i += 1
    options = {}
    while i < len(lines) and OPTION.match(lines[i]):
        m = OPTION.match(lines[i])
        options[m.group("key")] = m.group("value").strip()
        i += 1
    body, depth = [], 0
    closing = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    while i < len(lines):
        inner = FENCE_OPEN.match(lines[i])
        if inner and inner.group("fence")[0] == fence[0] and len(inner.group("fence")) == len(fence):
            depth += 1
        elif closing.match(lines[i]):
            if depth == 0:
                return name, arg, options, body, i + 1
            depth -= 1
        body.append(lines[i])
        i += 1
    return name, arg, options, body, None


class Chapter:
    """State while converting one chapter: glue values, exercise numbers, section depth."""

    def __init__(self, name: str, glue: dict, *, numbers: dict | None = None, first: int = 1,
                 bibliography: dict | None = None):
        self.name = name
        self.glue = glue
        self.bibliography = bibliography  # key -> pybtex Entry; read from BIBFILE at the first citation
        self.cited: list = []  # the keys this chapter cites, in order of first citation
        self.numbers = numbers or {}  # label -> the book's number for it (sphinx-exercise's)
        self.first = first  # the number of this chapter's first exercise when a label has none
        self.used_glue: set = set()
        self.exercises: dict = {}  # label -> number
        self.section_level = 1
        self.exercise_level = 3

    def next_exercise_number(self) -> str:
        """Without the book's number: "c.k" for the k-th exercise of chapter c (its file's ``NN_``),
        as the book numbers them (book/_ext/offline_book.py); else on from ``first``."""
        chapter = re.match(r"(\d+)_", self.name)
        k = len(self.exercises) + 1
        return f"{int(chapter.group(1))}.{k}" if chapter else str(self.first + k - 1)

    def fail(self, what: str, text: str) -> ReaderError:
        snippet = text.strip().splitlines()[0][:120] if text.strip() else ""
        return ReaderError(f"{self.name}: {what}: {snippet!r}")

    # -- roles ---------------------------------------------------------------

    def role(self, match: re.Match) -> str:
        name, text = match.group("name"), match.group("text")
        if name in ("glue:text", "glue", "glue:md"):
            key, _, fmt_spec = text.rpartition(":") if ":" in text else (text, "", "")
            if "::" in key:
                raise self.fail("glue from another document is not supported in reader notebooks", match.group(0))
            if key not in self.glue or self.glue[key] is None:
                raise self.fail(f"glue key {key!r} has no text/plain value in the build", match.group(0))
            self.used_glue.add(key)
            value = format_glue(self.glue[key], fmt_spec)
            return value if name == "glue:md" else escape_markdown(value)
        if name in CITE_ROLES:
            if self.bibliography is None:
                self.bibliography = load_bibliography()
            keys = [k.strip() for k in text.split(",") if k.strip()]
            try:
                shown = cite_text(keys, self.bibliography, mode=CITE_ROLES[name])
            except KeyError as exc:
                raise self.fail(f"citation key {exc.args[0]} is not in {BIBFILE.name}", match.group(0)) from None
            self.cited += [k for k in keys if k not in self.cited]
            return shown
        if name == "math":
            return f"${text}$"
        if name in ("sub", "sup"):
            return f"<{name}>{text}</{name}>"
        if name in ("ref", "numref", "doc", "eq", "term"):
            shown = re.match(r"^(.*?)\s*<[^<>]+>$", text)
            if shown:
                return shown.group(1)
            if name == "ref" and text in self.exercises:
                return f"Exercise {self.exercises[text]}"
            return text
        if name in ("code", "literal", "samp", "file", "command", "kbd", "abbr", "program", "envvar"):
            return f"`{text}`"
        raise self.fail(f"unknown MyST role {{{name}}}", match.group(0))

    def inline(self, text: str) -> str:
        """Resolve the roles in ``text``, leaving fenced code blocks alone."""
        out, in_code = [], False
        for line in text.split("\n"):
            if re.match(r"^\s*(```|~~~)(?!\{)", line):
                in_code = not in_code
            out.append(line if in_code else ROLE.sub(self.role, line))
        return "\n".join(out)

    # -- blocks ---------------------------------------------------------------

    def convert(self, source: str) -> list:
        """One markdown cell's source -> a list of segments.

        A segment is ``("md", text)`` or a marker ``("solution-start", label)`` /
        ``("solution-end", None)``; exercise headings begin new segments so
        that every heading that folds starts its own cell.
        """
        lines = source.split("\n")
        segments: list = []
        current: list = []

        def flush():
            text = "\n".join(current).strip("\n")
            if text.strip():
                segments.append(("md", text))
            current.clear()

        i = 0
        while i < len(lines):
            line = lines[i]
            heading = HEADING.match(line)
            if heading:
                self.section_level = len(heading.group("hashes"))
                self.exercise_level = min(self.section_level + 1, 5)
            if LABEL_LINE.match(line):
                i += 1
                continue
            opened = FENCE_OPEN.match(line)
            if not opened:
                if PLAIN_FENCE.match(line):  # a plain code block: copy it whole
                    i = copy_code_block(lines, i, current)
                    continue
                current.append(line)
                i += 1
                continue
            name, arg, options, body, after = read_directive(lines, i)
            if after is None:
                raise self.fail(f"the {{{name}}} directive is never closed", line)
            i = after
            body_text = "\n".join(body).strip("\n")
            if name == "solution-start":
                flush()
                segments.append(("solution-start", arg))
            elif name == "solution-end":
                flush()
                segments.append(("solution-end", None))
            elif name == "exercise":
                flush()
                label = options.get("label", "")
                number = self.numbers.get(label) or self.next_exercise_number()
                if label:
                    self.exercises[label] = number
                title = f"Exercise {number}" + (f" ({self.inline(arg)})" if arg else "")
                segments.append(("md", f"{'#' * self.exercise_level} {title}\n\n{self.blocks(body_text)}"))
            elif name == "solution":
                flush()
                segments.append(("solution-start", arg))
                segments.append(("md", self.blocks(body_text)))
                segments.append(("solution-end", None))
            elif name in ADMONITIONS:
                if DROP_CLASS in options.get("class", "").split():
                    continue
                current.append(self.admonition(name, arg, options, body_text))
            elif name == "math":
                current.append(f"$$\n{body_text}\n$$")
            elif name in ("code-block", "code", "code-cell-output"):
                current.append(f"```{arg}\n{body_text}\n```")
            elif name in ("epigraph", "pull-quote", "highlights"):
                current.append(self.quote(self.blocks(body_text)))
            else:
                raise self.fail(f"unknown MyST directive {{{name}}}", line)
        flush()
        return [(kind, self.inline(text)) if kind == "md" else (kind, text) for kind, text in segments]

    def blocks(self, text: str) -> str:
        """Directives nested in a body, converted (exercise bodies may hold admonitions)."""
        parts = []
        for kind, value in self.convert(text):
            if kind != "md":
                raise self.fail("a solution inside another directive", text)
            parts.append(value)
        return "\n\n".join(parts)

    def admonition(self, name: str, arg: str, options: dict, body: str) -> str:
        default, emoji = ADMONITIONS[name]
        title = arg or default
        classes = options.get("class", "").split()
        emoji = next((CLASS_EMOJI[c] for c in classes if c in CLASS_EMOJI), emoji)
        head = f"**{emoji + ' ' if emoji else ''}{title}**" if title else ""
        inner = self.blocks(body)
        return self.quote(f"{head}\n\n{inner}" if head else inner)

    @staticmethod
    def quote(text: str) -> str:
        """``text`` as a Markdown block quote; display math kept on one line so the
        ``>`` markers never land inside a formula."""
        text = re.sub(r"\$\$(.+?)\$\$", lambda m: "$$" + " ".join(m.group(1).split()) + "$$", text, flags=re.S)
        return "\n".join(("> " + line) if line.strip() else ">" for line in text.split("\n"))


# ----------------------------------------------------------------------------
# Notebooks
# ----------------------------------------------------------------------------


def book_commit(root: Path = ROOT) -> str:
    """The commit the book is built from, or "" outside a git checkout."""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def pin_setup_cell(source: str, ref: str) -> str:
    """The set-up cell with ``REF = "..."`` replaced by ``ref``."""
    pinned, count = re.subn(r'^REF = "[^"]*"[^\n]*$', f'REF = "{ref}"  # the commit this reader copy was built from',
                            source, count=1, flags=re.M)
    if count != 1:
        raise ReaderError('the set-up cell has no line REF = "..." (run: python tools/nb.py sync-setup)')
    return pinned


def raw_myst(text: str) -> list[str]:
    """What raw MyST is left in a markdown text (outside code), as descriptions."""
    prose = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.M | re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return [what for pattern, what in RAW_MYST if pattern.search(prose)]


def reader_notebook(source_nb, glue: dict, *, name: str, ref: str = "", exercise_numbers: dict | None = None,
                    first_exercise: int = 1, bibliography: dict | None = None):
    """The reader copy of one chapter (a new ``NotebookNode``).

    Exercises take their numbers from ``exercise_numbers`` (label -> number, as
    the book shows them), else count up from ``first_exercise``.
    """
    chapter = Chapter(name, glue, numbers=exercise_numbers, first=first_exercise, bibliography=bibliography)
    cells = []
    solution = None  # the heading cell of the open solution
    hidden_ids = []
    counter = 0

    def new_id() -> str:
        nonlocal counter
        counter += 1
        return f"r{counter:03d}"

    def add_markdown(text: str, *, hidden: bool):
        cell = nbformat.v4.new_markdown_cell(text)
        cell.id = new_id()
        cell.metadata = {"hidden": True} if hidden else {}
        cells.append(cell)

    first_code = True
    for cell in source_nb.cells:
        if cell.cell_type == "markdown":
            for kind, value in chapter.convert(cell.source):
                if kind == "md":
                    if solution is not None and HEADING.match(value) and \
                            len(HEADING.match(value).group("hashes")) <= chapter.exercise_level + 1:
                        raise chapter.fail("a heading inside a solution would end its fold early", value)
                    add_markdown(value, hidden=solution is not None)
                elif kind == "solution-start":
                    if solution is not None:
                        raise chapter.fail("a solution starts inside another solution", value or "")
                    label = value.split()[0] if value else ""
                    number = chapter.exercises.get(label)
                    if number is None:
                        raise chapter.fail(f"solution for unknown exercise {label!r}", value or "")
                    level = min(chapter.exercise_level + 1, 6)
                    heading = nbformat.v4.new_markdown_cell(f"{'#' * level} Solution to Exercise {number}")
                    heading.id = new_id()
                    heading.metadata = {"id": heading.id, "jp-MarkdownHeadingCollapsed": True,
                                        "heading_collapsed": True}
                    cells.append(heading)
                    hidden_ids.append(heading.id)
                    solution = heading
                else:  # solution-end
                    if solution is None:
                        raise chapter.fail("solution-end without solution-start", "")
                    solution = None
            continue
        if cell.cell_type == "code":
            source = cell.source
            if first_code:
                first_code = False
                if ref:
                    source = pin_setup_cell(source, ref)
            new = nbformat.v4.new_code_cell(source)
            new.id = new_id()
            tags = [t for t in cell.get("metadata", {}).get("tags", []) if t not in DROP_TAGS]
            new.metadata = {}
            if tags:
                new.metadata["tags"] = tags
            if solution is not None:
                new.metadata["hidden"] = True
            cells.append(new)
            continue
        new = copy.deepcopy(cell)  # raw cells pass through
        new.id = new_id()
        cells.append(new)
    if solution is not None:
        raise chapter.fail("a solution is never closed (no solution-end)", solution.source)
    if chapter.cited:  # the book lists these on its References page; the reader copy at its end
        add_markdown(references_cell_source(chapter.cited, chapter.bibliography), hidden=False)

    # a solution's fold must end before prose that is not a new exercise or section
    for k, cell in enumerate(cells):
        if cell.metadata.get("heading_collapsed"):
            level = len(HEADING.match(cell.source).group("hashes"))
            for nxt in cells[k + 1:]:
                if not nxt.metadata.get("hidden"):
                    m = HEADING.match(nxt.source) if nxt.cell_type == "markdown" else None
                    if not m or len(m.group("hashes")) > level:
                        raise chapter.fail("after a solution, the text must go on with a heading or an "
                                           "exercise, or the solution's fold would hide it", nxt.source)
                    break

    for cell in cells:
        if cell.cell_type == "markdown":
            left = raw_myst(cell.source)
            if left:
                raise chapter.fail(f"raw MyST left in the reader copy ({', '.join(left)})", cell.source)
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "collapsed_sections": hidden_ids, "toc_visible": True},
        "distbook": {"source": f"notebooks/{name}.ipynb", "commit": ref},
    }
    nbformat.validate(nb)
    nb.metadata["distbook"]["exercises"] = len(chapter.exercises)
    return nb


def build_reader_notebooks(build_dir: Path, docs: list[str], *, src_root: Path = ROOT, ref: str | None = None,
                           html_dir: Path | None = None, exercise_numbers: dict | None = None) -> list[Path]:
    """Write ``build_dir/reader/<name>.ipynb`` for every notebook doc (``"notebooks/01_ring"``).

    ``docs`` in book order: without ``exercise_numbers`` (label -> number,
    from Sphinx) exercises are numbered on through the book, as sphinx-exercise
    does. Also writes each copy to ``html_dir/_sources/<doc>.ipynb`` (the download
    button's file) and ``html_dir/<doc>.ipynb`` (the launch buttons' target
    once published), when ``html_dir`` is given.
    """
    ref = book_commit(src_root) if ref is None else ref
    out_dir = build_dir / "reader"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    first = 1
    for doc in docs:
        source = src_root / f"{doc}.ipynb"
        glue = load_glue(build_dir / "jupyter_execute" / f"{doc}.glue.json")
        nb = reader_notebook(nbformat.read(source, as_version=4), glue, name=Path(doc).name, ref=ref,
                             exercise_numbers=exercise_numbers, first_exercise=first)
        first += nb.metadata["distbook"].pop("exercises")
        text = nbformat.writes(nb) + "\n"
        target = out_dir / f"{Path(doc).name}.ipynb"
        target.write_text(text)
        written.append(target)
        if html_dir is not None:
            for copy_to in (html_dir / "_sources" / f"{doc}.ipynb", html_dir / f"{doc}.ipynb"):
                copy_to.parent.mkdir(parents=True, exist_ok=True)
                copy_to.write_text(text)
    return written


# ----------------------------------------------------------------------------
# Sphinx hook and command line
# ----------------------------------------------------------------------------


def _notebook_docs(app) -> list[str]:
    """The notebook chapters in book (toctree) order."""
    order = {doc: k for k, doc in enumerate(app.env.toctree_includes.get(app.config.root_doc, []))}
    docs = [doc for doc in app.env.found_docs if str(app.env.doc2path(doc)).endswith(".ipynb")]
    return sorted(docs, key=lambda doc: (order.get(doc, len(order)), doc))


def _exercise_numbers(app) -> dict:
    """label -> the number sphinx-exercise gave that exercise ("4", or "2.1" with section numbers)."""
    numbers = {}
    for per_doc in app.env.toc_fignumbers.values():
        for label, number in per_doc.get("exercise", {}).items():
            numbers[label] = ".".join(str(n) for n in number)
    return numbers


def _build_finished(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.errors import ExtensionError
    from sphinx.util import logging

    outdir = Path(app.outdir)
    try:
        written = build_reader_notebooks(outdir.parent, _notebook_docs(app), src_root=Path(app.srcdir),
                                         html_dir=outdir, exercise_numbers=_exercise_numbers(app))
    except ReaderError as exc:
        raise ExtensionError(f"reader notebooks: {exc}") from exc
    logging.getLogger(__name__).info(f"reader notebooks: {len(written)} written to {outdir.parent / 'reader'}")


def setup(app):
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    build_dir = Path(argv[0]).resolve() if argv else ROOT / "_build"
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    docs = [c["file"] for part in toc["parts"] for c in part["chapters"] if (ROOT / f"{c['file']}.ipynb").exists()]
    html = build_dir / "html"
    try:
        written = build_reader_notebooks(build_dir, docs, html_dir=html if html.is_dir() else None)
    except ReaderError as exc:
        print(f"reader notebooks: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
