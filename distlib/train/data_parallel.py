"""Data parallelism in the trainer: DDP and ZeRO-1/2/3, how parameters, gradients and Adam moments sit on ranks.

Data parallelism over ``dp`` ranks, with ZeRO stages (Rajbhandari et al.
2020) choosing what each rank keeps whole and what it keeps one shard of;
which parts a stage shards is :func:`distlib.walls.zero_stage`'s
``sharded``, read here, never restated. Every byte moves through the book's
own collectives (:mod:`distlib.engines.algorithms`, ring algorithm):

``zero=0`` (DDP)
    Everything whole on every rank. After the backward pass one
    all-reduce of the flat gradient (all units in one buffer), divided by
    ``dp``; every rank applies the same Adam step.
``zero=1``
    Adam's moments sharded: rank ``r`` owns chunk ``r`` of the flat
    parameter vector (:func:`distlib.chunk_bounds`: lengths differ by at
    most one when ``dp`` does not divide it). After the backward pass a
    reduce-scatter of the flat gradient gives each rank the summed gradient
    of its chunk only; it updates that chunk, and an all-gather (with the
    chunks' ``counts``) brings every rank the whole vector. Not an
    all-reduce: that would send ``(p - 1) / p`` of the gradient more and
    throw away all but a chunk of what it brought; DeepSpeed's stage 1 also
    reduces with a reduce-scatter by default (its ``reduce_scatter`` option).
    Same bytes as DDP.
``zero=2``
    Gradients sharded too, unit by unit as the backward pass makes them (a
    unit being the embeddings, a block, or the head, like one of
    DeepSpeed's gradient buckets): right after a unit's backward, a
    reduce-scatter of its gradient; the rank keeps its chunk and frees the
    rest. Then the update of its chunks and one all-gather per unit. Same
    bytes as DDP.
``zero=3``
    Parameters sharded as well: before each unit's forward, and again
    before its backward, an all-gather of that unit's parameters, freed
    after use; a reduce-scatter of its gradient right after its backward.
    No all-gather after the update. 1.5 times DDP's bytes.

The layouts act on whatever part of the model a rank holds (its pipeline
stage's units, cut by tensor parallelism, :mod:`distlib.train.tensor_parallel`),
over the ranks that hold the same part: the layout's ``replicas``
(:meth:`distlib.layout.Layout.groups`), which the rank program
(:mod:`distlib.train.rank`) hands them as a sub-communicator
(:class:`~distlib.engines.comm.SubComm`) of the world. A unit's forward and
backward go through ``params``, ``release``, ``grad_buffer`` and
``grad_done`` (ZeRO-3 gathers and frees there, ZeRO-2 and 3
reduce-scatter), so the step itself (:class:`distlib.train.pipeline_parallel.Stage`)
is the same for every layout.

What is counted: :class:`Ledger` adds the bytes of every parameter,
gradient and moment array a layout holds, when it allocates it, and
keeps the peak: ZeRO-3's gathered unit and ZeRO-2's whole unit gradient
(before its reduce-scatter) included. The collectives' own work buffers
are not (the ring's scratch, the copy ``reduce_scatter`` reduces in, the
vector ``allgather`` returns before it replaces the old one): an engine's
in-place collectives need none of them. Bytes sent are counted where the
collectives send them (:class:`~distlib.engines.comm.CountingComm`).
"""

from __future__ import annotations

import numpy as np

from ..engines.algorithms import allgather, allreduce, reduce_scatter
from ..ring import chunk_bounds
from ..walls import zero_stage
from .adam import Adam
from .microbatches import scale_accumulated
from .overlap import plan_buckets

__all__ = ["PARTS", "Ledger", "Shards", "Replicated", "ShardedOptimizer", "ShardedGradients", "ShardedParameters",
           "make_layout", "forward_backward"]

PARTS = ("weights", "grads", "optimizer")
"""What a :class:`Ledger` counts, named as :class:`distlib.walls.StateBytes` names them."""


