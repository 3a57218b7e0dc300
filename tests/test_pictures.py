"""Two renderings of every picture (distlib/plots/pictures.py): wide for a desktop column, narrow for a phone.

The browser side (the phone gets the narrow one, nothing is shrunk) is in
tests/test_browser.py; here the renderings themselves.
"""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from PIL import Image  # noqa: E402

from distlib.plots import pictures  # noqa: E402


def _size(png: bytes):
    return Image.open(io.BytesIO(png)).size


def _chart(width_in=7.0, height_in=3.6):
    fig = Figure(figsize=(width_in, height_in))
    ax = fig.add_subplot()
    ax.plot([1, 2, 3], [3, 1, 2], label="a line")
    ax.set_title("a title long enough to need two lines on a phone screen")
    ax.set_xlabel("x label")
    ax.annotate("small note", (2, 1), fontsize=6)
    ax.legend(fontsize=7)
    return fig


def test_wide_fits_the_desktop_column_and_narrow_the_phone_each_at_2x():
    fig = _chart()
    wide, narrow = pictures.render_pair(fig)
    assert wide.width <= pictures.WIDE_MAX and narrow.width <= pictures.NARROW
    assert narrow.width >= pictures.NARROW - 12  # laid out for the phone, not a shrunk desktop picture
    for r in (wide, narrow):
        assert _size(r.png) == (pytest.approx(2 * r.width, abs=1), pytest.approx(2 * r.height, abs=1))
    # the figure itself keeps its size; its small text was raised to the page's small print
    assert tuple(fig.get_size_inches()) == (7.0, 3.6)
    assert min(t.get_fontsize() for t in fig.findobj(Text)) >= pictures.MIN_FONT_PT


def test_phone_layout_changes_only_the_phone_copy():
    fig = pictures.phone_layout(_chart(), height=500, adjust=_legend_below)
    loc = fig.axes[0].get_legend()._loc
    wide, narrow = pictures.render_pair(fig)
    assert narrow.height > wide.height  # the phone picture is taller, as asked
    assert fig.axes[0].get_legend()._loc == loc  # the legend moved below the plot on the phone copy only


def _legend_below(fig):
    ax = fig.axes[0]
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=1)


