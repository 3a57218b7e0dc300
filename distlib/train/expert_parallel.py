"""Expert parallelism in the trainer: each rank of an expert-parallel group holds ``E / ep`` of every block's experts.

With ``--experts E --ep P`` the ``P`` consecutive data-parallel replicas of :meth:`distlib.layout.Layout.groups`'
``ep`` split each block's experts: rank ``i`` of the group holds experts ``i E / P`` to ``(i + 1) E / P - 1``
(GShard's placement, Lepikhin et al. 2020, arXiv:2006.16668). Everything else is whole on every rank, as
without experts. Each rank routes its own tokens (:mod:`distlib.train.experts`: the same rule, the same
capacity, applied to its batch), then per block:

forward
    an all-to-all of each expert's row counts (``E / P`` integers to each rank: what the receivers size their
    buffers by), the **dispatch** (:func:`distlib.engines.alltoall.alltoallv`: every row to the rank holding
    its expert), the experts on what arrived, and the **combine** (the outputs back the same way reversed); the
    gates are applied on the token's rank;
backward
    two more: the outputs' gradients to the experts, and their inputs' gradients back.

The gradients (:class:`ExpertLayout`). The non-expert parameters are reduced over the ``dp x cp`` replicas, by
the run's ZeRO stage, as before. Each expert's gradient on its rank already adds up what every rank of its
group sent it; the ranks that hold the same experts (``expert_replicas``, one per group) add theirs, and the
sum is divided by all the replicas, as the dense gradient is: the global batch's mean. So each expert
gradient is scaled by ``1 / ep`` and then averaged over ``expert_replicas`` (Megatron-LM's
``expert_gradient_scaling_factor``, ``1 / dp`` over the expert data-parallel group). The experts' parameters,
gradients and Adam moments sit in a data-parallel layout of their own, of the same ZeRO stage, over
``expert_replicas``: a rank holds ``1 / ep`` of the experts' state (ZeRO stages 0 to 3 all work).

With tensor parallelism the groups are formed per tensor-parallel index (the replicas are those of one index),
so the all-to-alls run among the ranks of the same index, each carrying that rank's cut of the experts
(:mod:`distlib.train.experts`: ``w1``, ``b1`` by columns, ``w2`` by rows): a rank holds ``1 / (ep tp)`` of the
experts' state, but for their ``b2``, whole on every tensor-parallel rank.

Checkpoints (:mod:`distlib.train.checkpoint`) name every range by the whole model: in a block's unit (as the
tensor-parallel rank cuts it) the non-expert tensors come first, then the experts one after another, so the
non-expert part is the unit's first values and this rank's experts a range after them
(:meth:`ExpertLayout.saved_parts`); a checkpoint written at one ``ep`` is read back whole and resumed at any
other layout, and one written without experts split resumed with them split.

Not supported with ``ep`` above 1 (refused in one line, :meth:`distlib.layout.Layout.problem` and the
launcher): microbatches above 1 (the step would accumulate a unit's gradient in one flat buffer, and here it
is two) and ``--overlap``.
"""

from __future__ import annotations

import numpy as np

from ..engines.alltoall import alltoall, alltoallv
from .data_parallel import make_layout
from .experts import LocalExperts, Plan, Routed, expert_names
from .model import UnitSpec

__all__ = ["ExpertParallel", "JoinedSpec", "ExpertLayout", "expert_layout", "moe_exchange", "ep_run_problem"]


def ep_run_problem(layout, *, overlap: bool) -> str | None:
    """What a run with ``ep`` above 1 does not do yet, as one line naming the flag; ``None`` if nothing.

    >>> from distlib.layout import Layout
    >>> print(ep_run_problem(Layout(dp=2, ep=2), overlap=True))
    --overlap with --ep 2: expert parallelism runs its collectives blocking; use --overlap none
    """
    if layout.ep > 1 and overlap:
        return f"--overlap with --ep {layout.ep}: expert parallelism runs its collectives blocking; use --overlap none"
    return None


