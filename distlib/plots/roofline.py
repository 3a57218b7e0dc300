"""Roofline drawings: log-log roofs, ridge points, operations and measurements.

:func:`plot_roofline` draws a static figure for the chapter;
:class:`RooflinePicture` draws every roof once and then moves a highlighted
roof and one operation cheaply, for the widget.
"""

from __future__ import annotations

import numpy as np

import textwrap

from matplotlib.transforms import ScaledTranslation, blended_transform_factory

from ..fmt import fmt_flops
from ..static.legend import legend_below
from ..static.phone import phone_layout
from ..static.pictures import MIN_FONT_PT
from ..roofline import Operation, Placement, Roof, attainable_flops, place, roof

__all__ = ["plot_roofline", "RooflinePicture", "ROOF_COLORS"]

_OP_MARKERS = ["s", "D", "^", "v", "o", "P", "X", "<", ">", "h", "p", "*"]
ROOF_COLORS = ["#1f77b4", "#D55E00", "#009E73", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
               "#7f7f7f", "#bcbd22"]


def _roof_xy(r: Roof, xlim):
    """Three points trace a roofline on log axes: left edge, ridge, right edge."""
    lo, hi = xlim
    ridge = min(max(r.ridge_point, lo), hi)
    x = np.array([lo, ridge, hi])
    return x, attainable_flops(x, peak_flops=r.peak_flops, bandwidth=r.bandwidth)


def _as_specs(specs) -> list:
    """One chip or many: a single name, spec, Roof or (name, peak, bandwidth) becomes a list."""
    single = isinstance(specs, (str, Roof)) or hasattr(specs, "bf16_flops") or (
        isinstance(specs, tuple) and len(specs) == 3 and isinstance(specs[0], str)
        and not isinstance(specs[1], (str, Roof)))
    return [specs] if single else list(specs)


def _measured_items(measured):
    """Split ``measured`` into roofs, slopes (bandwidth only) and points."""
    roofs, slopes, points = [], [], []
    if measured is None:
        return roofs, slopes, points
    if isinstance(measured, (Roof, Placement, tuple)) or hasattr(measured, "unit"):
        measured = [measured]
    for m in measured:
        if isinstance(m, Roof):
            roofs.append(m)
        elif isinstance(m, Placement):
            points.append((m.operation.name, m.intensity, m.attainable_flops))
        elif hasattr(m, "unit") and hasattr(m, "value"):  # a distlib.measure.Measurement
            if m.unit == "B/s":
                slopes.append((f"measured copy: {m.device}", m.value))
            else:
                points.append((f"measured matmul: {m.device}", m.intensity, m.value))
        elif isinstance(m, tuple) and len(m) == 3:
            points.append((str(m[0]), float(m[1]), float(m[2])))
        else:
            raise TypeError(f"cannot plot measured item {m!r}: give a Roof, a Measurement, a Placement "
                            "or a (label, intensity, flops_per_second) tuple")
    return roofs, slopes, points


