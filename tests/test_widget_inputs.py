"""Every widget constructor checks its arguments before it builds anything.

A bad argument is a ``ValueError`` (a value outside the range or the
choices) or a ``TypeError`` (a wrong type: a string, a bool where an integer
is wanted, a float where only integers make sense), raised from distlib's own
checks before a single control exists, with a one-line message that names
the argument and states what it accepts.

``BAD_WIDGET_INPUTS`` is the table of cases; ``tools/bad_inputs.py`` prints
it with each message for a reviewer. Each case is ``(label, call, error,
states)``: ``call`` is ``(class name, keyword arguments)``, the argument under
test being the last keyword; ``states`` is text the message must contain (the
range or the choices).
"""

from __future__ import annotations

import math
import traceback
from pathlib import Path
from typing import NamedTuple

import pytest

w = pytest.importorskip("ipywidgets")

import distlib as dl  # noqa: E402
from distlib.widgets.collectives import CollectivesWidget  # noqa: E402
from distlib.widgets.minicluster import TwoLevelWidget  # noqa: E402
from distlib.widgets.overlap import OverlapWidget  # noqa: E402
from distlib.widgets.pipeline import PipelineWidget  # noqa: E402
from distlib.widgets.planner import PlannerWidget  # noqa: E402
from distlib.widgets.ring import ClusterWidget, RingWidget  # noqa: E402
from distlib.widgets.roofline import RooflineWidget  # noqa: E402
from distlib.widgets.topology import TopologyWidget  # noqa: E402
from distlib.widgets.tp import TensorParallelWidget  # noqa: E402
from distlib.widgets.walls import WallsWidget  # noqa: E402
from distlib.widgets.zero import ZeroWidget  # noqa: E402

#: Every public widget class, by name.
WIDGETS = {cls.__name__: cls for cls in (RingWidget, ClusterWidget, CollectivesWidget, TwoLevelWidget,
                                         OverlapWidget, RooflineWidget, TopologyWidget, WallsWidget,
                                         ZeroWidget, TensorParallelWidget, PipelineWidget, PlannerWidget)}

NAN, INF = float("nan"), float("inf")


class BadInput(NamedTuple):
    label: str
    call: tuple  # (class name, kwargs); the argument under test is the last keyword
    error: type
    states: str  # the range or choices the message must state

    @property
    def param(self) -> str:
        return list(self.call[1])[-1]


def _bad(label, cls, error, states, **kwargs) -> BadInput:
    return BadInput(label, (cls, kwargs), error, states)


V, T = ValueError, TypeError