@pytest.mark.parametrize("made", ["tight_layout()", "no layout", 'layout="tight"', 'layout="constrained"'])
def test_the_phone_copy_is_laid_out_again_unless_the_figure_chose_an_engine(made):
    """``fig.tight_layout()`` leaves a placeholder engine and the wide margins (as fractions of a
    figure half as wide): the phone copy gets constrained layout, as a figure with no layout does."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine

    fig = Figure(figsize=(7.0, 3.6), layout=made.split('"')[1] if '"' in made else None)
    ax = fig.add_subplot()
    ax.plot([1, 2, 3], [3e6, 1e6, 2e6])
    ax.set_ylabel("a y label")
    if made == "tight_layout()":
        fig.tight_layout()
    own = type(fig.get_layout_engine())
    seen = []
    pictures.phone_layout(fig, adjust=seen.append)
    pictures.render_pair(fig)
    (phone,) = seen
    assert phone is not fig
    expect = TightLayoutEngine if made == 'layout="tight"' else ConstrainedLayoutEngine
    assert isinstance(phone.get_layout_engine(), expect)
    assert type(fig.get_layout_engine()) is own  # the figure itself keeps its own


def test_an_adjust_that_places_the_axes_itself_keeps_its_margins_on_the_phone():
    fig = _chart()
    fig.tight_layout()
    pictures.phone_layout(fig, adjust=_wide_left_margin)
    phone = pictures.phone_copy(fig)
    assert phone is not fig
    assert (phone.subplotpars.left, phone.subplotpars.right) == (0.3, 0.9)
    assert phone.get_layout_engine().adjust_compatible  # not switched to constrained layout
    pictures.render_pair(fig)


def _wide_left_margin(fig):
    fig.subplots_adjust(left=0.3, right=0.9)


def _math_legend_outside(fig_w=6.0):
    """A legend of math (never wrapped) hung right of the axes: it cannot fit a phone unless shrunk."""
    fig = Figure(figsize=(fig_w, 3))
    ax = fig.add_subplot()
    ax.plot([1, 2], label=r"$" + r"\alpha\beta\gamma" * 12 + r"$")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def test_a_figure_that_cannot_fit_is_an_error_in_the_tests_naming_the_fix():
    with pytest.raises(ValueError, match="phone_layout"):
        pictures.render_pair(_math_legend_outside(), strict=True)


def test_a_readers_build_shrinks_what_cannot_fit_instead_of_failing(monkeypatch):
    monkeypatch.delenv(pictures.ENV_STRICT, raising=False)
    wide, narrow = pictures.render_pair(_math_legend_outside())
    assert wide.width <= pictures.WIDE_MAX and narrow.width <= pictures.NARROW
    assert _size(narrow.png)[0] <= 2 * pictures.NARROW  # fewer pixels, shown at its CSS size: never stretched


def test_a_long_word_in_a_legend_is_broken_not_an_error():
    fig = Figure(figsize=(6, 3))
    ax = fig.add_subplot()
    ax.plot([1, 2], label="x" * 80)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    wide, narrow = pictures.render_pair(fig, strict=True)
    assert wide.width <= pictures.WIDE_MAX and narrow.width <= pictures.NARROW


def test_wrapping_is_measured_and_a_broken_line_runs_on_into_the_next():
    width = len  # one "pixel" a character: the rule, not the font
    assert pictures._wrap_pixels("measured matmul: AMD EPYC (2\nlogical cores", 26, width) == (
        "measured matmul: AMD EPYC\n(2 logical cores")
    # a line that fits keeps its own break
    assert pictures._wrap_pixels("short\nline two", 26, width) == "short\nline two"
    # a word wider than the line is cut inside
    assert pictures._wrap_pixels("ab " + "x" * 30, 10, width) == "ab\n" + "x" * 10 + "\n" + "x" * 10 + "\n" + "x" * 10


def test_picture_html_files_and_inline(tmp_path):
    wide, narrow = pictures.render_pair(_chart())
    html = pictures.picture_html(wide, narrow, folder=tmp_path, url="widget-frames")
    src = re.search(r' src="([^"]+)"', html).group(1)
    srcset = re.search(r'srcset="([^"]+)"', html).group(1)
    assert src.startswith("widget-frames/") and srcset.startswith("widget-frames/") and src != srcset
    assert (tmp_path / src.split("/")[1]).read_bytes() == wide.png
    assert (tmp_path / srcset.split("/")[1]).read_bytes() == narrow.png
    assert f"(max-width: {pictures.PHONE_MAX_VIEWPORT}px)" in html
    assert f"--w:{wide.width}px" in html and f"--wn:{narrow.width}px" in html
    inline = pictures.picture_html(wide, narrow, folder=None)
    assert inline.count("data:image/png;base64,") == 2
    assert "loading=" not in html
    assert ' loading="lazy" ' in pictures.picture_html(wide, narrow, folder=None, lazy=True)


def test_the_book_kernels_show_figures_as_pictures_and_leave_pyplot_as_it_was(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    pictures.install_figure_formatter(ip, tmp_path, "widget-frames/")
    try:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        ax.plot([1, 2, 3])
        before = plt.get_fignums()
        data, _ = ip.display_formatter.format(fig)
        assert "<picture" in data["text/html"] and len(list(tmp_path.glob("*.png"))) == 2
        assert plt.get_fignums() == before  # the phone copy is not left for plt.show() to display
        plt.close(fig)
    finally:
        from matplotlib.figure import FigureBase

        ip.display_formatter.formatters["text/html"].pop(FigureBase, None)


def test_animation_comes_twice_in_the_book_and_once_elsewhere(monkeypatch, tmp_path):
    from distlib.plots import animation_html
    from distlib.plots.ring import animate_ring
    import numpy as np
    import distlib as dl

    trace = dl.simulate_ring_allreduce(np.ones((3, 6), dtype=np.float32))
    monkeypatch.delenv("DISTLIB_STATIC_WIDGETS", raising=False)
    once = animation_html(animate_ring(trace))
    assert once.count('class="animation"') == 1 and "distlib-only" not in once
    monkeypatch.setenv("DISTLIB_STATIC_WIDGETS", str(tmp_path))
    twice = animation_html(animate_ring(trace))
    assert twice.count('class="animation"') == 2
    widths = [int(w) for w in re.findall(r'style="width:(\d+)px;max-width:100%', twice)]
    assert widths[0] <= pictures.WIDE_MAX and widths[1] == pictures.NARROW
    assert twice.index("distlib-only-wide") < twice.index("distlib-only-narrow")


def test_state_is_never_carried_by_red_against_green():
    """Colour-blind readers (about 1 in 12 men) cannot tell tab10's red from its
    green: no picture or read-out of the library uses that pair; state colours
    are Okabe and Ito's vermillion (#D55E00) and bluish green (#009E73)."""
    from pathlib import Path

    import distlib

    root = Path(distlib.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if {"#d62728", "#2ca02c"} & set(re.findall(r"#[0-9a-f]{6}", p.read_text().lower()))]
    assert not offenders, offenders
