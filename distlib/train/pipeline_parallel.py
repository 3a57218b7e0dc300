"""Pipeline parallelism in the trainer: which units each stage holds, the order of its ops, and the stage itself.

The model's units (:func:`distlib.train.model.unit_specs`: the embeddings,
``layers`` blocks, the head) are cut into ``pp * chunks`` contiguous model
chunks of ``layers / (pp * chunks)`` blocks each; the first chunk also
holds the embeddings and the last one the head. Chunk ``u`` (a *virtual
stage*) sits on stage ``u % pp``, so stage ``s`` holds chunks ``s``,
``s + pp``, ... round-robin, as Megatron-LM's interleaved schedule places
them (Narayanan et al. 2021, section 2.2.2); with one chunk per stage that
is the plain contiguous cut of GPipe and 1F1B. Like Megatron-LM, the
number of layers must divide evenly.

The order of a stage's ops is not written here: :func:`stage_ops` reads it
off :func:`distlib.pipeline_schedule`'s events, the one home of the
schedules, so the simulated pipeline and the real one run the same order.

:class:`Stage` runs them. With one stage and one microbatch it is the plain
training step of every other layout (DDP, ZeRO, tensor and sequence
parallelism): one forward and one backward over all units, no messages, the
gradient written where the data-parallel layout wants it. With more, a
forward op receives the chunk's input activations from the stage before
(blocking: the wait is the stage's idle time), runs the chunk's units and
sends its output on with a non-blocking send; a backward op receives the
gradient of the chunk's output, runs the units' backward passes, adds their
gradients into the step's sum and sends the input's gradient back. Only
receives block, and :func:`~distlib.pipeline_schedule` has placed every op
of every stage, so the ops' dependencies have an order: the pipeline cannot
deadlock, 1F1B included. The stage sends through the communicator it is
given, so its bytes are counted where the rank counts them. It imports no
engine: the rank program (:mod:`distlib.train.rank`) hands it its groups.
"""

from __future__ import annotations

import time

import numpy as np

from .._check import check_choice, check_int
from ..pipeline_schedule import PIPELINE_SCHEDULES, pipeline_schedule
from .model import backward_unit, forward_unit

__all__ = ["chunk_units", "stage_units", "stage_ops", "message_tag", "Clock", "activation_bytes", "Stage"]


def chunk_units(layers: int, pp: int, chunks: int = 1) -> list:
    """Unit indices (0 the embeddings, ``1..layers`` the blocks, ``layers + 1`` the head) of each model chunk.

    Examples
    --------
    >>> chunk_units(4, 2)
    [[0, 1, 2], [3, 4, 5]]
    >>> chunk_units(4, 2, 2)
    [[0, 1], [2], [3], [4, 5]]
    """
    layers, pp, chunks = (check_int(n, v, minimum=1) for n, v in (("layers", layers), ("pp", pp), ("chunks", chunks)))
    if layers % (pp * chunks):
        raise ValueError(f"pp * chunks must divide layers ({layers}), got {pp} * {chunks}")
    per = layers // (pp * chunks)
    out = [list(range(1 + u * per, 1 + (u + 1) * per)) for u in range(pp * chunks)]
    out[0].insert(0, 0)
    out[-1].append(layers + 1)
    return out


def stage_units(stage: int, layers: int, pp: int, chunks: int = 1) -> list:
    """The chunks stage ``stage`` holds, in chunk order: a list of unit-index lists (chunks ``stage + c * pp``).

    >>> stage_units(0, 4, 2, 2)
    [[0, 1], [3]]
    """
    stage = check_int("stage", stage, minimum=0, maximum=pp - 1)
    every = chunk_units(layers, pp, chunks)
    return [every[c * pp + stage] for c in range(chunks)]


