"""Drawing ZeRO's trade (chapter 10): model state per GPU against the GPUs, and what each GPU sends.

Two pictures, each on an axes it is given, each holding its artists; their
``update`` moves the same artists to a new result without touching the axes,
so chapter 10's widget redraws by blitting (see :mod:`distlib.widgets._base`):

* :class:`ZeroMemoryPicture`: one line per ZeRO stage of the model state one
  GPU holds against the number of data-parallel GPUs (log-log), the chosen
  stage thick, the chosen GPU count marked and its bytes written, the chip's
  HBM dashed;
* :class:`ZeroCommBars`: one bar per stage of what each GPU sends per step,
  in copies of the bf16 gradient (DDP's all-reduce ``2 (p - 1) / p``,
  ZeRO-3 ``3 (p - 1) / p``), each labelled with its bytes and time.

Both read a result with the interface of :class:`distlib.widgets.zero.ZeroView`:
``params``, ``gpus``, ``stage``, ``held``, ``sent``, ``fits``,
``held_at(gpus, stage)``, ``gradient_bytes`` and ``seconds(stage)``.
"""

from __future__ import annotations

from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from ..fmt import fmt_bytes, fmt_seconds
from ..walls import ZERO_STAGES

__all__ = ["STAGE_COLORS", "MEMORY_RANGE", "stage_name", "ZeroMemoryPicture", "ZeroCommBars", "plot_zero_memory",
           "plot_zero_comm"]

#: The memory axis: 30 TB at the top holds 1T parameters on one GPU; the three decades under 1B
#: parameters on 1024 GPUs under ZeRO-3 (16 MB) are the legend's.
MEMORY_RANGE = (1e4, 3e13)
STAGE_COLORS = {0: "#555555", 1: "#0072B2", 2: "#E69F00", 3: "#009E73"}
_OVER = "#D55E00"


def stage_name(stage: int) -> str:
    """``"DDP"`` for stage 0, else ``"ZeRO-s"``.

    >>> stage_name(0), stage_name(3)
    ('DDP', 'ZeRO-3')
    """
    return "DDP" if stage == 0 else f"ZeRO-{stage}"


class ZeroMemoryPicture:
    """Model state per GPU against the data-parallel GPUs, one line per ZeRO stage, the chip's HBM dashed.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    gpu_counts : list of int
        The x axis's GPU counts (powers of two), where every line has a point.
    accelerator : str
        The chip's name, for the HBM line's legend entry.
    hbm_bytes : float
        The chip's memory.
    narrow : bool
        Drawn for a phone: fewer y ticks, one legend column.
    """

    def __init__(self, ax, gpu_counts, *, accelerator: str, hbm_bytes: float, narrow: bool = False):
        self.ax = ax
        self.gpu_counts = list(gpu_counts)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(0.8, self.gpu_counts[-1] * 1.25)
        ax.set_ylim(*MEMORY_RANGE)
        ticks = self.gpu_counts[::2]  # every power of two ran 512 into 1024 at the desktop size
        ax.set_xticks(ticks, [str(p) for p in ticks])
        ax.minorticks_off()
        yticks = [1e4, 1e6, 1e8, 1e10, 1e12] if narrow else [10.0**k for k in range(4, 14)]
        ax.set_yticks(yticks, [fmt_bytes(y) for y in yticks])
        ax.set_xlabel("data-parallel GPUs p")
        ax.set_ylabel("model state per GPU")
        self.hbm_line = ax.axhline(hbm_bytes, color="black", linestyle="--", linewidth=1)
        ax.set_title("memory: model state per GPU", fontsize=11)
        self.lines = {s: ax.plot([], [], color=STAGE_COLORS[s], linewidth=1.2, label=stage_name(s))[0]
                      for s in ZERO_STAGES}
        (self.marker,) = ax.plot([], [], "o", markersize=8, markeredgecolor="black")
        self.marker_text = ax.text(0, 0, "", fontsize=11, ha="left", va="bottom",
                                   bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
        handles = [Line2D([], [], color=STAGE_COLORS[s], linewidth=2, label=stage_name(s)) for s in ZERO_STAGES]
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=1,
                              label=f"{accelerator}: {fmt_bytes(hbm_bytes)}"))
        self.legend = ax.legend(handles=handles, fontsize=11, ncol=1 if narrow else 2, loc="lower left",
                                frameon=False)

    @property
    def dynamic_artists(self) -> list:
        """What :meth:`update` changes (to mark as animated for blitting)."""
        return [*self.lines.values(), self.marker, self.marker_text]

    def update(self, r) -> "ZeroMemoryPicture":
        """Draw ``r``'s lines, the chosen one thick, and mark its GPU count (red where it does not fit)."""
        for s, line in self.lines.items():
            line.set_data(self.gpu_counts, [r.held_at(p, s) for p in self.gpu_counts])
            chosen = s == r.stage
            line.set_linewidth(3.2 if chosen else 1.2)
            line.set_alpha(1.0 if chosen else 0.55)
            line.set_zorder(3 if chosen else 2)
        held = r.held[r.stage].total
        self.marker.set_data([r.gpus], [held])
        self.marker.set_color(STAGE_COLORS[r.stage] if r.fits else _OVER)
        self.marker.set_markeredgecolor("black")
        self.marker_text.set_text(fmt_bytes(held))
        # right of the dot, or left of it near the right edge; under it near the top
        right = r.gpus <= 64
        self.marker_text.set_position((r.gpus * (1.25 if right else 0.8), held * (1.3 if held < 1e12 else 1 / 1.6)))
        self.marker_text.set_ha("left" if right else "right")
        self.marker_text.set_va("bottom" if held < 1e12 else "top")
        self.marker_text.set_color("black" if r.fits else _OVER)
        return self


