"""The static book in a kernel: every figure shown as a picture pair, inline PNGs for 2x screens.

Nothing here runs when a module is imported: a kernel is set up by calling
:func:`crisp_inline_figures`. The book build has its kernels call it as they
start: it starts each chapter's kernel with :func:`kernel_environment`, whose
``PYTHONSTARTUP`` names :data:`STARTUP`, a two-line file that calls it
(IPython runs that file in every kernel it starts). In Jupyter or Colab a
reader's notebook may call it too; there it only makes inline figures crisp.
"""

from __future__ import annotations

import os
from pathlib import Path

from .settings import ENV_DIR, ENV_STRICT, ENV_URL, environment

__all__ = ["crisp_inline_figures", "install_figure_formatter", "kernel_environment", "STARTUP"]

#: The file a book build's kernel runs as it starts (``PYTHONSTARTUP``): it calls :func:`crisp_inline_figures`.
STARTUP = Path(__file__).with_name("_kernel_startup.py")


def crisp_inline_figures() -> bool:
    """In a Jupyter kernel, render inline figures for 2x screens ("retina"); in the book build, as pairs.

    The PNG has twice the pixels and says its display size in its metadata,
    so the book (myst-nb) and Jupyter show it at its size, sharp, never
    stretched. When the environment asks for the static book
    (:func:`distlib.static.settings.environment`), every figure is also shown
    as a wide and a phone picture (:func:`install_figure_formatter`). Does
    nothing (and returns False) outside a kernel.
    """
    import sys

    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        if get_ipython() is None:
            return False
        set_matplotlib_formats("retina")
    except Exception:  # an old or unusual front end: keep its defaults
        return False
    env = environment()
    if env.frames is not None:
        install_figure_formatter(get_ipython(), None if env.frames == "inline" else env.frames, env.url)
    return True


def install_figure_formatter(ip, folder: str | Path | None, url: str = "") -> None:
    """Show every matplotlib figure in kernel ``ip`` as a :func:`~distlib.static.pictures.picture_html`.

    The ``text/html`` output (which the book prefers) carries both
    renderings; ``image/png`` (Jupyter's retina PNG) stays for everything
    else that reads the notebook (the slides). The formatter is registered
    for ``FigureBase``: matplotlib's inline backend drops every formatter of
    ``Figure`` itself whenever it (re)configures, and ``Figure`` finds this
    one through its bases.
    """
    from matplotlib.figure import FigureBase

    from .pictures import alt_text, picture_html, render_pair

    def as_html(fig):
        if not getattr(fig, "axes", None):
            return None
        wide, narrow = render_pair(fig)
        return picture_html(wide, narrow, folder=folder, url=url, alt=alt_text(fig))

    ip.display_formatter.formatters["text/html"].for_type(FigureBase, as_html)


def kernel_environment(folder: str | os.PathLike, url: str = "", *, strict: bool | None = None) -> dict:
    """The environment a kernel of the book build starts with (to add to ``os.environ``).

    ``folder``: where its pictures and widget frames are written
    (``"inline"``: embedded in the page); ``url``: the prefix the page reaches
    that folder by; ``strict``: set :data:`~distlib.static.settings.ENV_STRICT`
    too. ``PYTHONSTARTUP`` has the kernel call :func:`crisp_inline_figures`.

    >>> env = kernel_environment("/tmp/frames", "widget-frames/")
    >>> env["DISTLIB_STATIC_WIDGETS"], env["DISTLIB_STATIC_URL"], Path(env["PYTHONSTARTUP"]).name
    ('/tmp/frames', 'widget-frames/', '_kernel_startup.py')
    """
    env = {ENV_DIR: str(folder), ENV_URL: str(url), "PYTHONSTARTUP": str(STARTUP)}
    if strict is not None:
        env[ENV_STRICT] = "1" if strict else "0"
    return env
