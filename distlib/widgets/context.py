"""Chapter 14's ring explorer: the ranks, the causal mask by the rank that computes it, and the ring in time.

Three pictures of one context-parallel ring of ``cp`` ranks over a sequence of ``seq`` tokens:

* the ring (:func:`distlib.plots.context.plot_ring`): each rank's colour, the direction the key/value blocks
  travel, and beside each rank the block it computes with at the chosen hop;
* the causal mask in ``2 cp`` chunks a side (:func:`distlib.plots.context.plot_causal_mask`), coloured by
  the rank holding the queries, the chunk pairs of the chosen hop full and the others faded; ``balance``
  switches the contiguous split for Llama 3's zig-zag one;
* every rank's pass in time (:func:`distlib.context_parallel.ring_schedule`), in units of a mean block's
  compute, each hop's transfer the chosen share of a block, overlapped with the block before (or not):
  with the contiguous split the early ranks wait for the last one.

The summary gives each rank's work (:func:`distlib.context_parallel.causal_pairs`) and the step both ways.
``ContextWidget().result`` is the current :class:`ContextView`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as w
import numpy as np

from .._check import check_bool, check_choice, check_int, check_int_choice, check_real_in
from ..context_parallel import RingSchedule, causal_pairs, cp_chunks, ring_schedule, ring_work, work_imbalance
from ..plots.context import plot_causal_mask, plot_ring, plot_ring_schedule
from ._base import FigureImage, FigureWidget, StaticAxis, control_layout, label_style

__all__ = ["ContextView", "ContextWidget", "CP_OPTIONS", "TRANSFERS", "SPLIT_LABELS"]

#: Context-parallel ranks offered.
CP_OPTIONS = [2, 4, 8]
#: A hop's transfer over a mean block's compute, offered.
TRANSFERS = [0.25, 0.5, 1.0, 2.0]
SPLIT_LABELS = {"contiguous": "off: contiguous", "zigzag": "on: zig-zag"}


@dataclass(frozen=True)
class ContextView:
    """What the widget shows: the ring's degree, split and hop, each rank's work, both schedules."""

    cp: int
    seq: int
    split: str
    hop: int
    transfer: float
    overlap: bool
    work: np.ndarray
    """Each rank's query-key pairs (:func:`~distlib.context_parallel.causal_pairs`)."""
    schedule: RingSchedule
    """The schedule drawn (overlapped or not), in mean blocks."""
    blocking_step: float
    overlapped_step: float

    @property
    def imbalance(self) -> float:
        """The busiest rank's work over the least busy's."""
        return work_imbalance(self.work)


