"""Drawings for the alpha-beta chapter: times per algorithm, regimes, fits, bus bandwidth.

Every function draws on an axes it is given and returns what it drew. Sizes
are in bytes and times in seconds; the axes label them with SI prefixes.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..collectives import ALGORITHMS, alpha_beta_time, collective_time, cost_coefficients, crossover_size, regime
from ..fmt import fmt_bytes, si
from ..static.legend import legend_below
from ..static.phone import legend_below_on_phone, mark_legend_below_on_phone, phone_layout, phone_spec

__all__ = [
    "ALGORITHM_COLORS",
    "ALGORITHM_LABELS",
    "times_by_algorithm",
    "crossovers",
    "default_sizes",
    "format_bytes_axis",
    "format_seconds_axis",
    "plot_collective_times",
    "plot_regime",
    "plot_fit",
    "plot_bus_bandwidth",
    "phone_relayout",
]

ALGORITHM_COLORS = {"ring": "#1f77b4", "tree": "#009E73", "halving_doubling": "#D55E00", "recursive_doubling": "#ff7f0e"}
ALGORITHM_LABELS = {"ring": "ring", "tree": "binomial tree", "halving_doubling": "halving-doubling",
                    "recursive_doubling": "recursive doubling"}


def phone_relayout(fig) -> None:
    """How a figure of these plots is laid out again for a phone (its phone_layout ``adjust``).

    Figure legends in one column, and the legends of
    :func:`plot_collective_times` and :func:`plot_regime` under their axes,
    clear of the labels on the lines they mark.
    """
    from matplotlib.legend import Legend

    names = {code: name for name, code in Legend.codes.items()}
    for legend in list(fig.legends):
        where = names.get(legend._loc)
        if legend._ncols == 1 or where is None:
            continue
        if legend._outside_loc:  # "outside lower center" keeps its place, now one entry a row
            if legend._outside_loc not in ("lower", "upper"):
                continue
            where = f"outside {where}"
        texts = legend.get_texts()
        handles, labels = legend.legend_handles, [t.get_text() for t in texts]
        size = texts[0].get_fontsize() if texts else None
        legend.remove()
        fig.legend(handles, labels, loc=where, ncols=1, fontsize=size)
    for ax in fig.axes:
        if legend_below_on_phone(ax) and ax.get_legend() is not None:
            _legend_below(ax)


def _legend_below(ax) -> None:
    """Move the legend of ``ax`` under its x label, one entry a row (a phone's labels need the plot)."""
    legend = ax.get_legend()
    texts = legend.get_texts()
    handles, labels = legend.legend_handles, [t.get_text() for t in texts]
    size = texts[0].get_fontsize() if texts else None
    # inches, as these pictures were tuned (the computed drop would sit 3 pt lower with an x label)
    legend_below(ax, handles, labels, drop=0.47 if ax.get_xlabel() else 0.3, ncols=1, fontsize=size)


def _for_phone(ax, *, taller: float = 1.0) -> None:
    """Give the figure of ``ax`` :func:`phone_relayout` (``taller`` times its height there).

    Left alone if its author already chose a phone layout.
    """
    fig = ax.figure
    spec = phone_spec(fig)
    if spec is None or spec.adjust is phone_relayout:
        height = fig.get_size_inches()[1] * 96 * taller if taller != 1.0 else None
        if spec is not None and spec.height and height is None:
            height = spec.height
        phone_layout(fig, height=height, adjust=phone_relayout)


def default_sizes(lo: float = 8.0, hi: float = 8e9, num: int = 121) -> np.ndarray:
    """Log-spaced buffer sizes in bytes, 8 B to 8 GB by default."""
    return np.logspace(np.log10(lo), np.log10(hi), num)


def _bytes_tick(x, _pos=None):
    return fmt_bytes(x, digits=3) if x > 0 else "0"


def _seconds_tick(x, _pos=None):
    return si(x, "s", digits=3) if x > 0 else "0"


def format_bytes_axis(axis) -> None:
    """Log scale with ticks at powers of 1000 labelled 1 kB, 1 MB, ..."""
    axis.set_major_locator(LogLocator(base=1000.0, numticks=12))
    axis.set_minor_locator(LogLocator(base=10.0, subs=(1.0,), numticks=24))
    axis.set_major_formatter(FuncFormatter(_bytes_tick))
    axis.set_minor_formatter(NullFormatter())  # (a lambda would make the figure unpicklable)


def format_seconds_axis(axis) -> None:
    """Log scale with ticks at powers of ten labelled 1 us, 10 us, ..."""
    axis.set_major_locator(LogLocator(base=10.0, numticks=15))
    axis.set_major_formatter(FuncFormatter(_seconds_tick))
    axis.set_minor_formatter(NullFormatter())


def plot_collective_times(ax, sizes, times_by_algorithm: dict, *, n_bytes=None, crossovers=None):
    """Time against buffer size, one line per algorithm, on log-log axes.

    Parameters
    ----------
    sizes : array_like
        Buffer sizes in bytes.
    times_by_algorithm : dict
        ``algorithm -> array of seconds`` (same length as ``sizes``), e.g.
        from :func:`distlib.collectives.collective_time` with an array.
    n_bytes : float, optional
        Mark this size with a vertical line.
    crossovers : dict, optional
        ``label -> size`` (bytes) to mark with dotted lines, e.g. from
        :func:`distlib.collectives.crossover_size` (None values skipped).

    Returns
    -------
    dict
        ``algorithm -> Line2D`` plus ``"marker"`` and ``"crossovers"``.
    """
    sizes = np.asarray(sizes, dtype=float)
    out = {}
    for alg, times in times_by_algorithm.items():
        times = np.asarray(times, dtype=float)
        if times.shape != sizes.shape:
            raise ValueError(f"times for {alg!r} must have the same length as sizes ({sizes.size}), got {times.size}")
        (line,) = ax.loglog(sizes, times, color=ALGORITHM_COLORS.get(alg), lw=2,
                            label=ALGORITHM_LABELS.get(alg, alg))
        out[alg] = line
    out["marker"] = ax.axvline(n_bytes, color="k", lw=1, ls="--") if n_bytes is not None else None
    out["crossovers"] = []
    for label, x in (crossovers or {}).items():
        if x is not None and sizes.min() <= x <= sizes.max():
            out["crossovers"].append(ax.axvline(x, color="#7f7f7f", lw=1, ls=":"))
            _label_line(ax, x, label, list(out[a] for a in times_by_algorithm), color="#555555")
    format_bytes_axis(ax.xaxis)
    format_seconds_axis(ax.yaxis)
    ax.set_xlabel("buffer size per rank")
    ax.set_ylabel("time")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=11, loc="upper left")
    mark_legend_below_on_phone(ax)  # on a phone the legend would cover the crossovers' labels
    _for_phone(ax, taller=1.3)
    return out


