"""Flat ring against hierarchical all-reduce on a two-level cluster: sliders over the model.

``TwoLevelWidget().result`` holds the current times; set any control's
``.value`` and it is recomputed and redrawn (chapter "A cluster on one machine").
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as w
import numpy as np

from .._check import check_int, check_int_choice, check_real_in
from ..collectives import bus_bandwidth, two_level_allreduce_time
from ..fmt import fmt_bytes, fmt_bytes_binary, fmt_rate, fmt_seconds
from ..plots.collectives import format_bytes_axis
from ._base import (CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, control_layout, label_style,
                    log_slider)

__all__ = ["TwoLevelWidget", "TwoLevelResult", "NODE_COUNTS"]

NODE_COUNTS = [2, 4, 8, 16, 32, 64, 128]
_SIZES = np.logspace(3, 10, 57)  # 1 kB to 10 GB


@dataclass(frozen=True)
class TwoLevelResult:
    """Times (s) and bus bandwidths (bytes/s) of both algorithms at the chosen size."""

    n_bytes: float
    seconds: dict
    busbw: dict

    @property
    def gain(self) -> float:
        return self.seconds["ring"] / self.seconds["hierarchical"]


class TwoLevelWidget(FigureWidget):
    """Nodes, ranks per node, both links' rates and latencies, buffer size; curves of bus bandwidth.

    Every argument is SI: ``link_bandwidth`` is one node's link to the other
    nodes and ``intra_bandwidth`` one rank's bandwidth inside its node, both
    in bytes/s per direction; ``alpha_inter`` and ``alpha_intra`` are the
    per-message latencies in seconds; ``n_bytes`` is each rank's buffer.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(nodes=2, ranks_per_node=2, link_bandwidth=1e9 / 8)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("three nodes", dict(nodes=3), ValueError, "2, 4, 8, 16, 32, 64, 128"),
        ("fractional node count", dict(nodes=2.5), TypeError, "2, 4, 8"),
        ("no ranks per node", dict(ranks_per_node=0), ValueError, "[1, 16]"),
        ("more ranks per node than the slider", dict(ranks_per_node=17), ValueError, "[1, 16]"),
        ("link in Gbit/s, not bytes/s", dict(link_bandwidth=1), ValueError, "[1e+07, 1e+11] bytes/s"),
        ("intra-node link too fast", dict(intra_bandwidth=1e13), ValueError, "[1e+08, 1e+12] bytes/s"),
        ("negative latency between nodes", dict(alpha_inter=-5e-5), ValueError, "[1e-07, 0.001] s"),
        ("one-second latency inside", dict(alpha_intra=1), ValueError, "[1e-07, 0.001] s"),
        ("ten-byte buffer", dict(n_bytes=10), ValueError, "[1000, 1e+10] bytes"),
    )

    def __init__(self, *, nodes=2, ranks_per_node=2, link_bandwidth=1e9 / 8, intra_bandwidth=3e9,
                 alpha_inter=50e-6, alpha_intra=5e-6, n_bytes=16 * 2**20):  # fmt: skip
        # every argument checked against its control's range before anything is built
        nodes = check_int_choice("nodes", nodes, NODE_COUNTS)
        ranks_per_node = check_int("ranks_per_node", ranks_per_node, minimum=1, maximum=16)
        link_bandwidth = check_real_in("link_bandwidth", link_bandwidth, 10**7, 10**11, unit="bytes/s")
        intra_bandwidth = check_real_in("intra_bandwidth", intra_bandwidth, 10**8, 10**12, unit="bytes/s")
        alpha_inter = check_real_in("alpha_inter", alpha_inter, 10**-7, 10**-3, unit="s")
        alpha_intra = check_real_in("alpha_intra", alpha_intra, 10**-7, 10**-3, unit="s")
        n_bytes = check_real_in("n_bytes", n_bytes, 10**3, 10**10, unit="bytes")
        style, layout, cu = label_style(), control_layout(), CONTINUOUS_UPDATE
        self.nodes_dropdown = w.Dropdown(options=NODE_COUNTS, value=nodes, description="nodes", style=style)
        self.ranks_slider = w.IntSlider(value=ranks_per_node, min=1, max=16, description="ranks per node",
                                        continuous_update=cu, style=style, layout=layout)  # fmt: skip
        self.link_slider = log_slider(value=link_bandwidth, base=10, min=7, max=11, step=0.05,
                                      description="link per node (B/s, per direction)", readout_format=".3g",
                                      continuous_update=cu, style=style, layout=layout)  # fmt: skip
        self.intra_slider = log_slider(value=intra_bandwidth, base=10, min=8, max=12, step=0.05,
                                       description="inside a node (B/s per rank)", readout_format=".3g",
                                       continuous_update=cu, style=style, layout=layout)  # fmt: skip
        self.alpha_inter_slider = log_slider(value=alpha_inter, base=10, min=-7, max=-3, step=0.05,
                                             description="latency between nodes (s)", readout_format=".2e",
                                             continuous_update=cu, style=style, layout=layout)  # fmt: skip
        self.alpha_intra_slider = log_slider(value=alpha_intra, base=10, min=-7, max=-3, step=0.05,
                                             description="latency inside (s)", readout_format=".2e",
                                             continuous_update=cu, style=style, layout=layout)  # fmt: skip
        self.size_slider = log_slider(value=n_bytes, base=10, min=3, max=10, step=0.1,
                                      description="buffer per rank (bytes)", readout_format=".3g",
                                      continuous_update=cu, style=style, layout=layout)  # fmt: skip
        self.controls = [self.nodes_dropdown, self.ranks_slider, self.link_slider, self.intra_slider,
                         self.alpha_inter_slider, self.alpha_intra_slider, self.size_slider]  # fmt: skip
        self.fig = FigureImage(width=460, height=300, phone_height=330)  # a phone's legend takes two rows
        self.summary = w.HTML()
        self.result: TwoLevelResult | None = None
        self._finish()

    def static_axes(self):
        # the chapter's race: the link rate it throttles to (1 Gbit/s, and a fast one beside it) and the size it
        # races, with the node count and ranks per node a reader most wants to change and the buffer the prose
        # asks the reader to shrink (the start value is added); each value more multiplies the frames
        gbit = [1, 10]
        return [StaticAxis("nodes_dropdown", NODE_COUNTS[:4]),
                StaticAxis("ranks_slider", [1, 2, 4, 8]),
                StaticAxis("link_slider", [g * 1e9 / 8 for g in gbit], labels=lambda b: f"{b * 8 / 1e9:g} Gbit/s",
                           description="link per node (per direction)"),
                StaticAxis("size_slider", [4.0 * 2**10, 256.0 * 2**10], labels=fmt_bytes_binary,
                           description="buffer per rank")]

    def _params(self) -> dict:
        return dict(alpha_intra=self.alpha_intra_slider.value, bandwidth_intra=self.intra_slider.value,
                    alpha_inter=self.alpha_inter_slider.value, bandwidth_inter=self.link_slider.value)  # fmt: skip

    def compute(self) -> TwoLevelResult:
        """The model at the current controls."""
        N, L, n = int(self.nodes_dropdown.value), int(self.ranks_slider.value), float(self.size_slider.value)
        kw = self._params()
        seconds = {a: float(two_level_allreduce_time(n, N, L, algorithm=a, **kw)) for a in ("ring", "hierarchical")}
        busbw = {a: float(bus_bandwidth("allreduce", n, N * L, t)) if N * L > 1 else 0.0 for a, t in seconds.items()}
        return TwoLevelResult(n, seconds, busbw)

    def update(self) -> TwoLevelResult:
        self.result = r = self.compute()
        N, L = int(self.nodes_dropdown.value), int(self.ranks_slider.value)
        kw = self._params()
        ax = self.fig.ax
        ax.clear()
        curves = {name: bus_bandwidth("allreduce", _SIZES, N * L,
                                      two_level_allreduce_time(_SIZES, N, L, algorithm=name, **kw))
                  for name in ("ring", "hierarchical")}  # fmt: skip
        top = max(float(np.max(c)) for c in curves.values()) if N * L > 1 else 0.0
        top = max(top, kw["bandwidth_inter"])
        scale, unit = (1e9, "GB/s") if top >= 1e9 else (1e6, "MB/s")  # tick labels of at most 4 digits
        for name, color in (("ring", "#1f77b4"), ("hierarchical", "#D55E00")):
            ax.plot(_SIZES, curves[name] / scale, color=color, label="flat ring" if name == "ring" else "hierarchical")
            ax.plot([r.n_bytes], [r.busbw[name] / scale], "o", color=color)
        ax.axhline(kw["bandwidth_inter"] / scale, color="black", linestyle=":", label="link per node")
        ax.set_ylim(0, top / scale * 1.08)  # the link's line clear of the frame
        ax.set_xscale("log")
        format_bytes_axis(ax.xaxis)
        ax.set_xlabel("buffer per rank", fontsize=11)
        ax.set_ylabel(f"bus bandwidth ({unit})", fontsize=11)
        ax.tick_params(labelsize=11)
        # under the axes: inside, the legend covers a curve or the link's line at some setting
        ax.legend(fontsize=11, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False,
                  ncol=2 if self.fig.narrow else 3, columnspacing=1.2, handlelength=1.8)
        self.fig.figure.tight_layout(pad=0.5)
        self.fig.render()
        self.summary.value = (
            f"{N} nodes x {L} ranks, {fmt_bytes(r.n_bytes)} per rank: flat ring {fmt_seconds(r.seconds['ring'])} "
            f"(busbw {fmt_rate(r.busbw['ring'])}), hierarchical {fmt_seconds(r.seconds['hierarchical'])} "
            f"(busbw {fmt_rate(r.busbw['hierarchical'])}): <b>{r.gain:.2f}x</b>"
        )
        return r