def stage_ops(schedule: str, pp: int, microbatches: int, stage: int, *, chunks: int = 1) -> list:
    """Stage ``stage``'s ops in the order it runs them: ``(kind, microbatch, chunk)``, ``kind`` ``"F"`` or ``"B"``.

    Read off :func:`distlib.pipeline_schedule`'s events (any positive
    times give the same order per stage).

    Examples
    --------
    >>> stage_ops("1f1b", 2, 3, 0)      # one warm-up forward, then one forward, one backward
    [('F', 0, 0), ('F', 1, 0), ('B', 0, 0), ('F', 2, 0), ('B', 1, 0), ('B', 2, 0)]
    """
    schedule = check_choice("schedule", schedule, PIPELINE_SCHEDULES)
    result = pipeline_schedule(schedule, pp, microbatches, forward_time=1.0, backward_time=2.0, chunks=chunks)
    return [(e.kind, e.microbatch, e.chunk) for e in result.stage_events(stage)]


def message_tag(kind: str, microbatch: int, virtual: int, microbatches: int) -> int:
    """The point-to-point tag of the message into virtual stage ``virtual``: activations ``"F"``, gradients ``"B"``.

    Unique per message of a step, and never 0 (the tag the book's collectives use).

    >>> message_tag("F", 0, 1, 4), message_tag("B", 0, 1, 4), message_tag("F", 3, 2, 4)
    (9, 10, 23)
    """
    kind = check_choice("kind", kind, ("F", "B"))
    return 1 + 2 * (virtual * microbatches + microbatch) + (kind == "B")


def activation_bytes(cache) -> int:
    """Bytes of the arrays in a unit's cache (what its forward keeps for its backward), each counted once.

    Arrays that share memory (views of one buffer, found by their address and size) count once.

    >>> x = np.zeros(4)
    >>> activation_bytes([x, (x, np.ones(2)), {"y": x[:2]}])
    64
    """
    seen, stack = set(), [cache]
    while stack:
        item = stack.pop()
        if isinstance(item, np.ndarray):
            seen.add((item.__array_interface__["data"][0], item.nbytes))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return sum(n for _, n in seen)


class Clock:
    """Seconds of one step: computing (forward, backward) and waiting for a neighbour."""

    def __init__(self):
        self.forward = self.backward = self.idle = 0.0

    def wait(self, req) -> None:
        start = time.perf_counter()
        req.wait()
        self.idle += time.perf_counter() - start


