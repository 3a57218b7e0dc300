"""The communication-hiding widget: one DDP step as a Gantt chart you can tune.

Sliders set the model (layers, backward time per layer, gradient bytes and how
they are spread over the layers), DDP's bucket capacity and the link (alpha,
bandwidth, p). The picture is :func:`distlib.plots.overlap.plot_timeline` of
:func:`distlib.overlap.ddp_step`; the summary quotes exposed communication and
the speedup over "compute, then communicate".
"""

from __future__ import annotations

import ipywidgets as w

from .._check import check_bool, check_choice, check_int, check_real_in
from ..fmt import fmt_bytes, fmt_bytes_binary, fmt_rate, fmt_seconds
from ..overlap import DDPStep, ddp_step, gradient_profile
from ..plots.overlap import TimelinePicture
from ._base import CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, control_layout, label_style, log_slider

__all__ = ["OverlapWidget"]

#: The forward pass is taken as half the backward pass (the backward computes
#: gradients for both activations and weights: about twice the forward FLOP).
FORWARD_FRACTION = 0.5


class OverlapWidget(FigureWidget):
    """Sliders for one data-parallel step; the step drawn as compute and all-reduce rows.

    ``result`` holds the current :class:`distlib.overlap.DDPStep`; setting
    any control's ``.value`` recomputes it and redraws at once. Arguments are
    in SI units: ``backward_time`` per layer in seconds, ``grad_bytes`` of
    the whole model, ``bucket_bytes``, ``alpha`` in seconds, ``bandwidth`` in
    bytes/s per direction (the sliders show ms, GB, MiB, µs and GB/s).
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(layers=48, bucket_bytes=25 * 2**20, bandwidth=25e9, p=64)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        # SI units (the sliders show ms, GB, MiB, µs, GB/s)
        ("no layers", dict(layers=0), ValueError, "[1, 48]"),
        ("more layers than the slider", dict(layers=49), ValueError, "[1, 48]"),
        ("backward time in ms, not s", dict(backward_time=5), ValueError, "[0.0001, 0.1] s"),
        ("no gradients", dict(grad_bytes=0), ValueError, "[1e+06, 1e+11] bytes"),
        ("unknown gradient profile", dict(profile="gpt2"), ValueError, "'uniform', 'embedding'"),
        ("bucket in MiB, not bytes", dict(bucket_bytes=25), ValueError, "[65536, 17179869184] bytes"),
        ("latency in µs, not s (overlap)", dict(alpha=5), ValueError, "[1e-07, 0.001] s"),
        ("bandwidth in GB/s, not bytes/s", dict(bandwidth=25), ValueError, "[1e+08, 1e+12] bytes/s"),
        ("one rank (overlap)", dict(p=1), ValueError, "[2, 1024]"),
        ("fractional rank count", dict(p=3.5), TypeError, "[2, 1024]"),
        ("overlap as a string", dict(overlap="yes"), TypeError, "True or False"),
    )

    def __init__(self, *, layers=16, backward_time=5e-3, grad_bytes=1e9, profile="uniform",
                 bucket_bytes=25 * 2**20, alpha=5e-6, bandwidth=25e9, p=8, overlap=True):
        # every argument checked against its control's range (in SI units) before anything is built
        layers = check_int("layers", layers, minimum=1, maximum=48)
        backward_time = check_real_in("backward_time", backward_time, 10**-1 * 1e-3, 10**2 * 1e-3, unit="s")
        grad_bytes = check_real_in("grad_bytes", grad_bytes, 10**-3 * 1e9, 10**2 * 1e9, unit="bytes")
        profile = check_choice("profile", profile, ["uniform", "embedding"])
        bucket_bytes = check_real_in("bucket_bytes", bucket_bytes, 2**-4 * 2**20, 2**14 * 2**20, unit="bytes")
        alpha = check_real_in("alpha", alpha, 10**-1 * 1e-6, 10**3 * 1e-6, unit="s")
        bandwidth = check_real_in("bandwidth", bandwidth, 10**-1 * 1e9, 10**3 * 1e9, unit="bytes/s")
        p = check_int("p", p, minimum=2**1, maximum=2**10)
        overlap = check_bool("overlap", overlap)
        style = label_style()
        layout = control_layout()
        backward_ms, grad_gb, bucket_mb = backward_time * 1e3, grad_bytes / 1e9, bucket_bytes / 2**20
        alpha_us, bandwidth_gb_per_s = alpha * 1e6, bandwidth / 1e9
        self.layers_slider = w.IntSlider(value=layers, min=1, max=48, description="layers",
                                         continuous_update=CONTINUOUS_UPDATE, style=style, layout=layout)
        self.backward_slider = log_slider(value=backward_ms, base=10, min=-1, max=2, step=0.05,
                                                description="backward per layer (ms)", readout_format=".3g",
                                                continuous_update=CONTINUOUS_UPDATE, style=style, layout=layout)
        self.grad_slider = log_slider(value=grad_gb, base=10, min=-3, max=2, step=0.05,
                                            description="gradient bytes, whole model (GB)", readout_format=".3g",
                                            continuous_update=CONTINUOUS_UPDATE, style=style, layout=layout)
        self.profile_dropdown = w.Dropdown(options=[("equal per layer", "uniform"),
                                                    ("embedding last (31%, as GPT-2 small)", "embedding")],
                                           value=profile, description="gradient sizes", style=style)
        self.bucket_slider = log_slider(value=bucket_mb, base=2, min=-4, max=14, step=0.25,
                                              description="bucket capacity (MiB)", readout_format=".3g",
                                              continuous_update=CONTINUOUS_UPDATE, style=style, layout=layout)
        self.alpha_slider = log_slider(value=alpha_us, base=10, min=-1, max=3, step=0.05,
                                             description="latency alpha per step (µs)", readout_format=".3g",
                                             continuous_update=CONTINUOUS_UPDATE, style=style, layout=layout)
        self.bandwidth_slider = log_slider(value=bandwidth_gb_per_s, base=10, min=-1, max=3, step=0.05,
                                                 description="link bandwidth (GB/s, one way)", readout_format=".3g",
                                                 continuous_update=CONTINUOUS_UPDATE, style=style, layout=layout)
        self.p_slider = log_slider(value=p, base=2, min=1, max=10, step=1, description="ranks (p)",
                                         readout_format=".0f", continuous_update=CONTINUOUS_UPDATE, style=style,
                                         layout=layout)
        self.overlap_buttons = w.ToggleButtons(options=[("overlap", True), ("compute, then communicate", False)],
                                               value=overlap)
        self.controls = [self.layers_slider, self.backward_slider, self.grad_slider, self.profile_dropdown,
                         self.bucket_slider, self.alpha_slider, self.bandwidth_slider, self.p_slider,
                         self.overlap_buttons]
        self.fig = FigureImage(width=500, height=220, phone_height=230)
        if self.fig.narrow:  # the row labels keep their width: the bars get less, and fewer ticks
            self.fig.figure.subplots_adjust(left=0.3, right=0.94, bottom=0.27, top=0.95)
        else:
            self.fig.figure.subplots_adjust(left=0.2, right=0.96, bottom=0.27, top=0.95)
        # the headline numbers go in the HTML summary, not in a title: text is
        # what matplotlib draws slowest
        self.picture = TimelinePicture(self.fig.ax, fast_ticks=True, title=False, max_ticks=4 if self.fig.narrow else 6)
        self.fig.set_animated(self.picture.animated)  # the frame and row labels are drawn once
        self.summary = w.HTML()
        self.result: DDPStep | None = None
        self._finish()

    def static_axes(self):
        # what the prose asks the reader to move: bucket capacities from 1 MiB to 4 GiB,
        # the latency and the link speed (each start value is added), and overlap on or off
        return [StaticAxis("bucket_slider", [1.0, 4.0, 16.0, 64.0, 256.0, 4096.0], labels=lambda v: f"{v:.3g} MiB",
                           description="bucket capacity"),
                StaticAxis("alpha_slider", [1.0, 10.0, 100.0], labels=lambda v: f"{v:.3g} µs",
                           description="latency alpha per step"),
                StaticAxis("bandwidth_slider", [1.0, 25.0, 400.0], labels=lambda v: f"{v:.3g} GB/s",
                           description="link bandwidth (one way)"),
                StaticAxis("overlap_buttons", [True, False])]

    def compute(self) -> DDPStep:
        """The model for the current control values (SI units inside)."""
        layers = int(self.layers_slider.value)
        backward = self.backward_slider.value * 1e-3
        return ddp_step(
            [backward] * layers,
            gradient_profile(self.grad_slider.value * 1e9, layers, profile=self.profile_dropdown.value),
            bucket_bytes=self.bucket_slider.value * 2**20,
            alpha=self.alpha_slider.value * 1e-6,
            bandwidth=self.bandwidth_slider.value * 1e9,
            p=int(round(self.p_slider.value)),
            forward_time=FORWARD_FRACTION * backward * layers,
            overlap=bool(self.overlap_buttons.value),
        )

    def update(self) -> DDPStep:
        self.result = s = self.compute()
        tl = s.timeline
        unit = self.picture.unit
        self.picture.set_timeline(s, xmax=tl.no_overlap_time)
        if self.picture.unit != unit:  # the x label is in the cached background
            self.fig.invalidate()
            self.fig.set_animated(self.picture.animated)
        self.fig.render()
        queue = ("<b style='color:#D55E00'>the all-reduces queue up</b>: each takes longer than the "
                 "backward of the layer after it" if tl.backed_up and tl.overlap else
                 "no all-reduce waits for the one before it")
        self.summary.value = (
            f"{s.n_buckets} bucket{'s' if s.n_buckets != 1 else ''} of about "
            f"{fmt_bytes(self.grad_slider.value * 1e9 / s.n_buckets)} (a bucket closes once it reaches the "
            f"{fmt_bytes_binary(self.bucket_slider.value * 2**20)} capacity), all-reduced over {s.p} ranks at "
            f"{fmt_rate(s.bandwidth)} per direction<br>"
            f"step {fmt_seconds(s.iteration_time)} = forward + backward {fmt_seconds(s.compute_time)} "
            f"+ <b>exposed communication {fmt_seconds(s.exposed_comm)}</b> "
            f"(of {fmt_seconds(s.total_comm)} all-reduce time, {tl.hidden_fraction:.0%} hidden)<br>"
            f"<b>{s.speedup:.2f}x</b> faster than compute-then-communicate ({fmt_seconds(s.no_overlap_time)}) "
            f"&middot; {queue}"
        )
        return s