class ExpertParallel(LocalExperts):
    """The exchange over an expert-parallel group ``comm``: this rank holds ``experts / comm.size`` experts.

    Examples
    --------
    Two ranks, four experts: rank 0 sends one row to expert 3 (on rank 1), rank 1 two rows to expert 0.

    >>> from distlib.engines.comm import run_threads
    >>> def step(c):
    ...     ex = ExpertParallel(c, 4)
    ...     rows = np.full((1 + c.rank, 2), float(c.rank))
    ...     plan = ex.plan([0, 0, 0, 1] if c.rank == 0 else [2, 0, 0, 0])
    ...     arrived = ex.send(rows, plan)
    ...     return ex.first, plan.arriving.tolist(), arrived.tolist(), ex.back(arrived + 10, plan).tolist()
    >>> run_threads(step, 2)
    [(0, [[0, 0], [2, 0]], [[1.0, 1.0], [1.0, 1.0]], [[10.0, 10.0]]), (2, [[0, 1], [0, 0]], [[0.0, 0.0]], [[11.0, 11.0], [11.0, 11.0]])]
    """

    def __init__(self, comm, experts: int, *, routed: Routed | None = None):
        if experts % comm.size:
            raise ValueError(f"ep ({comm.size}) must divide the {experts} experts")
        super().__init__(experts // comm.size, routed=routed)
        self.comm, self.first = comm, comm.rank * (experts // comm.size)

    def plan(self, per_expert) -> Plan:
        """The counts' all-to-all: each rank learns how many rows every rank will send each of its experts."""
        per_expert = np.asarray(per_expert, dtype=np.float64)  # the engines' buffers: float64 counts, exact
        arriving = alltoall(self.comm, per_expert).reshape(self.comm.size, self.count)
        return Plan(per_expert.reshape(self.comm.size, self.count).sum(axis=1), np.rint(arriving))

    def send(self, rows, plan):
        """Rows in global expert order to the ranks holding their experts (the dispatch); what arrived."""
        width = rows.shape[1]
        got = alltoallv(self.comm, np.ascontiguousarray(rows).reshape(-1), (plan.leaving * width).tolist(),
                        recv_counts=(plan.arriving.sum(axis=1) * width).tolist())  # fmt: skip
        return np.asarray(got).reshape(-1, width)

    def back(self, rows, plan):
        """The reverse (the combine): rows that arrived, in their order, back to the ranks that sent them."""
        width = rows.shape[1]
        got = alltoallv(self.comm, np.ascontiguousarray(rows).reshape(-1), (plan.arriving.sum(axis=1) * width).tolist(),
                        recv_counts=(plan.leaving * width).tolist())  # fmt: skip
        return np.asarray(got).reshape(-1, width)


def moe_exchange(config, ep_comm=None):
    """The hook a rank hands the model with experts: :class:`LocalExperts` (``ep_comm`` of one rank or ``None``)
    or :class:`ExpertParallel`, counting the routing in a :class:`~distlib.train.experts.Routed`; ``None``
    without experts."""
    if not config.moe:
        return None
    routed = Routed(config.experts)
    if ep_comm is None or ep_comm.size == 1:
        return LocalExperts(config.experts, routed=routed)
    return ExpertParallel(ep_comm, config.experts, routed=routed)


class JoinedSpec:
    """A block as a rank with experts holds it: its non-expert tensors and its experts', two flat vectors.

    :meth:`views` takes the pair ``(dense, experts)`` (or one flat vector, the two end to end)."""

    def __init__(self, dense: UnitSpec, experts: UnitSpec):
        self.name, self.parts = dense.name, (dense, experts)
        self.tensors = dense.tensors + experts.tensors
        self.size = dense.size + experts.size

    def views(self, flat) -> dict:
        dense, experts = self.parts
        a, b = flat if isinstance(flat, tuple) else (flat[: dense.size], flat[dense.size :])
        return {**dense.views(a), **experts.views(b)}


def _split_block(spec: UnitSpec, flat, experts: int, first: int, count: int) -> tuple:
    """``(dense spec, dense flat, experts' spec, experts' flat)``: the local experts cut out of a whole block."""
    every = {name for e in range(experts) for name in expert_names(e)}
    mine = {name for e in range(first, first + count) for name in expert_names(e)}
    views = spec.views(flat)
    dense = UnitSpec(spec.name, tuple(t for t in spec.tensors if t[0] not in every))
    local = UnitSpec(f"{spec.name}.experts", tuple(t for t in spec.tensors if t[0] in mine))
    cut = lambda part: np.concatenate([views[n].ravel() for n, _, _ in part.tensors])  # noqa: E731
    return dense, cut(dense), local, cut(local)


class ExpertLayout:
    """Two data-parallel layouts as one (:func:`~distlib.train.data_parallel.make_layout`'s face, what the
    step asks of it): the non-expert units over the replicas, the local experts over ``expert_replicas``."""

    scales_accumulated = False

    def __init__(self, dense, experts, specs, blocks: dict, ep: int, shifts=None):
        self.dense, self.experts, self.specs, self.blocks, self.ep = dense, experts, specs, blocks, ep
        self.parts = (dense, experts)
        self.sizes = [spec.size for spec in specs]
        self.shifts = shifts or {}  # block k: (its unit's size, where this rank's experts start in it)
        self._grads = {}

    # -- checkpoints (distlib.train.checkpoint): each part's ranges in the units' coordinates -----------------

    def saved_parts(self) -> list:
        """``[(part, units, shifts)]``: each part's layout, which of this rank's units (by position) each of the
        part's units is, and where in that unit (as the tensor-parallel rank cuts it, every expert) it starts:
        the non-expert part at 0, the experts after the non-expert tensors and the experts of lower ep ranks."""
        order = sorted(self.blocks, key=self.blocks.get)
        return [(self.dense, list(range(len(self.specs))), [0] * len(self.specs)),
                (self.experts, order, [self.shifts[k][1] for k in order])]

    def load_state(self, weights, m, v) -> None:
        """Take a checkpoint's state: ``weights``, ``m``, ``v`` over this rank's units end to end, each unit as
        its tensor-parallel rank cuts it with every expert; each part takes its own ranges."""
        dense, experts, at = [], [], 0
        for k, spec in enumerate(self.specs):  # the blocks in order: the experts part's units in order too
            if k not in self.blocks:
                dense.append((at, at + spec.size))
                at += spec.size
                continue
            whole, start = self.shifts[k]
            dense.append((at, at + spec.parts[0].size))
            experts.append((at + start, at + start + spec.parts[1].size))
            at += whole
        pick = lambda arr, ranges: np.concatenate([arr[a:b] for a, b in ranges])  # noqa: E731
        self.dense.load_state(*(pick(arr, dense) for arr in (weights, m, v)))
        self.experts.load_state(*(pick(arr, experts) for arr in (weights, m, v)))

    def begin_step(self, order) -> None:
        self.dense.begin_step(order)
        self.experts.begin_step([self.blocks[k] for k in order if k in self.blocks])

    def params(self, k: int):
        d = self.dense.params(k)
        return (d, self.experts.params(self.blocks[k])) if k in self.blocks else d

    def release(self, k: int) -> None:
        self.dense.release(k)
        if k in self.blocks:
            self.experts.release(self.blocks[k])

    def grad_buffer(self, k: int):
        d = self.dense.grad_buffer(k)
        if k not in self.blocks:
            return d
        self._grads[k] = self.experts.grad_buffer(self.blocks[k])
        return d, self._grads[k]

    def grad_done(self, k: int) -> None:
        self.dense.grad_done(k)
        if k in self.blocks:
            self._grads.pop(k)[...] *= 1.0 / self.ep  # the sum over expert_replicas then divides by dp x cp
            self.experts.grad_done(self.blocks[k])

    def update(self, step: int) -> None:
        self.dense.update(step)
        self.experts.update(step)


def expert_layout(zero: int, specs, units, *, config, ep_rank: int, ep: int, comm, expert_comm, adam, ledger,
                  **overlap) -> ExpertLayout:  # fmt: skip
    """This rank's :class:`ExpertLayout` of ZeRO stage ``zero``: its units (``specs``, ``units``: whole blocks,
    every expert) cut into their non-expert part, over ``comm`` (the replicas), and its experts (those of
    ``ep_rank`` of ``ep``), over ``expert_comm`` (``expert_replicas``).

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> from distlib.train.adam import Adam
    >>> from distlib.train.data_parallel import Ledger
    >>> from distlib.train.model import Config, init_units, unit_specs
    >>> c = Config(layers=1, experts=4, top_k=2)
    >>> def sizes(comm):      # experts 2 and 3 of 4 (ep rank 1 of 2), on one rank for the example
    ...     return expert_layout(0, unit_specs(c), init_units(c, 0), config=c, ep_rank=1, ep=2, comm=comm,
    ...                          expert_comm=comm, adam=Adam(), ledger=Ledger()).sizes
    >>> whole = [s.size for s in unit_specs(c)]
    >>> run_threads(sizes, 1)[0] == [whole[0], whole[1] - 2 * (32 * 128 * 2 + 128 + 32), whole[2]]   # 2 experts fewer
    True
    """
    count = config.experts // ep
    dense_specs, dense_units, expert_specs, expert_units, joined, blocks, shifts = [], [], [], [], [], {}, {}
    for k, (spec, flat) in enumerate(zip(specs, units)):
        if not spec.name.startswith("block"):
            dense_specs.append(spec), dense_units.append(flat), joined.append(spec)
            continue
        dense, d, local, e = _split_block(spec, flat, config.experts, ep_rank * count, count)
        shifts[k] = (spec.size, _experts_start(spec, dense, ep_rank * count))
        blocks[k] = len(expert_specs)
        dense_specs.append(dense), dense_units.append(d), expert_specs.append(local), expert_units.append(e)
        joined.append(JoinedSpec(dense, local))
    dense = make_layout(zero, dense_specs, dense_units, comm, adam=adam, ledger=ledger, **overlap)
    experts = make_layout(zero, expert_specs, expert_units, expert_comm, adam=adam, ledger=ledger)
    return ExpertLayout(dense, experts, joined, blocks, ep, shifts)


def _experts_start(spec: UnitSpec, dense: UnitSpec, first: int) -> int:
    """Where expert ``first``'s tensors start in the block ``spec``, whose non-expert tensors ``dense`` come first
    (:func:`distlib.train.model.unit_specs`' order: checked, a checkpoint's ranges rely on it)."""
    offsets = spec.offsets()
    if offsets[expert_names(0)[0]][0] != dense.size:
        raise ValueError(f"{spec.name}: the experts' tensors must follow every non-expert one")
    return offsets[expert_names(first)[0]][0]
