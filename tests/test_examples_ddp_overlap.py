"""DDP with and without overlap on real gloo ranks; the measured-vs-model comparison.

The engine tests start two torch.distributed processes once (a small model,
few iterations) and check what must hold whatever the timings: the ranks end
with identical parameters, overlap on and off train to the same parameters,
and both equal one process trained on the whole batch.
"""

import dataclasses
import json

import numpy as np
import pytest

import distlib as dl
from distlib.overlap.measure import (AllreduceTimes, Bucket, DDPChecks, DDPReport, SweepRow, compare_ddp,
                                     parse_json_line)

SMALL = dict(width=32, layers=4, batch=8, caps=(0.001, 1.0), iters=2, layer_iters=2, warmup=1, check_steps=3)


@pytest.fixture(scope="module")
def report():
    pytest.importorskip("torch")
    from distlib.examples import ddp_overlap

    return ddp_overlap.launch(2, timeout=120, **SMALL)


@pytest.mark.engines
def test_ranks_end_with_identical_parameters(report):
    chk = report.checks
    assert isinstance(chk, DDPChecks) and chk.steps == 3
    assert chk.max_update > 1e-5  # training moved the weights, so the checks below mean something
    assert chk.max_rank_diff_overlap == 0.0
    assert chk.max_rank_diff_no_overlap == 0.0


@pytest.mark.engines
def test_overlap_on_and_off_train_to_the_same_parameters(report):
    chk = report.checks
    scale = chk.max_update
    # float32 sums in a different order at most: far below one step's update
    assert chk.max_diff_overlap_vs_no_overlap <= 1e-4 * scale
    # and both equal one process on the concatenated batch (so the gradients were averaged, not summed)
    assert chk.max_diff_overlap_vs_single_process <= 1e-4 * scale
    assert chk.max_diff_no_overlap_vs_single_process <= 1e-4 * scale


@pytest.mark.engines
def test_report_holds_ddp_buckets_and_times(report):
    assert isinstance(report, DDPReport) and report.p == 2 and report.backend == "gloo"
    assert report.launch_seconds > 0 and report.model == {"width": 32, "layers": 4, "batch": 8}
    assert len(report.backward_times) == 4 and report.forward_time > 0
    sweep = {row.bucket_cap_mb: row for row in report.sweep}
    assert all(isinstance(row, SweepRow) for row in report.sweep)
    # a 1 kB capacity puts every layer in a bucket of its own; 1 MiB holds the whole model
    assert [b.layers for b in sweep[0.001].buckets] == [[0], [1], [2], [3]]
    assert [b.layers for b in sweep[1.0].buckets] == [[0, 1, 2, 3]]
    assert sweep[1.0].buckets[0] == Bucket(4 * (32 * 32 + 32) * 4, [0, 1, 2, 3])
    for row in report.sweep:
        for mode in ("compute", "overlap", "no_overlap"):
            assert getattr(row, mode) > 0 and len(getattr(row, f"{mode}_samples")) == 2
            assert getattr(row, f"{mode}_cpu") >= 0
    sizes = report.allreduce.n_bytes
    assert 4 * 4 * (32 * 32 + 32) in sizes and all(t > 0 for t in report.allreduce.seconds)


@pytest.mark.engines
def test_comparison_of_a_real_report(report):
    c = compare_ddp(report)
    assert c.n_buckets.tolist() == [4, 1] == c.n_buckets_model.tolist()
    compute = report.forward_time + sum(max(b, 0) for b in report.backward_times)
    assert c.predicted_compute == pytest.approx(compute)
    # the model never predicts a step below its compute or above compute + every all-reduce in a row
    assert np.all(c.predicted_overlap >= c.predicted_compute - 1e-12)
    assert "ratio" in c.table() and "CPU" in c.cpu_table()


def test_launch_rejects_unknown_options_before_starting_anything():
    from distlib.examples import ddp_overlap

    with pytest.raises(TypeError, match="unknown option 'bucket'"):
        ddp_overlap.launch(2, bucket=4)
    with pytest.raises(ValueError, match="p must be"):
        ddp_overlap.launch(0)


# --- the comparison, on made-up reports (no processes) ---------------------


def _report(**over):
    ar = lambda n: 1e-4 + n / 1e9  # noqa: E731  ring, p=2: 2 alpha = 100 µs, n / bandwidth
    kw = dict(
        p=2, forward_time=2e-3, backward_times=[1e-3] * 4, grad_bytes=[500_000] * 4,
        allreduce=AllreduceTimes([500_000, 1_000_000, 2_000_000], [ar(5e5), ar(1e6), ar(2e6)]),
        sweep=[SweepRow(cap, compute=6e-3, overlap=7e-3, no_overlap=8.1e-3) for cap in (0.4, 0.9, 1.9)],
    )
    kw.update(over)
    return DDPReport(**kw)