BAD_WIDGET_INPUTS = [
    # chapter 12's pipeline explorer
    _bad("unknown pipeline schedule", "PipelineWidget", V, "'gpipe', '1f1b', 'interleaved'", kind="pipedream"),
    _bad("three pipeline stages", "PipelineWidget", V, "2, 4, 8", stages=3),
    _bad("microbatches not offered", "PipelineWidget", V, "8, 16, 32", microbatches=12),
    _bad("one chunk for the interleaved schedule", "PipelineWidget", V, "2, 4", chunks=1),
    _bad("fractional chunks", "PipelineWidget", T, "2, 4", chunks=2.5),
    _bad("backward ratio above the buttons", "PipelineWidget", V, "[1, 3]", backward_ratio=5),
    # chapter 13's planner
    _bad("a model not on the menu (planner)", "PlannerWidget", V, "'GPT-3 175B', 'Llama 3 405B', 'Megatron 1T'",
         model="GPT-4"),
    _bad("GPUs not a power of two (planner)", "PlannerWidget", V, "64, 128, 256", gpus=1000),
    _bad("bool for GPUs (planner)", "PlannerWidget", T, "64, 128, 256", gpus=True),
    _bad("global batch not on the menu (planner)", "PlannerWidget", V, "256, 512, 1024, 2048, 4096",
         global_batch=1536),
    # chapter 11's tensor-parallel explorer
    _bad("three tensor-parallel ranks", "TensorParallelWidget", V, "1, 2, 4, 8, 16", tp=3),
    _bad("unknown recomputation", "TensorParallelWidget", V, "'none', 'selective', 'full'", recompute="some"),
    _bad("unknown placement", "TensorParallelWidget", V, "'nvlink', 'nic'", placement="pcie"),
    # chapter 10's ZeRO explorer
    _bad("model too small for the slider (zero)", "ZeroWidget", V, "[1e+09, 1e+12]", params=1e6),
    _bad("NaN parameters (zero)", "ZeroWidget", V, "[1e+09, 1e+12]", params=NAN),
    _bad("three GPUs (zero)", "ZeroWidget", V, "1, 2, 4, 8", gpus=3),
    _bad("ZeRO stage 5 (zero)", "ZeroWidget", V, "0, 1, 2, 3", stage=5),
    _bad("accelerator not in the table (zero)", "ZeroWidget", V, "known: A100, H100", accelerator="V100"),
    # the ring: p in [2, 12], step in [0, 2 (p - 1)]
    _bad("ring of one GPU", "RingWidget", V, "[2, 12]", p=1),
    _bad("ring larger than the slider", "RingWidget", V, "[2, 12]", p=13),
    _bad("bool for p", "RingWidget", T, "[2, 12]", p=True),
    _bad("fractional p", "RingWidget", T, "[2, 12]", p=4.5),
    _bad("p as a string", "RingWidget", T, "[2, 12]", p="4"),
    _bad("NaN for p", "RingWidget", T, "[2, 12]", p=NAN),
    _bad("negative step", "RingWidget", V, "[0, 6] for p = 4", p=4, step=-1),
    _bad("step past the end", "RingWidget", V, "[0, 6] for p = 4", p=4, step=7),
    _bad("zero Play interval", "RingWidget", V, ">= 1", interval_ms=0),
    _bad("unknown numbering", "RingWidget", V, "'ring', 'mpi'", numbering="MPI"),
    # the cluster calculator (SI units)
    _bad("one GPU", "ClusterWidget", V, "[2, 16384]", p=1),
    _bad("more GPUs than the slider", "ClusterWidget", V, "[2, 16384]", p=32768),
    _bad("negative parameter count", "ClusterWidget", V, "[1e+08, 1e+12]", params=-7e9),
    _bad("NaN parameters", "ClusterWidget", V, "[1e+08, 1e+12]", params=NAN),
    _bad("3-byte gradients", "ClusterWidget", V, "2, 4", bytes_per_value=3),
    _bad("bool for bytes_per_value", "ClusterWidget", T, "2, 4", bytes_per_value=True),
    _bad("link in GB/s, not bytes/s", "ClusterWidget", V, "[1e+09, 1e+12] bytes/s", link_bandwidth=50),
    _bad("infinite FLOP/s", "ClusterWidget", V, "[1e+13, 1e+16] FLOP/s", flops_per_gpu=INF),
    _bad("MFU of zero", "ClusterWidget", V, "[0.05, 1]", mfu=0),
    _bad("MFU above one", "ClusterWidget", V, "[0.05, 1]", mfu=1.5),
    _bad("MFU as a string", "ClusterWidget", T, "[0.05, 1]", mfu="0.4"),
    _bad("too few tokens per GPU", "ClusterWidget", V, "[512, 1048576]", tokens_per_gpu=100),
    # the alpha-beta explorer
    _bad("collective spelt MPI's way", "CollectivesWidget", V, "'allreduce', 'reduce_scatter'",
         collective="all_reduce"),
    _bad("zero latency", "CollectivesWidget", V, "[1e-07, 0.001] s", alpha=0),
    _bad("latency in µs, not s", "CollectivesWidget", V, "[1e-07, 0.001] s", alpha=5),
    _bad("negative bandwidth", "CollectivesWidget", V, "[1e+08, 1e+12] bytes/s", bandwidth=-1),
    _bad("bandwidth as a string", "CollectivesWidget", T, "[1e+08, 1e+12] bytes/s", bandwidth="50e9"),
    _bad("one rank", "CollectivesWidget", V, "[2, 1024]", p=1),
    _bad("more ranks than the slider", "CollectivesWidget", V, "[2, 1024]", p=2048),
    _bad("empty buffer", "CollectivesWidget", V, "[1, 1e+10] bytes", n_bytes=0),
    _bad("infinite buffer", "CollectivesWidget", V, "[1, 1e+10] bytes", n_bytes=INF),
    _bad("unknown algorithm", "CollectivesWidget", V, "'ring', 'tree', 'halving_doubling'",
         regime_algorithm="butterfly"),
    # the two-level cluster
    _bad("three nodes", "TwoLevelWidget", V, "2, 4, 8, 16, 32, 64, 128", nodes=3),
    _bad("fractional node count", "TwoLevelWidget", T, "2, 4, 8", nodes=2.5),
    _bad("no ranks per node", "TwoLevelWidget", V, "[1, 16]", ranks_per_node=0),
    _bad("more ranks per node than the slider", "TwoLevelWidget", V, "[1, 16]", ranks_per_node=17),
    _bad("link in Gbit/s, not bytes/s", "TwoLevelWidget", V, "[1e+07, 1e+11] bytes/s", link_bandwidth=1),
    _bad("intra-node link too fast", "TwoLevelWidget", V, "[1e+08, 1e+12] bytes/s", intra_bandwidth=1e13),
    _bad("negative latency between nodes", "TwoLevelWidget", V, "[1e-07, 0.001] s", alpha_inter=-5e-5),
    _bad("one-second latency inside", "TwoLevelWidget", V, "[1e-07, 0.001] s", alpha_intra=1),
    _bad("ten-byte buffer", "TwoLevelWidget", V, "[1000, 1e+10] bytes", n_bytes=10),
    # communication hiding (SI units; the sliders show ms, GB, MiB, µs, GB/s)
    _bad("no layers", "OverlapWidget", V, "[1, 48]", layers=0),
    _bad("more layers than the slider", "OverlapWidget", V, "[1, 48]", layers=49),
    _bad("backward time in ms, not s", "OverlapWidget", V, "[0.0001, 0.1] s", backward_time=5),
    _bad("no gradients", "OverlapWidget", V, "[1e+06, 1e+11] bytes", grad_bytes=0),
    _bad("unknown gradient profile", "OverlapWidget", V, "'uniform', 'embedding'", profile="gpt2"),
    _bad("bucket in MiB, not bytes", "OverlapWidget", V, "[65536, 17179869184] bytes", bucket_bytes=25),
    _bad("latency in µs, not s (overlap)", "OverlapWidget", V, "[1e-07, 0.001] s", alpha=5),
    _bad("bandwidth in GB/s, not bytes/s", "OverlapWidget", V, "[1e+08, 1e+12] bytes/s", bandwidth=25),
    _bad("one rank (overlap)", "OverlapWidget", V, "[2, 1024]", p=1),
    _bad("fractional rank count", "OverlapWidget", T, "[2, 1024]", p=3.5),
    _bad("overlap as a string", "OverlapWidget", T, "True or False", overlap="yes"),
    # the roofline
    _bad("accelerator not in the table", "RooflineWidget", V, "known: A100, H100", accelerator="V100"),
    _bad("accelerator as a number", "RooflineWidget", T, "A100, H100", accelerator=100),
    _bad("unknown operation", "RooflineWidget", V, "'matmul (n x n x n)'", kind="conv"),
    _bad("size below the slider", "RooflineWidget", V, "[16, 32768]", n=3),
    _bad("size above the slider", "RooflineWidget", V, "[16, 32768]", n=65536),
    _bad("fractional size", "RooflineWidget", T, "[16, 32768]", n=1024.5),
    # topologies: the size's range follows the kind
    _bad("unknown topology", "TopologyWidget", V, "'ring', 'torus2'", kind="mesh"),
    _bad("odd fat-tree radix", "TopologyWidget", V, "[2, 6] in steps of 2 for 'fat_tree'", kind="fat_tree", size=5),
    _bad("ring of one host", "TopologyWidget", V, "[3, 24] for 'ring'", kind="ring", size=1),
    _bad("negative torus side", "TopologyWidget", V, "[2, 8] for 'torus2'", size=-4),
    _bad("size as a string", "TopologyWidget", T, "[2, 8] for 'torus2'", size="4"),
    _bad("unknown ring order", "TopologyWidget", V, "'topology-aware', 'host order'", ring="random"),
    # the three walls
    _bad("no parameters", "WallsWidget", V, "[1e+08, 1.99526e+12]", params=0),
    _bad("more tokens than the slider", "WallsWidget", V, "[1e+09, 1.99526e+13]", tokens=1e15),
    _bad("unknown recipe", "WallsWidget", V, "'bf16_adam', 'mixed_precision_adam'", recipe="fp8"),
    _bad("accelerator not in the table (walls)", "WallsWidget", V, "known: A100, H100", accelerator="V100"),
    _bad("NaN MFU", "WallsWidget", V, "[0.05, 1]", mfu=NAN),
    _bad("negative MFU", "WallsWidget", V, "[0.05, 1]", mfu=-0.1),
    _bad("three chips", "WallsWidget", V, "1, 2, 4, 8", chips=3),
    _bad("no chips", "WallsWidget", V, "1, 2, 4, 8", chips=0),
    _bad("ZeRO stage 4", "WallsWidget", V, "[0, 3]", stage=4),
    _bad("bool for the ZeRO stage", "WallsWidget", T, "[0, 3]", stage=True),
]


