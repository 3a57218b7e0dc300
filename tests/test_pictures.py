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


# ---- the static layer's own state, and its one way to put a legend under the axes ----------


def _below(ax):
    """Inches from the bottom edge of ``ax`` down to the top of its legend's anchor ("figure": the figure's edge)."""
    leg = ax.get_legend()
    anchor = leg.get_bbox_to_anchor()
    if anchor.y0 == 0 and leg._loc == 8:  # "lower center" on the figure's bottom edge
        return "figure"
    bottom = ax.transAxes.transform((0.5, 0.0))[1]
    return round(float(bottom - anchor.y0) / ax.figure.dpi, 9)


def _seven_placements():
    """The seven plots that put a legend under their axes, each as its picture had it before ``legend_below``."""
    import numpy as np

    import distlib as dl
    from distlib.plots import collectives, minicluster, overlap, ring, roofline, walls

    def regime_on_a_phone():  # collectives: moved under the axes on a phone only, 0.47 in with an x label
        fig = Figure(figsize=(6.4, 3.8))
        collectives.plot_regime(fig.add_subplot(), "allreduce", 8, alpha=5e-6, bandwidth=50e9)
        return pictures.phone_copy(fig).axes[0], 0.47

    def regime_without_x_label():  # ... and 0.3 in without one
        fig = Figure(figsize=(6.4, 3.8))
        ax = fig.add_subplot()
        collectives.plot_regime(ax, "allreduce", 8, alpha=5e-6, bandwidth=50e9)
        ax.set_xlabel("")
        return pictures.phone_copy(fig).axes[0], 0.3

    def memory_bars():  # walls: 3.5 + 3.5 pt of tick, 3 lines of 11 pt labels and the x label, 4 pt
        ax = Figure(figsize=(5.2, 3.4)).add_subplot()
        walls.plot_memory_breakdown(ax, dl.three_walls(params=7e9, tokens=1e12, chips=8, recipe="mixed_precision_adam",
                                                       accelerator="H100", mfu=0.4, stage=1))
        return ax, (3.5 + 3.5 + 2 * 11 * 1.25 + 4) / 72

    def time_bars():  # walls: one line of tick labels, no x label
        ax = Figure(figsize=(4.6, 3.4)).add_subplot()
        walls.TimeBars(ax, ylim=(1, 1e12))
        return ax, (3.5 + 3.5 + 1 * 11 * 1.25 + 4) / 72

    def race_legend():  # minicluster: 0.52 in
        ax = Figure(figsize=(6.4, 3.6)).add_subplot()
        ax.bar([0], [1], label="flat ring, measured")
        minicluster._legend(ax, ncol=2)
        return ax, 0.52

    def bucket_sweep():  # overlap: 0.52 in
        ax = Figure(figsize=(6.4, 3.7)).add_subplot()
        b = [2e-3] * 8
        overlap.plot_bucket_sweep(ax, dl.bucket_sweep(b, dl.gradient_profile(1e8, 8), alpha=1e-5, bandwidth=25e9,
                                                      p=8, forward_time=8e-3))
        return ax, 0.52

    def roofline_legend():  # roofline: 3.4 lines of 11 pt, centred on the figure
        ax = Figure(figsize=(6.4, 5)).add_subplot()
        roofline.plot_roofline(ax, ["H100", "A100"])
        return ax, (7 + 3.4 * 11 * 1.25 + 4) / 72

    def step_vs_p():  # ring: 0.5 in, computed from its 10 pt tick and x labels
        ax = Figure(figsize=(6, 3.2)).add_subplot()
        example = dict(params=7e9, bytes_per_value=2, link_bandwidth=50e9, flops_per_gpu=989e12, mfu=0.4,
                       tokens_per_gpu=4096)
        ring.plot_step_vs_p(ax, [dl.cluster_step(p=int(p), **example) for p in 2 ** np.arange(1, 8)])
        return ax, 0.5

    def step_vs_p_on_a_phone():  # ... and there again on a phone, whose text is 11 pt by then
        ax, _ = step_vs_p()
        return pictures.phone_copy(ax.figure).axes[0], 0.5

    def step_bars():  # ring: on the figure's bottom edge
        ax = Figure(figsize=(4.6, 2.6)).add_subplot()
        ring.StepBars(ax)
        return ax, "figure"

    return [regime_on_a_phone, regime_without_x_label, memory_bars, time_bars, race_legend, bucket_sweep,
            roofline_legend, step_vs_p, step_vs_p_on_a_phone, step_bars]