def test_comparison_matches_the_model_when_the_model_holds():
    c = compare_ddp(_report())
    assert c.n_buckets.tolist() == [4, 2, 1]
    assert c.predicted_compute == pytest.approx(6e-3)
    assert c.predicted_no_overlap == pytest.approx(6e-3 + 1e-4 + 2e6 / 1e9)
    # the same numbers from the model directly: alpha = 50 µs per ring step, 1 GB/s
    for cap, pred in zip((0.4, 0.9, 1.9), c.predicted_overlap):
        s = dl.ddp_step([1e-3] * 4, [5e5] * 4, bucket_bytes=cap * 2**20, alpha=5e-5, bandwidth=1e9, p=2,
                        forward_time=2e-3)
        assert pred == pytest.approx(s.iteration_time)
    assert c.alpha == pytest.approx(5e-5, rel=1e-6) and c.bandwidth == pytest.approx(1e9, rel=1e-6)
    np.testing.assert_allclose(c.measured_gain, 8.1 / 7)
    np.testing.assert_allclose(c.overlap_ratio, 7e-3 / c.predicted_overlap)
    assert np.all(np.isnan(c.cpu_overlap))


def test_measured_and_fitted_comm_differ_when_the_fit_is_imperfect():
    rep = _report()
    rep.allreduce.seconds[1] *= 3  # a slow 1 MB all-reduce that the alpha-beta line cannot follow
    measured = compare_ddp(rep, comm="measured")
    fitted = compare_ddp(rep, comm="fit")
    assert measured.predicted_overlap[1] != pytest.approx(fitted.predicted_overlap[1])
    assert measured.predicted_overlap[0] == pytest.approx(compare_ddp(_report()).predicted_overlap[0])


def test_reported_buckets_are_used_in_ready_order():
    rep = _report()
    rep.sweep[0] = dataclasses.replace(rep.sweep[0], buckets=[Bucket(1_000_000, [2, 3]), Bucket(1_000_000, [0, 1])])
    c = compare_ddp(rep)
    assert c.n_buckets[0] == 2 and c.n_buckets_model[0] == 4
    assert c.timelines[0].ready_after.tolist() == [1, 3]


def test_comparison_rejects_incomplete_reports():
    with pytest.raises(ValueError, match=r"lacks \['forward_time', 'backward_times', 'allreduce', 'sweep'\]"):
        compare_ddp(DDPReport(p=2, grad_bytes=[4]))
    with pytest.raises(ValueError, match=r"lacks \['sweep'\]; run the worker without --skip"):
        compare_ddp(_report(sweep=None))
    with pytest.raises(TypeError, match="report must be a DDPReport"):
        compare_ddp({"p": 2})
    with pytest.raises(ValueError, match="comm"):
        compare_ddp(_report(), comm="guess")
    with pytest.raises(ValueError, match="one entry per layer"):
        compare_ddp(_report(grad_bytes=[1.0]))


def test_a_report_survives_its_report_line_exactly():
    from distlib.engines.report import encode, parse

    rep = _report(checks=DDPChecks(3, 0.05, 0.0, 0.0, 1e-9, 2e-9, 3e-9, 0.1), phase_seconds={"sweep": 1.5})
    rep.sweep[1] = dataclasses.replace(rep.sweep[1], buckets=[Bucket(1_000_000, [0, 1, 2, 3])], compute_samples=[1.0])
    back = parse("rank 0 says hello\n" + encode(rep), DDPReport)
    assert repr(back) == repr(rep)  # field for field, NaN (no CPU time measured) included
    assert isinstance(back.sweep[1].buckets[0], Bucket) and np.isnan(back.sweep[0].overlap_cpu)
    assert compare_ddp(back).predicted_overlap.tolist() == compare_ddp(rep).predicted_overlap.tolist()


def test_parse_json_line_takes_the_marked_line():
    text = "noise\nRESULT " + json.dumps({"x": 1.5}) + "\nmore noise\n"
    assert parse_json_line(text, "RESULT ") == {"x": 1.5}
    with pytest.raises(ValueError, match="no line starting with 'RESULT'"):
        parse_json_line("nothing here", "RESULT ")


def test_gpu_measurement_says_when_it_is_skipped(capsys):
    torch = pytest.importorskip("torch")
    from distlib.examples.ddp_overlap import copy_compute_overlap

    if torch.cuda.is_available():
        r = copy_compute_overlap(n_bytes=64 * 2**20, matmul_n=2048, repeats=3)
        assert not r["skipped"] and r["device"]
        assert r["concurrent"] <= r["serial"] * 1.05  # concurrent is never much slower
        assert r["speedup"] <= r["bound"] * 1.15
    else:
        r = copy_compute_overlap()
        assert r == {"skipped": True, "device": "cpu", "message": r["message"]}
        assert "no GPU: skipped" in capsys.readouterr().out
    r = copy_compute_overlap(device="cpu", verbose=False)
    assert r["skipped"] and "not a CUDA device" in r["message"]
    assert capsys.readouterr().out == ""
