"""Chapter 12's pipeline explorer: it draws distlib.pipeline_schedule's events, says both bubbles and the peak
microbatches in flight, every control moves it, and no frame cuts or overlaps a text."""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("ipywidgets")

import distlib as dl  # noqa: E402
from distlib.pipeline_schedule import PIPELINE_SCHEDULES  # noqa: E402
from distlib.widgets.pipeline import CHUNKS, MICROBATCHES, STAGES, PipelineWidget  # noqa: E402


def test_it_starts_where_it_was_told_and_says_both_bubbles_and_the_peaks():
    wdg = PipelineWidget(kind="gpipe", stages=4, microbatches=8)
    r = wdg.result
    assert (r.kind, r.stages, r.microbatches, r.chunks) == ("gpipe", 4, 8, 1)
    text = wdg.summary.value
    assert f"{3 / 11:.1%} of the whole step" in text and "(p-1)/(m+p-1) = 3/11" in text  # GPipe's convention
    assert f"{3 / 8:.1%} of the ideal step" in text and "(p-1)/m = 3/8" in text  # Narayanan's
    assert "stage 0 to 3: 8, 8, 8, 8" in text  # GPipe holds every microbatch
    wdg.kind_buttons.value = "1f1b"
    assert "stage 0 to 3: 4, 3, 2, 1" in wdg.summary.value  # 1F1B: p - s on stage s
    wdg.close()


def test_chunks_count_for_the_interleaved_schedule_only_and_it_says_so():
    wdg = PipelineWidget(kind="1f1b", stages=4, microbatches=8, chunks=4)
    assert wdg.result.chunks == 1 and "chunks control is for the interleaved schedule" in wdg.summary.value
    wdg.kind_buttons.value = "interleaved"
    r = wdg.result
    assert r.chunks == 4 and "(p-1)/(v m) = 3/32" in wdg.summary.value
    assert r.bubble_ratio == pytest.approx(3 / 32) and r.bubble_fraction == pytest.approx(3 / 35)
    assert "v = 4" in wdg.picture.title.get_text()
    wdg.close()


def test_the_picture_is_the_schedules_events():
    wdg = PipelineWidget(kind="interleaved", stages=2, microbatches=8, chunks=2)
    r = wdg.result
    boxes = wdg.fig.ax.collections[-1]
    assert len(boxes.get_paths()) == len(r.events) == 2 * 2 * 8 * 2
    drawn = sorted(((p.vertices[:, 1].min() + p.vertices[:, 1].max()) / 2, p.vertices[:, 0].min(),
                    p.vertices[:, 0].max()) for p in boxes.get_paths())
    want = sorted((float(e.stage), e.start / r.forward_time, e.end / r.forward_time) for e in r.events)
    assert [x for box in drawn for x in box] == pytest.approx([x for box in want for x in box])
    assert wdg.fig.ax.get_xlim() == pytest.approx((0, r.iteration_time / r.forward_time))
    wdg.close()


@pytest.mark.parametrize("control, value", [("kind_buttons", "gpipe"), ("stages_buttons", 8),
                                            ("microbatches_buttons", 32), ("ratio_dropdown", 1.0)])
def test_each_control_changes_the_picture_and_the_summary(control, value):
    wdg = PipelineWidget()
    before_png, before_text = bytes(wdg.fig.image.value), wdg.summary.value
    getattr(wdg, control).value = value
    assert bytes(wdg.fig.image.value) != before_png
    assert wdg.summary.value != before_text
    wdg.close()


def test_the_chunks_control_moves_the_interleaved_picture():
    wdg = PipelineWidget(kind="interleaved")
    before = bytes(wdg.fig.image.value)
    wdg.chunks_buttons.value = 4
    assert bytes(wdg.fig.image.value) != before and wdg.result.chunks == 4
    wdg.close()


def test_the_controls_have_the_labels_the_prose_names():
    wdg = PipelineWidget()
    assert wdg.kind_buttons.description == "schedule"
    assert [v for _, v in wdg.kind_buttons.options] == list(PIPELINE_SCHEDULES)
    assert wdg.stages_buttons.description == "stages p" and list(wdg.stages_buttons.options) == STAGES
    assert wdg.microbatches_buttons.description == "microbatches m"
    assert wdg.chunks_buttons.description.startswith("chunks v")
    assert wdg.ratio_dropdown.description == "backward / forward time"
    wdg.close()


def test_every_offered_microbatch_count_suits_every_stage_count():
    assert all(m % p == 0 for m in MICROBATCHES for p in STAGES)  # the interleaved schedule's rule


@pytest.mark.parametrize("kwargs, error, words", [
    ({"kind": "pipedream"}, ValueError, "kind must be one of 'gpipe', '1f1b', 'interleaved'"),
    ({"stages": 3}, ValueError, "stages must be one of 2, 4, 8; got 3"),
    ({"microbatches": 12}, ValueError, "microbatches must be one of 8, 16, 32; got 12"),
    ({"chunks": 1}, ValueError, "chunks must be one of 2, 4; got 1"),
    ({"chunks": 2.5}, TypeError, "chunks must be one of 2, 4"),
    ({"backward_ratio": 5}, ValueError, "backward_ratio must be a finite number in [1, 3]"),
])
def test_a_bad_argument_is_one_clear_error_naming_it(kwargs, error, words):
    with pytest.raises(error) as info:
        PipelineWidget(**kwargs)
    assert words in str(info.value)


