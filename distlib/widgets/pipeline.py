"""Chapter 12's pipeline explorer: a schedule, its stages p, microbatches m and chunks v, drawn stage by time.

The picture is :func:`distlib.pipeline_schedule`'s timeline
(:class:`distlib.plots.pipeline.SchedulePicture`): one row per stage,
stage 0 on top, a blue box per forward and an orange box per backward of
one microbatch (an interleaved schedule's later chunks lighter), the row
grey where the stage waits. The time axis is in units of one stage's
forward for one microbatch; a backward takes ``backward ratio`` of them.
The y labels give each stage's peak number of microbatches whose
activations it holds (:attr:`~distlib.pipeline_schedule.PipelineSchedule.peak_in_flight`).

The summary gives the bubble both ways it is quoted:

* a fraction of the whole step, GPipe's ``(p - 1)/(m + p - 1)``
  (``bubble_fraction``: idle stage-time over ``p`` times the step);
* relative to the ideal step ``m (tf + tb)``, Narayanan et al.'s
  ``(p - 1)/m``, ``(p - 1)/(v m)`` interleaved (``bubble_ratio``).

Chunks ``v`` mean something for the interleaved schedule only: GPipe and
1F1B hold one chunk per stage, and the picture and the summary say
``v = 1`` for them whatever the chunks control shows.

``PipelineWidget().result`` is the current
:class:`~distlib.pipeline_schedule.PipelineSchedule`.
"""

from __future__ import annotations

import html

import ipywidgets as w

from .._check import check_choice, check_int_choice, check_real_in
from ..pipeline_schedule import PIPELINE_SCHEDULES, PipelineSchedule, pipeline_schedule
from ..plots.pipeline import KIND_LABELS, SchedulePicture
from ._base import FigureImage, FigureWidget, StaticAxis, control_layout, label_style

__all__ = ["PipelineWidget", "STAGES", "MICROBATCHES", "CHUNKS", "BACKWARD_RATIOS", "KIND_LABELS"]

#: Pipeline stages p offered.
STAGES = [2, 4, 8]
#: Microbatches m offered: multiples of every p, as the interleaved schedule needs.
MICROBATCHES = [8, 16, 32]
#: Model chunks v per stage offered (the interleaved schedule's; GPipe and 1F1B run one).
CHUNKS = [2, 4]
#: Backward time over forward time offered (2: a backward pass costs two forwards).
BACKWARD_RATIOS = [1.0, 2.0, 3.0]