def plot_roofline(ax, specs, operations=(), measured=None, *, xlim=None, ylim=None, label_ops="legend",
                  title=None) -> dict:
    """Rooflines of one or more chips, with operations placed under the first.

    Parameters
    ----------
    ax : matplotlib Axes
    specs : str, Accelerator, Roof or a sequence of them
        The chips (names work: ``["H100", "TPU v5p"]``).
    operations : sequence of Operation
        Drawn as points at (intensity, attainable FLOP/s on the first chip).
    measured : optional
        Measurements of a real machine: a :class:`~distlib.roofline.Roof`
        (dashed roof), :class:`~distlib.measure.Measurement` results (a
        matmul becomes a point, a bandwidth a dashed memory slope), or
        ``(label, intensity, flops_per_second)`` tuples.
    xlim, ylim : (float, float), optional
        Axis ranges (FLOP/byte, FLOP/s); by default they fit everything.
    label_ops : {"legend", "text", None}
        Name each operation in the legend (distinct markers), next to its
        point, or not at all.

    The legend goes under the axes in two columns, its long entries broken
    over two lines; on a phone (:func:`distlib.plots.pictures.phone_layout`) it
    takes one column and the figure grows to hold it.

    Returns
    -------
    dict
        ``"roofs"``, ``"ridges"``, ``"operations"``, ``"measured"``: the artists.
    """
    roofs, operations = _checked_roofs_and_operations(specs, operations)
    m_roofs, m_slopes, m_points = _measured_items(measured)
    xlim, ylim = _limits(roofs, operations, m_roofs, m_slopes, m_points, xlim, ylim)
    ax.set_xscale("log")
    ax.set_yscale("log")
    roof_lines, ridges = _draw_roofs(ax, roofs, xlim)
    first = roofs[0]
    op_artists = _draw_operations(ax, operations, first, label_ops)
    measured_artists = _draw_measured(ax, m_roofs, m_slopes, m_points, xlim)
    _dress_axes(ax, xlim, ylim)
    _legend_with_phone_layout(ax)
    if operations:
        ax.set_title(title or f"operations placed on {first.name} (red: memory-bound, green: compute-bound)",
                     fontsize=MIN_FONT_PT)
    elif title:
        ax.set_title(title, fontsize=MIN_FONT_PT)
    return {"roofs": roof_lines, "ridges": ridges, "operations": op_artists, "measured": measured_artists}


def _checked_roofs_and_operations(specs, operations):
    """The chips' roofs (at least one) and the operations as a list (Operation objects only)."""
    roofs = [roof(s) for s in _as_specs(specs)]
    if not roofs:
        raise ValueError("specs must name at least one chip")
    operations = list(operations)
    if not all(isinstance(o, Operation) for o in operations):
        raise TypeError("operations must be Operation objects (see distlib.roofline)")
    return roofs, operations


def _limits(roofs, operations, m_roofs, m_slopes, m_points, xlim, ylim):
    """``(xlim, ylim)``: those given, else ranges that fit every roof, ridge, operation and measurement."""
    intensities = [o.intensity for o in operations if o.intensity > 0] + [r.ridge_point for r in roofs + m_roofs]
    intensities += [p[1] for p in m_points if p[1] > 0]
    if xlim is None:
        xlim = (10 ** np.floor(np.log10(min(intensities)) - 0.5), 10 ** np.ceil(np.log10(max(intensities)) + 0.5))
    peaks = [r.peak_flops for r in roofs + m_roofs] + [p[2] for p in m_points]
    lows = [attainable_flops(xlim[0], peak_flops=r.peak_flops, bandwidth=r.bandwidth) for r in roofs + m_roofs]
    lows += [bw * xlim[0] for _, bw in m_slopes] + [p[2] for p in m_points]
    if ylim is None:
        ylim = (10 ** np.floor(np.log10(min(lows))), 10 ** np.ceil(np.log10(max(peaks)) + 0.3))
    return xlim, ylim


def _draw_roofs(ax, roofs, xlim):
    """Each chip's roof in its colour, with a dot at its ridge point: ``(roof lines, ridge dots)``."""
    lines, ridges = [], []
    for i, r in enumerate(roofs):
        color = ROOF_COLORS[i % len(ROOF_COLORS)]
        x, y = _roof_xy(r, xlim)
        (line,) = ax.plot(x, y, color=color, linewidth=2, label=_entry(r.name, f"ridge {r.ridge_point:.0f} FLOP/B"))
        lines.append(line)
        (dot,) = ax.plot([r.ridge_point], [r.peak_flops], "o", color=color, markersize=5)
        ridges.append(dot)
    return lines, ridges


def _draw_operations(ax, operations, first, label_ops):
    """Each operation as a point under ``first``'s roof (red: memory-bound, green: compute-bound), named as asked."""
    artists = []
    for j, o in enumerate(operations):
        pl = place(o, first)
        color = "#D55E00" if pl.bound == "memory" else "#009E73"
        marker = _OP_MARKERS[j % len(_OP_MARKERS)]
        label = _entry(o.name, f"{_intensity(o.intensity)} FLOP/B") if label_ops == "legend" else None
        (pt,) = ax.plot([o.intensity], [pl.attainable_flops], marker, color=color, markersize=6, zorder=5,
                        markeredgecolor="black", markeredgewidth=0.5, linestyle="none", label=label)
        artists.append(pt)
        if label_ops == "text":
            artists.append(ax.annotate(o.name, (o.intensity, pl.attainable_flops), xytext=(4, -4),
                                       textcoords="offset points", fontsize=7, ha="left", va="top"))
    return artists


