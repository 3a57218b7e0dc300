"""Every widget constructor checks its arguments before it builds anything.

A bad argument is a ``ValueError`` (a value outside the range or the
choices) or a ``TypeError`` (a wrong type: a string, a bool where an integer
is wanted, a float where only integers make sense), raised from distlib's own
checks before a single control exists, with a one-line message that names
the argument and states what it accepts.

Each widget class declares its own cases, ``BAD_INPUTS`` (see
``distlib/widgets/_base.py``), and the widgets are found, not listed
(:func:`distlib.widgets.widget_classes`). ``BAD_WIDGET_INPUTS`` gathers the
cases; ``tools/bad_inputs.py`` prints them with each message for a reviewer.
Each case is ``(label, call, error, states)``: ``call`` is ``(class name,
keyword arguments)``, the argument under test being the last keyword;
``states`` is text the message must contain (the range or the choices).
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import NamedTuple

import pytest

w = pytest.importorskip("ipywidgets")

import distlib as dl  # noqa: E402
from distlib.widgets import widget_classes  # noqa: E402
from distlib.widgets._base import FigureWidget  # noqa: E402

_TOOLS = str(Path(__file__).resolve().parents[1] / "tools")
sys.path.insert(0, _TOOLS)
try:
    from bad_inputs import call_text  # the reviewer's table (tools/bad_inputs.py) writes the calls this way
finally:
    sys.path.remove(_TOOLS)

#: Every public widget class, by name: each module of distlib.widgets, read for its FigureWidget subclasses.
WIDGETS = widget_classes()


class BadInput(NamedTuple):
    label: str
    call: tuple  # (class name, kwargs); the argument under test is the last keyword
    error: type
    states: str  # the range or choices the message must state

    @property
    def param(self) -> str:
        return list(self.call[1])[-1]


def missing_declarations(cls) -> list:
    """What ``cls`` fails to declare as every widget must: ``EXAMPLE`` (a dict of constructor keywords) and
    ``BAD_INPUTS`` (a tuple of ``(label, keywords, error type, text)``, not empty, each error a ValueError or
    TypeError and its keywords not empty)."""
    missing = []
    example = getattr(cls, "EXAMPLE", None)
    if not isinstance(example, dict) or not all(isinstance(k, str) for k in example):
        missing.append("EXAMPLE: a dict of the keywords its static-frame tests build it with")
    bad = getattr(cls, "BAD_INPUTS", None)
    rows_ok = isinstance(bad, tuple) and bad and all(
        isinstance(row, tuple) and len(row) == 4 and isinstance(row[0], str) and isinstance(row[1], dict) and row[1]
        and row[2] in (ValueError, TypeError) and isinstance(row[3], str) for row in bad)
    if not rows_ok:
        missing.append("BAD_INPUTS: a tuple of (label, keywords, ValueError or TypeError, text the message states)")
    return missing


def bad_widget_inputs(widgets: dict) -> list:
    """The cases every widget declares, widget by widget."""
    return [BadInput(label, (name, dict(kwargs)), error, states)
            for name, cls in widgets.items() for label, kwargs, error, states in getattr(cls, "BAD_INPUTS", ())]


BAD_WIDGET_INPUTS = bad_widget_inputs(WIDGETS)


def construct(call):
    """Build the widget a ``(class name, kwargs)`` call describes."""
    name, kwargs = call
    return WIDGETS[name](**kwargs)


def _live_widgets() -> int:
    """How many ipywidgets exist (not closed) in this process."""
    from ipywidgets.widgets import widget as module

    registry = getattr(module, "_instances", None)
    return len(registry) if registry is not None else len(w.Widget.widgets)


_DISTLIB = Path(dl.__file__).resolve().parent


def test_the_widgets_are_found_in_every_module_and_only_the_public_ones_defined_there():
    assert {"RingWidget", "ClusterWidget", "ZeroWidget", "TensorParallelWidget", "PipelineWidget",
            "PlannerWidget"} <= set(WIDGETS) and len(WIDGETS) >= 12  # two in ring.py, one a chapter since
    assert all(issubclass(cls, FigureWidget) and cls is not FigureWidget for cls in WIDGETS.values())
    for name, cls in WIDGETS.items():
        assert cls.__module__.startswith("distlib.widgets.") and not name.startswith("_"), name


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_every_widget_declares_its_example_and_its_bad_inputs(name):
    assert missing_declarations(WIDGETS[name]) == []


def test_a_widget_without_them_is_caught():
    class Undeclared(FigureWidget):
        pass

    class HalfDeclared(FigureWidget):
        EXAMPLE = {"p": 4}
        BAD_INPUTS = (("p of one", {"p": 1}, KeyError, "p must be"),)  # not an error a check raises

    assert len(missing_declarations(Undeclared)) == 2
    assert [m.split(":")[0] for m in missing_declarations(HalfDeclared)] == ["BAD_INPUTS"]
    assert bad_widget_inputs({"Undeclared": Undeclared}) == []


def test_the_table_covers_every_widget_and_both_errors():
    assert len(BAD_WIDGET_INPUTS) >= 92  # every case the hand-kept table had, and what widgets add since
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
