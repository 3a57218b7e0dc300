"""Benchmark plots: published figures labelled once each, readable on a phone."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

import distlib as dl
from distlib.plots.pictures import NARROW, phone_copy, phone_spec, render_pair
from distlib.plots.bench import plot_predicted_table


def _panel(ax, nodes=1):
    rows = [r for r in dl.published_results() if r.accelerator == "H100" and r.collective == "allreduce"
            and r.time is None and r.gpus_per_node == 8 and r.nodes == nodes]
    for nvls, color in ((True, "#1f77b4"), (False, "#ff7f0e")):
        cluster = dl.gpu_cluster(nodes, nic_bandwidth=400e9 if nodes > 1 else None, network="roce", nvls=nvls)
        pts = [r for r in rows if r.cluster().nvls == nvls]
        plot_predicted_table(ax, dl.predict_table(cluster, min_bytes=2**10, max_bytes=2**34, factor=2), pts,
                             label=f"model, NVLS {'on' if nvls else 'off'}", color=color)
    return rows


def test_figures_on_one_spot_share_one_label_and_labels_never_overlap():
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    rows = _panel(ax)
    spots = {(r.n_bytes, round(r.busbw / 1e10)) for r in rows}
    assert len(ax.texts) < len(rows)  # the two 8 GiB ring figures of 370 GB/s, e.g., share a label
    assert len(ax.texts) >= len(spots) - 1
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.texts]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert all("-0%" not in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_phone_copy_moves_the_legend_under_the_plot_and_fits():
    fig, axes = plt.subplots(3, 1, figsize=(6.4, 9.6), sharey=True, layout="constrained")
    for ax, nodes in zip(axes, (1, 2, 4)):
        _panel(ax, nodes)
    axes[0].legend(loc="lower right")
    phone = phone_copy(fig)  # as render_pair lays it out
    phone.set_size_inches(NARROW / 96, phone_spec(fig).height / 96)
    phone.canvas.draw()
    ax = phone.axes[0]
    assert ax.get_legend().get_window_extent().y1 < ax.get_window_extent().y0
    wide, narrow = render_pair(fig)
    assert narrow.width <= NARROW and wide.width <= 620
    plt.close("all")
