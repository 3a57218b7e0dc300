"""The roofline explorer: pick a chip, an operation and its size; see where it lands.

``RooflineWidget().placement`` is the current :class:`distlib.roofline.Placement`.
"""

from __future__ import annotations

import html

import ipywidgets as w

from .._check import check_choice, check_int_grid
from ..fmt import fmt_bytes, fmt_flop, fmt_flops, fmt_seconds
from ..hardware import accelerator as _accelerator
from ..hardware import accelerator_names, accelerators
from ..plots.roofline import RooflinePicture
from ..roofline import OPERATION_KINDS, Operation, Placement, operation
from ._base import (CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, accelerator_name, control_layout,
                    label_style, log_slider)

__all__ = ["RooflineWidget"]

SIZE_LOG2_RANGE = (4, 15)  # n from 16 to 32768


class RooflineWidget(FigureWidget):
    """Accelerator and operation menus and a size slider over every chip's roofline.

    Attributes
    ----------
    placement : Placement
        The chosen operation on the chosen chip (bound, attainable FLOP/s, time).
    operation : Operation
        The chosen operation at the chosen size.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(n=1024)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("accelerator not in the table", dict(accelerator="V100"), ValueError, "known: A100, H100"),
        ("accelerator as a number", dict(accelerator=100), TypeError, "A100, H100"),
        ("unknown operation", dict(kind="conv"), ValueError, "'matmul (n x n x n)'"),
        ("size below the slider", dict(n=3), ValueError, "[16, 32768]"),
        ("size above the slider", dict(n=65536), ValueError, "[16, 32768]"),
        ("fractional size", dict(n=1024.5), TypeError, "[16, 32768]"),
    )

    def __init__(self, *, accelerator="H100", kind="matmul (n x n x n)", n=1024):
        # every argument checked before anything is built
        name = accelerator_name(accelerator)
        kind = check_choice("kind", kind, list(OPERATION_KINDS))
        lo, hi = SIZE_LOG2_RANGE
        n = check_int_grid("n", n, minimum=2**lo, maximum=2**hi)
        style = label_style()
        layout = control_layout()
        self.accelerator_dropdown = w.Dropdown(options=accelerator_names(), value=name,
                                               description="accelerator", style=style, layout=layout)
        self.operation_dropdown = w.Dropdown(options=list(OPERATION_KINDS), value=kind, description="operation",
                                             style=style, layout=layout)
        self.size_slider = log_slider(value=n, base=2, min=lo, max=hi, step=1, description="size n",
                                            readout_format=".0f", continuous_update=CONTINUOUS_UPDATE,
                                            style=style, layout=layout)
        self.controls = [self.accelerator_dropdown, self.operation_dropdown, self.size_slider]

        self.fig = FigureImage(width=500, height=400, phone_height=470)
        narrow = self.fig.narrow
        self.picture = RooflinePicture(self.fig.ax, accelerators(), narrow=narrow)
        title = "grey: every chip in the table" + ("\n" if narrow else "; ") + "blue: the chosen one"
        self.fig.ax.set_title(title, fontsize=11, pad=self.picture.notes_pad)
        self.fig.enforce_min_font()
        self.fig.figure.tight_layout(pad=0.6)
        box = self.fig.ax.get_position()
        self.fig.ax.title.set_x((0.5 - box.x0) / box.width)  # centred on the figure, as the notes under it
        self.fig.set_animated(self.picture.dynamic_artists)

        self.summary = w.HTML()
        self.operation: Operation | None = None
        self.placement: Placement | None = None
        self._finish()

    def static_axes(self):
        lo, hi = SIZE_LOG2_RANGE
        # five of the table's chips (the prose's "pick an accelerator"), every operation, and
        # sizes a factor of four apart (the start value is added)
        return [StaticAxis("accelerator_dropdown", ["A100", "H100", "B200", "MI300X", "TPU v5p"]),
                StaticAxis("operation_dropdown", list(OPERATION_KINDS)),
                StaticAxis("size_slider", [float(2**k) for k in range(lo, hi + 1, 2)], labels=lambda v: f"{v:,.0f}")]

    @property
    def n(self) -> int:
        return int(round(self.size_slider.value))

    def update(self) -> Placement:
        """Rebuild the operation, place it, redraw; return the placement."""
        spec = _accelerator(self.accelerator_dropdown.value)
        self.operation = op = operation(self.operation_dropdown.value, self.n)
        self.placement = pl = self.picture.update(spec, op)
        self.fig.render()
        ridge = pl.roof.ridge_point
        side = "below" if op.intensity < ridge else "above"
        color = "#D55E00" if pl.bound == "memory" else "#009E73"
        self.summary.value = (
            f"<div style='font-size:0.9em'><b>{html.escape(op.name)}</b>: {fmt_flop(op.flops)}, "
            f"{fmt_bytes(op.n_bytes)} moved, intensity {op.intensity:.3g} FLOP/byte, {side} "
            f"{html.escape(spec.name)}'s ridge of {ridge:.0f} FLOP/byte: "
            f"<b style='color:{color}'>{pl.bound}-bound</b>.<br>"
            f"Roofline time {fmt_seconds(pl.time)} (compute {fmt_seconds(pl.compute_time)}, memory "
            f"{fmt_seconds(pl.memory_time)}); attainable {fmt_flops(pl.attainable_flops)}, "
            f"{100 * pl.fraction_of_peak:.3g}% of the dense BF16 peak.</div>"
        )
        return pl
