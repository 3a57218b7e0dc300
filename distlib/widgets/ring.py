"""Chapter 1's widgets: the ring animated step by step, and the cluster calculator."""

from __future__ import annotations

import html

import ipywidgets as w
import numpy as np

from .._check import check_choice, check_int, check_int_choice, check_int_grid, check_real, check_real_in
from ..cluster import StepTime, cluster_step
from ..fmt import fmt_bytes, fmt_count, fmt_rate, fmt_seconds, fmt_flops
from ..plots.ring import PHASE_COLORS, RingPicture, StepBars
from ..ring import RingTrace, simulate_ring_allreduce
from ._base import CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, control_layout, label_style, log_slider

__all__ = ["RingWidget", "ClusterWidget"]

P_MIN, P_MAX = 2, 12
#: Ring sizes offered on the static page (every frame is drawn at build time).
P_STATIC = list(range(2, 9))
ELEMENTS_PER_CHUNK = 4
ITEMSIZE = 4  # float32
#: chunk names -> RingPicture's chunk_shift (see RingWidget)
NUMBERINGS = {"ring": 0, "mpi": 1}


class RingWidget(FigureWidget):
    """Sliders for the number of GPUs and the step, a Play button, the ring.

    ``trace`` holds the simulated all-reduce for the current ``p``; ``step``
    the frame shown (0 = before the first step, ``2 (p - 1)`` = done).
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(p=4)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        # p in [2, 12], step in [0, 2 (p - 1)]
        ("ring of one GPU", dict(p=1), ValueError, "[2, 12]"),
        ("ring larger than the slider", dict(p=13), ValueError, "[2, 12]"),
        ("bool for p", dict(p=True), TypeError, "[2, 12]"),
        ("fractional p", dict(p=4.5), TypeError, "[2, 12]"),
        ("p as a string", dict(p="4"), TypeError, "[2, 12]"),
        ("NaN for p", dict(p=float("nan")), TypeError, "[2, 12]"),
        ("negative step", dict(p=4, step=-1), ValueError, "[0, 6] for p = 4"),
        ("step past the end", dict(p=4, step=7), ValueError, "[0, 6] for p = 4"),
        ("zero Play interval", dict(interval_ms=0), ValueError, ">= 1"),
        ("unknown numbering", dict(numbering="MPI"), ValueError, "'ring', 'mpi'"),
    )

    def __init__(self, p: int = 4, *, step: int = 0, interval_ms: int = 900, numbering: str = "ring"):
        # every argument checked before anything is built (messages name the argument and its range)
        p = check_int("p", p, minimum=P_MIN, maximum=P_MAX)
        n_steps = 2 * (p - 1)
        step = check_int_grid("step", step, minimum=0, maximum=n_steps, where=f" for p = {p}")
        self.interval_ms = check_int("interval_ms", interval_ms, minimum=1)
        #: "ring": chapter 1's chunk names (rank r ends the reduce-scatter owning chunk r + 1);
        #: "mpi": the library's and MPI_Reduce_scatter's (rank r ends owning chunk r)
        self.numbering = check_choice("numbering", numbering, list(NUMBERINGS))
        self.p_slider = w.IntSlider(value=p, min=P_MIN, max=P_MAX, description="GPUs (p)",
                                    continuous_update=CONTINUOUS_UPDATE, style=label_style(),
                                    layout=control_layout())
        # The step slider follows the hand: its frames are cached, and Play drives it.
        self.step_slider = w.IntSlider(value=step, min=0, max=n_steps, description="step",
                                       style=label_style(), layout=w.Layout(flex="1 1 200px", max_width="100%"))
        self.play = w.Play(value=step, min=0, max=n_steps, step=1, interval=self.interval_ms,
                           description="Play the ring")
        w.jslink((self.play, "value"), (self.step_slider, "value"))
        self.fig = FigureImage(width=420, height=440, phone_height=360)  # the ring is square: no taller on a phone
        self.fig.figure.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.93)
        self.summary = self.caption = w.HTML()
        self.trace: RingTrace | None = None
        self.picture: RingPicture | None = None
        # Frames are deterministic, and Play loops over them: keep each PNG.
        self._frames: dict[tuple[int, int], bytes] = {}
        self.controls = [self.p_slider, self.step_slider]
        legend = w.HTML(
            "<small>cells: one per chunk; "
            "<span style='background:#fff;border:1px solid #888'>&nbsp;own data&nbsp;</span> "
            "<span style='background:#f7c873'>&nbsp;partial sum&nbsp;</span> "
            "<span style='background:#009E73;color:#fff'>&nbsp;full sum&nbsp;</span>; "
            f"arrows: chunks in flight, <span style='color:{PHASE_COLORS['reduce-scatter']}'>reduce-scatter</span> "
            f"then <span style='color:{PHASE_COLORS['all-gather']}'>all-gather</span></small>"
        )
        self._finish([legend])

    def _layout(self, controls, picture, summary):
        row = w.HBox([self.play, self.step_slider], layout=w.Layout(flex_flow="row wrap", max_width="100%"))
        return [row, self.p_slider, picture, *self._extra, summary]

    def static_axes(self):
        # every ring size the prose uses (4, and 8 in chapter 6) and every step of each
        return [StaticAxis("p_slider", P_STATIC),
                StaticAxis("step_slider", lambda chosen: range(2 * (chosen["p_slider"] - 1) + 1),
                           local=True, player=self.interval_ms, description="step")]

    @property
    def p(self) -> int:
        return self.p_slider.value

    @property
    def step(self) -> int:
        return self.step_slider.value

    def _rebuild(self):
        p = self.p_slider.value
        n = p * ELEMENTS_PER_CHUNK
        buffers = np.repeat(np.arange(1, p + 1, dtype=np.float32)[:, None], n, axis=1)
        self.trace = simulate_ring_allreduce(buffers)
        self.fig.invalidate()
        if self.picture is not None:
            self.picture.remove()
        self.picture = RingPicture(self.fig.ax, self.trace, chunk_shift=NUMBERINGS[self.numbering])
        self.fig.set_animated(self.picture.dynamic_artists)
        n_steps = len(self.trace.steps)
        if self.step_slider.value > n_steps:
            self.step_slider.value = n_steps
        self.step_slider.max = n_steps
        self.play.max = n_steps

    def _set(self, name, value):
        super()._set(name, value)
        if name == "p_slider" and (self.trace is None or self.trace.p != self.p):
            self._rebuild()  # so that the step slider's range fits the new ring

    def update(self):
        """Redraw for the current ``p`` and step (rebuilding the ring when ``p`` changed)."""
        if self.trace is None or self.trace.p != self.p:
            self._rebuild()
        self._show()

    def _show(self):
        step = self.step_slider.value
        self.picture.set_step(step)
        key = (self.p, step)
        if key in self._frames:
            self.fig.image.value = self._frames[key]
        else:
            self._frames[key] = self.fig.render()
        sent = np.zeros(self.p, dtype=np.int64)
        for transfers in self.trace.steps[:step]:
            for t in transfers:
                sent[t.src] += t.n_bytes
        n_bytes = self.trace.result.shape[1] * ITEMSIZE
        self.caption.value = (
            f"<small>buffer per GPU: {n_bytes} B in {self.p} chunks; bytes each GPU has sent so far: "
            f"{html.escape(', '.join(str(int(b)) for b in sent))} "
            f"(at the end: 2(p-1)/p x {n_bytes} = {2 * (self.p - 1) * n_bytes // self.p} B)</small>"
        )


class ClusterWidget(FigureWidget):
    """The cluster calculator: one data-parallel step, compute vs all-reduce.

    ``result`` holds the current :class:`distlib.cluster.StepTime`. Arguments
    are in SI units: ``link_bandwidth`` in bytes/s (one direction),
    ``flops_per_gpu`` the peak dense FLOP/s of one GPU.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(p=8, params=7e9, link_bandwidth=50e9, flops_per_gpu=989e12)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("one GPU", dict(p=1), ValueError, "[2, 16384]"),
        ("more GPUs than the slider", dict(p=32768), ValueError, "[2, 16384]"),
        ("negative parameter count", dict(params=-7e9), ValueError, "[1e+08, 1e+12]"),
        ("NaN parameters", dict(params=float("nan")), ValueError, "[1e+08, 1e+12]"),
        ("3-byte gradients", dict(bytes_per_value=3), ValueError, "2, 4"),
        ("bool for bytes_per_value", dict(bytes_per_value=True), TypeError, "2, 4"),
        ("link in GB/s, not bytes/s", dict(link_bandwidth=50), ValueError, "[1e+09, 1e+12] bytes/s"),
        ("infinite FLOP/s", dict(flops_per_gpu=float("inf")), ValueError, "[1e+13, 1e+16] FLOP/s"),
        ("MFU of zero", dict(mfu=0), ValueError, "[0.05, 1]"),
        ("MFU above one", dict(mfu=1.5), ValueError, "[0.05, 1]"),
        ("MFU as a string", dict(mfu="0.4"), TypeError, "[0.05, 1]"),
        ("too few tokens per GPU", dict(tokens_per_gpu=100), ValueError, "[512, 1048576]"),
    )

    def __init__(self, *, p=8, params=7e9, bytes_per_value=2, link_bandwidth=50e9,
                 flops_per_gpu=989e12, mfu=0.4, tokens_per_gpu=4096):
        # every argument checked against its control's range before anything is built
        p = check_int("p", p, minimum=2**1, maximum=2**14)
        params = check_real_in("params", params, 10**8, 10**12)
        bytes_per_value = check_int_choice("bytes_per_value", bytes_per_value, (2, 4))
        link_bandwidth = check_real_in("link_bandwidth", link_bandwidth, 10**0 * 1e9, 10**3 * 1e9, unit="bytes/s")
        flops_per_gpu = check_real_in("flops_per_gpu", flops_per_gpu, 10**1 * 1e12, 10**4 * 1e12, unit="FLOP/s")
        mfu = check_real("mfu", mfu, minimum=0.05, maximum=1.0)
        tokens_per_gpu = check_int("tokens_per_gpu", tokens_per_gpu, minimum=2**9, maximum=2**20)
        style = label_style()
        layout = control_layout()
        cu = CONTINUOUS_UPDATE
        self.p_slider = log_slider(value=p, base=2, min=1, max=14, step=1, description="GPUs (p)",
                                         readout_format=".0f", style=style, layout=layout)
        self.params_slider = log_slider(value=params, base=10, min=8, max=12, step=0.05,
                                              description="parameters", readout_format=".3g",
                                              style=style, layout=layout)
        self.dtype_buttons = w.ToggleButtons(options=[("bf16 gradients", 2), ("fp32 gradients", 4)],
                                             value=bytes_per_value)
        self.link_slider = log_slider(value=link_bandwidth / 1e9, base=10, min=0, max=3, step=0.05,
                                            description="link bandwidth (GB/s, one way)", readout_format=".3g",
                                            style=style, layout=layout)
        self.tflops_slider = log_slider(value=flops_per_gpu / 1e12, base=10, min=1, max=4, step=0.05,
                                              description="peak dense TFLOP/s per GPU", readout_format=".4g",
                                              style=style, layout=layout)
        self.mfu_slider = w.FloatSlider(value=mfu, min=0.05, max=1.0, step=0.01, description="MFU",
                                        readout_format=".2f", style=style, layout=layout)
        self.tokens_slider = log_slider(value=tokens_per_gpu, base=2, min=9, max=20, step=1,
                                              description="tokens per GPU per step", readout_format=".0f",
                                              style=style, layout=layout)
        self.controls = [self.p_slider, self.params_slider, self.dtype_buttons, self.link_slider,
                         self.tflops_slider, self.mfu_slider, self.tokens_slider]
        for c in self.controls:
            if hasattr(c, "continuous_update"):
                c.continuous_update = cu
        self.fig = FigureImage(width=460, height=260, phone_height=290)
        self.bars = StepBars(self.fig.ax, narrow=self.fig.narrow)
        # margins in CSS px: the title's lines above, tick labels, axis label and legend below
        fw, fh = self.fig.width, self.fig.height
        top = 66 if self.fig.narrow else 48
        self.fig.figure.subplots_adjust(left=72 / fw, right=1 - 26 / fw, top=1 - top / fh, bottom=82 / fh)
        self.fig.set_animated(self.bars.dynamic_artists)
        self.summary = w.HTML()
        self.result: StepTime | None = None
        self._finish()

    def static_axes(self):
        # what the prose asks the reader to move: the cluster size, the link (down to one
        # NIC's 50 GB/s and to 100 and 10 Gb Ethernet) and the tokens per GPU, for the
        # prose's 7B model and a 70B one (the start values are added to each grid)
        return [StaticAxis("p_slider", [8.0, 64.0, 512.0, 4096.0, 16384.0], labels=lambda v: f"{v:,.0f}"),
                StaticAxis("params_slider", [7e9, 70e9], labels=fmt_count),
                StaticAxis("link_slider", [1.25, 12.5, 50.0, 450.0], labels=lambda v: f"{v:.3g} GB/s"),
                StaticAxis("tokens_slider", [512.0, 4096.0, 32768.0], labels=lambda v: f"{v:,.0f}")]

    def compute(self) -> StepTime:
        return cluster_step(
            p=int(round(self.p_slider.value)),
            params=self.params_slider.value,
            bytes_per_value=self.dtype_buttons.value,
            link_bandwidth=self.link_slider.value * 1e9,
            flops_per_gpu=self.tflops_slider.value * 1e12,
            mfu=self.mfu_slider.value,
            tokens_per_gpu=int(round(self.tokens_slider.value)),
        )

    def update(self):
        self.result = s = self.compute()
        self.bars.update(s)
        self.fig.render()
        verdict = ("<b style='color:#D55E00'>communication-bound</b>: the all-reduce outlasts the compute, "
                   "so even perfect overlap leaves the GPUs waiting"
                   if s.communication_bound else
                   "<b style='color:#009E73'>compute-bound</b>: perfect overlap could hide the all-reduce")
        self.summary.value = (
            f"compute {fmt_seconds(s.compute_time)} ({fmt_flops(s.achieved_flops)} achieved per GPU) &middot; "
            f"all-reduce {fmt_seconds(s.comm_time)} ({fmt_bytes(s.bytes_sent_per_gpu)} sent per GPU of a "
            f"{fmt_bytes(s.grad_bytes)} gradient over {fmt_rate(self.link_slider.value * 1e9)} links)<br>"
            f"GPU busy {s.utilization_no_overlap:.0%} of the step without overlap, "
            f"{s.utilization_overlap:.0%} with perfect overlap &middot; {verdict}"
        )
        return s
