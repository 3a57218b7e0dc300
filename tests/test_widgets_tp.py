"""Chapter 11's tensor-parallel explorer: its numbers are the library's and the formulas' it documents,
every control moves it, and what the prose says (TP stays inside a node) holds for GPT-3's layer."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

import distlib as dl  # noqa: E402
from distlib.widgets.tp import (ALPHA, PLACEMENTS, TP_DEGREES, TensorParallelWidget, layer_matmul_flops,  # noqa: E402
                                tp_view)

S, B, H, A = 2048, 1, 12288, 96  # GPT-3 175B's layer (Brown et al. 2020), one sequence per micro batch


def _ring_seconds(t, n_bytes, alpha, bandwidth):
    """One ring all-reduce, written out: 2 (t - 1) steps of alpha, 2 (t - 1) / t of the buffer over the link."""
    return 2 * (t - 1) * alpha + 2 * (t - 1) / t * n_bytes / bandwidth


def _comm(t, recompute, placement):
    bandwidth = {"nvlink": dl.accelerator("H100").link_bandwidth, "nic": dl.NDR_NIC_BANDWIDTH}[placement]
    count = 6 if recompute == "full" else 4
    return count * _ring_seconds(t, 2 * S * B * H, ALPHA[placement], bandwidth)


def _compute(t, recompute, efficiency=0.5):
    forward = 24 * B * S * H**2 + 4 * B * S**2 * H
    again = {"none": 0, "selective": 4 * B * S**2 * H, "full": forward}[recompute]
    return (3 * forward + again) / t / (efficiency * dl.accelerator("H100").bf16_flops)


def test_it_starts_where_it_was_told_and_says_so():
    wdg = TensorParallelWidget(tp=4, sequence_parallel=True, recompute="selective", placement="nic")
    r = wdg.result
    assert (r.tp, r.sequence_parallel, r.recompute, r.placement, r.accelerator) == (4, True, "selective", "nic", "H100")
    assert (r.seq, r.micro_batch, r.hidden, r.heads) == (S, B, H, A)
    text = wdg.summary.value
    assert "<b>T = 4</b>, sequence parallel, selective recomputation" in text
    assert dl.fmt_bytes(r.activation_bytes) in text and "across nodes" in text
    assert dl.fmt_seconds(r.comm_seconds) in text and dl.fmt_seconds(r.compute_seconds) in text
    assert f"{r.ratio:.2g}x the compute" in text
    wdg.close()


def test_its_defaults_are_gpt3_at_t8_inside_a_node():
    wdg = TensorParallelWidget()
    r = wdg.result
    assert (r.tp, r.sequence_parallel, r.recompute, r.placement) == (8, False, "none", "nvlink")
    assert "inside a node, over NVLink" in wdg.summary.value
    wdg.close()


@pytest.mark.parametrize("control, value", [("tp_dropdown", 16), ("sp_toggle", True),
                                            ("recompute_buttons", "full"), ("placement_buttons", "nic")])
def test_each_control_changes_the_picture_and_the_summary(control, value):
    wdg = TensorParallelWidget()
    before_png, before_text = bytes(wdg.fig.image.value), wdg.summary.value
    getattr(wdg, control).value = value
    assert bytes(wdg.fig.image.value) != before_png
    assert wdg.summary.value != before_text
    wdg.close()


def test_the_controls_have_the_labels_the_prose_names():
    wdg = TensorParallelWidget()
    assert wdg.tp_dropdown.description == "tensor-parallel T" and list(wdg.tp_dropdown.options) == TP_DEGREES
    assert wdg.sp_toggle.description == "sequence parallel"
    assert wdg.recompute_buttons.description == "recomputation"
    assert wdg.placement_buttons.description == "T ranks sit"
    assert list(wdg.placement_buttons.options) == [("inside a node (NVLink)", "nvlink"), ("across nodes (NIC)", "nic")]
    assert list(wdg.recompute_buttons.options) == [("none", "none"), ("selective", "selective"), ("full", "full")]
    wdg.close()


@pytest.mark.parametrize("t", TP_DEGREES)
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("recompute", dl.RECOMPUTE_MODES)
def test_the_numbers_are_the_library_and_the_documented_formulas(t, sp, recompute):
    for placement in PLACEMENTS:
        r = tp_view(t, sp, recompute, placement)
        assert r.activation_bytes == dl.activation_bytes_per_layer(S, B, H, A, tp=t, sequence_parallel=sp,
                                                                   recompute=recompute)
        assert r.compute_seconds == pytest.approx(_compute(t, recompute), rel=1e-12)
        for p in PLACEMENTS:  # sequence parallelism moves the same bytes in the same steps
            assert r.comm[p] == pytest.approx(_comm(t, recompute, p), rel=1e-12, abs=1e-15)
        assert r.ratio == pytest.approx(r.comm[placement] / r.compute_seconds)
    assert tp_view(t, sp, recompute, "nvlink").comm == tp_view(t, not sp, recompute, "nvlink").comm


def test_the_alphas_are_nccls_ring_latencies_that_chapter_7_carries():
    from distlib.gpu_cluster import _HW_LAT

    assert ALPHA["nvlink"] == pytest.approx(_HW_LAT["nvlink"]["ring"]["Simple"] * 1e-6, rel=1e-12)
    assert ALPHA["nic"] == pytest.approx(_HW_LAT["net"]["ring"]["Simple"] * 1e-6, rel=1e-12)


def test_the_flop_count_is_narayanans_72_b_s_h2_times_1_plus_s_over_6h():
    assert layer_matmul_flops(S, B, H, tp=1) == pytest.approx(72 * B * S * H**2 * (1 + S / (6 * H)))
    assert layer_matmul_flops(S, B, H, tp=1, recompute="full") == pytest.approx(
        96 * B * S * H**2 * (1 + S / (6 * H)))


def test_over_a_nic_tp8_communication_outgrows_the_compute_while_over_nvlink_it_stays_well_under():
    nvlink, nic = tp_view(8, False, "none", "nvlink"), tp_view(8, False, "none", "nic")
    assert nic.comm["nic"] > nic.compute_seconds  # the prose: across nodes, TP 8 waits on the network
    assert nvlink.comm["nvlink"] < 0.25 * nvlink.compute_seconds  # inside a node it stays well under
    for recompute in dl.RECOMPUTE_MODES:  # and so whatever the recomputation, with SP or not
        for sp in (False, True):
            r = tp_view(8, sp, recompute, "nic")
            assert r.comm["nic"] > r.compute_seconds > r.comm["nvlink"]
    # the NIC's share grows with T; NVLink's stays under the compute up to T = 16
    ratios = [tp_view(t, False, "none", "nic").ratio for t in TP_DEGREES[1:]]
    assert ratios == sorted(ratios) and ratios[0] < 1 < ratios[-2]
    assert all(tp_view(t, False, "none", "nvlink").ratio < 1 for t in TP_DEGREES)
    wdg = TensorParallelWidget(tp=8, placement="nic")
    assert "more than the compute" in wdg.summary.value
    wdg.placement_buttons.value = "nvlink"
    assert "less than the compute" in wdg.summary.value
    wdg.close()


def test_t1_has_no_communication_and_t16_in_a_node_says_it_needs_a_larger_nvlink_domain():
    wdg = TensorParallelWidget(tp=1)
    assert wdg.result.comm == {"nvlink": 0.0, "nic": 0.0}
    assert "no tensor-parallel communication" in wdg.summary.value
    wdg.tp_dropdown.value = 16
    assert "8-GPU node cannot hold T = 16" in wdg.summary.value
    wdg.close()


@pytest.mark.parametrize("kwargs, error, words", [
    ({"tp": 3}, ValueError, "tp must be one of 1, 2, 4, 8, 16; got 3"),
    ({"tp": 8.5}, TypeError, "tp must be one of"),
    ({"recompute": "some"}, ValueError, "recompute must be one of 'none', 'selective', 'full'"),
    ({"placement": "rack"}, ValueError, "placement must be one of 'nvlink', 'nic'"),
    ({"sequence_parallel": "yes"}, TypeError, "sequence_parallel must be True or False"),
    ({"accelerator": "V100"}, ValueError, "unknown accelerator 'V100'; known: A100, H100"),
    ({"hidden": 0}, ValueError, "hidden must be an integer"),
    ({"matmul_efficiency": 1.5}, ValueError, "matmul_efficiency must be a finite number in"),
])
def test_a_bad_argument_is_one_clear_error_naming_it(kwargs, error, words):
    with pytest.raises(error) as info:
        TensorParallelWidget(**kwargs)
    assert words in str(info.value)


def test_its_phone_twin_builds_narrow():
    from distlib.static import mode
    from distlib.static.pictures import NARROW

    with mode.phone_twin():
        twin = TensorParallelWidget(tp=16, sequence_parallel=True, recompute="full", placement="nic")
    assert twin.fig.narrow and twin.fig.width == NARROW
    assert bytes(twin.fig.image.value).startswith(b"\x89PNG")
    twin.close()


def test_its_static_grid_holds_every_value_in_60_frames():
    axes = {a.control: list(a.values) for a in TensorParallelWidget().static_axes()}
    assert axes == {"tp_dropdown": TP_DEGREES, "sp_toggle": [False, True],
                    "recompute_buttons": list(dl.RECOMPUTE_MODES), "placement_buttons": list(PLACEMENTS)}
    n = 1
    for values in axes.values():
        n *= len(values)
    assert n == 60


def test_no_frame_cuts_off_a_text_or_writes_a_label_over_another_or_over_a_legend():
    import itertools

    from distlib.static import mode
    from distlib.static.pictures import texts_outside

    wide = TensorParallelWidget()
    with mode.phone_twin():
        phone = TensorParallelWidget()
    for wdg in (wide, phone):
        legends = [wdg.mem_ax.get_legend(), wdg.time_ax.get_legend()]
        for t, sp, recompute, placement in itertools.product(TP_DEGREES, (False, True), dl.RECOMPUTE_MODES, PLACEMENTS):
            wdg.render_frame({"tp_dropdown": t, "sp_toggle": sp, "recompute_buttons": recompute,
                              "placement_buttons": placement})
            where = f"{'phone' if wdg.fig.narrow else 'wide'} T={t} sp={sp} {recompute} {placement}"
            assert not texts_outside(wdg.fig.figure, drawn=True), where
            renderer = wdg.fig.canvas.get_renderer()
            texts = (wdg.times.compute_text, wdg.times.comm_text, wdg.memory.text)
            boxes = [x.get_window_extent(renderer) for x in texts]
            assert not boxes[0].overlaps(boxes[1]), where
            for box in boxes:
                for legend in legends:
                    assert not box.overlaps(legend.get_window_extent(renderer)), where
            axes = [wdg.time_ax, wdg.time_ax, wdg.mem_ax]
            for box, ax in zip(boxes, axes):  # inside their panels
                assert ax.bbox.contains(box.x0, box.y0) and ax.bbox.contains(box.x1, box.y1), where
    wide.close()
    phone.close()