class Stage:
    """This rank's model chunks, its data-parallel layout and its pipeline neighbours: :meth:`step` runs one step.

    Parameters
    ----------
    config : Config
    stage, pp, chunks, microbatches : int
        This stage, the stages, model chunks per stage, microbatches per step.
    layout
        From :func:`~distlib.train.data_parallel.make_layout` over the stage's units, in chunk order.
    chunk_units : list of list of int
        Per chunk, the model's unit indices (:func:`stage_units`).
    pp_comm : Comm
        The ``pp`` ranks of this pipeline (rank ``s`` is stage ``s``).
    reduce : callable or None
        The tensor-parallel sum, as :func:`~distlib.train.model.forward_unit` takes it.
    ledger : Ledger
    sp : SequenceParallel, optional
        Sequence parallelism over the stage's tensor-parallel group (instead of ``reduce``): the activations
        the stages exchange are this rank's positions.
    cp : ContextParallel, optional
        Context parallelism (:mod:`distlib.train.context_parallel`): the microbatches hold this rank's
        positions of every sequence only.
    receiver : distlib.engines.tagged.Background, optional
        :mod:`distlib.train.overlap`'s ``pp``: a thread that takes the stage's receives, each posted one op
        ahead, so a transfer runs while the op before it computes (waiting for it is still idle time).
    moe : optional
        With experts: the exchange the blocks hand their tokens to and count their routing in
        (:func:`distlib.train.expert_parallel.moe_exchange`).

    Attributes
    ----------
    unit_seconds : ndarray, shape (2, units)
        The last step's seconds in each unit's forward (row 0) and backward (row 1) pass, this rank's units in
        chunk order: the model's own work (with tensor or sequence parallelism, their collectives inside it),
        not ZeRO-3's gathers.
    activation_peak : int
        The most bytes of activations the stage has held for its backward passes at once (the caches of the
        microbatches in flight, :func:`activation_bytes`), since the start.
    """

    def __init__(self, *, config, stage, pp, chunks, microbatches, layout, chunk_units, pp_comm, reduce, ledger,
                 sp=None, cp=None, receiver=None, moe=None):  # fmt: skip
        self.config, self.stage, self.pp, self.chunks, self.m = config, stage, pp, chunks, microbatches
        self.moe = moe
        self.receiver, self._posted = receiver, {}
        self.layout, self.comm, self.reduce, self.sp, self.cp = layout, pp_comm, reduce, sp, cp
        seq = config.seq if cp is None else config.seq // cp.size  # this rank's positions of each sequence
        self.positions = seq if sp is None else seq // sp.size  # of each sequence, sent between stages
        self.activations = self.activation_peak = 0
        self.last_unit = config.layers + 1
        self.local, start = [], 0  # per chunk: (local index, model unit index) of its units
        for units in chunk_units:
            self.local.append([(start + i, u) for i, u in enumerate(units)])
            start += len(units)
        # With several microbatches a unit's gradient is computed apart, then added into the step's sum; with
        # one it is written where the layout wants it (ZeRO-2 and 3 reduce-scatter it from there).
        self.accumulates = microbatches > 1
        if self.accumulates:
            self.scratch = np.empty(max(layout.sizes))
            ledger.hold("grads", self.scratch)

    def _virtual(self, chunk: int) -> int:
        return chunk * self.pp + self.stage

    def _source_tag(self, kind, mb, chunk) -> tuple:
        source = (self._virtual(chunk) + (-1 if kind == "F" else 1)) % self.pp
        return source, message_tag(kind, mb, self._virtual(chunk), self.m)

    def _receive(self, kind, mb, chunk, shape, clock):
        posted = self._posted.pop((kind, mb, chunk), None)
        if posted is not None:  # posted an op ahead (overlap pp): wait for it to have arrived
            handle, buf = posted
            clock.wait(handle)
            return buf.reshape(shape)
        buf = np.empty(int(np.prod(shape)))
        source, tag = self._source_tag(kind, mb, chunk)
        clock.wait(self.comm.irecv(buf, source, tag=tag))
        return buf.reshape(shape)

    def _receives(self, kind, mb, chunk) -> bool:
        """Whether the op receives its input: all but chunk 0 of stage 0's forwards and the head's backwards."""
        if kind == "F":
            return self._virtual(chunk) > 0
        return self.local[chunk][-1][1] != self.last_unit

    def _post(self, op, rows: int) -> None:
        """Hand op ``op``'s receive to the receiver thread now, if it has one and it is not posted yet."""
        kind, mb, chunk = op
        if op in self._posted or not self._receives(kind, mb, chunk):
            return
        buf = np.empty(rows * self.positions * self.config.hidden)
        source, tag = self._source_tag(kind, mb, chunk)
        self._posted[op] = (self.receiver.start(self.comm.recv, buf, source, tag=tag, what="recv (pp)"), buf)

    def unit_order(self, ops) -> list:
        """The units' local indices in the order the ops ask for their parameters (ZeRO-3's prefetch order)."""
        order = []
        for kind, _, chunk in ops:
            units = [k for k, _ in self.local[chunk]]
            order += units if kind == "F" else units[::-1]
        return order

    def _send(self, kind, mb, chunk, x, pending) -> None:
        to = self._virtual(chunk) + (1 if kind == "F" else -1)
        buf = np.ascontiguousarray(x).reshape(-1)
        pending.append((self.comm.isend(buf, to % self.pp, tag=message_tag(kind, mb, to, self.m)), buf))

    def forward(self, mb, chunk, tokens, targets, caches, losses, clock, pending) -> None:
        """Microbatch ``mb`` through chunk ``chunk``: receive its input (but on chunk 0 of stage 0), run, send on."""
        c, u0 = self.config, self._virtual(chunk)
        x = tokens if u0 == 0 else self._receive("F", mb, chunk, (len(tokens), self.positions, c.hidden), clock)
        start, caches[mb, chunk] = time.perf_counter(), []
        for k, unit in self.local[chunk]:
            head = unit == self.last_unit
            weights = self.layout.params(k)  # (ZeRO-3 gathers it here: communication, not the unit's compute)
            began = time.perf_counter()
            x, cache = forward_unit(self.layout.specs[k], weights, x, config=c,
                                    targets=targets if head else None, reduce=self.reduce, sp=self.sp,
                                    cp=self.cp, moe=self.moe)  # fmt: skip
            self.unit_seconds[0, k] += time.perf_counter() - began
            self.layout.release(k)
            caches[mb, chunk].append(cache)
        self._hold(activation_bytes(caches[mb, chunk]))
        clock.forward += time.perf_counter() - start
        if self.local[chunk][-1][1] == self.last_unit:
            losses[mb] = x
        else:
            self._send("F", mb, chunk, x, pending)

    def backward(self, mb, chunk, rows, caches, clock, pending) -> None:
        """The backward of ``mb`` through ``chunk``: receive the output's gradient (but at the head), run, send back."""
        c = self.config
        last = self.local[chunk][-1][1] == self.last_unit
        dy = None if last else self._receive("B", mb, chunk, (rows, self.positions, c.hidden), clock)
        start = time.perf_counter()
        held = caches.pop((mb, chunk))
        kept = activation_bytes(held)
        for (k, _), cache in zip(reversed(self.local[chunk]), reversed(held)):
            grad = self.scratch[: self.layout.sizes[k]] if self.accumulates else self.layout.grad_buffer(k)
            weights = self.layout.params(k)
            began = time.perf_counter()
            dy = backward_unit(self.layout.specs[k], weights, dy, cache, grad, config=c,
                               reduce=self.reduce, sp=self.sp, cp=self.cp, moe=self.moe)  # fmt: skip
            self.unit_seconds[1, k] += time.perf_counter() - began
            if self.accumulates:
                self.layout.grad_buffer(k)[...] += grad
            self.layout.grad_done(k)
        clock.backward += time.perf_counter() - start
        self._hold(-kept)
        if self._virtual(chunk) > 0:
            self._send("B", mb, chunk, dy, pending)

    def _hold(self, n_bytes: int) -> None:
        self.activations += n_bytes
        self.activation_peak = max(self.activation_peak, self.activations)

    def step(self, ops, pieces) -> tuple:
        """Run ``ops`` over the microbatches ``pieces`` (``(tokens, targets)`` each) up to the flush.

        Returns ``(losses, clock, ran)``: the microbatches' losses (on the
        stage holding the head; ``None`` elsewhere), the step's
        :class:`Clock` and the ops as they ran.
        """
        if self.accumulates:
            self.layout.grads[...] = 0.0
        self.layout.begin_step(self.unit_order(ops))
        self.unit_seconds = np.zeros((2, len(self.layout.sizes)))
        caches, losses, clock, pending, ran = {}, [None] * self.m, Clock(), [], []
        for i, (kind, mb, chunk) in enumerate(ops):
            tokens, targets = pieces[mb]
            if self.receiver is not None:  # this op's receive, and the next op's, ahead of this op's compute
                for op in ops[i : i + 2]:
                    self._post(op, len(pieces[op[1]][0]))
            if kind == "F":
                self.forward(mb, chunk, tokens, targets, caches, losses, clock, pending)
            else:
                self.backward(mb, chunk, len(tokens), caches, clock, pending)
            ran.append(f"{kind}{mb}.{chunk}")
        for req, _ in pending:
            clock.wait(req)
        return (losses if losses[0] is not None else None), clock, ran