class Ledger:
    """Bytes of model state one rank holds now, by part, and the most it ever held (:attr:`peak`).

    >>> ledger = Ledger()
    >>> ledger.hold("weights", np.zeros(4)); ledger.hold("grads", np.zeros(2)); ledger.free("grads", np.zeros(2))
    >>> ledger.now, ledger.peak, ledger.at_peak
    ({'weights': 32, 'grads': 0, 'optimizer': 0}, 48, {'weights': 32, 'grads': 16, 'optimizer': 0})
    """

    def __init__(self):
        self.now = dict.fromkeys(PARTS, 0)
        self.peak = 0
        self.at_peak = dict(self.now)
        """The parts at the moment of the peak."""

    def hold(self, part: str, array) -> None:
        self.now[part] += int(array.nbytes)
        total = sum(self.now.values())
        if total > self.peak:
            self.peak, self.at_peak = total, dict(self.now)

    def free(self, part: str, array) -> None:
        self.now[part] -= int(array.nbytes)


class Shards:
    """Rank ``rank``'s chunk of each of several flat segments of lengths ``sizes``, over ``p`` ranks.

    >>> s = Shards([10, 3], 4, 1)
    >>> s.counts, s.ranges, s.size
    ([[3, 3, 2, 2], [1, 1, 1, 0]], [(3, 6), (1, 2)], 4)
    """

    def __init__(self, sizes, p: int, rank: int):
        self.bounds = [chunk_bounds(n, p) for n in sizes]
        self.counts = [np.diff(b).tolist() for b in self.bounds]
        self.ranges = [(int(b[rank]), int(b[rank + 1])) for b in self.bounds]
        self.size = sum(hi - lo for lo, hi in self.ranges)

    def pieces(self, flat) -> list:
        """Views of ``flat`` (the chunks laid end to end, :attr:`size` elements), one per segment."""
        out, start = [], 0
        for lo, hi in self.ranges:
            out.append(flat[start : start + hi - lo])
            start += hi - lo
        return out


