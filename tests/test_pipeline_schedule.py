"""Pipeline schedules: the simulated timeline against the papers' closed forms.

GPipe (Huang et al. 2019) and 1F1B (PipeDream-Flush, Narayanan et al. 2021):
iteration time ``(m + p - 1)(tf + tb)``, a bubble of ``(p - 1)/(m + p - 1)``
of the whole step and ``(p - 1)/m`` of the ideal step. Interleaved 1F1B with
``v`` chunks (Narayanan et al. 2021, section 2.2.2): bubble time
``(p - 1)(tf + tb)/v``, ``(p - 1)/(v m)`` of the ideal step.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.pipeline_schedule import MAX_PIPELINE_OPS, PIPELINE_SCHEDULES, PipelineEvent

stage_time = st.floats(min_value=0.01, max_value=10.0, allow_nan=False, allow_infinity=False)
FAST = settings(max_examples=40, deadline=None)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def run(kind, p, m, tf=1.0, tb=2.0, v=1):
    return dl.pipeline_schedule(kind, p, m, forward_time=tf, backward_time=tb, chunks=v)


@st.composite
def plain(draw):
    return draw(st.sampled_from(["gpipe", "1f1b"])), draw(st.integers(1, 8)), draw(st.integers(1, 24))


@st.composite
def interleaved(draw):
    p = draw(st.integers(1, 6))
    return p, p * draw(st.integers(1, 4)), draw(st.integers(2, 4))


# --- one worked case: p = 4, m = 8, tf = 1 s, tb = 2 s -------------------


@pytest.mark.parametrize("kind, v, time, peak", [
    ("gpipe", 1, 33.0, (8, 8, 8, 8)),
    ("1f1b", 1, 33.0, (4, 3, 2, 1)),
    ("interleaved", 2, 28.5, (5.5, 4.5, 3.5, 2.5)),
])
def test_four_stages_eight_microbatches(kind, v, time, peak):
    r = run(kind, 4, 8, v=v)
    assert r.iteration_time == time
    assert r.peak_in_flight == peak
    assert close(r.bubble_time, time - 24)                  # every stage works m (tf + tb) = 24 s
    assert close(r.bubble_ratio, (time - 24) / 24)          # relative to the ideal step
    assert close(r.bubble_fraction, (time - 24) / time)     # of the whole step
    assert len(r.events) == 2 * 4 * 8 * v
    assert {e.kind for e in r.events} == {"F", "B"}


def test_the_schedules_run_their_papers_orders():
    gpipe = [(e.kind, e.microbatch) for e in run("gpipe", 2, 3).stage_events(0)]
    assert gpipe == [("F", 0), ("F", 1), ("F", 2), ("B", 2), ("B", 1), ("B", 0)]
    # 1F1B, stage 0 of 3: p - s - 1 = 2 warm-up forwards, then one forward, one backward
    one = [(e.kind, e.microbatch) for e in run("1f1b", 3, 4).stage_events(0)]
    assert one == [("F", 0), ("F", 1), ("F", 2), ("B", 0), ("F", 3), ("B", 1), ("B", 2), ("B", 3)]
    # interleaved, p = 2, v = 2: microbatches 0, 1 through chunk 0, then chunk 1; backwards chunk 1 first
    last = [(e.kind, e.microbatch, e.chunk) for e in run("interleaved", 2, 2, v=2).stage_events(1)]
    assert last[:3] == [("F", 0, 0), ("F", 1, 0), ("F", 0, 1)]  # warm-up (v - 1) p = 2, then 1F1B
    assert last[3] == ("B", 0, 1)


# --- closed forms, for many (p, m) ----------------------------------------


@FAST
@given(plain(), stage_time, stage_time)
def test_gpipe_and_1f1b_take_m_plus_p_minus_1_slots(case, tf, tb):
    kind, p, m = case
    r = run(kind, p, m, tf, tb)
    assert close(r.iteration_time, (m + p - 1) * (tf + tb))
    assert close(r.bubble_time, (p - 1) * (tf + tb))
    assert close(r.bubble_fraction, (p - 1) / (m + p - 1))   # GPipe: a fraction of the whole step
    assert close(r.bubble_ratio, (p - 1) / m)                # Narayanan: relative to the ideal step
    assert all(close(b, m * (tf + tb)) for b in r.busy_time)


@FAST
@given(plain())
def test_gpipe_holds_every_microbatch_1f1b_at_most_p_minus_s(case):
    kind, p, m = case
    r = run(kind, p, m)
    want = [m] * p if kind == "gpipe" else [min(p - s, m) for s in range(p)]
    assert r.peak_in_flight == tuple(want)
    assert r.peak_chunks_in_flight == tuple(want)


@FAST
@given(interleaved(), stage_time, stage_time)
def test_interleaving_divides_the_bubble_by_the_chunks(case, tf, tb):
    p, m, v = case
    r = run("interleaved", p, m, tf, tb, v)
    assert close(r.bubble_time, (p - 1) * (tf + tb) / v)
    assert close(r.iteration_time, m * (tf + tb) + (p - 1) * (tf + tb) / v)
    assert close(r.bubble_ratio, (p - 1) / (v * m))                 # relative to the ideal step
    assert close(r.bubble_fraction, (p - 1) / (v * m + p - 1))      # of the whole step
    one_chunk = run("1f1b", p, m, tf, tb)
    assert r.iteration_time <= one_chunk.iteration_time * (1 + 1e-12)


@FAST
@given(interleaved())
def test_interleaving_holds_its_warmup_plus_one_chunk(case):
    p, m, v = case
    r = run("interleaved", p, m, v=v)
    want = [min(2 * (p - s - 1) + (v - 1) * p + 1, m * v) for s in range(p)]
    assert r.peak_chunks_in_flight == tuple(want)
    assert all(close(x, n / v) for x, n in zip(r.peak_in_flight, want))
    if m >= 2 * p:  # Korthikanti et al. 2022: the first stage holds 1 + (p - 1)/(p v) times 1F1B's p
        assert close(r.peak_in_flight[0], p * (1 + (p - 1) / (p * v)))


# --- the laws of any timeline ----------------------------------------------


@st.composite
def any_schedule(draw):
    kind = draw(st.sampled_from(PIPELINE_SCHEDULES))
    if kind == "interleaved":
        p, m, v = draw(interleaved())
    else:
        (kind, p, m), v = draw(plain()), 1
    return kind, p, m, v


@FAST
@given(any_schedule(), stage_time, stage_time)
def test_inputs_arrive_before_an_op_starts_and_a_stage_runs_one_op_at_a_time(case, tf, tb):
    kind, p, m, v = case
    r = run(kind, p, m, tf, tb, v)
    at = {(e.kind, e.microbatch, e.chunk * p + e.stage): e for e in r.events}
    assert len(at) == len(r.events) == 2 * p * m * v       # every op once
    last = p * v - 1
    for (kind_, mb, u), e in at.items():
        assert close(e.duration, (tf if kind_ == "F" else tb) / v)
        if kind_ == "F" and u > 0:                          # F on stage s+1 after F on stage s
            assert e.start >= at[("F", mb, u - 1)].end
        if kind_ == "B":                                    # B in reverse, after the last forward
            before = at[("B", mb, u + 1)] if u < last else at[("F", mb, last)]
            assert e.start >= before.end
    for s in range(p):
        ops = r.stage_events(s)
        assert all(a.end <= b.start for a, b in zip(ops, ops[1:]))
    assert isinstance(r.events[0], PipelineEvent) and r.events[0].start == 0.0


def test_one_stage_has_no_bubble():
    for kind, v in [("gpipe", 1), ("1f1b", 1), ("interleaved", 3)]:
        r = run(kind, 1, 5, v=v)
        assert close(r.iteration_time, 15.0)  # 5 x (1 + 2) s, one op after another
        assert abs(r.bubble_fraction) < 1e-12 and abs(r.bubble_ratio) < 1e-12


# --- bad input ---------------------------------------------------------------


@pytest.mark.parametrize("args, kwargs, error, message", [
    (("pipedream", 4, 8), {}, ValueError, "kind must be one of 'gpipe', '1f1b', 'interleaved'"),
    (("1f1b", 0, 8), {}, ValueError, "stages must be an integer >= 1, got 0"),
    (("1f1b", 2.5, 8), {}, TypeError, "stages must be an integer >= 1, got 2.5"),
    (("1f1b", 4, 0), {}, ValueError, "microbatches must be an integer >= 1, got 0"),
    (("1f1b", 4, 8), {"forward_time": 0.0}, ValueError, "forward_time must be a finite number > 0"),
    (("1f1b", 4, 8), {"backward_time": math.nan}, ValueError, "backward_time must be a finite number > 0"),
    (("1f1b", 4, 8), {"backward_time": "2"}, TypeError, "backward_time must be a number > 0"),
    (("gpipe", 4, 8), {"chunks": 2}, ValueError, "chunks must be 1 for kind 'gpipe'"),
    (("interleaved", 4, 8), {"chunks": 1}, ValueError, "chunks must be an integer >= 2, got 1"),
    (("interleaved", 4, 6), {"chunks": 2}, ValueError, r"microbatches must be a multiple of stages \(4\)"),
    (("gpipe", 1000, 1000), {}, ValueError, f"at most {MAX_PIPELINE_OPS // 2}"),
])
def test_bad_input_names_the_parameter_and_its_range(args, kwargs, error, message):
    times = {"forward_time": 1.0, "backward_time": 2.0, **kwargs}
    with pytest.raises(error, match=message):
        dl.pipeline_schedule(*args, **times)


def test_stage_events_checks_the_stage():
    with pytest.raises(ValueError, match=r"stage must be an integer in \[0, 3\], got 4"):
        run("1f1b", 4, 8).stage_events(4)


# ---- the peak a stage holds, its chunks weighted (chapter 13's memory model) -------------------------------------

@FAST
@given(interleaved(), st.integers(0, 5))
def test_peak_held_with_equal_weights_is_the_simulations_peak(case, stage):
    p, m, v = case
    stage = min(stage, p - 1)
    assert dl.peak_held("interleaved", p, m, chunks=v, stage=stage) == run("interleaved", p, m, v=v).peak_chunks_in_flight[stage]
    for kind in ("gpipe", "1f1b"):
        assert dl.peak_held(kind, p, m, stage=stage) == run(kind, p, m).peak_chunks_in_flight[stage]


@FAST
@given(interleaved(), st.lists(st.floats(0, 10, allow_nan=False), min_size=4, max_size=4))
def test_peak_held_is_monotone_and_bounded_by_its_heaviest_chunk(case, weights):
    p, m, v = case
    w = weights[:v]
    peak = dl.peak_held("interleaved", p, m, chunks=v, weights=w)
    count = dl.peak_held("interleaved", p, m, chunks=v)
    assert min(w) * count - 1e-9 <= peak <= max(w) * count + 1e-9
    heavier = [x + 1 for x in w]
    assert dl.peak_held("interleaved", p, m, chunks=v, weights=heavier) >= peak


def test_megatrons_first_stage_peak_is_its_warmup_and_a_lighter_first_chunk_lowers_it():
    """Stage 0 warms up with 2(p - 1) + (v - 1) p chunk-forwards and one more: p of every chunk, then p - 1 more of
    chunk 0, (v + 1) p - 1 in all; one layer fewer in chunk 0 takes 2p - 1 layer-activations off that peak."""
    p, v, m = 16, 4, 32
    assert dl.peak_held("interleaved", p, m, chunks=v) == (v + 1) * p - 1
    assert dl.peak_held("interleaved", p, m, chunks=v, weights=[2] * 4) - (2 * p - 1) == \
        dl.peak_held("interleaved", p, m, chunks=v, weights=[1, 2, 2, 2])


@pytest.mark.parametrize("kwargs, message", [
    (dict(weights=[1, 2, 3]), "weights must have one value per chunk"),
    (dict(weights=[1, -1]), "weights must be"),
    (dict(stage=4), r"stage must be an integer in \[0, 3\]"),
])
def test_peak_held_bad_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dl.peak_held("interleaved", 4, 8, chunks=2, **kwargs)


# ---- zero bubble, DualPipe's table, and what a laptop adds -------------------------------------------------------

@FAST
@given(st.integers(1, 8), st.integers(1, 4), stage_time, stage_time, stage_time)
def test_zb_h1_bubble_is_qi_et_als_closed_form_in_1f1bs_memory(p, k, tf, tb_in, tw):
    m = p * k
    r = dl.pipeline_schedule("zb-h1", p, m, forward_time=tf, backward_time=tb_in + tw, weight_time=tw)
    if tw <= min(tf, tb_in):
        assert close(r.bubble_time, (p - 1) * (tf + tb_in - tw))
    else:
        assert close(r.bubble_time, (p - 1) * max(tf, tb_in))
    assert max(r.peak_in_flight) <= p
    one = run("1f1b", p, m, tf, tb_in + tw)
    assert r.bubble_time <= one.bubble_time + 1e-9 and close(sum(r.busy_time), sum(one.busy_time))


def test_zb_h1_with_equal_thirds_is_a_third_of_1f1bs_bubble():
    zb = dl.pipeline_schedule("zb-h1", 8, 32, forward_time=1.0, backward_time=2.0, weight_time=1.0)
    assert close(zb.bubble_time, run("1f1b", 8, 32, 1.0, 2.0).bubble_time / 3)
    assert {e.kind for e in zb.events} == {"F", "B", "W"}


def test_deepseeks_table_2_orders_the_three_schedules():
    t = dl.bubble_closed_forms(16, forward_time=1.0, backward_time=2.0, weight_time=1.0, overlapped_time=2.5)
    assert t["dualpipe"].bubble < t["zb1p"].bubble < t["1f1b"].bubble
    assert (t["dualpipe"].parameter_copies, t["dualpipe"].activations) == (2, 17)
    zb = dl.pipeline_schedule("zb-h1", 16, 32, forward_time=1.0, backward_time=2.0, weight_time=1.0)
    assert close(t["zb1p"].bubble, zb.bubble_time)  # ZB1P is ZB-H1
    with pytest.raises(ValueError, match="stages must be even"):
        dl.bubble_closed_forms(3, forward_time=1.0, backward_time=2.0, weight_time=1.0, overlapped_time=2.5)


def test_a_message_time_delays_gpipe_once_per_hop_and_1f1b_on_every_round_trip():
    p, m, delta = 4, 8, 0.1
    extra = {}
    for kind in ("gpipe", "1f1b"):
        late = dl.pipeline_schedule(kind, p, m, forward_time=1.0, backward_time=2.0, message_time=delta)
        extra[kind] = (late.iteration_time - run(kind, p, m).iteration_time) / delta
    assert close(extra["gpipe"], 2 * (p - 1))  # the ramp's 2 (p - 1) hops, once
    assert extra["1f1b"] > 2 * (p - 1)  # 1F1B's steady state waits on every round trip with the next stage


@FAST
@given(plain(), st.integers(1, 8))
def test_cores_bound_the_step_below_by_the_work_over_the_cores(case, cores):
    kind, p, m = case
    free = run(kind, p, m)
    shared = dl.pipeline_schedule(kind, p, m, forward_time=1.0, backward_time=2.0, cores=cores)
    assert shared.iteration_time >= max(free.iteration_time, p * m * 3.0 / cores) - 1e-9
    if cores >= p:
        assert close(shared.iteration_time, free.iteration_time)
    if cores == 1:
        assert close(shared.iteration_time, p * m * 3.0)


def test_unequal_stages_run_at_the_slowest_stages_pace():
    slow = dl.pipeline_schedule("1f1b", 4, 8, forward_time=[1, 1, 1, 2], backward_time=[2, 2, 2, 4])
    assert slow.iteration_time >= 8 * 6  # the last stage's own work
    assert slow.busy_time == (24.0, 24.0, 24.0, 48.0)
    with pytest.raises(ValueError, match="forward_time must be a number or one per stage"):
        dl.pipeline_schedule("1f1b", 4, 8, forward_time=[1, 1], backward_time=2.0)
    with pytest.raises(ValueError, match="weight_time is for kind 'zb-h1'"):
        dl.pipeline_schedule("1f1b", 4, 8, forward_time=1.0, backward_time=2.0, weight_time=1.0)
    with pytest.raises(ValueError, match="weight_time must be below backward_time"):
        dl.pipeline_schedule("zb-h1", 4, 8, forward_time=1.0, backward_time=2.0, weight_time=2.0)


@FAST
@given(plain(), st.floats(0.0, 2.0))
def test_the_message_time_for_a_bubble_inverts_the_schedule(case, delta):
    kind, p, m = case
    if p == 1:
        return  # one stage sends nothing
    r = dl.pipeline_schedule(kind, p, m, forward_time=1.0, backward_time=2.0, message_time=delta)
    found = dl.message_time_for_bubble(kind, p, m, forward_time=1.0, backward_time=2.0, bubble=r.bubble_fraction)
    back = dl.pipeline_schedule(kind, p, m, forward_time=1.0, backward_time=2.0, message_time=found)
    assert back.bubble_fraction == pytest.approx(r.bubble_fraction, abs=1e-3)
    assert dl.message_time_for_bubble(kind, p, m, forward_time=1.0, backward_time=2.0, bubble=0.0) == 0.0


@pytest.mark.parametrize("kind, chunks", [("gpipe", 1), ("1f1b", 1), ("interleaved", 2)])
@pytest.mark.parametrize("p, m", [(2, 4), (4, 8)])
def test_a_receive_posted_later_never_makes_the_step_shorter(kind, chunks, p, m):
    """posted=0 (at the op) >= posted=1 (an op ahead) >= None (long before); all equal when messages are free."""
    times = dict(forward_time=1.0, backward_time=2.0, chunks=chunks)
    for message in (0.0, 0.3, 1.5):
        steps = [dl.pipeline_schedule(kind, p, m, message_time=message, posted=k, **times).iteration_time
                 for k in (0, 1, None)]  # fmt: skip
        assert steps[0] >= steps[1] - 1e-12 and steps[1] >= steps[2] - 1e-12, (message, steps)
        if message == 0.0:
            assert steps[0] == steps[2]
    with pytest.raises(ValueError, match="posted"):
        dl.pipeline_schedule("1f1b", 2, 4, posted=-1, forward_time=1.0, backward_time=2.0)
