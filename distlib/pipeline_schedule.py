"""Pipeline-parallel schedules (GPipe, 1F1B, interleaved 1F1B), simulated op by op.

A model cut into ``p`` stages runs ``m`` microbatches through them. Each stage
runs its forward (``F``) and backward (``B``) ops in the order its schedule
gives; an op starts when its stage is free and its input has arrived from the
neighbouring stage (communication is free). :func:`pipeline_schedule` plays
that timeline out and reads every figure off the ops it placed; the closed
forms below are what the tests check it against, never what it returns.

Schedules
---------
* ``"gpipe"`` (Huang et al. 2019, "GPipe: Efficient Training of Giant
  Neural Networks using Pipeline Parallelism"): every stage runs all ``m``
  forwards, then all ``m`` backwards, last microbatch first (with equal
  stages, first-microbatch-first gives the same times and peaks).
* ``"1f1b"`` (PipeDream-Flush; Narayanan et al. 2021, "Efficient Large-Scale
  Language Model Training on GPU Clusters Using Megatron-LM", section 2.2.1):
  stage ``s`` (0-based) runs ``min(p - s - 1, m)`` warm-up forwards, then
  alternates one forward and one backward, then drains the backwards left.
  The warm-up count is Megatron-LM's ``forward_backward_pipelining_without_interleaving``.
* ``"interleaved"`` (the same paper, section 2.2.2): each stage holds ``v``
  model chunks (``chunks``), stage ``s`` chunk ``c`` being virtual stage
  ``c p + s``; one chunk's forward takes ``forward_time / v``. Forwards go in
  groups of ``p`` microbatches through chunk 0, then the same group through
  chunk 1, ...; backwards visit the chunks in reverse. Stage ``s`` warms up
  with ``min(2 (p - s - 1) + (v - 1) p, m v)`` chunk-forwards, then runs 1F1B
  on chunks. Order and warm-up count are Megatron-LM's
  ``forward_backward_pipelining_with_interleaving`` (its default group of
  ``p`` microbatches), which needs ``m`` to be a multiple of ``p``. (Older
  Megatron-LM and NVIDIA Apex warm every stage up with all ``m v``
  chunk-forwards when ``m = p``: the step takes as long, but every stage
  then holds ``m``.)
* ``"zb-h1"`` (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR,
  arXiv:2401.10241): 1F1B with each backward split in two ops, ``B`` (the
  gradient of the input, which the previous stage waits for) and ``W`` (the
  weights' gradient, which nobody waits for until the optimizer step). Stage
  ``s`` defers up to ``s`` of its ``W``, so it holds at most ``p``
  microbatches (1F1B's stage 0), and runs them in the drain's waits.

Closed forms (equal stages, ``tf`` and ``tb`` one stage's forward and backward)
-------------------------------------------------------------------------------
Every stage does ``m (tf + tb)`` of work, the *ideal step*. What is left of
the iteration time on a stage is its bubble. Two ways of quoting it are in
use, and they differ:

* **Fraction of the whole step** (GPipe's ``(p-1)/(m+p-1)``):
  ``bubble_fraction`` = idle stage-time / (``p`` x iteration time).
* **Ratio to the ideal step** (Narayanan's ``(p-1)/m``): ``bubble_ratio`` =
  bubble time / ``m (tf + tb)``.

GPipe and 1F1B: iteration time ``(m + p - 1)(tf + tb)``, bubble time
``(p - 1)(tf + tb)``; fraction of the whole step ``(p - 1)/(m + p - 1)``,
ratio to the ideal step ``(p - 1)/m``. They differ in memory: GPipe holds
``m`` microbatches' activations on every stage, 1F1B holds ``min(p - s, m)``
on stage ``s``. Interleaved with ``v`` chunks: bubble time
``(p - 1)(tf + tb)/v``, ratio to the ideal step ``(p - 1)/(v m)``, fraction
of the whole step ``(p - 1)/(v m + p - 1)``; stage 0 holds
``p + (p - 1)/v`` microbatches' activations when ``m >= 2p`` (the factor
``1 + (p - 1)/(p v)`` that Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", give for interleaving).

ZB-H1: bubble ``(p - 1)(tf + tb_in - tw)`` with ``tb = tb_in + tw``, Qi et
al.'s figure, when ``tw <= min(tf, tb_in)`` (with the three equal, a third of
1F1B's); with a longer ``W`` the order above leaves ``(p - 1) max(tf, tb_in)``.
Every stage holds at most ``p`` microbatches. :func:`bubble_closed_forms`
gives DeepSeek-V3's table of 1F1B, ZB1P (whose bubble is ZB-H1's) and DualPipe.

>>> r = pipeline_schedule("zb-h1", 4, 8, forward_time=1.0, backward_time=2.0, weight_time=1.0)
>>> r.bubble_time, r.peak_in_flight      # 1F1B's would be 9.0, in the same memory
(3.0, (4.0, 4.0, 4.0, 4.0))

Beyond the papers: ``message_time`` delays every input that comes from
another stage, and ``cores`` lets at most that many ops run at once (stages
that share a machine's processors, as the book's trainer's ranks do on a
laptop); stages may take unequal times (``forward_time`` and
``backward_time`` one per stage).

>>> pipeline_schedule("1f1b", 4, 8, forward_time=1.0, backward_time=2.0, cores=2).iteration_time   # >= 96 s of work / 2
52.0

A message starts to move only once its receive is posted: ``posted=None``
(the default) as soon as it is sent, a receive posted long before;
``posted=0`` as the op that needs it starts (the trainer's blocking
receives: the transfer is all waited for); ``posted=1`` one op ahead, as
the op before it starts (the trainer's ``--overlap pp``: the transfer runs
under that op). Messages of half a forward between two stages:

>>> [pipeline_schedule("1f1b", 2, 4, forward_time=1.0, backward_time=2.0, message_time=0.5,
...                    posted=k).iteration_time for k in (0, 1, None)]
[17.5, 17.0, 17.0]

Why not chapter 8's :class:`distlib.overlap.schedule.Event`: it names a layer
or a message on one rank's compute and communication rows, and has no stage,
microbatch or chunk; a pipeline op needs all three, so it is a
:class:`PipelineEvent` of its own. :class:`~distlib.overlap.schedule.OverlapTimeline`
is one rank's step, not ``p`` stages', so it does not fit either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ._check import check_choice, check_int, check_real

__all__ = ["PIPELINE_SCHEDULES", "SIMULATED_SCHEDULES", "MAX_PIPELINE_OPS", "PipelineEvent", "PipelineSchedule", "pipeline_schedule", "peak_held",
           "ClosedForm", "bubble_closed_forms", "measured_stage_times", "message_time_for_bubble"]

#: The schedules chapter 12 teaches first (its explorer widget steps through them).
PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved")
#: Every schedule :func:`pipeline_schedule` simulates: those, and zero bubble's ZB-H1.
SIMULATED_SCHEDULES = PIPELINE_SCHEDULES + ("zb-h1",)
#: The most forward and backward ops one simulation places (``2 p m v``), so a typo cannot hang a kernel.
MAX_PIPELINE_OPS = 1_000_000

FORWARD, BACKWARD, WEIGHT = "F", "B", "W"


class PipelineEvent(NamedTuple):
    """One forward or backward op of one microbatch through one model chunk of one stage.

    ``stage`` and ``chunk`` are 0-based (``chunk`` is 0 but for the
    interleaved schedule); ``kind`` is ``"F"`` or ``"B"``; ``start`` and
    ``end`` are seconds from the start of the step.
    """

    stage: int
    microbatch: int
    chunk: int
    kind: str
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class PipelineSchedule:
    """One training step of a pipeline: every op of every stage on a time axis.

    Every figure is read off ``events``. Two bubble figures, which differ:
    ``bubble_fraction`` is a fraction of the whole step (GPipe's
    definition), ``bubble_ratio`` is relative to the ideal step (Narayanan's).

    Attributes
    ----------
    kind : str
        ``"gpipe"``, ``"1f1b"`` or ``"interleaved"``.
    stages, microbatches, chunks : int
        ``p``, ``m`` and ``v`` (model chunks per stage, 1 but for interleaved).
    forward_time, backward_time : float
        One stage's forward and backward for one microbatch (all its chunks), s.
    events : tuple of PipelineEvent
        Every op, ordered by start time, then stage.
    peak_chunks_in_flight : tuple of int
        Per stage, the most chunk-activations held at once: one is held from
        its chunk-forward's start to its chunk-backward's end.
    """

    kind: str
    stages: int
    microbatches: int
    chunks: int
    forward_time: float
    backward_time: float
    events: tuple
    peak_chunks_in_flight: tuple
    weight_time: float = 0.0
    message_time: float = 0.0
    cores: int | None = None

    @property
    def iteration_time(self) -> float:
        """When the last op of the step ends (s)."""
        return max(e.end for e in self.events)

    @property
    def busy_time(self) -> tuple:
        """Per stage, the seconds it computes: ``m (tf + tb)`` on every stage."""
        busy = [[] for _ in range(self.stages)]
        for e in self.events:
            busy[e.stage].append(e.duration)
        return tuple(math.fsum(b) for b in busy)

    @property
    def idle_time(self) -> tuple:
        """Per stage, the seconds of the step it waits: its bubble."""
        return tuple(self.iteration_time - b for b in self.busy_time)

    @property
    def bubble_time(self) -> float:
        """Idle seconds of one stage, averaged over the stages (every stage idles as long)."""
        return math.fsum(self.idle_time) / self.stages

    @property
    def bubble_fraction(self) -> float:
        """Idle stage-time over ``stages`` x ``iteration_time``: a fraction of the whole step.

        GPipe's definition: ``(p - 1)/(m + p - 1)`` for GPipe and 1F1B.
        """
        return math.fsum(self.idle_time) / (self.stages * self.iteration_time)

    @property
    def bubble_ratio(self) -> float:
        """Bubble time over one stage's work ``m (tf + tb)``: relative to the ideal step.

        Narayanan et al.'s definition: ``(p - 1)/m`` for GPipe and 1F1B,
        ``(p - 1)/(v m)`` interleaved.
        """
        return self.bubble_time * self.stages / math.fsum(self.busy_time)

    @property
    def peak_in_flight(self) -> tuple:
        """Per stage, the most microbatches whose activations it holds at once.

        Counted in microbatches: chunk-activations over ``chunks``, so a
        stage holding chunk 0 of three microbatches and chunk 1 of two holds
        ``5 / 2 = 2.5`` (floats, whole numbers but for interleaved).
        """
        return tuple(n / self.chunks for n in self.peak_chunks_in_flight)

    def stage_events(self, stage: int) -> tuple:
        """The ops of one stage, in the order it runs them."""
        stage = check_int("stage", stage, minimum=0, maximum=self.stages - 1)
        return tuple(e for e in self.events if e.stage == stage)


# ---------------------------------------------------------------------------
# each stage's order of ops: (kind, microbatch, chunk)


def _one_f_one_b(forwards: list, warmup: int) -> list:
    """``warmup`` forwards, then forward-backward pairs, then the backwards left.

    ``forwards`` lists ``(microbatch, chunk)`` in forward order; the
    backwards visit the same microbatches, chunks reversed.
    """
    chunks = 1 + max(c for _, c in forwards)
    backwards = [(mb, chunks - 1 - c) for mb, c in forwards]
    order = [(FORWARD, *op) for op in forwards[:warmup]]
    for f, b in zip(forwards[warmup:], backwards):
        order += [(FORWARD, *f), (BACKWARD, *b)]
    order += [(BACKWARD, *op) for op in backwards[len(forwards) - warmup:]]
    return order


def _interleaved_forwards(p: int, m: int, v: int) -> list:
    """Megatron's forward order on every stage: ``p`` microbatches through chunk 0, the same through chunk 1, ..."""
    out = []
    for k in range(m * v):
        group, r = divmod(k, p * v)
        out.append((group * p + r % p, r // p))
    return out


def _zb_h1(p: int, m: int, s: int) -> list:
    """Qi et al.'s ZB-H1 on stage ``s``: 1F1B's forwards and input-gradient backwards (``B``), each weight-gradient
    pass (``W``) deferred while the stage holds fewer than ``p`` microbatches, i.e. up to ``s`` of them: stage ``s``
    of 1F1B holds ``p - s``, so every stage now holds at most ``p``, 1F1B's peak. The deferred ``W`` fill the
    waits of the drain."""
    warmup, order, pending = min(p - s - 1, m), [], []
    order += [(FORWARD, j, 0) for j in range(warmup)]
    for k in range(m):
        if warmup + k < m:
            order.append((FORWARD, warmup + k, 0))
        order.append((BACKWARD, k, 0))
        pending.append(k)
        if len(pending) > s:
            order.append((WEIGHT, pending.pop(0), 0))
    return order + [(WEIGHT, j, 0) for j in pending]


def _stage_order(kind: str, p: int, m: int, v: int, s: int) -> list:
    if kind == "zb-h1":
        return _zb_h1(p, m, s)
    if kind == "gpipe":
        return [(FORWARD, j, 0) for j in range(m)] + [(BACKWARD, j, 0) for j in reversed(range(m))]
    if kind == "1f1b":
        return _one_f_one_b([(j, 0) for j in range(m)], min(p - s - 1, m))
    warmup = min(2 * (p - s - 1) + (v - 1) * p, m * v)
    return _one_f_one_b(_interleaved_forwards(p, m, v), warmup)


# ---------------------------------------------------------------------------
# the simulation


def _input_of(kind: str, mb: int, u: int, virtual: int):
    """The op whose output this op needs, as ``(kind, microbatch, virtual stage)``; None for the first forward."""
    if kind == FORWARD:
        return (FORWARD, mb, u - 1) if u > 0 else None
    if kind == WEIGHT:
        return (BACKWARD, mb, u)
    return (BACKWARD, mb, u + 1) if u < virtual - 1 else (FORWARD, mb, u)


def _simulate(orders: list, p: int, v: int, durations: dict, *, message_time: float = 0.0, cores=None,
              posted=None) -> list:  # fmt: skip
    """Place every op: start = max(stage free, input arrived, a core free). Raises if the orders deadlock.

    ``durations[kind][s]`` is one chunk-op's seconds on stage ``s``. An input from another stage arrives
    ``message_time`` after its op ends; with ``posted`` (an int), its transfer starts no earlier than the
    receiving stage posts the receive, when the op ``posted + 1`` places before it on that stage ends (0: the
    receive is posted as the op starts, the blocking trainer's way). With ``cores``, at most that many ops run
    at once: the op that could start first gets the first free core (list scheduling; ties to the lower stage).
    """
    ends, free, nxt, events = {}, [0.0] * p, [0] * p, []
    done = [[] for _ in range(p)]  # each stage's ops' end times, in its order
    busy = [0.0] * cores if cores else None  # when each core frees up
    left = sum(len(o) for o in orders)
    while left:
        ready = []
        for s, order in enumerate(orders):
            if nxt[s] == len(order):
                continue
            kind, mb, c = order[nxt[s]]
            u = c * p + s
            dep = _input_of(kind, mb, u, p * v)
            if dep is not None and dep not in ends:
                continue
            if dep is None:
                arrives = 0.0
            elif dep[2] % p == s:  # the chunk before it on the same stage: no message
                arrives = ends[dep]
            else:
                before = nxt[s] - 1 - (posted if posted is not None else nxt[s])
                post = done[s][before] if before >= 0 else 0.0  # when this stage posts the receive
                arrives = max(ends[dep], post) + message_time
            ready.append((max(free[s], arrives), s, kind, mb, c, u))
        if not ready:
            raise RuntimeError("the pipeline schedule deadlocked: every stage waits for another")
        for start, s, kind, mb, c, u in (ready if busy is None else [min(ready)]):
            if busy is not None:
                k = min(range(cores), key=busy.__getitem__)
                start = max(start, busy[k])
            free[s] = ends[(kind, mb, u)] = start + durations[kind][s]
            done[s].append(free[s])
            if busy is not None:
                busy[k] = free[s]
            events.append(PipelineEvent(s, mb, c, kind, start, free[s]))
            nxt[s] += 1
            left -= 1
    return sorted(events, key=lambda e: (e.start, e.stage))


def _frees(order: list) -> str:
    """The op that frees a chunk-activation: the weight-gradient pass where the order has one, else the backward."""
    return WEIGHT if any(k == WEIGHT for k, _, _ in order) else BACKWARD


def _peak_held(order: list) -> int:
    """The most chunk-activations a stage holds at once: +1 at each forward, -1 when the last pass needing it ends."""
    held = peak = 0
    frees = _frees(order)
    for kind, _, _ in order:
        held += 1 if kind == FORWARD else -1 if kind == frees else 0
        peak = max(peak, held)
    return peak


def peak_held(kind, stages, microbatches, *, chunks=1, stage=0, weights=None) -> float:
    """The most activation memory a stage holds at once, each chunk's activations weighted (chapter 13's planner).

    Walks the stage's order of ops (no timing is needed): a chunk-forward adds
    ``weights[c]``, its chunk-backward frees it. With equal weights this is
    the peak count of chunk-activations (``p - s`` microbatches for 1F1B on
    stage ``s``; ``(v + 1) p - 1`` chunk-activations, ``p + (p - 1)/v``
    microbatches, on stage 0 interleaved). With unequal ones, such as Llama 3's
    first chunk of the first stage holding a layer fewer than the others, it
    is the peak of the layers' activations held, which need not fall at the
    same op.

    Parameters
    ----------
    kind : {"gpipe", "1f1b", "interleaved"}
    stages, microbatches : int
        ``p`` and ``m`` (>= 1). Any ``m`` is walked; Megatron-LM itself runs the
        interleaved schedule only when ``m`` is a multiple of ``p``.
    chunks : int
        ``v`` (1 but for interleaved).
    stage : int
        Which stage (0-based; stage 0 holds the most).
    weights : sequence of float, optional
        One weight per chunk of that stage, e.g. its layers (default 1 each).

    Returns
    -------
    float
        The peak of the weighted sum held.

    Examples
    --------
    >>> peak_held("1f1b", 4, 8), peak_held("gpipe", 4, 8), peak_held("1f1b", 4, 8, stage=3)
    (4.0, 8.0, 1.0)
    >>> peak_held("interleaved", 16, 32, chunks=4) / 4      # p + (p - 1)/v microbatches' worth
    19.75
    >>> peak_held("interleaved", 16, 32, chunks=4, weights=[1, 2, 2, 2])   # 31 of chunk 0, 16 of each other
    127.0
    """
    kind = check_choice("kind", kind, SIMULATED_SCHEDULES)
    p = check_int("stages", stages, minimum=1)
    m = check_int("microbatches", microbatches, minimum=1)
    v = check_int("chunks", chunks, minimum=2) if kind == "interleaved" else _check_chunks(kind, p, m, chunks)
    s = check_int("stage", stage, minimum=0, maximum=p - 1)
    w = [1.0] * v if weights is None else [check_real("weights", x, minimum=0) for x in weights]
    if len(w) != v:
        raise ValueError(f"weights must have one value per chunk ({v}), got {len(w)}")
    if 2 * m * v > MAX_PIPELINE_OPS:
        raise ValueError(f"microbatches * chunks must be at most {MAX_PIPELINE_OPS // 2}, got {m * v}")
    held = peak = 0.0
    order = _stage_order(kind, p, m, v, s)
    frees = _frees(order)
    for op, _, c in order:
        held += w[c] if op == FORWARD else -w[c] if op == frees else 0.0
        peak = max(peak, held)
    return peak


def _check_chunks(kind: str, stages: int, microbatches: int, chunks) -> int:
    if kind != "interleaved":
        chunks = check_int("chunks", chunks, minimum=1)
        if chunks != 1:
            raise ValueError(f"chunks must be 1 for kind {kind!r} (model chunks are for 'interleaved'), got {chunks}")
        return chunks
    chunks = check_int("chunks", chunks, minimum=2)
    if microbatches % stages:
        raise ValueError(f"microbatches must be a multiple of stages ({stages}) for the interleaved schedule, "
                         f"as Megatron-LM requires; got {microbatches}")
    return chunks


def pipeline_schedule(kind, stages, microbatches, *, forward_time, backward_time, chunks=1, weight_time=None,
                      message_time=0.0, cores=None, posted=None) -> PipelineSchedule:
    """Simulate one step of a pipeline schedule, op by op.

    Parameters
    ----------
    kind : {"gpipe", "1f1b", "interleaved", "zb-h1"}
        The schedule (see the module's docstring for each one's order).
    stages : int
        ``p``, pipeline stages (>= 1).
    microbatches : int
        ``m``, microbatches per step (>= 1; a multiple of ``p`` for interleaved).
    forward_time, backward_time : float
        One stage's forward and backward time for one microbatch, all its
        chunks together, seconds (> 0). One chunk's forward is
        ``forward_time / chunks``.
    chunks : int
        ``v``, model chunks per stage: 1 for ``"gpipe"``, ``"1f1b"`` and
        ``"zb-h1"``, at least 2 for ``"interleaved"``.
    weight_time : float or sequence, optional
        ``"zb-h1"`` only: the part of ``backward_time`` that computes the
        weights' gradients, run as an op of its own (default: half, Qi et
        al.'s ``T_B = T_W``).
    message_time : float
        Seconds an activation or gradient takes from one stage to the next
        (default 0: free communication, the papers' closed forms).
    cores : int, optional
        At most this many ops run at once (default: a processor per stage).
        Models stages that share a machine's cores, as the book's trainer's
        do on a laptop.
    posted : int, optional
        How many ops ahead each receive is posted (``None``: long before); the module's docstring.

    ``forward_time`` and ``backward_time`` may also be sequences, one time
    per stage, for stages of unequal work.

    Returns
    -------
    PipelineSchedule
        ``.iteration_time``, ``.bubble_fraction`` (of the whole step), ``.bubble_ratio`` (to the ideal step),
        ``.peak_in_flight`` and ``.events``; a bad argument raises ``ValueError`` or ``TypeError``, named.

    Examples
    --------
    GPipe, 4 stages, 8 microbatches, 1 s forward and 2 s backward: the step
    takes ``(m + p - 1)(tf + tb) = 11 x 3`` s; the bubble is ``(p-1)/(m+p-1)``
    of the whole step, or ``(p-1)/m`` of the ideal step ``m (tf + tb)``:

    >>> r = pipeline_schedule("gpipe", 4, 8, forward_time=1.0, backward_time=2.0)
    >>> r.iteration_time, round(r.bubble_fraction, 6) == round(3 / 11, 6), r.bubble_ratio
    (33.0, True, 0.375)
    >>> r.peak_in_flight                    # GPipe holds all m on every stage
    (8.0, 8.0, 8.0, 8.0)

    1F1B takes as long, and stage ``s`` holds ``min(p - s, m)``:

    >>> r = pipeline_schedule("1f1b", 4, 8, forward_time=1.0, backward_time=2.0)
    >>> r.iteration_time, r.bubble_ratio, r.peak_in_flight
    (33.0, 0.375, (4.0, 3.0, 2.0, 1.0))

    Two chunks per stage halve the bubble, ``(p-1)(tf+tb)/v = 4.5`` s, a ratio
    ``(p-1)/(v m)`` to the ideal step; stage 0 holds ``p + (p-1)/v``:

    >>> r = pipeline_schedule("interleaved", 4, 8, forward_time=1.0, backward_time=2.0, chunks=2)
    >>> r.iteration_time, r.bubble_time, r.bubble_ratio, r.peak_in_flight
    (28.5, 4.5, 0.1875, (5.5, 4.5, 3.5, 2.5))
    """
    kind = check_choice("kind", kind, SIMULATED_SCHEDULES)
    p = check_int("stages", stages, minimum=1)
    m = check_int("microbatches", microbatches, minimum=1)
    tf, tb, tw, v = _checked_times(kind, p, m, forward_time, backward_time, chunks, weight_time)
    message_time, cores, posted = _checked_messages(message_time, cores, posted)
    durations = {FORWARD: [t / v for t in tf], BACKWARD: [(b - w) / v for b, w in zip(tb, tw)], WEIGHT: tw}
    orders = [_stage_order(kind, p, m, v, s) for s in range(p)]
    events = _simulate(orders, p, v, durations, message_time=message_time, cores=cores, posted=posted)
    return PipelineSchedule(kind=kind, stages=p, microbatches=m, chunks=v, forward_time=_one(tf),
                            backward_time=_one(tb), events=tuple(events),
                            peak_chunks_in_flight=tuple(_peak_held(o) for o in orders), weight_time=_one(tw),
                            message_time=message_time, cores=cores)


def _one(times):
    """A float when every stage takes as long, else the per-stage times."""
    return times[0] if len(set(times)) == 1 else times


def _checked_messages(message_time, cores, posted) -> tuple:
    message_time = check_real("message_time", message_time, minimum=0)
    cores = None if cores is None else check_int("cores", cores, minimum=1)
    return message_time, cores, None if posted is None else check_int("posted", posted, minimum=0)


def _checked_times(kind, p, m, forward_time, backward_time, chunks, weight_time) -> tuple:
    """The stages' forward, backward and weight-gradient times and the chunks, checked."""
    tf, tb = _stage_times("forward_time", forward_time, p), _stage_times("backward_time", backward_time, p)
    v = _check_chunks(kind, p, m, chunks)
    if 2 * p * m * v > MAX_PIPELINE_OPS:
        raise ValueError(f"stages * microbatches * chunks must be at most {MAX_PIPELINE_OPS // 2} "
                         f"(2 ops each), got {p * m * v}")
    return tf, tb, _weight_times(kind, weight_time, tb), v


def _stage_times(name: str, value, p: int) -> tuple:
    """One time per stage (> 0 s): a number for every stage, or a sequence of ``p``."""
    if isinstance(value, (list, tuple)):
        if len(value) != p:
            raise ValueError(f"{name} must be a number or one per stage ({p}), got {len(value)}")
        return tuple(check_real(name, t, minimum=0, strict_min=True) for t in value)
    return (check_real(name, value, minimum=0, strict_min=True),) * p


def _weight_times(kind: str, weight_time, tb: tuple) -> tuple:
    """The weight-gradient part of each stage's backward: ``zb-h1`` only (default half of it), 0 otherwise."""
    if kind != "zb-h1":
        if weight_time is not None:
            raise ValueError(f"weight_time is for kind 'zb-h1' (its split backward), got it for {kind!r}")
        return (0.0,) * len(tb)
    tw = tuple(b / 2 for b in tb) if weight_time is None else _stage_times("weight_time", weight_time, len(tb))
    for b, w in zip(tb, tw):
        if w >= b:
            raise ValueError(f"weight_time must be below backward_time ({b:g} s), got {w:g}")
    return tw


@dataclass(frozen=True)
class ClosedForm:
    """One pipeline schedule's bubble and memory, in closed form (:func:`bubble_closed_forms`).

    ``bubble``: idle seconds per stage and step; ``parameter_copies``: the model's weights each device holds,
    in units of one stage's; ``activations``: the most microbatches' activations a device holds.
    """

    kind: str
    bubble: float
    parameter_copies: int
    activations: int


def bubble_closed_forms(stages, *, forward_time, backward_time, weight_time, overlapped_time) -> dict:
    """DeepSeek-V3's comparison of 1F1B, ZB1P and DualPipe (chapter 12).

    DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" (arXiv:2412.19437), section 3.2.1, Table 2, with ``F`` a
    forward chunk's time, ``B`` a full backward chunk's, ``W`` its weight-gradient part and ``F&B`` two forward
    and backward chunks run overlapped (DualPipe overlaps one direction's forward with the other's backward):

    ====================  ============================  ==========  ===========
    method                bubble                        parameters  activations
    ====================  ============================  ==========  ===========
    1F1B                  ``(PP - 1)(F + B)``           1x          ``PP``
    ZB1P                  ``(PP - 1)(F + B - 2W)``      1x          ``PP``
    DualPipe              ``(PP/2 - 1)(F&B + B - 3W)``  2x          ``PP + 1``
    ====================  ============================  ==========  ===========

    ZB1P is Qi et al.'s ZB-1p, their schedule in 1F1B's memory; with ``B`` the whole backward,
    ``F + B - 2W`` is the handcrafted ZB-H1's ``tf + tb_in - tw``.
    DualPipe feeds microbatches from both ends of the pipeline, so each device holds two copies of its stage's
    parameters (one per direction); its bubble counts half the stages.

    Parameters
    ----------
    stages : int
        ``PP`` (even, >= 2).
    forward_time, backward_time, weight_time, overlapped_time : float
        ``F``, ``B`` (the whole backward), ``W`` (< ``B``) and ``F&B``, seconds (> 0).

    Returns
    -------
    dict
        ``{"1f1b": ClosedForm, "zb1p": ..., "dualpipe": ...}``.

    Examples
    --------
    ``F = W = 1`` and ``B = 2`` (Qi et al.'s equal thirds of a layer's work), ``F&B = 3`` (no gain from
    overlapping), 8 stages: 1F1B idles 21, ZB1P 7, DualPipe 6:

    >>> t = bubble_closed_forms(8, forward_time=1.0, backward_time=2.0, weight_time=1.0, overlapped_time=3.0)
    >>> [(k, f.bubble, f.parameter_copies, f.activations) for k, f in t.items()]
    [('1f1b', 21.0, 1, 8), ('zb1p', 7.0, 1, 8), ('dualpipe', 6.0, 2, 9)]
    """
    pp = check_int("stages", stages, minimum=2)
    if pp % 2:
        raise ValueError(f"stages must be even for DualPipe (it feeds both ends of the pipeline), got {pp}")
    f = check_real("forward_time", forward_time, minimum=0, strict_min=True)
    b = check_real("backward_time", backward_time, minimum=0, strict_min=True)
    w = check_real("weight_time", weight_time, minimum=0, strict_min=True, maximum=b)
    fb = check_real("overlapped_time", overlapped_time, minimum=0, strict_min=True)
    return {"1f1b": ClosedForm("1f1b", (pp - 1) * (f + b), 1, pp),
            "zb1p": ClosedForm("zb1p", (pp - 1) * (f + b - 2 * w), 1, pp),
            "dualpipe": ClosedForm("dualpipe", (pp // 2 - 1) * (fb + b - 3 * w), 2, pp + 1)}


def measured_stage_times(ranks, *, stages, microbatches, skip_first=True) -> tuple:
    """Each stage's mean forward and backward seconds per microbatch, read off a run's rank reports.

    ``ranks`` are reports with ``pp_rank`` and per-step ``forward_seconds`` and
    ``backward_seconds`` (the book's trainer's :class:`~distlib.train.results.RankReport`);
    the first step is left out (its imports, allocations and connections are
    paid once) unless it is the only one. The result feeds
    :func:`pipeline_schedule`'s per-stage ``forward_time`` and ``backward_time``.

    Returns
    -------
    tuple
        ``(forward_times, backward_times)``, one float per stage.

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> ranks = [R(pp_rank=0, forward_seconds=[9.0, 2.0], backward_seconds=[9.0, 4.0]),
    ...          R(pp_rank=1, forward_seconds=[9.0, 4.0], backward_seconds=[9.0, 8.0])]
    >>> measured_stage_times(ranks, stages=2, microbatches=2)
    ((1.0, 2.0), (2.0, 4.0))
    """
    p = check_int("stages", stages, minimum=1)
    m = check_int("microbatches", microbatches, minimum=1)
    out = ([], [])
    for s in range(p):
        mine = [r for r in ranks if r.pp_rank == s]
        if not mine:
            raise ValueError(f"ranks must hold a report for every stage 0 to {p - 1}, none for {s}")
        for times, name in zip(out, ("forward_seconds", "backward_seconds")):
            per_step = [x for r in mine for x in (getattr(r, name)[1:] if skip_first and len(getattr(r, name)) > 1
                                                   else getattr(r, name))]
            times.append(math.fsum(per_step) / len(per_step) / m)
    return tuple(out[0]), tuple(out[1])


def message_time_for_bubble(kind, stages, microbatches, *, forward_time, backward_time, bubble, chunks=1,
                            cores=None, tolerance=1e-4) -> float:
    """The ``message_time`` at which :func:`pipeline_schedule` shows a given bubble: what each message between
    stages must have cost for a measured bubble (chapter 12's laptop runs), found by bisection.

    A measured bubble above the schedule's own, with each stage's measured times and this machine's cores,
    is then a delay per message, which can be set beside a ping-pong's latency: the difference is the time a
    receiving process waits to be scheduled. Returns 0 when the schedule's bubble is already at least
    ``bubble``.

    Examples
    --------
    >>> r = pipeline_schedule("1f1b", 4, 8, forward_time=1.0, backward_time=2.0, message_time=0.25)
    >>> round(message_time_for_bubble("1f1b", 4, 8, forward_time=1.0, backward_time=2.0, bubble=r.bubble_fraction), 3)
    0.25
    """
    target = check_real("bubble", bubble, minimum=0, maximum=1, strict_max=True)
    tol = check_real("tolerance", tolerance, minimum=0, strict_min=True)

    def at(delta):
        return pipeline_schedule(kind, stages, microbatches, forward_time=forward_time, backward_time=backward_time,
                                 chunks=chunks, message_time=delta, cores=cores).bubble_fraction

    if at(0.0) >= target:
        return 0.0
    work = max(_stage_times("forward_time", forward_time, check_int("stages", stages, minimum=1))) + \
        max(_stage_times("backward_time", backward_time, stages))
    lo, hi = 0.0, work
    while at(hi) < target:
        lo, hi = hi, 2 * hi
    while hi - lo > tol * work:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at(mid) < target else (lo, mid)
    return (lo + hi) / 2
