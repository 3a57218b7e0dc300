"""The alpha-beta chapter's widget: latency, bandwidth, ranks and size -> which algorithm wins.

Set any slider's ``.value`` and read ``times``, ``winner``, ``crossovers``
and ``regime``: they update synchronously.
"""

from __future__ import annotations

import html

import ipywidgets as w
import numpy as np
from matplotlib.ticker import LogLocator

from .._check import check_choice, check_int, check_real_in
from ..collectives import ALGORITHMS, COLLECTIVES, Regime, collective_time, crossover_size, regime
from ..fmt import fmt_bytes, fmt_rate, fmt_seconds
from ..plots.collectives import (ALGORITHM_COLORS, ALGORITHM_LABELS as _LABELS, default_sizes,
                                 format_bytes_axis, format_seconds_axis)
from ._base import CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, control_layout, label_style, log_slider

__all__ = ["CollectivesWidget"]

_SIZES = default_sizes(1.0, 1e10, 81)
_LEGEND = dict(labelspacing=0.25, handlelength=1.6, borderaxespad=0.3, framealpha=0.9)  # a compact legend
_TIME_RANGE = (1e-7, 1e4)  # seconds: alpha >= 1e-7 s; tree all-reduce of 10 GB at 100 MB/s, p = 1024: 4e3 s