class _Held:
    """Bytes a layout holds before the array exists (a collective in flight will hand it over)."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes


class _Layout:
    """What every layout shares: the units, the data-parallel group, Adam, the ledger; and, when it overlaps,
    the background thread and its channel over the same group (:mod:`distlib.train.overlap`)."""

    def __init__(self, specs, units, comm, adam: Adam, ledger: Ledger, *, background=None, buckets: bool = False,
                 bucket_bytes: int = 25 * 2**20, prefetch: int = 0, microbatches: int = 1):  # fmt: skip
        self.specs, self.comm, self.adam, self.ledger = specs, comm, adam, ledger
        self.sizes = [spec.size for spec in specs]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int).tolist()
        self.p = comm.size
        self.thread, self.bg_comm = background if background is not None else (None, None)
        self.buckets = bool(buckets) and self.p > 1
        self.prefetch = int(prefetch) if self.p > 1 else 0
        self.microbatches = microbatches
        if (self.buckets or self.prefetch) and self.thread is None:
            raise ValueError("buckets and prefetch need background=(thread, comm)")
        self.bucket_ranges = plan_buckets(self.sizes, bucket_bytes) if self.buckets else []
        self._bucket_of = {k: b for b, (lo, hi) in enumerate(self.bucket_ranges) for k in range(lo, hi)}
        self._final = [0] * len(self.sizes)  # backward passes seen per unit this step
        self._in_flight: dict = {}  # bucket -> Handle

    @staticmethod
    def _wait(handle):
        return handle.wait()

    def begin_step(self, order) -> None:
        """A step starts; ``order`` lists the units in the order their parameters will be asked for."""
        self._final = [0] * len(self.sizes)

    def _unit_final(self, k: int) -> list:
        """Unit ``k``'s backward for one microbatch is done: the buckets whose every unit is now final, their
        accumulated gradient already turned into the mean's (as the step's flush does for the whole vector
        without buckets, :meth:`scales_accumulated`)."""
        self._final[k] += 1
        if self._final[k] < self.microbatches:
            return []
        b = self._bucket_of[k]
        lo, hi = self.bucket_ranges[b]
        if not all(self._final[u] >= self.microbatches for u in range(lo, hi)):
            return []
        if self.microbatches > 1:
            scale_accumulated(self.grads[self._bucket_slice(b)], self.microbatches)
        return [b]

    @property
    def scales_accumulated(self) -> bool:
        """Whether the layout scales the accumulated gradient itself, bucket by bucket, before reducing it."""
        return self.buckets

    def _bucket_slice(self, b: int) -> slice:
        lo, hi = self.bucket_ranges[b]
        return slice(self.offsets[lo], self.offsets[hi])

    def _whole(self, units, part: str):
        flat = np.concatenate(units) if units is not None else np.zeros(self.offsets[-1])
        self.ledger.hold(part, flat)
        return flat

    def _unit(self, flat, k: int):
        return flat[self.offsets[k] : self.offsets[k + 1]]

    def params(self, k: int):
        """Unit ``k``'s parameters (flat), to run its forward or backward pass."""
        return self._unit(self.weights, k)

    def release(self, k: int) -> None:
        """Unit ``k``'s forward pass is done."""

    def grad_buffer(self, k: int):
        """Where unit ``k``'s backward pass writes its gradient."""
        return self._unit(self.grads, k)

    def grad_done(self, k: int) -> None:
        """Unit ``k``'s backward pass is done."""

    def owned(self, k: int) -> tuple:
        """``(start, values)``: the chunk of unit ``k`` this data-parallel rank answers for, and where it starts."""
        lo, hi = Shards([self.sizes[k]], self.p, self.comm.rank).ranges[0]
        return lo, self.params(k)[lo:hi]

    # -- checkpoints (distlib.train.checkpoint): the state in the local flat vector's coordinates --------------

    def state_ranges(self) -> list:
        """The ranges ``(start, stop)`` of the local flat vector (this rank's units laid end to end) whose
        parameters and Adam moments this rank writes to a checkpoint: together, over the data-parallel group,
        each element once. The moments' ranges where the layout shards them; DDP's chunk of the vector."""
        return self._moment_ranges()

    def _moment_ranges(self) -> list:
        """Where ``m`` and ``v`` sit in the local flat vector, in their order."""
        return [(0, self.offsets[-1])]

    def _weights_of(self, ranges):
        return np.concatenate([self.weights[a:b] for a, b in ranges]) if ranges else np.zeros(0)

    def state(self) -> tuple:
        """``(ranges, weights, m, v)`` this rank writes: :meth:`state_ranges` and the values there, in order."""
        ranges = self.state_ranges()
        if ranges == self._moment_ranges():
            return ranges, self._weights_of(ranges), self.m.copy(), self.v.copy()
        # DDP: the moments are whole, like the parameters; this rank writes its chunk of each
        cut = lambda arr: np.concatenate([arr[a:b] for a, b in ranges])  # noqa: E731
        return ranges, cut(self.weights), cut(self.m), cut(self.v)

    def load_state(self, weights, m, v) -> None:
        """Take the parameters and moments of a checkpoint: ``weights``, ``m``, ``v`` whole over the local flat
        vector (this rank's units, tensor-parallel part), each cut as the layout holds it."""
        moments = self._moment_ranges()
        self.m[...] = np.concatenate([m[a:b] for a, b in moments])
        self.v[...] = np.concatenate([v[a:b] for a, b in moments])
        self._load_weights(weights)

    def _load_weights(self, weights) -> None:
        self.weights[...] = weights