def _draw_measured(ax, m_roofs, m_slopes, m_points, xlim):
    """The measurements in black: roofs dashed, bandwidths as dotted slopes, matmul rates as stars."""
    artists = []
    for r in m_roofs:
        x, y = _roof_xy(r, xlim)
        (line,) = ax.plot(x, y, color="black", linestyle="--", linewidth=1.5,
                          label=_entry(f"{r.name} (measured)", f"ridge {r.ridge_point:.1f} FLOP/B"))
        artists.append(line)
    for label, bw in m_slopes:
        x = np.array(xlim, dtype=float)
        (line,) = ax.plot(x, x * bw, color="black", linestyle=":", linewidth=1.2, label=label)
        artists.append(line)
    for label, inten, flops in m_points:
        (pt,) = ax.plot([inten], [flops], "*", color="black", markersize=10, label=label, zorder=6)
        artists.append(pt)
    return artists


def _dress_axes(ax, xlim, ylim):
    """The axes' ranges, labels, ticks and grid."""
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("arithmetic intensity\n(FLOP per byte of HBM traffic)", fontsize=MIN_FONT_PT)
    ax.set_ylabel("attainable FLOP/s", fontsize=MIN_FONT_PT)
    ax.tick_params(labelsize=MIN_FONT_PT)
    ax.grid(True, which="major", alpha=0.3)


def _legend_with_phone_layout(ax):
    """The legend under the axes in two columns, and the phone's layout: one column, the figure taller."""
    for artist in ax.get_lines():  # any long line left (a device's name): broken at spaces
        label = artist.get_label()
        if not label.startswith("_"):
            artist.set_label("\n".join(textwrap.fill(part, _LINE_MAX, break_long_words=False)
                                        for part in label.split("\n")))
    leg = _legend_below(ax, ncols=2)
    entries = len(leg.texts) + sum(t.get_text().count("\n") for t in leg.texts)
    # on a phone: one column, and the figure as much taller as its lines need
    phone_layout(ax.figure, height=ax.figure.get_figheight() * 96 * 0.6 + 19 * entries + 20,
                 adjust=_legend_one_column)


#: Legend entries longer than this many characters take two lines ("name:" and the value).
_LABEL_WIDTH = 30
#: The most characters on one line of a legend entry (a phone's column holds about 38).
_LINE_MAX = 36


def _entry(name: str, value: str) -> str:
    """A legend entry: ``name: value`` on one line if short, else on two.

    A name too long for a line breaks before its parenthesis, and the value
    follows the parenthesis where it fits.
    """
    one = f"{name}: {value}"
    if len(one) <= _LABEL_WIDTH:
        return one
    head, paren, rest = name.partition(" (")
    if len(name) + 1 > _LINE_MAX and paren:
        tail = f"({rest}: {value}"
        return f"{head}\n{tail}" if len(tail) <= _LINE_MAX else f"{head}\n({rest}:\n{value}"
    return f"{name}:\n{value}"


def _intensity(x: float) -> str:
    """An intensity in FLOP/B, three significant digits, with no exponent up to 10^6."""
    return f"{x:,.0f}" if 1000 <= x < 1e6 else f"{x:.3g}"


def _legend_below(ax, *, ncols: int):
    """The legend under the axes: below the tick labels and the two-line axis label, centred on the figure."""
    # room for 3.4 lines of the label's 11 pt, as this picture was tuned (0.4 of a line more than the
    # three counted: the powers of ten and the two-line label); the same on a phone, whose fonts are the same
    return legend_below(ax, lines=3.4, centre="figure", ncols=ncols, frameon=False, fontsize=MIN_FONT_PT,
                        borderaxespad=0, handlelength=1.5)


def _legend_one_column(fig):
    """Phone layout of :func:`plot_roofline`: the legend in one column."""
    for ax in fig.axes:
        if ax.get_legend() is not None:
            _legend_below(ax, ncols=1)


