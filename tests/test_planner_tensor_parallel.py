"""Tensor parallelism's costs have one home, and the widget and the planner both ask it.

The widget times Megatron's collectives on chapter 5's ring; the planner on
chapter 7's NCCL model. Both count the same collectives of the same bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.planner import tensor_parallel as tpm

FAST = settings(max_examples=40, deadline=None)
shapes = st.tuples(st.integers(1, 8192), st.integers(1, 16), st.integers(1, 16384))


@FAST
@given(shapes, st.integers(1, 64), st.sampled_from(list(dl.RECOMPUTE_MODES)),
       st.floats(0, 1e-4), st.floats(1e9, 1e12))
def test_comm_is_the_count_of_ring_all_reduces_and_sequence_parallelism_costs_the_same(shape, t, recompute, alpha,
                                                                                         bandwidth):
    s, b, h = shape
    n = tpm.tp_message_bytes(s, b, h)
    assert n == 2 * s * b * h
    ring = 2 * (t - 1) * alpha + 2 * (t - 1) / t * n / bandwidth  # one ring all-reduce, written out
    plain = tpm.tp_comm_seconds(s, b, h, tp=t, recompute=recompute, alpha=alpha, bandwidth=bandwidth)
    assert plain == pytest.approx(tpm.tp_collectives_per_layer(recompute) * ring, rel=1e-12, abs=1e-300)
    sp = tpm.tp_comm_seconds(s, b, h, tp=t, sequence_parallel=True, recompute=recompute, alpha=alpha,
                             bandwidth=bandwidth)
    assert sp == pytest.approx(plain, rel=1e-12, abs=1e-300)


def test_the_planner_counts_the_same_collectives_as_the_widget():
    """Full recomputation adds the forward's two all-reduces to the four: the planner's TP term grows 6/4."""
    model = dl.transformer(8, 1024, 16, seq=1024, vocab=32000)
    cluster = dl.gpu_cluster(1, accelerator="A100")
    steps = {m: dl.layout_step(model, cluster, global_batch=8, dp=1, tp=8, pp=1, recompute=m, micro_batch=1)
             for m in ("selective", "full")}
    ratio = steps["full"].breakdown["tp_comm"] / steps["selective"].breakdown["tp_comm"]
    assert ratio == pytest.approx(tpm.tp_collectives_per_layer("full") / tpm.tp_collectives_per_layer("selective"))
    assert ratio == pytest.approx(1.5)


def test_the_widget_module_hands_on_the_models_own_functions():
    pytest.importorskip("ipywidgets")
    from distlib.widgets import tp as widget

    for name in ("layer_matmul_flops", "tp_comm_seconds", "tp_collectives_per_layer", "tp_view", "ALPHA"):
        assert getattr(widget, name) is getattr(tpm, name)  # chapter 11 calls them through the widget's module


@pytest.mark.parametrize("call, error, text", [
    (lambda: tpm.tp_message_bytes(0, 1, 1), ValueError, "seq must be an integer >= 1, got 0"),
    (lambda: tpm.tp_message_bytes(8, 1.5, 1), TypeError, "micro_batch must be an integer >= 1"),
    (lambda: tpm.tp_collectives_per_layer("some"), ValueError, "recompute must be one of"),
    (lambda: tpm.tp_comm_seconds(8, 1, 8, tp=0, alpha=0, bandwidth=1e9), ValueError, "tp must be an integer >= 1"),
    (lambda: tpm.tp_comm_seconds(8, 1, 8, tp=2, sequence_parallel="yes", alpha=0, bandwidth=1e9), TypeError,
     "sequence_parallel must be True or False"),
    (lambda: tpm.tp_view(8, False, "none", "moon"), ValueError, "placement must be one of"),
    (lambda: tpm.tp_view(8, False, "none", "nic", matmul_efficiency=0), ValueError, "matmul_efficiency must be"),
])  # fmt: skip
def test_bad_arguments_name_the_parameter(call, error, text):
    with pytest.raises(error) as info:
        call()
    assert text in str(info.value)