def test_its_static_grid_holds_every_schedule_stage_microbatch_and_chunk_count_in_54_frames():
    axes = {a.control: list(a.values) for a in PipelineWidget().static_axes()}
    assert axes == {"kind_buttons": list(PIPELINE_SCHEDULES), "stages_buttons": STAGES,
                    "microbatches_buttons": MICROBATCHES, "chunks_buttons": CHUNKS}
    n = 1
    for values in axes.values():
        n *= len(values)
    assert n == 54 <= 60


def test_no_frame_cuts_off_a_text_or_writes_one_over_another():
    from distlib.static import mode
    from distlib.static.pictures import NARROW, texts_outside

    wide = PipelineWidget()
    with mode.phone_twin():
        phone = PipelineWidget()
    assert phone.fig.narrow and phone.fig.width == NARROW and not wide.fig.narrow
    for wdg in (wide, phone):
        for kind, p, m, v in itertools.product(PIPELINE_SCHEDULES, STAGES, MICROBATCHES, CHUNKS):
            wdg.render_frame({"kind_buttons": kind, "stages_buttons": p, "microbatches_buttons": m,
                              "chunks_buttons": v})
            where = f"{'phone' if wdg.fig.narrow else 'wide'} {kind} p={p} m={m} v={v}"
            assert not texts_outside(wdg.fig.figure, drawn=True), where
            renderer = wdg.fig.canvas.get_renderer()
            ax = wdg.fig.ax
            title = wdg.picture.title.get_window_extent(renderer)
            legend = wdg.picture.legend.get_window_extent(renderer)
            assert not title.overlaps(ax.get_tightbbox(renderer)), where
            assert not legend.overlaps(ax.get_tightbbox(renderer)), where
            assert title.x0 >= 0 and title.x1 <= wdg.fig.figure.bbox.width, where
            for text in ax.texts:  # a box's number stays inside its box
                box = text.get_window_extent(renderer)
                e = [e for e in wdg.result.events if e.stage == round(text.get_position()[1])
                     and e.start <= text.get_position()[0] * wdg.result.forward_time <= e.end]
                x0, _ = ax.transData.transform((e[0].start / wdg.result.forward_time, 0))
                x1, _ = ax.transData.transform((e[0].end / wdg.result.forward_time, 0))
                assert x0 <= box.x0 and box.x1 <= x1, where
    wide.close()
    phone.close()


def test_the_widget_and_the_library_agree_on_the_closed_forms():
    for p, m in itertools.product(STAGES, MICROBATCHES):
        wdg = PipelineWidget(kind="1f1b", stages=p, microbatches=m)
        assert wdg.result.bubble_fraction == pytest.approx((p - 1) / (m + p - 1))
        assert wdg.result.peak_in_flight == tuple(float(min(p - s, m)) for s in range(p))
        ref = dl.pipeline_schedule("1f1b", p, m, forward_time=1.0, backward_time=2.0)
        assert wdg.result.iteration_time == ref.iteration_time
        wdg.close()


def test_the_chapters_figure_fits_both_sizes_and_the_phone_copy_drops_the_box_numbers():
    from matplotlib.figure import Figure

    from distlib.plots import pipeline as pipeline_plots
    from distlib.static.pictures import NARROW, phone_copy, render_pair

    fig = Figure(figsize=(6.4, 5.6))
    axes = fig.subplots(3, 1, sharex=True)
    runs = [dl.pipeline_schedule(k, 4, 8, forward_time=1.0, backward_time=2.0, chunks=2 if k == "interleaved" else 1)
            for k in PIPELINE_SCHEDULES]
    for ax, r in zip(axes, runs):
        drawn = pipeline_plots.plot_pipeline_schedule(ax, r, xmax=max(x.iteration_time for x in runs))
        ax.set_title(f"{r.kind}: bubble {r.bubble_fraction:.0%} of the step", fontsize=11)
        assert drawn["texts"] and len(drawn["boxes"].get_paths()) == len(r.events)
    axes[-1].set_xlabel("time (one forward = 1)")
    fig.tight_layout()
    pipeline_plots.schedule_legend(axes[-1])
    pipeline_plots.phone_figure(fig, height=640)
    wide, narrow = render_pair(fig, strict=True)  # strict: a text that cannot fit is an error
    assert narrow.width <= NARROW < wide.width  # tight bounding box: a pixel or two under NARROW
    phone = phone_copy(fig)
    from distlib.static.phone import phone_spec

    phone_spec(fig).adjust(phone)
    assert all(not ax.texts for ax in phone.axes) and phone.axes[-1].get_legend() is not None