class RooflinePicture:
    """Every roof drawn once, faintly; one highlighted roof and one operation move.

    Axes are fixed (``xlim``, ``ylim``), so :meth:`update` changes only
    artists in :attr:`dynamic_artists` and the widget can blit. The chosen
    chip's ridge and the operation's verdict are written in two lines over
    the axes, centred on the figure (inside, they lay on the grey roofs);
    ``narrow`` (a phone's picture) breaks the verdict into two lines. Give
    the axes' title a ``pad`` of :attr:`notes_pad` points to leave them room.
    """

    def __init__(self, ax, specs, *, xlim=(1e-2, 1e5), ylim=(1e10, 1e16), narrow: bool = False):
        self.ax = ax
        self.narrow = narrow
        self.roofs = [roof(s) for s in _as_specs(specs)]
        self.xlim, self.ylim = xlim, ylim
        ax.set_xscale("log")
        ax.set_yscale("log")
        for r in self.roofs:
            x, y = _roof_xy(r, xlim)
            ax.plot(x, y, color="0.8", linewidth=1)
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_xlabel("arithmetic intensity (FLOP/byte)", fontsize=MIN_FONT_PT)
        ax.set_ylabel("attainable FLOP/s (dense BF16)", fontsize=MIN_FONT_PT)
        ax.tick_params(labelsize=MIN_FONT_PT)
        ax.grid(True, which="major", alpha=0.3)
        (self.roof_line,) = ax.plot([], [], color="#1f77b4", linewidth=2.5)
        (self.ridge_dot,) = ax.plot([], [], "o", color="#1f77b4", markersize=6)
        (self.guide,) = ax.plot([], [], ":", color="0.4", linewidth=1)
        (self.op_dot,) = ax.plot([], [], "s", markersize=8, zorder=5)
        fig = ax.figure

        def above(points):  # x: the figure's centre; y: this many points over the axes
            return blended_transform_factory(
                fig.transFigure, ax.transAxes + ScaledTranslation(0, points / 72, fig.dpi_scale_trans))

        line = MIN_FONT_PT * 1.25
        op_lines = 2 if narrow else 1
        self.op_text = ax.text(0.5, 1, "", fontsize=MIN_FONT_PT, ha="center", va="bottom", transform=above(4),
                               linespacing=1.1)
        self.ridge_text = ax.text(0.5, 1, "", fontsize=MIN_FONT_PT, ha="center", va="bottom", color="#1f77b4",
                                  transform=above(4 + op_lines * line))
        #: points between the axes and a title over the notes
        self.notes_pad = 4 + (op_lines + 1) * line + 4

    @property
    def dynamic_artists(self) -> list:
        return [self.roof_line, self.ridge_dot, self.ridge_text, self.guide, self.op_dot, self.op_text]

    def update(self, spec, op: Operation) -> Placement:
        """Highlight ``spec``'s roof and place ``op`` on it; return the placement."""
        r = roof(spec)
        pl = place(op, r)
        x, y = _roof_xy(r, self.xlim)
        self.roof_line.set_data(x, y)
        self.ridge_dot.set_data([r.ridge_point], [r.peak_flops])
        self.ridge_text.set_text(f"{r.name} (blue): ridge at {r.ridge_point:.0f} FLOP/B")
        xi = min(max(op.intensity, self.xlim[0]), self.xlim[1])
        yi = min(max(pl.attainable_flops, self.ylim[0]), self.ylim[1])
        self.guide.set_data([xi, xi], [self.ylim[0], yi])
        color = "#D55E00" if pl.bound == "memory" else "#009E73"
        self.op_dot.set_data([xi], [yi])
        self.op_dot.set_color(color)
        self.op_text.set_color(color)
        # short: every glyph costs time on each redraw; the widget's text has the details
        x = f"{op.intensity:,.0f}" if op.intensity >= 1000 else f"{op.intensity:.3g}"
        sep = "\n" if self.narrow else ", "
        self.op_text.set_text(f"\u25a0 {x} FLOP/B: {pl.bound}-bound{sep}{fmt_flops(pl.attainable_flops)}")
        return pl