class PipelineWidget(FigureWidget):
    """Buttons for the schedule, p, m, v and the backward ratio; the stage-by-time chart and both bubbles.

    Parameters
    ----------
    kind : {"gpipe", "1f1b", "interleaved"}
    stages : {2, 4, 8}
        ``p``.
    microbatches : {8, 16, 32}
        ``m`` (each a multiple of every ``p`` offered).
    chunks : {2, 4}
        ``v``, model chunks per stage for ``"interleaved"`` (ignored by the two others, which run one).
    backward_ratio : float
        A backward's time over a forward's, in [1, 3] (the buttons offer 1, 2 and 3).

    Attributes
    ----------
    result : PipelineSchedule
        The schedule the picture and the text show now.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(kind="interleaved", stages=4, microbatches=8, chunks=2)  # chapter 12's
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("unknown pipeline schedule", dict(kind="pipedream"), ValueError, "'gpipe', '1f1b', 'interleaved'"),
        ("three pipeline stages", dict(stages=3), ValueError, "2, 4, 8"),
        ("microbatches not offered", dict(microbatches=12), ValueError, "8, 16, 32"),
        ("one chunk for the interleaved schedule", dict(chunks=1), ValueError, "2, 4"),
        ("fractional chunks", dict(chunks=2.5), TypeError, "2, 4"),
        ("backward ratio above the buttons", dict(backward_ratio=5), ValueError, "[1, 3]"),
    )

    def __init__(self, *, kind="1f1b", stages=4, microbatches=8, chunks=2, backward_ratio=2.0):
        kind = check_choice("kind", kind, PIPELINE_SCHEDULES)
        stages = check_int_choice("stages", stages, STAGES)
        microbatches = check_int_choice("microbatches", microbatches, MICROBATCHES)
        chunks = check_int_choice("chunks", chunks, CHUNKS)
        backward_ratio = check_real_in("backward_ratio", backward_ratio, BACKWARD_RATIOS[0], BACKWARD_RATIOS[-1])
        style = label_style()
        self.kind_buttons = w.ToggleButtons(options=[(KIND_LABELS[k], k) for k in PIPELINE_SCHEDULES], value=kind,
                                            description="schedule", style=style)
        self.stages_buttons = w.ToggleButtons(options=STAGES, value=stages, description="stages p", style=style)
        self.microbatches_buttons = w.ToggleButtons(options=MICROBATCHES, value=microbatches,
                                                    description="microbatches m", style=style)
        self.chunks_buttons = w.ToggleButtons(options=CHUNKS, value=chunks, description="chunks v (interleaved only)",
                                              style=style)
        ratios = sorted({*BACKWARD_RATIOS, float(backward_ratio)})
        self.ratio_dropdown = w.Dropdown(options=[(f"{r:g}", r) for r in ratios], value=float(backward_ratio),
                                         description="backward / forward time", style=style, layout=control_layout())
        self.controls = [self.kind_buttons, self.stages_buttons, self.microbatches_buttons, self.chunks_buttons,
                         self.ratio_dropdown]
        self.fig = FigureImage(width=460, height=330, phone_height=360)
        self.picture = SchedulePicture(self.fig.ax, narrow=self.fig.narrow)
        self.summary = w.HTML()
        self.result: PipelineSchedule | None = None
        self._finish()

    def static_axes(self):
        # 3 schedules x 3 stage counts x 3 microbatch counts x 2 chunk counts = 54 frames (the chunks'
        # frames of GPipe and 1F1B are the same picture, shared); the backward ratio stays 2 there
        return [StaticAxis("kind_buttons", list(PIPELINE_SCHEDULES)),
                StaticAxis("stages_buttons", STAGES),
                StaticAxis("microbatches_buttons", MICROBATCHES),
                StaticAxis("chunks_buttons", CHUNKS)]

    def compute(self) -> PipelineSchedule:
        kind = self.kind_buttons.value
        v = self.chunks_buttons.value if kind == "interleaved" else 1
        return pipeline_schedule(kind, self.stages_buttons.value, self.microbatches_buttons.value, forward_time=1.0,
                                 backward_time=float(self.ratio_dropdown.value), chunks=v)

    def draw(self, r: PipelineSchedule) -> None:
        self.picture.update(r)
        self.fig.render()

    def describe(self, r: PipelineSchedule) -> None:
        self.result = r
        p, m, v = r.stages, r.microbatches, r.chunks
        name = html.escape(KIND_LABELS[r.kind])
        chunks = (f"{v} chunks per stage" if r.kind == "interleaved"
                  else "one chunk per stage (the chunks control is for the interleaved schedule)")
        vm = "(v m)" if r.kind == "interleaved" else "m"
        ratio_formula = f"(p-1)/{vm} = {p - 1}/{v * m}"
        fraction_formula = f"(p-1)/({vm[1:-1] if v > 1 else vm}+p-1) = {p - 1}/{v * m + p - 1}"
        peaks = ", ".join(f"{k:g}" for k in r.peak_in_flight)
        self.summary.value = (
            f"<div style='font-size:0.9em'><b>{name}</b>, p = {p} stages, m = {m} microbatches, {chunks}; "
            f"a backward takes {r.backward_time / r.forward_time:g} forwards.<br>"
            f"Bubble: <b>{r.bubble_fraction:.1%} of the whole step</b> (GPipe's convention, {fraction_formula}), "
            f"or <b>{r.bubble_ratio:.1%} of the ideal step</b> m (tf + tb) (Narayanan et al.'s, {ratio_formula}).<br>"
            f"Peak microbatches in flight, stage 0 to {p - 1}: {peaks} (their activations held at once).</div>")