class ZeroCommBars:
    """What each GPU sends per step under each ZeRO stage, in copies of the bf16 gradient, one bar a stage."""

    def __init__(self, ax):
        self.ax = ax
        # one bar per stage, its name and numbers written above it (room for them on a phone too)
        ax.set_xlim(0, 3.15)
        ax.set_ylim(len(ZERO_STAGES) - 0.1, -0.75)
        ax.set_yticks([])
        ax.set_xticks([0, 1, 2, 3], ["0", "1", "2", "3"])
        ax.set_xlabel("sent per step, in bf16 gradients")
        ax.set_title("communication: sent per GPU", fontsize=11)
        self.bars = {s: ax.add_patch(Rectangle((0, s), 0, 0.32, color=STAGE_COLORS[s])) for s in ZERO_STAGES}
        self.bar_texts = {s: ax.text(0.02, s - 0.08, "", fontsize=11, va="bottom", ha="left") for s in ZERO_STAGES}

    @property
    def dynamic_artists(self) -> list:
        """What :meth:`update` changes (to mark as animated for blitting)."""
        return [*self.bars.values(), *self.bar_texts.values()]

    def update(self, r) -> "ZeroCommBars":
        """Each stage's bar as long as its bytes in gradients, its words over it; the chosen stage bold."""
        for s in ZERO_STAGES:
            copies = r.sent[s] / r.gradient_bytes
            self.bars[s].set_width(copies)
            self.bars[s].set_alpha(1.0 if s == r.stage else 0.45)
            words = (f"{stage_name(s)}: nothing" if r.sent[s] == 0
                     else f"{stage_name(s)}: {fmt_bytes(r.sent[s])}, {fmt_seconds(r.seconds(s))}")
            self.bar_texts[s].set_text(words)
            self.bar_texts[s].set_fontweight("bold" if s == r.stage else "normal")
        return self


def plot_zero_memory(ax, result, gpu_counts, *, accelerator: str, hbm_bytes: float,
                     narrow: bool = False) -> ZeroMemoryPicture:
    """Draw ``result``'s model state per GPU against ``gpu_counts`` on ``ax`` (see :class:`ZeroMemoryPicture`).

    Returns
    -------
    ZeroMemoryPicture
        Its ``lines`` (stage -> Line2D), ``marker``, ``marker_text``, ``hbm_line`` and ``legend``.
    """
    return ZeroMemoryPicture(ax, gpu_counts, accelerator=accelerator, hbm_bytes=hbm_bytes, narrow=narrow).update(result)


def plot_zero_comm(ax, result) -> ZeroCommBars:
    """Draw what each GPU of ``result`` sends per step under each stage on ``ax`` (see :class:`ZeroCommBars`).

    Returns
    -------
    ZeroCommBars
        Its ``bars`` (stage -> Rectangle, width in gradients) and ``bar_texts``.
    """
    return ZeroCommBars(ax).update(result)
