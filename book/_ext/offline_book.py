"""Small fixes so every page of the static book loads cleanly with no network.

- Drop exact duplicate scripts (an extension that registers one twice would
  declare its constants twice: a JavaScript error on every page), and
  sphinx-thebe's script and configuration, which name a CDN and which nothing
  here starts: the book's Live code brings its own Thebe.
- pydata-sphinx-theme logs "Got invalid theme mode" on a first visit unless a
  default mode is configured: set one.
- Refuse to build a page that would load a script from another host, so an
  offline reader never meets a blank widget or a missing animation.
- The static book: the kernels that execute the chapters start with
  ``distlib.static.kernel_environment`` (``DISTLIB_STATIC_WIDGETS`` and
  ``DISTLIB_STATIC_URL``, and ``PYTHONSTARTUP`` naming the file that has each
  kernel show its figures as picture pairs; see ``distlib/static/``): every
  figure is drawn wide and for a phone, and every widget's frames are drawn at
  build time, all written next to the page, in ``widget-frames/``. This is
  the one switch: a kernel anywhere else (Jupyter, Colab) keeps its widgets live.
- ``static/distbook.css`` (a layout that fits a 390 px phone and no sideways
  scrolling at 1280 px) and ``static/distbook.js`` (search snippets without
  the Colab set-up cell or raw LaTeX) on every page.
- The set-up cell (tag ``colab-setup``) stays out of the search index.
- No page loads Font Awesome's JavaScript (543 kB gzipped, the theme's
  template adds it): the theme's CSS already draws every icon from Font
  Awesome's web font, so the script only swapped those icons for SVGs.
- The book has no index entries, so it has no empty ``genindex`` page.
- A page whose executed cells show a traceback fails the build.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError

HERE = Path(__file__).resolve().parent
FRAMES = "widget-frames"
SETUP_TAG = "tag_colab-setup"


def _key(script):
    attrs = tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items()))
    return getattr(script, "filename", None) or "", attrs  # None and "" both mean inline


def _dedupe_and_check(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key in seen or _is_sphinx_thebe(script):
            continue
        seen.add(key)
        kept.append(script)
        filename = getattr(script, "filename", None) or ""
        if filename.startswith(("http://", "https://", "//")):
            raise ExtensionError(f"{pagename}: a script would load from the network: {filename}")
    scripts[:] = kept
    css = context.get("css_files")
    if css:
        css[:] = [c for c in css if "sphinx-thebe" not in (getattr(c, "filename", None) or "")]


def _is_sphinx_thebe(script) -> bool:
    """sphinx-thebe's script and its inline configuration, which names a CDN (unpkg.com).

    Jupyter Book adds them to every page, but nothing here starts them (no
    Thebe launch button is configured): the book's own Live code
    (``book/vendor/livecode.js``) brings its Thebe from the book itself.
    """
    filename = getattr(script, "filename", None) or ""
    body = str(getattr(script, "attributes", {}).get("body", ""))
    return "sphinx-thebe" in filename or "THEBE_JS_URL" in body


def _config(app, config):
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "light")
    config.html_context = context
    config.html_static_path = [*config.html_static_path, str(HERE / "static")]
    config.html_use_index = False


def _static_frames_for(app, docname, source):
    """Before a chapter is read (and its notebook executed), point its kernel at its frame folder."""
    if app.builder.format != "html":
        return
    from distlib.static.kernel import kernel_environment

    folder = posixpath.dirname(docname)
    os.environ.update(kernel_environment(Path(app.outdir, folder, FRAMES), FRAMES + "/"))


def _no_error_outputs(app, doctree, docname):
    """A chapter whose cells print a traceback is not built: a failed figure must not ship as an error.

    (A display formatter that raises, e.g. a figure that cannot be laid out
    for a phone, leaves a traceback in the output while the cell succeeds.)
    """
    for node in doctree.findall(nodes.Element):
        if "traceback" in node.get("classes", ()):
            raise ExtensionError(f"{docname}: a cell's output is a traceback:\n{node.astext()[-2000:]}")


def _without_setup_cell(word_collector):
    """Wrap the search indexer's word collector so that it never sees the set-up cell."""

    def collect(self, doctree):
        hidden = [n for n in doctree.findall(nodes.Element) if SETUP_TAG in n.get("classes", ())]
        places = [(n.parent, n.parent.index(n), n) for n in hidden if n.parent is not None]
        for parent, _, node in reversed(places):
            parent.remove(node)
        try:
            return word_collector(self, doctree)
        finally:
            for parent, index, node in places:
                parent.insert(index, node)

    collect.skips_setup_cell = True
    return collect


_FA_SCRIPT = re.compile(r'<script defer src="[^"]*_static/scripts/fontawesome\.js(\?[^"]*)?"></script>\s*')


def _without_fontawesome_js(app, exception):
    """After an HTML build: take the theme's Font Awesome script out of every page."""
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "fontawesome.js" in text:
            page.write_text(_FA_SCRIPT.sub("", text), encoding="utf-8")


_REFRESH = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)" />')


def _root_redirect_keeps_the_hash(app, exception):
    """After sphinx-external-toc has written the root redirect (its build-finished, priority 500)."""
    if exception is None and app.builder.format == "html":
        _redirect_keeping_the_hash(Path(app.outdir) / "index.html")