class ContextWidget(FigureWidget):
    """Buttons for the ranks and the balance, a hop slider, the transfer and overlap; three pictures and numbers.

    Parameters
    ----------
    cp : {2, 4, 8}
    seq : int
        Tokens per sequence, a multiple of ``2 x 8`` (every ``cp`` offered splits it in zig-zag chunks).
    split : {"zigzag", "contiguous"}
    hop : int
        ``0 .. cp - 1``: the hop the ring and the mask show.
    transfer : float
        A hop's transfer over a mean block's compute, in [0.25, 2] (the menu offers 0.25, 0.5, 1, 2).
    overlap : bool
        Draw the ring with each hop under the block before it (else the blocking ring).

    Attributes
    ----------
    result : ContextView
    """

    #: the chapter's widget as the static-frame tests build it
    EXAMPLE = dict(cp=4, seq=131072)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (("cp not offered", dict(cp=3), ValueError, "cp must be one of 2, 4, 8"),
                  ("cp below 1", dict(cp=0), ValueError, "cp must be one of 2, 4, 8"),
                  ("fractional cp", dict(cp=2.5), TypeError, "cp must be one of 2, 4, 8"),
                  ("a sequence not in 16 chunks", dict(seq=1000), ValueError, "seq must be a multiple of 16"),
                  ("an unknown split", dict(split="striped"), ValueError, "split must be one of"),
                  ("a hop past the ring", dict(cp=2, hop=2), ValueError, "hop must be an integer in [0, 1]"),
                  ("a transfer off the menu's range", dict(transfer=5.0), ValueError, "transfer must be"),
                  ("overlap not a bool", dict(overlap="yes"), TypeError, "overlap must be"))

    def __init__(self, *, cp=4, seq=131072, split="zigzag", hop=0, transfer=1.0, overlap=True):
        cp = check_int_choice("cp", cp, CP_OPTIONS)
        seq = check_int("seq", seq, minimum=16)
        if seq % (2 * CP_OPTIONS[-1]):
            raise ValueError(f"seq must be a multiple of {2 * CP_OPTIONS[-1]} (2 x cp chunks for every cp offered), "
                             f"got {seq}")
        split = check_choice("split", split, tuple(SPLIT_LABELS))
        hop = check_int("hop", hop, minimum=0, maximum=cp - 1)
        transfer = check_real_in("transfer", transfer, TRANSFERS[0], TRANSFERS[-1])
        overlap = check_bool("overlap", overlap)
        self.seq = seq
        style = label_style()
        self.cp_buttons = w.ToggleButtons(options=CP_OPTIONS, value=cp, description="ranks cp", style=style)
        self.split_buttons = w.ToggleButtons(options=[(label, k) for k, label in SPLIT_LABELS.items()], value=split,
                                             description="balance", style=style)
        self.hop_slider = w.IntSlider(value=hop, min=0, max=cp - 1, description="hop", style=style,
                                      continuous_update=False, layout=control_layout())
        transfers = sorted({*TRANSFERS, float(transfer)})
        self.transfer_dropdown = w.Dropdown(options=[(f"{t:g}", t) for t in transfers], value=float(transfer),
                                            description="transfer / block compute", style=style,
                                            layout=control_layout())
        self.overlap_box = w.Checkbox(value=overlap, description="overlap each hop with the block before",
                                      indent=False, layout=control_layout())
        self.controls = [self.cp_buttons, self.split_buttons, self.hop_slider, self.transfer_dropdown,
                         self.overlap_box]
        self.fig = FigureImage(width=620, height=560, phone_height=800)
        self._axes()
        self.summary = w.HTML()
        self.result: ContextView | None = None
        self._finish()

    def _axes(self) -> None:
        figure = self.fig.figure
        figure.delaxes(self.fig.ax)
        if self.fig.narrow:
            grid = figure.add_gridspec(3, 1, height_ratios=[0.85, 1.05, 0.75], left=0.17, right=0.97, top=0.965,
                                       bottom=0.07, hspace=0.45)
            self.ax_ring, self.ax_mask, self.ax_time = (figure.add_subplot(grid[i, 0]) for i in range(3))
        else:
            grid = figure.add_gridspec(2, 2, height_ratios=[1.25, 0.75], left=0.08, right=0.97, top=0.93,
                                       bottom=0.1, hspace=0.42, wspace=0.25)
            self.ax_ring, self.ax_mask = figure.add_subplot(grid[0, 0]), figure.add_subplot(grid[0, 1])
            self.ax_time = figure.add_subplot(grid[1, :])
        self.fig.ax = self.ax_mask

    def static_axes(self):
        # 3 ring sizes x 2 splits x every hop of the ring (2 + 4 + 8): 28 frames; the transfer and the
        # overlap stay at the constructor's values there
        return [StaticAxis("cp_buttons", CP_OPTIONS),
                StaticAxis("split_buttons", list(SPLIT_LABELS), labels=lambda k: SPLIT_LABELS[k]),
                StaticAxis("hop_slider", lambda chosen: list(range(chosen["cp_buttons"])), local=True, player=900)]

    def update(self):
        cp = self.cp_buttons.value
        if self.hop_slider.max != cp - 1:  # the slider's range follows the ring (value first when it shrinks)
            quiet, self._quiet = getattr(self, "_quiet", False), True
            try:
                self.hop_slider.value = min(self.hop_slider.value, cp - 1)
                self.hop_slider.max = cp - 1
            finally:
                self._quiet = quiet
        return super().update()

    def compute(self) -> ContextView:
        cp, split = self.cp_buttons.value, self.split_buttons.value
        hop, t, overlap = self.hop_slider.value, float(self.transfer_dropdown.value), bool(self.overlap_box.value)
        work = ring_work(self.seq, cp, split=split)
        blocks = work / (work.sum() / cp**2)  # in mean blocks
        over, block = ring_schedule(blocks, t, overlap=True), ring_schedule(blocks, t, overlap=False)
        return ContextView(cp=cp, seq=self.seq, split=split, hop=hop, transfer=t, overlap=overlap,
                           work=causal_pairs(self.seq, cp, split=split), schedule=over if overlap else block,
                           blocking_step=block.step_time, overlapped_step=over.step_time)

    def draw(self, v: ContextView) -> None:
        narrow = self.fig.narrow
        for ax in (self.ax_ring, self.ax_mask, self.ax_time):
            ax.clear()
        plot_ring(self.ax_ring, v.cp, v.hop)
        self.ax_ring.set_title(f"hop {v.hop}: rank r has rank r - {v.hop}'s K/V" if v.hop else
                               "hop 0: each rank its own K/V", fontsize=11)
        plot_causal_mask(self.ax_mask, v.cp, split=v.split, hop=v.hop)
        name = "zig-zag" if v.split == "zigzag" else "contiguous"
        self.ax_mask.set_title(f"{name}: busiest rank {v.imbalance:.2f} x least", fontsize=11)
        plot_ring_schedule(self.ax_time, v.schedule, xmax=max(v.blocking_step, v.overlapped_step))
        how = "overlapped" if v.overlap else "blocking"
        self.ax_time.set_title(f"{how}: step {v.schedule.step_time:.1f} blocks"
                               + ("" if narrow else f" (overlapped {v.overlapped_step:.1f}, "
                                                    f"blocking {v.blocking_step:.1f})"), fontsize=11)
        self.ax_time.set_xlabel("time, in a mean block's compute" if not narrow else "time (mean blocks)")
        self.fig.render()

    def describe(self, v: ContextView) -> None:
        self.result = v
        n = v.seq // v.cp
        share = ", ".join(f"{x:.2f}" for x in v.work / v.work.mean())
        chunks = "; ".join(f"rank {r}: " + " and ".join(f"{a:,}-{b - 1:,}" for a, b in
                                                        cp_chunks(v.seq, v.cp, r, split=v.split))
                           for r in range(min(v.cp, 4)))
        more = " ..." if v.cp > 4 else ""
        self.summary.value = (
            f"<div style='font-size:0.9em'><b>{v.cp} ranks</b>, {v.seq:,} tokens a sequence, {n:,} each "
            f"({html.escape(SPLIT_LABELS[v.split].split(': ')[1])}: {chunks}{more}).<br>"
            f"Attention work per rank over the mean: {share}; the busiest does <b>{v.imbalance:.2f}</b> times "
            f"the least.<br>"
            f"A hop's transfer is {v.transfer:g} of a mean block's compute: the step takes "
            f"<b>{v.overlapped_step:.2f}</b> mean blocks with each hop under the block before, "
            f"{v.blocking_step:.2f} blocking.</div>")