class Replicated(_Layout):
    """``zero=0``: plain data parallelism (DDP), one all-reduce of the whole flat gradient; with buckets, one
    all-reduce per bucket, started as the backward pass finishes the bucket's units."""

    def __init__(self, specs, units, comm, adam, ledger, **overlap):
        super().__init__(specs, units, comm, adam, ledger, **overlap)
        self.weights = self._whole(units, "weights")
        self.grads = self._whole(None, "grads")
        self.m, self.v = self._whole(None, "optimizer"), self._whole(None, "optimizer")

    def grad_done(self, k: int) -> None:
        if self.buckets:
            for b in self._unit_final(k):
                self._in_flight[b] = self.thread.start(allreduce, self.bg_comm, self.grads[self._bucket_slice(b)],
                                                       what="allreduce (bucket)")  # fmt: skip

    def state_ranges(self) -> list:
        return [Shards([self.offsets[-1]], self.p, self.comm.rank).ranges[0]]  # every replica holds it all

    def update(self, step: int) -> None:
        if self.buckets:
            for b in range(len(self.bucket_ranges)):  # every bucket was started, in the same order on every rank
                self._wait(self._in_flight.pop(b))
        else:
            allreduce(self.comm, self.grads)
        self.grads /= self.p
        self.adam.update(self.weights, self.grads, self.m, self.v, step=step)


class ShardedOptimizer(_Layout):
    """``zero=1``: Adam's moments for one chunk of the flat vector; reduce-scatter, update the chunk, all-gather.

    With buckets the flat vector is cut into the buckets (in the vector's order) and the rank owns one chunk
    of each: a bucket is reduce-scattered as soon as its units are final, updated chunk by chunk, gathered.
    """

    def __init__(self, specs, units, comm, adam, ledger, **overlap):
        super().__init__(specs, units, comm, adam, ledger, **overlap)
        self.weights = self._whole(units, "weights")
        self.grads = self._whole(None, "grads")
        ranges = sorted(self.bucket_ranges) if self.buckets else [(0, len(self.sizes))]
        self.segments = [(self.offsets[lo], self.offsets[hi]) for lo, hi in ranges]
        self._segment_of_bucket = {b: ranges.index(r) for b, r in enumerate(self.bucket_ranges)}
        self.chunk = Shards([hi - lo for lo, hi in self.segments], self.p, comm.rank)
        self.m, self.v = np.zeros(self.chunk.size), np.zeros(self.chunk.size)
        ledger.hold("optimizer", self.m)
        ledger.hold("optimizer", self.v)

    def _moment_ranges(self) -> list:
        return [(start + lo, start + hi) for (start, _), (lo, hi) in zip(self.segments, self.chunk.ranges)]

    def grad_done(self, k: int) -> None:
        if self.buckets:
            for b in self._unit_final(k):
                lo, hi = self.segments[self._segment_of_bucket[b]]
                self._in_flight[self._segment_of_bucket[b]] = self.thread.start(
                    reduce_scatter, self.bg_comm, self.grads[lo:hi], what="reduce_scatter (bucket)")

    def update(self, step: int) -> None:
        pieces = [self.chunk.pieces(a) for a in (self.m, self.v)]
        for s, (start, _) in enumerate(self.segments):
            if self.buckets:
                mine = self._wait(self._in_flight.pop(s))
            else:  # the summed gradient of this rank's chunk only
                mine = reduce_scatter(self.comm, self.grads[start : self.segments[s][1]])
            self.ledger.hold("grads", mine)
            mine /= self.p
            lo, hi = self.chunk.ranges[s]
            own = self.weights[start + lo : start + hi]
            self.adam.update(own, mine, pieces[0][s], pieces[1][s], step=step)
            self.ledger.free("grads", mine)
            self.weights[start : self.segments[s][1]] = allgather(self.comm, own, counts=self.chunk.counts[s])