def _redirect_keeping_the_hash(index: Path) -> None:
    """The site's root page only redirects to the first page; make it carry the URL's #fragment along.

    The workshop prints ``index.html#jupyter=...&token=...`` for Live code; a
    meta refresh drops the fragment, so the first page would not know the
    server and would ask for it. A script goes first (with the hash); the meta
    refresh stays for a browser without JavaScript.
    """
    if not index.exists():
        return
    text = index.read_text(encoding="utf-8")
    found = _REFRESH.search(text)
    if not found or "location.replace" in text:
        return
    target = found.group(1)
    script = f'<script>location.replace("{target}" + location.search + location.hash);</script>\n'
    index.write_text(script + text, encoding="utf-8")


def _register_round_citations():
    """An author-year citation style with round brackets, "(Patarasuk and Yuan, 2009)", as the reader
    notebooks print them (tools/reader_notebooks.py); sphinxcontrib-bibtex's own uses square ones.
    Registered when this extension is imported, before sphinxcontrib-bibtex reads its settings
    (``bibtex_reference_style: author_year_round`` in _config.yml)."""
    import dataclasses

    try:
        import sphinxcontrib.bibtex.plugin as plugin
        from sphinxcontrib.bibtex.style.referencing import BracketStyle
        from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
    except ImportError:  # pragma: no cover - Jupyter Book 1 always brings it
        return

    def round_brackets():
        return BracketStyle(left="(", right=")")

    @dataclasses.dataclass
    class RoundAuthorYear(AuthorYearReferenceStyle):
        bracket_parenthetical: BracketStyle = dataclasses.field(default_factory=round_brackets)
        bracket_textual: BracketStyle = dataclasses.field(default_factory=round_brackets)
        bracket_author: BracketStyle = dataclasses.field(default_factory=round_brackets)
        bracket_label: BracketStyle = dataclasses.field(default_factory=round_brackets)
        bracket_year: BracketStyle = dataclasses.field(default_factory=round_brackets)

    plugin.register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYear)


_register_round_citations()

_CHAPTER = re.compile(r"(?:^|/)(\d+)_[^/]*$")


def _exercises_numbered_per_chapter(app, env):
    """Exercise k of chapter c is "Exercise c.k", in the pages and (read from here) the reader notebooks.

    sphinx-exercise numbers exercises on through the whole book (chapter 6
    began at "Exercise 19"). Sphinx has just assigned those numbers
    (``env.toc_fignumbers``, in ``env-get-updated``); this runs after it and
    renumbers each chapter's exercises from 1, in their order, behind the
    chapter's number (its file name's ``NN_``). References follow, as
    sphinx-exercise reads the numbers from the same table.
    """
    for doc, per_type in env.toc_fignumbers.items():
        chapter = _CHAPTER.search(doc)
        exercises = per_type.get("exercise")
        if not chapter or not exercises:
            continue
        ordered = sorted(exercises, key=lambda label: exercises[label])
        per_type["exercise"] = {label: (int(chapter.group(1)), k) for k, label in enumerate(ordered, 1)}
    return []


#: Extensions that say nothing of parallel builds, which Sphinx then refuses with a warning (an error under -W):
#: none keeps state between documents (the LaTeX one acts only for the LaTeX builder; the numbering and the
#: table of contents work on the merged environment, in the main process).
_SAFE_UNDECLARED = ("sphinx_jupyterbook_latex", "sphinx_multitoc_numbering", "sphinx_external_toc")


def _declare_parallel_safe(app, config):
    for name in _SAFE_UNDECLARED:
        ext = app.extensions.get(name)
        if ext is None:
            continue
        for attr in ("parallel_read_safe", "parallel_write_safe"):
            if getattr(ext, attr, None) is None:
                setattr(ext, attr, True)


def _chapters_spread_over_chunks(app, env, docnames):
    """With parallel reading (tools/build_book.py), Sphinx cuts the sorted documents into consecutive chunks, a
    process each: every short page would go to one process and chapters 1-3 to the next. Dealt out like cards
    instead, the notebooks first (each executes), every chunk gets its share of them."""
    jobs = getattr(app, "parallel", 1) or 1
    if jobs <= 1 or len(docnames) <= 5:
        return
    from sphinx.util.parallel import make_chunks

    sizes = [len(chunk) for chunk in make_chunks(docnames, jobs)]  # the chunks Sphinx will cut, in order
    places = [k for turn in range(max(sizes)) for k, size in enumerate(sizes) if turn < size]  # round the table
    cards = sorted(docnames, key=lambda doc: not str(env.doc2path(doc)).endswith(".ipynb"))  # notebooks first
    hands = [[] for _ in sizes]
    for k, doc in zip(places, cards):
        hands[k].append(doc)
    docnames[:] = [doc for hand in hands for doc in hand]


def setup(app):
    from sphinx.search import IndexBuilder

    if not getattr(IndexBuilder._word_collector, "skips_setup_cell", False):
        IndexBuilder._word_collector = _without_setup_cell(IndexBuilder._word_collector)
    app.connect("config-inited", _config)
    app.connect("config-inited", _declare_parallel_safe)
    app.connect("env-before-read-docs", _chapters_spread_over_chunks)
    app.connect("source-read", _static_frames_for)
    app.connect("doctree-resolved", _no_error_outputs)
    app.connect("env-get-updated", _exercises_numbered_per_chapter, priority=900)  # after Sphinx numbers them
    app.connect("html-page-context", _dedupe_and_check, priority=900)
    app.connect("build-finished", _without_fontawesome_js, priority=100)
    app.connect("build-finished", _root_redirect_keeps_the_hash, priority=900)
    app.add_css_file("distbook.css")
    app.add_js_file("distbook.js")
    # each process reading a chapter sets its own kernel's environment (_static_frames_for) before it runs it
    return {"parallel_read_safe": True, "parallel_write_safe": True}
