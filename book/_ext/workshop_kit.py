"""Make the workshop's slides at the end of every HTML build.

After the pages are written, ``tools/slides.py`` turns the notebooks the build
executed (``_build/jupyter_execute/notebooks``) into one reveal.js deck per
chapter in ``_build/slides`` (next to ``_build/html``). A failure there fails
the build, so slides never fall behind the chapters.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[2]


def _make_slides(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import slides
    finally:
        sys.path.pop(0)
    build_dir = Path(app.outdir).parent
    try:
        decks = slides.build(build_dir / "jupyter_execute" / "notebooks", build_dir / "slides")
    except slides.SlideError as exc:
        raise ExtensionError(f"slides: {exc}") from exc
    print(f"slides: {len(decks)} decks in {build_dir / 'slides'}")


def setup(app):
    app.connect("build-finished", _make_slides)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