class ShardedGradients(_Layout):
    """``zero=2``: also the gradient, one chunk per unit, reduce-scattered as soon as the unit's backward ends."""

    def __init__(self, specs, units, comm, adam, ledger, **overlap):
        super().__init__(specs, units, comm, adam, ledger, **overlap)
        self.weights = self._whole(units, "weights")
        self.shards = Shards(self.sizes, self.p, comm.rank)
        self.grad_chunks = np.zeros(self.shards.size)
        self.m, self.v = np.zeros(self.shards.size), np.zeros(self.shards.size)
        ledger.hold("grads", self.grad_chunks)
        ledger.hold("optimizer", self.m)
        ledger.hold("optimizer", self.v)
        self._grad = None

    def _moment_ranges(self) -> list:
        return [(self.offsets[k] + lo, self.offsets[k] + hi) for k, (lo, hi) in enumerate(self.shards.ranges)]

    def grad_buffer(self, k: int):
        self._grad = np.empty(self.sizes[k])  # the whole unit's gradient, only until it is reduce-scattered
        self.ledger.hold("grads", self._grad)
        return self._grad

    def grad_done(self, k: int) -> None:
        if self.buckets:  # under the next unit's backward; the whole gradient held until it ends
            self._in_flight[k] = (self.thread.start(reduce_scatter, self.bg_comm, self._grad,
                                                    what="reduce_scatter (unit)"), self._grad)  # fmt: skip
            self._settle(block=False)
        else:
            self.shards.pieces(self.grad_chunks)[k][...] = reduce_scatter(self.comm, self._grad)
            self.ledger.free("grads", self._grad)
        self._grad = None

    def _settle(self, *, block: bool) -> None:
        """Take in the reduce-scatters that have ended (all of them with ``block``), freeing their gradients."""
        for k in list(self._in_flight):
            handle, grad = self._in_flight[k]
            if not (block or handle.done()):
                break  # they end in the order they started
            self.shards.pieces(self.grad_chunks)[k][...] = self._wait(handle)
            self.ledger.free("grads", grad)
            del self._in_flight[k]

    def update(self, step: int) -> None:
        self._settle(block=True)
        self.grad_chunks /= self.p
        pieces = [self.shards.pieces(a) for a in (self.grad_chunks, self.m, self.v)]
        for k, (lo, hi) in enumerate(self.shards.ranges):
            unit = self._unit(self.weights, k)
            self.adam.update(unit[lo:hi], pieces[0][k], pieces[1][k], pieces[2][k], step=step)
            unit[...] = allgather(self.comm, unit[lo:hi], counts=self.shards.counts[k])


class ShardedParameters(_Layout):
    """``zero=3``: the parameters too; a unit is all-gathered before its forward and its backward, freed after."""

    def __init__(self, specs, units, comm, adam, ledger, **overlap):
        super().__init__(specs, units, comm, adam, ledger, **overlap)
        self.shards = Shards(self.sizes, self.p, comm.rank)
        self.weight_chunks = np.concatenate([u[lo:hi] for u, (lo, hi) in zip(units, self.shards.ranges)])
        self.grad_chunks = np.zeros(self.shards.size)
        self.m, self.v = np.zeros(self.shards.size), np.zeros(self.shards.size)
        for part, array in (("weights", self.weight_chunks), ("grads", self.grad_chunks), ("optimizer", self.m),
                            ("optimizer", self.v)):  # fmt: skip
            ledger.hold(part, array)
        self._gathered, self._grad = {}, None
        self._order, self._next, self._ahead = [], 0, {}  # prefetch: the step's order of use, where it is, in flight

    def begin_step(self, order) -> None:
        super().begin_step(order)
        self._order, self._next, self._ahead = list(order), 0, {}

    def _start_gather(self, k: int):
        piece = self.shards.pieces(self.weight_chunks)[k]
        held = _Held(self.sizes[k] * self.weight_chunks.itemsize)
        self.ledger.hold("weights", held)  # the gathered unit, held from the moment its all-gather starts
        return self.thread.start(allgather, self.bg_comm, piece, counts=self.shards.counts[k],
                                 what="allgather (prefetch)"), held  # fmt: skip

    def params(self, k: int):
        if self.prefetch:
            return self._prefetched(k)
        if k not in self._gathered:
            piece = self.shards.pieces(self.weight_chunks)[k]
            self._gathered[k] = allgather(self.comm, piece, counts=self.shards.counts[k])
            self.ledger.hold("weights", self._gathered[k])
        return self._gathered[k]

    def _prefetched(self, k: int):
        """Unit ``k``'s parameters, the next use in the step's order: gathered ahead (or now, if it is first),
        and the next ``prefetch`` uses' all-gathers started before it is handed over."""
        at = self._next
        if at >= len(self._order) or self._order[at] != k:
            raise RuntimeError(f"ZeRO-3 prefetch: unit {k} asked for out of the step's order {self._order} "
                               f"(position {at})")  # fmt: skip
        self._next += 1
        if at in self._ahead:
            handle, held = self._ahead.pop(at)
            gathered = self._wait(handle)
            self.ledger.free("weights", held)
        else:
            gathered = allgather(self.comm, self.shards.pieces(self.weight_chunks)[k], counts=self.shards.counts[k])
        self.ledger.hold("weights", gathered)
        for ahead in range(self._next, min(self._next + self.prefetch, len(self._order))):
            if ahead not in self._ahead:
                self._ahead[ahead] = self._start_gather(self._order[ahead])
        self._gathered[k] = gathered
        return gathered

    def release(self, k: int) -> None:
        self.ledger.free("weights", self._gathered.pop(k))

    def grad_buffer(self, k: int):
        self._grad = np.empty(self.sizes[k])
        self.ledger.hold("grads", self._grad)
        return self._grad

    _moment_ranges = ShardedGradients._moment_ranges

    def _weights_of(self, ranges):
        assert ranges == self._moment_ranges()  # the chunks it holds, in their order
        return self.weight_chunks.copy()

    def _load_weights(self, weights) -> None:
        self.weight_chunks[...] = np.concatenate([weights[a:b] for a, b in self._moment_ranges()])

    _reduce_grad = ShardedGradients.grad_done  # ZeRO-2's: reduce-scatter the unit's gradient (in the background
    _settle = ShardedGradients._settle  # with buckets), keep this rank's chunk

    def grad_done(self, k: int) -> None:
        self._reduce_grad(k)
        self.release(k)

    def owned(self, k: int) -> tuple:
        return self.shards.ranges[k][0], self.shards.pieces(self.weight_chunks)[k]

    def update(self, step: int) -> None:
        self._settle(block=True)
        self.grad_chunks /= self.p
        self.adam.update(self.weight_chunks, self.grad_chunks, self.m, self.v, step=step)