def construct(call):
    """Build the widget a ``(class name, kwargs)`` call describes."""
    name, kwargs = call
    return WIDGETS[name](**kwargs)


def call_text(call) -> str:
    """The call as a reader would type it: ``RingWidget(p=1)``, ``ClusterWidget(mfu=float('nan'))``."""
    name, kwargs = call

    def text(v):
        if isinstance(v, float) and not math.isfinite(v):
            return f"float({str(v)!r})"
        if isinstance(v, float) and float(f"{v:g}") == v and len(f"{v:g}") < len(repr(v)):
            return f"{v:g}"  # 1e+13, not 10000000000000.0
        return repr(v)

    return f"{name}({', '.join(f'{k}={text(v)}' for k, v in kwargs.items())})"


def _live_widgets() -> int:
    """How many ipywidgets exist (not closed) in this process."""
    from ipywidgets.widgets import widget as module

    registry = getattr(module, "_instances", None)
    return len(registry) if registry is not None else len(w.Widget.widgets)


_DISTLIB = Path(dl.__file__).resolve().parent


def test_the_table_covers_every_widget_and_both_errors():
    assert len(BAD_WIDGET_INPUTS) >= 40
    assert {case.call[0] for case in BAD_WIDGET_INPUTS} == set(WIDGETS)
    assert {case.error for case in BAD_WIDGET_INPUTS} == {ValueError, TypeError}
    assert len({case.label for case in BAD_WIDGET_INPUTS}) == len(BAD_WIDGET_INPUTS)  # labels are unique


