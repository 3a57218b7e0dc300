"""Chapter 16's model (distlib/goodput.py): the job's MTBF, Young's and Daly's intervals, goodput in closed form
and simulated, and Llama 3's table of interruptions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distlib.goodput import (EVENT_KINDS, daly_interval, expected_goodput, goodput, goodput_curve, job_mtbf,
                             llama3_interruptions, optimal_interval, simulate_failures, young_interval)

HOUR = 3600.0
JOB = dict(gpus=1024, mtbf_per_gpu=1024 * 3 * HOUR, write_time=60.0, restart_time=600.0)  # a failure every 3 h


def test_the_job_fails_at_the_first_of_its_gpus_failures():
    # the least of n independent exponential times is exponential with mean mtbf / n
    rng = np.random.default_rng(0)
    gpus, mtbf = 64, 5000.0
    first = rng.exponential(mtbf, size=(20000, gpus)).min(axis=1)
    assert job_mtbf(gpus, mtbf) == mtbf / gpus
    assert abs(first.mean() / (mtbf / gpus) - 1) < 4 / math.sqrt(first.size)  # the mean, to 4 standard errors
    assert abs(first.std() / first.mean() - 1) < 0.05  # and exponential: its spread equals its mean


def test_young_is_the_peak_of_the_first_order_goodput():
    m = job_mtbf(JOB["gpus"], JOB["mtbf_per_gpu"])
    tau = young_interval(JOB["write_time"], m)
    assert tau == pytest.approx(math.sqrt(2 * 60 * 3 * HOUR))
    grid = tau * np.geomspace(0.5, 2, 2001)
    assert grid[np.argmax(goodput(**JOB, interval=grid))] == pytest.approx(tau, rel=1e-3)


@pytest.mark.parametrize("mtbf_min, daly_min", [(24 * 60, 117), (6 * 60, 57), (15, 9.1)])
def test_daly_reproduces_his_papers_cases_and_the_exact_optimum(mtbf_min, daly_min):
    # Daly 2006, figures 3-5: a 5-minute dump, a 10-minute restart, M of 24 h, 6 h and 15 min
    delta, m = 300.0, mtbf_min * 60.0
    assert daly_interval(delta, m) / 60 == pytest.approx(daly_min, abs=0.5 if daly_min > 10 else 0.05)
    best = optimal_interval(delta, m)
    kw = dict(gpus=1, mtbf_per_gpu=m, write_time=delta, restart_time=600.0)
    grid = best * np.linspace(0.9, 1.1, 4001)
    assert grid[np.argmax(expected_goodput(**kw, interval=grid))] == pytest.approx(best, rel=1e-4)
    # Daly's estimate is closer to the optimum than Young's, and loses less goodput
    assert abs(daly_interval(delta, m) - best) < abs(young_interval(delta, m) - best)
    assert expected_goodput(**kw, interval=daly_interval(delta, m)) >= expected_goodput(
        **kw, interval=young_interval(delta, m))


def test_daly_is_m_past_two_mtbfs_and_young_for_small_dumps():
    assert daly_interval(5000.0, 2000.0) == 2000.0
    assert daly_interval(1.0, 1e7) / young_interval(1.0, 1e7) == pytest.approx(1.0, abs=1e-3)


def test_the_first_order_goodput_is_the_exact_one_to_second_order():
    # over a grid of jobs whose first-order losses stay under 30%, the two differ by less than that loss squared
    worst = 0.0
    for m in (HOUR, 1e4, 1e5):
        for delta in (1.0, 10.0, 100.0, 600.0):
            for restart in (0.0, 60.0, 600.0, 3600.0):
                tau = np.geomspace(10, 1e5, 30)
                loss = delta / tau + (restart + tau / 2 + delta) / m
                kw = dict(gpus=1, mtbf_per_gpu=m, write_time=delta, restart_time=restart, interval=tau)
                gap = np.abs(goodput(**kw) - expected_goodput(**kw))
                small = loss <= 0.3
                worst = max(worst, float(np.max(gap[small] / loss[small] ** 2, initial=0.0)))
    assert 0.1 < worst < 1.0


def test_the_curve_peaks_at_the_optimum():
    c = goodput_curve(**JOB)
    assert c.mtbf == 3 * HOUR and c.intervals.shape == c.expected.shape == c.first_order.shape == (200,)
    assert c.intervals[0] < c.optimum < c.intervals[-1]
    assert np.all(c.expected <= c.best + 1e-12) and c.best == pytest.approx(c.expected.max(), abs=1e-4)
    assert c.at(c.daly) > c.at(c.young)


def test_a_long_simulated_run_measures_the_expected_goodput():
    # 3,000 mean times between failures: the measured goodput is the exact expectation within 4 standard errors
    # (its standard error, from the spread of the saved intervals' wall times, is 0.2 to 0.5 points here)
    m = 3 * HOUR
    for tau, seed in ((optimal_interval(60.0, m), 1), (0.02 * m, 2), (0.5 * m, 3)):
        run = simulate_failures(**JOB, interval=tau, duration=3000 * m, seed=seed)
        assert run.n_failures > 2500 and run.standard_error < 0.006
        assert abs(run.goodput - run.expected) < 4 * run.standard_error
        # and the first-order formula, within that tolerance plus its second-order gap
        first = goodput(**JOB, interval=tau)
        loss = 60.0 / tau + (600.0 + tau / 2 + 60.0) / m
        assert abs(run.goodput - first) < 4 * run.standard_error + loss**2


def test_every_second_of_a_run_is_accounted_for_once():
    run = simulate_failures(**JOB, interval=1200.0, duration=20 * 86400.0, seed=7)
    assert run.starts[0] == 0.0 and run.ends[-1] == run.duration
    assert np.all(run.starts[1:] == run.ends[:-1]) and np.all(run.ends > run.starts)  # no gap, no overlap
    assert sum(run.time_in(k) for k in EVENT_KINDS) == pytest.approx(run.duration, rel=1e-12)
    kinds = [EVENT_KINDS[k] for k in run.kinds]
    # every failure ends a stretch of lost training or of restarting, and a restart follows it
    ends = dict(zip(run.ends.tolist(), kinds))
    assert all(ends[t] in ("lost", "restart") for t in run.failures.tolist())
    # saved training comes in whole intervals, each followed by a whole save
    work = [i for i, k in enumerate(kinds) if k == "work"]
    assert np.allclose(run.ends[work] - run.starts[work], 1200.0)
    assert all(kinds[i + 1] == "save" for i in work)
    assert run.goodput == pytest.approx(len(work) * 1200.0 / run.duration)


def test_a_seeded_run_is_the_same_run():
    a = simulate_failures(**JOB, interval=900.0, duration=86400.0, seed=3)
    b = simulate_failures(**JOB, interval=900.0, duration=86400.0, seed=np.random.default_rng(3))
    assert np.array_equal(a.failures, b.failures) and np.array_equal(a.kinds, b.kinds)
    c = simulate_failures(**JOB, interval=900.0, duration=86400.0, seed=4)
    assert not np.array_equal(a.failures, c.failures)


def test_a_hopeless_job_still_ends():
    # a failure every 30 s and a 10-minute save: nothing is ever saved, yet the simulation stops at its window
    run = simulate_failures(gpus=1, mtbf_per_gpu=30.0, write_time=600.0, restart_time=60.0, interval=60.0,
                            duration=86400.0, seed=0)
    assert run.n_saves == 0 and run.goodput == 0.0 and math.isnan(run.standard_error)
    assert run.expected < 1e-8


def test_llama3s_table_is_as_published():
    ll = llama3_interruptions()
    assert (ll.days, ll.total, ll.planned, ll.unexpected, ll.gpus) == (54, 466, 47, 419, 16384)
    assert ll.total == ll.planned + ll.unexpected == 466
    assert len(ll.rows) == 18 and sum(r.count for r in ll.rows) == ll.unexpected
    assert [(r.component, r.count) for r in ll.rows[:3]] == [("Faulty GPU", 148), ("GPU HBM3 Memory", 72),
                                                            ("Software Bug", 54)]
    # every printed share is its count over 419 but the first (30.1% printed, 35.3% computed)
    off = [r.component for r in ll.rows if abs(ll.share(r) - r.printed_share) > 0.0006]
    assert off == ["Faulty GPU"]
    gpu_rows = [r for r in ll.rows if r.category == "GPU"]
    assert sum(r.printed_share for r in gpu_rows) == pytest.approx(ll.gpu_share)  # the 58.7% of the text
    assert ll.by_category()["GPU"] == 268 and list(ll.by_category())[0] == "GPU"
    assert ll.job_mtbf / HOUR == pytest.approx(54 * 24 / 419)
    assert job_mtbf(ll.gpus, ll.mtbf_per_gpu) == pytest.approx(ll.job_mtbf)


@pytest.mark.parametrize("call, error, text", [
    (lambda: job_mtbf(0, 1e6), ValueError, "gpus must be an integer >= 1"),
    (lambda: job_mtbf(8, -1.0), ValueError, "mtbf_per_gpu must be a finite number > 0"),
    (lambda: young_interval(0.0, 1e4), ValueError, "write_time must be a finite number > 0"),
    (lambda: daly_interval(60.0, float("inf")), ValueError, "mtbf must be a finite number > 0"),
    (lambda: goodput(**JOB, interval=0.0), ValueError, "interval must be a finite number of seconds > 0"),
    (lambda: goodput(**{**JOB, "restart_time": -1.0}, interval=60.0), ValueError, "restart_time must be"),
    (lambda: simulate_failures(**JOB, interval=60.0, duration=0.0), ValueError, "duration must be"),
    (lambda: simulate_failures(**{**JOB, "gpus": 2.5}, interval=60.0, duration=1.0), TypeError, "gpus must be"),
    (lambda: simulate_failures(**JOB, interval=60.0, duration=60.0).time_in("idle"), ValueError,
     "kind must be one of 'work'"),
])
def test_bad_arguments_name_themselves_and_their_range(call, error, text):
    with pytest.raises(error) as err:
        call()
    assert text in str(err.value)