def _label_line(ax, x, text, curves, *, color) -> None:
    """Write ``text`` up a vertical line at ``x``, at the end (top or bottom) the curves leave free.

    The curves rise with size, so a label at the top sits left of the line
    (where they are lower) and one at the bottom right of it. Fractions are
    taken on the axes' present (log) y range.
    """
    lo, hi = (np.log10(v) for v in ax.get_ylim())
    fracs = []
    for line in curves:
        xs, ys = (np.asarray(v, dtype=float) for v in line.get_data())
        ok = (xs > 0) & (ys > 0) & np.isfinite(ys)
        if ok.sum() >= 2:
            y = np.interp(np.log10(x), np.log10(xs[ok]), np.log10(ys[ok]))
            fracs.append((y - lo) / (hi - lo))
    top = not fracs or 1 - max(fracs) >= min(fracs)
    ax.annotate(text, (x, 0.98 if top else 0.02), xycoords=("data", "axes fraction"), rotation=90, fontsize=11,
                xytext=(-2 if top else 2, 0), textcoords="offset points", ha="right" if top else "left",
                va="top" if top else "bottom", color=color)


def plot_regime(ax, collective, p, *, alpha, bandwidth, algorithm="ring", sizes=None, n_bytes=None):
    """The latency term, the bandwidth term and their sum against buffer size.

    The latency-bound sizes (latency term larger) are shaded; ``n_half``,
    where the two terms are equal, is marked.

    Returns
    -------
    dict
        ``"latency"``, ``"bandwidth"``, ``"total"`` lines, ``"n_half"``
        (bytes or None) and ``"shade"``.
    """
    sizes = default_sizes() if sizes is None else np.asarray(sizes, dtype=float)
    a, b = cost_coefficients(collective, p, algorithm=algorithm)
    total = collective_time(collective, sizes, p, alpha=alpha, bandwidth=bandwidth, algorithm=algorithm)
    # Both terms from the one home of the alpha-beta formula (distlib.collectives).
    lat = np.full_like(sizes, alpha_beta_time(a, 0.0, 0.0, alpha=alpha, bandwidth=bandwidth))
    bw = alpha_beta_time(0, b, sizes, alpha=0.0, bandwidth=bandwidth)
    out = {}
    (out["total"],) = ax.loglog(sizes, total, color="k", lw=2, label="total")
    (out["latency"],) = ax.loglog(sizes, np.where(lat > 0, lat, np.nan), color="#9467bd", lw=1.5, ls="--",
                                  label=f"latency: {a:g} x alpha")
    (out["bandwidth"],) = ax.loglog(sizes, np.where(bw > 0, bw, np.nan), color="#8c564b", lw=1.5, ls="-.",
                                    label=f"bandwidth: {b:.3g} x n / bw")
    positive = total[total > 0]
    if positive.size:
        ax.set_ylim(positive.min() / 5, positive.max() * 2)
    n_half = regime(collective, 1.0, p, alpha=alpha, bandwidth=bandwidth, algorithm=algorithm).n_half if alpha else None
    out["n_half"] = n_half
    out["shade"] = None
    if n_half is not None:
        lo = sizes.min()
        if n_half > lo:
            out["shade"] = ax.axvspan(lo, min(n_half, sizes.max()), color="#9467bd", alpha=0.08, lw=0)
        if lo <= n_half <= sizes.max():
            ax.axvline(n_half, color="#9467bd", lw=1, ls=":")
            _label_line(ax, n_half, f"n_half = {fmt_bytes(n_half)}", [out["total"], out["latency"], out["bandwidth"]],
                        color="#9467bd")
    if n_bytes is not None:
        out["marker"] = ax.axvline(n_bytes, color="k", lw=1, ls="--")
    format_bytes_axis(ax.xaxis)
    format_seconds_axis(ax.yaxis)
    ax.set_xlabel("buffer size per rank")
    ax.set_ylabel("time")
    ax.set_title(f"{collective}, {algorithm}, p = {p}: latency-bound left of n_half", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=11, loc="upper left")
    mark_legend_below_on_phone(ax)  # on a phone the legend would cover n_half's label
    _for_phone(ax, taller=1.3)
    return out


