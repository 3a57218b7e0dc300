"""Chapter 16's checkpoint planner: how often to save when GPUs fail, and what the failures cost.

Controls set the job (GPUs, one GPU's mean time between failures in hours), the checkpoint (seconds a save
blocks training), the restart, and the interval between saves: the optimal one
(:func:`distlib.goodput.optimal_interval`), Young's, or the slider's. Two pictures:

* goodput against the interval (:func:`distlib.plots.goodput.plot_goodput_curve`), the optimum, Young's and
  Daly's intervals and the chosen one marked;
* the first day of a simulated run (:func:`distlib.goodput.simulate_failures`, seeded, so every redraw of
  the same inputs draws the same run): training kept, saves, training lost, restarts, failures.

The summary gives the job's mean time between failures, the three intervals, the goodput at the chosen one
(exact and to first order) and what a 30-day simulated run measured. ``GoodputWidget().result`` is the
current :class:`GoodputView`.

On the static page the GPUs and the write time stay live (6 x 4 = 24 frames, the interval at its optimum):
the two things a reader changes to see the optimum move and the goodput fall. The MTBF, the restart and the
interval are fixed there; the curve already shows every interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as w

from .._check import check_choice, check_int, check_int_choice, check_real_in
from ..goodput import (FailureRun, GoodputCurve, goodput, goodput_curve, llama3_interruptions, simulate_failures,
                       young_interval)
from ..plots.goodput import KIND_COLORS, KIND_LABELS, plot_failure_timeline, plot_goodput_curve
from ._base import CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, control_layout, label_style, log_slider

__all__ = ["GoodputView", "GoodputWidget", "GPU_OPTIONS", "INTERVAL_MODES", "SIMULATED_DAYS", "SHOWN_HOURS"]

#: GPU counts offered: powers of two from 128 to 131,072.
GPU_OPTIONS = [2**i for i in range(7, 18)]
#: How the interval is chosen: the exact optimum, Young's first-order one, or the slider's.
INTERVAL_MODES = {"optimal": "optimal", "young": "Young's", "set": "slider"}
#: Days of wall time the simulated run lasts (its measured goodput), and the hours of it the picture shows.
SIMULATED_DAYS = 30
SHOWN_HOURS = 24
_HOUR, _DAY = 3600.0, 86400.0
# slider ranges, as powers of ten of the unit each slider shows
_MTBF_H = (3.0, 6.0)  # one GPU's MTBF: 1,000 to 1,000,000 hours
_WRITE_S = (0.0, 3.5)  # a save: 1 s to about 53 min
_RESTART_S = (1.0, 4.0)  # a restart: 10 s to about 2.8 hours
_INTERVAL_MIN = (-1.0, 3.0)  # the interval: 6 s to about 16.7 hours
#: The static page's grids: GPUs and write times (the other controls fixed).
STATIC_GPUS = [2048, 4096, 8192, 16384, 32768, 65536]
STATIC_WRITES = [10.0, 30.0, 100.0, 300.0]


@dataclass(frozen=True)
class GoodputView:
    """What the widget shows: the curve over intervals, the chosen interval and its goodput, the simulated run."""

    curve: GoodputCurve
    mode: str
    interval: float
    """Seconds of training between saves, as the mode chose it."""
    expected: float
    """:func:`~distlib.goodput.expected_goodput` at :attr:`interval`."""
    first_order: float
    """:func:`~distlib.goodput.goodput` at :attr:`interval`."""
    run: FailureRun


class GoodputWidget(FigureWidget):
    """Sliders for a job and its checkpoints; goodput against the interval, and a simulated day of failures.

    Parameters
    ----------
    gpus : int
        One of :data:`GPU_OPTIONS` (powers of two, 128 to 131,072).
    mtbf_per_gpu : float
        One GPU's mean time between failures, seconds, in [3.6e6, 3.6e9] (1,000 to 1,000,000 hours). The
        default is Llama 3's (:attr:`distlib.goodput.Llama3Interruptions.mtbf_per_gpu`: 419 unexpected
        interruptions in 54 days, charged to 16,384 GPUs).
    write_time : float
        Seconds a save blocks training, in [1, 10**3.5].
    restart_time : float
        Seconds from a failure to training again, in [10, 10**4].
    interval : {"optimal", "young"} or float
        How the interval is chosen, or the interval itself in seconds, in [6, 60000] (the slider's).
    seed : int
        Seeds the simulated run (the same inputs draw the same run).

    Attributes
    ----------
    result : GoodputView
    """

    #: the chapter's widget as the static-frame tests build it
    EXAMPLE = dict(gpus=16384, write_time=30.0, restart_time=600.0)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (("GPUs not offered", dict(gpus=1000), ValueError, "gpus must be one of 128, 256"),
                  ("fractional GPUs", dict(gpus=1024.5), TypeError, "gpus must be one of 128, 256"),
                  ("MTBF in hours, not s", dict(mtbf_per_gpu=50_000), ValueError, "[3.6e+06, 3.6e+09] s"),
                  ("write time in minutes past the slider", dict(write_time=5000.0), ValueError,
                   "write_time must be a finite number in [1, 3162.28] s"),
                  ("no restart", dict(restart_time=0.0), ValueError, "[10, 10000] s"),
                  ("an unknown interval rule", dict(interval="daly"), ValueError,
                   "interval must be one of 'optimal', 'young'"),
                  ("an interval in minutes, too short", dict(interval=1.0), ValueError, "[6, 60000] s"),
                  ("a negative seed", dict(seed=-1), ValueError, "seed must be an integer >= 0"))

    def __init__(self, *, gpus=16384, mtbf_per_gpu=None, write_time=30.0, restart_time=600.0, interval="optimal",
                 seed=0):
        gpus = check_int_choice("gpus", gpus, GPU_OPTIONS)
        if mtbf_per_gpu is None:
            mtbf_per_gpu = llama3_interruptions().mtbf_per_gpu
        mtbf_h = check_real_in("mtbf_per_gpu", mtbf_per_gpu, 10**_MTBF_H[0] * _HOUR, 10**_MTBF_H[1] * _HOUR,
                               unit="s") / _HOUR
        write_time = check_real_in("write_time", write_time, 10**_WRITE_S[0], 10**_WRITE_S[1], unit="s")
        restart_time = check_real_in("restart_time", restart_time, 10**_RESTART_S[0], 10**_RESTART_S[1], unit="s")
        if isinstance(interval, str):
            mode = check_choice("interval", interval, [k for k in INTERVAL_MODES if k != "set"])
            minutes = 60.0
        else:
            mode = "set"
            minutes = check_real_in("interval", interval, 60 * 10**_INTERVAL_MIN[0], 60 * 10**_INTERVAL_MIN[1],
                                    unit="s") / 60
        self.seed = check_int("seed", seed, minimum=0)
        style, layout, cu = label_style(), control_layout(), CONTINUOUS_UPDATE
        self.gpus_slider = w.SelectionSlider(options=[(f"{g:,}", g) for g in GPU_OPTIONS], value=gpus,
                                             description="GPUs", continuous_update=cu, style=style, layout=layout)
        self.mtbf_slider = log_slider(value=mtbf_h, base=10, min=_MTBF_H[0], max=_MTBF_H[1], step=0.05,
                                      description="one GPU's MTBF (hours)", readout_format=",.0f",
                                      continuous_update=cu, style=style, layout=layout)
        self.write_slider = log_slider(value=write_time, base=10, min=_WRITE_S[0], max=_WRITE_S[1], step=0.05,
                                       description="checkpoint save, blocking (s)", readout_format=".3g",
                                       continuous_update=cu, style=style, layout=layout)
        self.restart_slider = log_slider(value=restart_time, base=10, min=_RESTART_S[0], max=_RESTART_S[1],
                                         step=0.05, description="restart after a failure (s)", readout_format=".3g",
                                         continuous_update=cu, style=style, layout=layout)
        self.mode_buttons = w.ToggleButtons(options=[(label, k) for k, label in INTERVAL_MODES.items()], value=mode,
                                            description="interval", style=style)
        self.interval_slider = log_slider(value=minutes, base=10, min=_INTERVAL_MIN[0], max=_INTERVAL_MIN[1],
                                          step=0.05, description="training between saves τ (min)",
                                          readout_format=".3g", continuous_update=cu, style=style, layout=layout)
        self.controls = [self.gpus_slider, self.mtbf_slider, self.write_slider, self.restart_slider,
                         self.mode_buttons, self.interval_slider]
        self.fig = FigureImage(width=560, height=480, phone_height=560)
        self._axes()
        self.summary = w.HTML()
        self.result: GoodputView | None = None
        self._finish([w.HTML(_legend_html())])

    def _axes(self) -> None:
        figure = self.fig.figure
        figure.delaxes(self.fig.ax)
        if self.fig.narrow:  # two title lines over the curve
            grid = figure.add_gridspec(2, 1, height_ratios=[2.6, 1], left=0.2, right=0.95, top=0.9, bottom=0.08,
                                       hspace=0.55)
        else:
            grid = figure.add_gridspec(2, 1, height_ratios=[2.3, 1], left=0.12, right=0.96, top=0.93, bottom=0.11,
                                       hspace=0.75)
        self.ax_curve, self.ax_time = figure.add_subplot(grid[0, 0]), figure.add_subplot(grid[1, 0])
        self.fig.ax = self.ax_curve

    def static_axes(self):
        # 6 GPU counts x 4 write times: 24 frames, the interval at its optimum; MTBF, restart and interval fixed
        return [StaticAxis("gpus_slider", STATIC_GPUS, labels=lambda g: f"{g:,}", description="GPUs"),
                StaticAxis("write_slider", STATIC_WRITES, labels=lambda s: f"{s:g} s",
                           description="checkpoint save, blocking")]

    def compute(self) -> GoodputView:
        gpus, mtbf = int(self.gpus_slider.value), float(self.mtbf_slider.value) * _HOUR
        write, restart = float(self.write_slider.value), float(self.restart_slider.value)
        mode = self.mode_buttons.value
        curve = goodput_curve(gpus=gpus, mtbf_per_gpu=mtbf, write_time=write, restart_time=restart)
        if mode == "optimal":
            tau = curve.optimum
        elif mode == "young":
            tau = young_interval(write, curve.mtbf)
        else:
            tau = float(self.interval_slider.value) * 60.0
        run = simulate_failures(gpus=gpus, mtbf_per_gpu=mtbf, write_time=write, restart_time=restart, interval=tau,
                                duration=SIMULATED_DAYS * _DAY, seed=self.seed)
        return GoodputView(curve=curve, mode=mode, interval=tau, expected=curve.at(tau),
                           first_order=goodput(gpus=gpus, mtbf_per_gpu=mtbf, write_time=write,
                                               restart_time=restart, interval=tau), run=run)

    def update(self):
        result = super().update()
        self._follow(result)
        return result

    def _follow(self, v: GoodputView) -> None:
        """The interval slider shows the interval used (within its range), and moves only in the slider's mode."""
        quiet, self._quiet = getattr(self, "_quiet", False), True
        try:
            if v.mode != "set":
                lo, hi = 10**self.interval_slider.min, 10**self.interval_slider.max
                self.interval_slider.value = min(max(v.interval / 60.0, lo), hi)
            self.interval_slider.disabled = v.mode != "set" or "distlib-fixed" in self.interval_slider._dom_classes
        finally:
            self._quiet = quiet

    def draw(self, v: GoodputView) -> None:
        narrow = self.fig.narrow
        for ax in (self.ax_curve, self.ax_time):
            ax.clear()
        plot_goodput_curve(self.ax_curve, v.curve, chosen=v.interval)
        head = f"{v.curve.gpus:,} GPUs: a failure every {_short(v.curve.mtbf)}"
        tail = f"τ = {_short(v.interval)}, goodput {v.expected:.1%}"
        self.ax_curve.set_title(f"{head}\n{tail}" if narrow else f"{head}; {tail}", fontsize=11)
        plot_failure_timeline(self.ax_time, v.run, until=SHOWN_HOURS * _HOUR, unit=(_HOUR, "h"))
        shown = int((v.run.failures < SHOWN_HOURS * _HOUR).sum())
        self.ax_time.set_title(f"{'the first ' if not narrow else ''}{SHOWN_HOURS} h of a simulated run: {shown} "
                               f"failure{'s' if shown != 1 else ''}", fontsize=11)
        self.fig.render()

    def describe(self, v: GoodputView) -> None:
        self.result = v
        c, run = v.curve, v.run
        how = {"optimal": "the optimal interval", "young": "Young's interval", "set": "the slider's interval"}[v.mode]
        self.summary.value = (
            f"<div style='font-size:0.9em'><b>{c.gpus:,} GPUs</b>, each failing once in "
            f"{c.mtbf_per_gpu / _HOUR:,.0f} hours: the job fails every <b>{_short(c.mtbf)}</b>.<br>"
            f"Saves block {_short(c.write_time)}, a restart takes {_short(c.restart_time)}. "
            f"Best interval <b>{_short(c.optimum)}</b> of training between saves "
            f"(Daly's estimate {_short(c.daly)}, Young's {_short(c.young)}).<br>"
            f"With {how}, {_short(v.interval)}: goodput <b>{v.expected:.1%}</b> "
            f"(first-order formula {v.first_order:.1%}; best possible {c.best:.1%}).<br>"
            f"A simulated {SIMULATED_DAYS}-day run: {run.n_failures:,} failures, {run.n_saves:,} saves, "
            f"measured goodput {run.goodput:.1%}" + (f" &plusmn; {run.standard_error:.1%}" if run.n_saves > 1 else "")
            + f"; {run.time_in('lost') / run.duration:.1%} of the time lost to failures, "
              f"{run.time_in('restart') / run.duration:.1%} restarting, "
              f"{run.time_in('save') / run.duration:.1%} saving.</div>")


def _short(seconds: float) -> str:
    """A duration for a title: ``2.1 h``, ``19 min``, ``45 s``."""
    if seconds >= 2 * _DAY:
        return f"{seconds / _DAY:.3g} days"
    if seconds >= 2 * _HOUR:
        return f"{seconds / _HOUR:.3g} h"
    if seconds >= 120:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.2g} s"


def _legend_html() -> str:
    """The pictures' legend, under them (inside the axes a legend would cover the curve at some setting)."""
    spans = " ".join(f"<span style='background:{KIND_COLORS[k]};color:{'#fff' if k in ('work', 'lost') else '#000'}'>"
                     f"&nbsp;{KIND_LABELS[k]}&nbsp;</span>" for k in KIND_COLORS)
    return ("<small>curve: <b style='color:#0072B2'>&mdash;</b> expected goodput, "
            "<b style='color:#0072B2'>- -</b> first-order formula; "
            "<b>&#9679;</b> optimum, <span style='color:#009E73'>&#9633;</span> Young's, "
            "<span style='color:#CC79A7'>&#9671;</span> Daly's, <span style='color:#D55E00'>&#9660;</span> chosen."
            f"<br>run: {spans} &#9660; a failure</small>")