class CollectivesWidget(FigureWidget):
    """Sliders for alpha, bandwidth, p and message size; times of every algorithm.

    Attributes
    ----------
    times : dict
        ``algorithm -> seconds`` at the chosen size.
    winner : str
        The fastest algorithm there (the first listed on a tie).
    crossovers : dict
        ``(algorithm, algorithm) -> bytes`` where two algorithms' times are
        equal (None when one never loses).
    regime : Regime
        The latency/bandwidth split of the chosen ``regime_algorithm``.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(alpha=5e-6, bandwidth=50e9, p=64, n_bytes=2**20)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("collective spelt MPI's way", dict(collective="all_reduce"), ValueError, "'allreduce', 'reduce_scatter'"),
        ("zero latency", dict(alpha=0), ValueError, "[1e-07, 0.001] s"),
        ("latency in µs, not s", dict(alpha=5), ValueError, "[1e-07, 0.001] s"),
        ("negative bandwidth", dict(bandwidth=-1), ValueError, "[1e+08, 1e+12] bytes/s"),
        ("bandwidth as a string", dict(bandwidth="50e9"), TypeError, "[1e+08, 1e+12] bytes/s"),
        ("one rank", dict(p=1), ValueError, "[2, 1024]"),
        ("more ranks than the slider", dict(p=2048), ValueError, "[2, 1024]"),
        ("empty buffer", dict(n_bytes=0), ValueError, "[1, 1e+10] bytes"),
        ("infinite buffer", dict(n_bytes=float("inf")), ValueError, "[1, 1e+10] bytes"),
        ("unknown algorithm", dict(regime_algorithm="butterfly"), ValueError, "'ring', 'tree', 'halving_doubling'"),
    )

    def __init__(self, *, collective="allreduce", alpha=5e-6, bandwidth=50e9, p=64, n_bytes=1e6,
                 regime_algorithm="ring"):
        # every argument checked against its control's range before anything is built
        collective = check_choice("collective", collective, list(COLLECTIVES))
        alpha = check_real_in("alpha", alpha, 10**-7, 10**-3, unit="s")
        bandwidth = check_real_in("bandwidth", bandwidth, 10**8, 10**12, unit="bytes/s")
        p = check_int("p", p, minimum=2, maximum=1024)
        n_bytes = check_real_in("n_bytes", n_bytes, 10**0, 10**10, unit="bytes")
        regime_algorithm = check_choice("regime_algorithm", regime_algorithm, list(ALGORITHMS))
        style = label_style()
        layout = control_layout()
        cu = CONTINUOUS_UPDATE
        self.collective = w.Dropdown(options=list(COLLECTIVES), value=collective, description="collective",
                                     style=style)
        self.alpha = log_slider(value=alpha, base=10, min=-7, max=-3, step=0.05,
                                      description="alpha: latency per message (s)", readout_format=".2e",
                                      continuous_update=cu, style=style, layout=layout)
        self.bandwidth = log_slider(value=bandwidth, base=10, min=8, max=12, step=0.05,
                                          description="bandwidth per link, one way (B/s)", readout_format=".3g",
                                          continuous_update=cu, style=style, layout=layout)
        self.p = w.IntSlider(value=p, min=2, max=1024, step=1, description="ranks p", continuous_update=cu, style=style, layout=layout)
        self.n_bytes = log_slider(value=n_bytes, base=10, min=0, max=10, step=0.1,
                                        description="buffer per rank (bytes)", readout_format=".3g",
                                        continuous_update=cu, style=style, layout=layout)
        self.regime_algorithm = w.ToggleButtons(options=[(_LABELS[a], a) for a in ALGORITHMS],
                                                value=regime_algorithm, description="regime of", style=style)
        self.controls = [self.collective, self.alpha, self.bandwidth, self.p, self.n_bytes, self.regime_algorithm]
        # the two charts stacked, so that each keeps readable text on a narrow page
        self.fig = FigureImage(width=460, height=600)
        self.fig.figure.clf()
        self.ax_times = self.fig.figure.add_subplot(2, 1, 1)
        self.ax_regime = self.fig.figure.add_subplot(2, 1, 2)
        self.fig.ax = self.ax_times
        self._setup_axes()
        self.summary = w.HTML()
        self.times: dict = {}
        self.curves: dict = {}
        self.winner: str | None = None
        self.crossovers: dict = {}
        self.regime: Regime | None = None
        self._finish()

    def static_axes(self):
        # message sizes from 100 B to 100 MB (1 MB and 1 MiB, the prose's, are added as start
        # values), rank counts from a pair to a thousand,
        # and the latency and bandwidth the prose asks the reader to set: a microsecond to
        # a CPU-class 25 µs, 100 Gb Ethernet to NVLink 4's 450 GB/s per direction
        return [StaticAxis("alpha", [1e-6, 5e-6, 25e-6], labels=fmt_seconds, description="alpha: latency per message"),
                StaticAxis("bandwidth", [12.5e9, 50e9, 450e9], labels=fmt_rate,
                           description="bandwidth per link, one way"),
                StaticAxis("p", [2, 64, 1024]),
                StaticAxis("n_bytes", [1e2, 1e4, 1e8], labels=fmt_bytes, description="buffer per rank")]

    # ---- model -------------------------------------------------------------
    def compute(self):
        """The model at the current slider values (no drawing)."""
        coll, a, bw = self.collective.value, self.alpha.value, self.bandwidth.value
        p, n = int(self.p.value), float(self.n_bytes.value)
        times = {alg: collective_time(coll, n, p, alpha=a, bandwidth=bw, algorithm=alg) for alg in ALGORITHMS}
        curves = {alg: collective_time(coll, _SIZES, p, alpha=a, bandwidth=bw, algorithm=alg) for alg in ALGORITHMS}
        winner = min(ALGORITHMS, key=lambda alg: times[alg])
        cross = {}
        for i, a1 in enumerate(ALGORITHMS):
            for a2 in ALGORITHMS[i + 1:]:
                cross[(a1, a2)] = crossover_size(coll, p, alpha=a, bandwidth=bw, algorithms=(a1, a2))
        reg = regime(coll, n, p, alpha=a, bandwidth=bw, algorithm=self.regime_algorithm.value)
        return times, curves, winner, cross, reg

    # ---- view --------------------------------------------------------------
    def _setup_axes(self):
        ax, rx = self.ax_times, self.ax_regime
        zeros = np.ones_like(_SIZES)
        self._lines = {}
        for alg in ALGORITHMS:
            (self._lines[alg],) = ax.loglog(_SIZES, zeros, color=ALGORITHM_COLORS[alg], lw=2, label=_LABELS[alg])
        self._marker = ax.axvline(1.0, color="k", lw=1, ls="--")
        self._cross_lines = [ax.axvline(1.0, color="#7f7f7f", lw=1, ls=":") for _ in range(3)]
        ax.set_xlim(_SIZES[0], _SIZES[-1])
        format_bytes_axis(ax.xaxis)
        format_seconds_axis(ax.yaxis)
        ax.set_xlabel("buffer per rank", fontsize=10)
        ax.set_title("time of each algorithm", fontsize=11)
        ax.tick_params(labelsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=11, loc="upper left", **_LEGEND)
        (self._total,) = rx.loglog(_SIZES, zeros, color="k", lw=2, label="total")
        (self._lat,) = rx.loglog(_SIZES, zeros, color="#9467bd", lw=1.5, ls="--", label="latency term")
        (self._bw,) = rx.loglog(_SIZES, zeros, color="#8c564b", lw=1.5, ls="-.", label="bandwidth term")
        self._rmarker = rx.axvline(1.0, color="k", lw=1, ls="--")
        self._nhalf = rx.axvline(1.0, color="#9467bd", lw=1, ls=":")
        self._rtitle = rx.text(0.5, 1.02, "", transform=rx.transAxes, ha="center", va="bottom", fontsize=11)
        rx.set_xlim(_SIZES[0], _SIZES[-1])
        format_bytes_axis(rx.xaxis)
        format_seconds_axis(rx.yaxis)
        rx.set_xlabel("buffer per rank", fontsize=10)
        rx.tick_params(labelsize=10)
        rx.grid(True, which="major", alpha=0.3)
        rx.legend(fontsize=11, loc="upper left", **_LEGEND)
        # Fixed y ranges (every slider setting fits) let the axes be drawn once;
        # each update redraws only the curves and markers (Agg blitting).
        for a in (ax, rx):
            a.set_ylim(*_TIME_RANGE)
            # a label every second decade: eleven decades of labels would touch
            a.yaxis.set_major_locator(LogLocator(base=100.0, numticks=10))
            a.yaxis.set_minor_locator(LogLocator(base=10.0, subs=(1.0,), numticks=20))
        # on a phone (328 px) the tick labels ("100 µs") take a larger share of the width
        left = 0.22 if self.fig.narrow else 0.16
        self.fig.figure.subplots_adjust(left=left, right=0.95, bottom=0.08, top=0.94, hspace=0.32)
        # the legends last: redrawn over the moving lines, not crossed by them
        self.fig.set_animated(list(self._lines.values()) + [self._marker] + self._cross_lines
                              + [self._total, self._lat, self._bw, self._rmarker, self._nhalf, self._rtitle]
                              + [ax.get_legend(), rx.get_legend()])

    def update(self):
        """Recompute and redraw for the current slider values."""
        self.times, self.curves, self.winner, self.crossovers, self.regime = self.compute()
        n = float(self.n_bytes.value)
        for alg, line in self._lines.items():
            line.set_ydata(self.curves[alg])
        self._marker.set_xdata([n, n])
        for line, ((a1, a2), x) in zip(self._cross_lines, self.crossovers.items()):
            line.set_visible(x is not None and _SIZES[0] <= x <= _SIZES[-1])
            if x is not None:
                line.set_xdata([x, x])
        alg = self.regime_algorithm.value
        curve = self.curves[alg]
        r = self.regime
        lat = np.full_like(_SIZES, r.latency_time)
        bwt = curve - r.latency_time
        self._total.set_ydata(curve)
        self._lat.set_ydata(np.where(lat > 0, lat, np.nan))
        self._bw.set_ydata(np.where(bwt > 0, bwt, np.nan))
        self._rmarker.set_xdata([n, n])
        self._nhalf.set_visible(r.n_half is not None and _SIZES[0] <= r.n_half <= _SIZES[-1])
        if r.n_half is not None:
            self._nhalf.set_xdata([r.n_half, r.n_half])
        self._rtitle.set_text(f"{_LABELS[alg]}: {r.label} at {fmt_bytes(n)}")
        self.fig.render()
        self.summary.value = self._summary()

    def _summary(self) -> str:
        n = float(self.n_bytes.value)
        rows = "".join(
            f"<tr><td style='color:{ALGORITHM_COLORS[a]};padding-right:8px'>{_LABELS[a]}</td>"
            f"<td>{html.escape(fmt_seconds(t))}</td><td style='padding-left:8px'>"
            f"{'<b>fastest</b>' if a == self.winner else ''}</td></tr>"
            for a, t in self.times.items())
        cross = "; ".join(
            f"{_LABELS[a1]} = {_LABELS[a2]} at {fmt_bytes(x)}" if x is not None
            else f"{_LABELS[a1]} and {_LABELS[a2]} never cross"
            for (a1, a2), x in self.crossovers.items())
        r = self.regime
        nh = fmt_bytes(r.n_half) if r.n_half is not None else "n/a"
        return (f"<small>{html.escape(self.collective.value)} of {fmt_bytes(n)} on p = {self.p.value} ranks, "
                f"alpha = {fmt_seconds(self.alpha.value)}, bandwidth = {fmt_rate(self.bandwidth.value)} per link "
                f"one way</small><table style='font-size:90%'>{rows}</table>"
                f"<small>crossovers: {html.escape(cross)}<br>"
                f"{_LABELS[self.regime_algorithm.value]}: latency term {fmt_seconds(r.latency_time)}, "
                f"bandwidth term {fmt_seconds(r.bandwidth_time)} -> <b>{r.label}</b>; "
                f"the terms are equal at n_half = {nh}</small>")