_LAYOUTS = {0: Replicated, 1: ShardedOptimizer, 2: ShardedGradients, 3: ShardedParameters}


def make_layout(zero: int, specs, units, comm, *, adam: Adam, ledger: Ledger, **overlap) -> _Layout:
    """The layout of ZeRO stage ``zero`` over the data-parallel group ``comm``.

    The class follows from what :func:`distlib.walls.zero_stage` says the stage shards.

    Parameters
    ----------
    zero : int
        ZeRO stage, 0 to 3.
    specs : list of UnitSpec
        The units as this rank holds them (its tensor-parallel part).
    units : list of ndarray
        Their parameters, flat, as every data-parallel rank starts them.
    comm : Comm
        The data-parallel group.
    adam : Adam
    ledger : Ledger
        Where the layout counts the bytes it holds.
    **overlap
        What it hides (:mod:`distlib.train.overlap`): ``background=(thread, comm)`` (a
        :class:`~distlib.engines.tagged.Background` and the same group over its
        :class:`~distlib.engines.tagged.TaggedComm`), ``buckets`` and ``bucket_bytes``, ``prefetch`` (ZeRO-3's
        depth, 0 for none), ``microbatches`` (a unit's gradient is final after that many backward passes).

    Returns
    -------
    Replicated, ShardedOptimizer, ShardedGradients or ShardedParameters

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> from distlib.train.model import Config, init_units, unit_specs
    >>> c = Config(layers=1)
    >>> def held(comm):
    ...     ledger = Ledger()
    ...     make_layout(3, unit_specs(c), init_units(c, 0), comm, adam=Adam(), ledger=ledger)
    ...     return ledger.peak
    >>> run_threads(held, 2) == [4 * 8 * c.params // 2] * 2    # weights, gradient, m and v: half each
    True
    """
    sharded = zero_stage(zero).sharded
    level = 3 if "weights" in sharded else 2 if "grads" in sharded else 1 if "optimizer" in sharded else 0
    return _LAYOUTS[level](specs, units, comm, adam, ledger, **overlap)