def plot_fit(ax, sizes, measured, fitted, residuals=None, *, rax=None, curve=None, label="model fit"):
    """Measured times (points) and a fitted model (line); residuals underneath.

    Parameters
    ----------
    ax : Axes, or a pair ``(ax, rax)``
        Where to draw times (log-log). Residuals go on ``rax`` if given (a
        second axes, e.g. a short one below), else on a twin y-axis of ``ax``
        in percent.
    residuals : array_like, optional
        Relative residuals ``(fitted - measured) / measured``; computed if
        omitted.
    curve : (sizes, times), optional
        The fitted model on a fine grid, drawn as the line (the fitted
        values at the measured sizes are then drawn as small marks).

    Returns
    -------
    dict
        ``"measured"``, ``"fitted"``, ``"residuals"`` artists.
    """
    if isinstance(ax, (tuple, list)):
        ax, rax = ax
    sizes = np.asarray(sizes, dtype=float)
    measured = np.asarray(measured, dtype=float)
    fitted = np.asarray(fitted, dtype=float)
    if not (sizes.shape == measured.shape == fitted.shape):
        raise ValueError("sizes, measured and fitted must have the same length")
    if residuals is None:
        residuals = (fitted - measured) / measured
    residuals = np.asarray(residuals, dtype=float)
    order = np.argsort(sizes)
    out = {}
    out["measured"] = ax.loglog(sizes, measured, "o", color="#1f77b4", ms=5, label="measured")[0]
    if curve is None:
        out["fitted"] = ax.loglog(sizes[order], fitted[order], "-", color="#ff7f0e", lw=2, label=label)[0]
    else:
        cs, ct = (np.asarray(c, dtype=float) for c in curve)
        out["fitted"] = ax.loglog(cs, ct, "-", color="#ff7f0e", lw=2, label=label)[0]
        ax.loglog(sizes, fitted, "x", color="#ff7f0e", ms=5)
    format_bytes_axis(ax.xaxis)
    format_seconds_axis(ax.yaxis)
    ax.set_ylabel("time")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=11, loc="upper left")
    if rax is None:  # residuals on a twin axis, in percent
        twin = ax.twinx()
        twin.set_ylabel("residual (%)", color="#7f7f7f")
        out["residuals"] = twin.plot(sizes[order], 100 * residuals[order], "s:", color="#7f7f7f",
                                     ms=3, lw=0.8)[0]
        twin.axhline(0, color="#7f7f7f", lw=0.5)
        ax.set_xlabel("buffer size per rank")
    else:  # residuals as stems on their own axes
        out["residuals"] = rax.vlines(sizes, 0, 100 * residuals, color="#7f7f7f", lw=2)
        rax.semilogx(sizes, 100 * residuals, "o", color="#7f7f7f", ms=3)
        rax.axhline(0, color="k", lw=0.5)
        format_bytes_axis(rax.xaxis)
        rax.set_ylabel("residual (%)")
        rax.set_xlabel("buffer size per rank")
        rax.grid(True, which="major", alpha=0.3)
    _for_phone(ax)
    return out