@pytest.mark.parametrize("case", BAD_WIDGET_INPUTS, ids=[c.label for c in BAD_WIDGET_INPUTS])
def test_bad_argument_is_refused_clearly_before_anything_is_built(case):
    before = _live_widgets()
    with pytest.raises(case.error) as info:
        construct(case.call)
    assert type(info.value) is case.error  # not a subclass such as traitlets' TraitError
    message = str(info.value)
    assert "\n" not in message, message
    assert case.param in message, message
    assert case.states in message, message
    # raised by distlib's own checks, not from inside numpy, ipywidgets or matplotlib
    innermost = Path(traceback.extract_tb(info.tb)[-1].filename).resolve()
    assert _DISTLIB in innermost.parents, innermost
    # and before a single control existed
    assert _live_widgets() == before


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_defaults_still_construct(name):
    wdg = WIDGETS[name]()
    assert isinstance(wdg, WIDGETS[name]) and isinstance(wdg, w.VBox)
    assert wdg.controls and all(c.value is not None for c in wdg.controls)
    assert bytes(wdg.fig.image.value)[:8] == b"\x89PNG\r\n\x1a\n"  # the first frame was drawn
    wdg.close()


#: The edges of each range are accepted, and the control starts where it was told to.
EDGES = [
    (("RingWidget", {"p": 12, "step": 22}), "step_slider", 22),
    (("RingWidget", {"p": 2.0}), "p_slider", 2),
    (("ClusterWidget", {"p": 16384, "mfu": 1.0, "link_bandwidth": 1e12}), "link_slider", 1000.0),
    (("CollectivesWidget", {"alpha": 1e-3, "n_bytes": 1}), "alpha", 1e-3),
    (("OverlapWidget", {"backward_time": 1e-4, "bucket_bytes": 2**34}), "bucket_slider", 2.0**14),
    (("WallsWidget", {"params": 10**12.3, "chips": 16384.0}), "chips_dropdown", 16384),
    (("TopologyWidget", {"kind": "fat_tree", "size": 6}), "size", 6),
    (("ZeroWidget", {"params": 1e12, "gpus": 1024.0, "stage": 0}), "gpus_dropdown", 1024),
    (("RooflineWidget", {"accelerator": "tpu v5p", "n": 16}), "accelerator_dropdown", "TPU v5p"),
    (("PipelineWidget", {"kind": "interleaved", "stages": 8.0, "microbatches": 32, "chunks": 4}), "stages_buttons", 8),
    (("PipelineWidget", {"backward_ratio": 1.5}), "ratio_dropdown", 1.5),
    (("PlannerWidget", {"gpus": 16384.0, "global_batch": 256}), "gpus_dropdown", 16384),
]