@pytest.mark.parametrize("make", _seven_placements(), ids=lambda f: f.__name__)
def test_each_legend_under_its_axes_keeps_the_place_its_picture_had(make):
    from distlib.static.legend import placed_below

    ax, drop = make()
    seen = placed_below(ax)
    assert seen is not None, "placed by distlib.static.legend.legend_below"
    assert seen.drop == drop or (isinstance(drop, float) and abs(seen.drop - drop) < 1e-12)
    assert _below(ax) == (drop if isinstance(drop, str) else round(drop, 9))


def test_no_plot_places_a_legend_under_its_axes_by_itself():
    """One helper (distlib.static.legend) computes where a legend under the axes goes; the plots ask it."""
    import ast
    from pathlib import Path

    import distlib

    offenders = []
    for path in sorted((Path(distlib.__file__).parent / "plots").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "legend"
                    and any(k.arg in ("bbox_to_anchor", "bbox_transform") for k in node.keywords)):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders


def test_the_static_layer_hangs_nothing_on_matplotlibs_objects():
    """What the phone drawing needs (its height, which legends go under, panels) is in distlib.static.phone's
    registry, keyed by the figure; no figure, axes or legend carries a ``_distlib_*`` attribute."""
    from pathlib import Path

    import distlib
    from distlib.plots import topology
    from distlib.static.phone import PhoneLayout, panel, phone_spec

    root = Path(distlib.__file__).parent
    assert not [p.name for p in root.rglob("*.py") if "_distlib_" in p.read_text()]
    figs = [make()[0].figure for make in _seven_placements()]
    fig = Figure(figsize=(6.4, 6))
    for k, ax in enumerate(fig.subplots(2, 2).flat):
        topology.draw_topology(ax, distlib.topology("ring", p=4 + k))
    figs.append(fig)
    for fig in figs:
        pictures.render_pair(fig)
        hung = {type(o).__name__: k for o in fig.findobj() for k in vars(o) if k.startswith("_distlib")}
        assert not hung, hung
    assert isinstance(phone_spec(fig), PhoneLayout) and panel(fig.axes[0]) is not None
    phone = pictures.phone_copy(fig)  # the copy drawn for a phone is given the same notes
    assert phone_spec(phone) == phone_spec(fig) and panel(phone.axes[0]) == panel(fig.axes[0])


def test_importing_the_library_changes_no_kernel_and_crisp_inline_figures_does(tmp_path):
    """No import side effect: a kernel shows figures as picture pairs only once it calls crisp_inline_figures()."""
    import os
    import subprocess
    import sys

    pytest.importorskip("ipykernel")  # a kernel's formatters: not in the [widgets]-only venvs of test_pythons
    code = ("import ipykernel\n"
            "from IPython.core.interactiveshell import InteractiveShell\n"
            "from matplotlib.figure import FigureBase\n"
            "ip = InteractiveShell.instance()\n"
            "html = ip.display_formatter.formatters['text/html']\n"
            "import distlib.plots, distlib.plots.walls, distlib.widgets.walls, distlib.static.frames\n"
            "print(FigureBase in html.type_printers)\n"
            "print(distlib.plots.crisp_inline_figures(), FigureBase in html.type_printers)\n")
    env = {**os.environ, pictures.ENV_DIR: str(tmp_path), pictures.ENV_URL: "f/"}
    env.pop("MPLBACKEND", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "True"]


@pytest.mark.slow
def test_a_kernel_started_as_the_book_build_starts_it_shows_picture_pairs(tmp_path):
    """``kernel_environment`` (what book/_ext/offline_book.py gives each chapter's kernel) makes every figure a
    ``<picture>`` from the first cell on; the same kernel without it shows plain PNGs."""
    import os

    pytest.importorskip("ipykernel")
    nbformat = pytest.importorskip("nbformat")
    NotebookClient = pytest.importorskip("nbclient").NotebookClient

    from distlib.static.kernel import kernel_environment

    def run(extra):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                                              "ax.plot([1, 3, 2])\nplt.show()")]
        saved = dict(os.environ)
        os.environ.pop("MPLBACKEND", None)
        for k in (pictures.ENV_DIR, pictures.ENV_URL, "PYTHONSTARTUP"):
            os.environ.pop(k, None)
        os.environ.update(extra)
        try:
            NotebookClient(nb, timeout=120, kernel_name="python3").execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        (out,) = nb.cells[0].outputs
        return out["data"]

    book = run(kernel_environment(tmp_path / "frames", "widget-frames/"))
    assert "<picture" in book["text/html"] and len(list((tmp_path / "frames").glob("*.png"))) == 2
    assert book["image/png"] and run({}).keys() == {"image/png", "text/plain"}