def plot_bus_bandwidth(ax, sizes, busbw, *, link_bandwidth=None, label="busbw", **kwargs):
    """Bus bandwidth against size, with the link's one-direction bandwidth as a ceiling.

    The ceiling is a dashed line labelled for the legend (the caller draws
    the legend, e.g. ``fig.legend(loc="outside lower center")``).
    """
    sizes = np.asarray(sizes, dtype=float)
    busbw = np.asarray(busbw, dtype=float)
    (line,) = ax.semilogx(sizes, busbw / 1e9, "o-", label=label, **kwargs)
    out = {"busbw": line, "ceiling": None}
    if link_bandwidth is not None:
        # named in the legend: a label written along the line would cross the curves on a phone
        out["ceiling"] = ax.axhline(link_bandwidth / 1e9, color="k", ls="--", lw=1,
                                    label=f"link: {si(link_bandwidth, 'B/s')} per direction")
    format_bytes_axis(ax.xaxis)
    ax.set_xlabel("buffer size per rank")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.grid(True, which="major", alpha=0.3)
    _for_phone(ax, taller=1.35)  # the legend takes one row per entry there
    return out


def times_by_algorithm(collective, sizes, p, *, alpha, bandwidth, algorithms=ALGORITHMS) -> dict:
    """``algorithm -> times`` over ``sizes``: the input :func:`plot_collective_times` wants."""
    return {a: collective_time(collective, sizes, p, alpha=alpha, bandwidth=bandwidth, algorithm=a)
            for a in algorithms}


def crossovers(collective, p, *, alpha, bandwidth, algorithms=ALGORITHMS) -> dict:
    """``"tree/ring" -> size`` for every pair of algorithms that cross (others omitted)."""
    out = {}
    for i, a1 in enumerate(algorithms):
        for a2 in algorithms[i + 1:]:
            x = crossover_size(collective, p, alpha=alpha, bandwidth=bandwidth, algorithms=(a1, a2))
            if x is not None:
                out[f"{ALGORITHM_LABELS.get(a1, a1)} / {ALGORITHM_LABELS.get(a2, a2)}"] = x
    return out