@pytest.mark.parametrize("call, control, value", EDGES, ids=[call_text(e[0]) for e in EDGES])
def test_range_edges_are_accepted(call, control, value):
    wdg = construct(call)
    got = getattr(wdg, control).value
    if isinstance(value, float):
        assert got == pytest.approx(value)
    else:
        assert got == value
    wdg.close()


def test_the_chapters_calls_still_pass():
    """The arguments the chapters construct their widgets with (notebooks/*.ipynb), computed as there."""
    h100 = dl.accelerator("H100")
    dgx = dl.gpu_cluster(128, nic_bandwidth=8 * 400e9 / 8)
    b_real = dl.predict_busbw("allreduce", 2 * 7e9, dgx)  # chapter 1
    calls = [
        ("ClusterWidget", dict(p=1024, params=7e9, link_bandwidth=b_real, flops_per_gpu=h100.bf16_flops,
                               mfu=0.4, tokens_per_gpu=4096)),
        ("WallsWidget", dict(params=7e9, tokens=1e12, recipe="mixed_precision_adam", accelerator="H100",
                             mfu=0.4, chips=8, stage=0)),
        ("RooflineWidget", dict(accelerator="H100", kind="matmul (n x n x n)", n=1024)),
        ("TopologyWidget", dict(kind="torus2", size=4)),
        ("ZeroWidget", dict(params=70e9, gpus=8, stage=0, accelerator="H100")),  # chapter 10
        ("TensorParallelWidget", dict(tp=8, sequence_parallel=False, recompute="none", placement="nvlink")),  # 11
        ("PipelineWidget", dict(kind="interleaved", stages=4, microbatches=8, chunks=2)),  # 12
        ("PlannerWidget", dict(model="GPT-3 175B", gpus=1024, global_batch=512)),  # 13
        ("CollectivesWidget", dict(alpha=5e-6, bandwidth=50e9, p=64, n_bytes=1e6)),
        ("CollectivesWidget", dict(alpha=1e-7, bandwidth=1e12, p=2, n_bytes=2**20)),  # chapter 7: clipped fit
        ("RingWidget", dict(p=4, numbering="mpi")),
        ("OverlapWidget", dict(layers=48, backward_time=2e-3, grad_bytes=1e9, bucket_bytes=25 * 2**20,
                               alpha=10e-6, bandwidth=25e9, p=64)),
        ("TwoLevelWidget", dict(nodes=2, ranks_per_node=2, link_bandwidth=1e9 / 8, intra_bandwidth=3e9,
                                n_bytes=16 * 2**20)),
    ]
    for call in calls:
        wdg = construct(call)
        assert type(wdg).__name__ == call[0]
        wdg.close()
