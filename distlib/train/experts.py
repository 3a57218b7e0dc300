"""A mixture-of-experts MLP for the book's model: the router, its top-k rule, the capacity rule, and the experts.

With ``Config(experts=E, top_k=K)`` every block's MLP (:mod:`distlib.train.model`) becomes a router and ``E``
expert MLPs, each of the dense MLP's shapes (``w1``, ``b1``, ``w2``, ``b2``). For the ``T`` tokens a rank holds
(rows of ``h``, the block's second LayerNorm output):

Routing (Mixtral's rule, Jiang et al. 2024, arXiv:2401.04088)
    ``probs = softmax(h @ wr)`` over the ``E`` experts; each token picks the ``K`` largest (ties: the lower
    expert first); its gates are those ``K`` probabilities renormalised to sum to one, which is Mixtral's
    ``softmax(TopK(h @ wr))``. With ``K = 1`` the gate is always 1 and the router gets no gradient (Switch
    Transformer, arXiv:2101.03961, keeps the raw probability there; this module keeps one rule).
Capacity (GShard's order, Lepikhin et al. 2020, arXiv:2006.16668; Switch's factor)
    With a capacity factor ``F`` each expert takes at most ``ceil(F * T * K / E)`` of the ``T * K``
    assignments (:func:`capacity`). Places are given choice by choice, and within a choice by position: every
    token's first choice in token order, then every second choice, ... (GShard's top-2 gating, as fairscale's
    and DeepSpeed's ``top2gating`` count ``locations2`` after all of ``mask1``). An assignment past its
    expert's capacity is *dropped*: the expert does not see that token, and its gate counts for nothing (the
    kept gates are not renormalised again). A token all of whose choices are dropped passes through the
    block's residual only. Without a capacity factor nothing is dropped.
Output
    ``y[t] = sum over kept choices c of gate[t, c] * (gelu(h[t] @ w1_e + b1_e) @ w2_e + b2_e)``,
    ``e`` the expert of choice ``c``; the block adds ``y`` to its residual.

Tensor parallelism (Megatron's rule, as the dense MLP): each expert's ``w1`` and ``b1`` are cut by columns and
its ``w2`` by rows over the tensor-parallel ranks, the router ``wr`` and ``b2`` whole on each. Every rank of the
group has the same rows ``h``, so it routes them alike; each expert's output is then a partial sum, summed over
the group by the ``reduce`` hook the model is handed (one sum for all the local experts' rows, before the ``b2``
are added), and backward the rows' gradient likewise (one sum before the router's term is added).

The experts need not be on this rank. :func:`moe_forward` hands the rows for each expert to an *exchange*
(:class:`LocalExperts` here, every expert on this rank; :class:`distlib.train.expert_parallel.ExpertParallel`
over ranks, with two all-to-alls), which brings them to the rank holding the expert and the outputs back; the
gates are applied on the token's own rank. The exchange also counts the routing: per expert the assignments
kept, and those dropped (:class:`Routed`).

Every gradient is written out by hand, as the rest of the model (the tests check them against central
differences).
"""

from __future__ import annotations

import numpy as np

from ..experts_model import capacity, keep_mask  # the chapter's rule (chapter 15) is the trainer's

__all__ = ["EXPERT_TENSORS", "capacity", "Routing", "route", "Routed", "Plan", "LocalExperts", "expert_names",
           "moe_forward", "moe_backward"]

EXPERT_TENSORS = ("w1", "b1", "w2", "b2")
"""Each expert's tensors, named ``w1.3`` for expert 3's ``w1`` in a block's unit."""


def expert_names(e: int) -> list:
    """The tensor names of expert ``e`` in a block's unit.

    >>> expert_names(2)
    ['w1.2', 'b1.2', 'w2.2', 'b2.2']
    """
    return [f"{name}.{e}" for name in EXPERT_TENSORS]


class Routing:
    """Where ``T`` tokens go: ``probs`` (T, E), ``choice`` (T, K) their experts, best first, ``gates`` (T, K),
    ``kept`` (T, K) whether each assignment got a place, ``capacity`` (``None``: unbounded)."""

    def __init__(self, probs, choice, gates, kept, capacity):
        self.probs, self.choice, self.gates, self.kept, self.capacity = probs, choice, gates, kept, capacity

    def per_expert(self) -> np.ndarray:
        """Assignments each expert computes (kept only), shape (E,)."""
        return np.bincount(self.choice[self.kept], minlength=self.probs.shape[1])

    @property
    def dropped(self) -> int:
        """Assignments dropped for want of capacity."""
        return int(self.kept.size - self.kept.sum())


def route(logits, top_k: int, *, factor=None) -> Routing:
    """Route tokens by their router logits (T, E): top-k, Mixtral's renormalised gates, GShard's capacity order.

    Examples
    --------
    Four tokens, two experts, top-1, capacity ``ceil(1.0 * 4 * 1 / 2) = 2``: the third token that prefers
    expert 0 is dropped (the first two, in token order, took its places).

    >>> r = route(np.array([[2.0, 0.0], [1.0, 0.0], [0.0, 1.0], [3.0, 0.0]]), 1, factor=1.0)
    >>> r.choice[:, 0].tolist(), r.kept[:, 0].tolist(), r.per_expert().tolist(), r.dropped
    ([0, 0, 1, 0], [True, True, True, False], [2, 1], 1)
    >>> np.allclose(route(np.array([[1.0, 2.0, 0.0]]), 2).gates, [[1 / (1 + np.e ** -1), 1 / (1 + np.e)]])
    True
    """
    logits = np.asarray(logits, dtype=float)
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = shifted / shifted.sum(axis=-1, keepdims=True)
    tokens, experts = probs.shape
    choice = np.argsort(-probs, axis=-1, kind="stable")[:, :top_k]  # best first; ties: the lower expert
    picked = np.take_along_axis(probs, choice, axis=-1)
    gates = picked / picked.sum(axis=-1, keepdims=True)
    cap = capacity(tokens, experts, top_k, factor)
    return Routing(probs, choice, gates, keep_mask(choice, experts, cap), cap)


class Routed:
    """Routing counts of a run, per step: the assignments each expert computed, and those dropped.

    >>> r = Routed(3); r.record(np.array([1, 0, 2]), 1); r.record(np.array([0, 1, 0]), 0); r.end_step()
    >>> r.tokens_per_expert, r.dropped_tokens
    ([[1, 1, 2]], [1])
    """

    def __init__(self, experts: int):
        self.experts = experts
        self.tokens_per_expert, self.dropped_tokens = [], []
        self._now, self._dropped = np.zeros(experts, dtype=np.int64), 0

    def record(self, per_expert, dropped: int) -> None:
        """One layer's routing of one batch of tokens."""
        self._now += per_expert
        self._dropped += int(dropped)

    def end_step(self) -> None:
        """Close the step's counts (summed over its layers and microbatches)."""
        self.tokens_per_expert.append(self._now.tolist())
        self.dropped_tokens.append(self._dropped)
        self._now, self._dropped = np.zeros(self.experts, dtype=np.int64), 0


class Plan:
    """One layer's exchange: ``leaving[d]`` rows this rank sends rank ``d`` of its group; ``arriving[s, j]`` rows
    rank ``s`` sends this one for its local expert ``j``."""

    def __init__(self, leaving, arriving):
        self.leaving, self.arriving = np.asarray(leaving, dtype=int), np.asarray(arriving, dtype=int)


class LocalExperts:
    """The exchange with every expert on this rank (one process, or ``ep = 1``): the rows stay where they are.

    An exchange has ``first`` and ``count`` (the experts this rank holds: ``first`` to ``first + count - 1``),
    ``plan(per_expert)`` (a :class:`Plan`, from the rows this rank has for each of the ``E`` experts),
    ``send(rows, plan)`` (rows in global expert order to the experts' ranks; what arrives, source by source) and
    ``back(rows, plan)`` (the reverse), and a :class:`Routed` ``routed`` or ``None``.
    """

    def __init__(self, experts: int, *, routed: Routed | None = None):
        self.first, self.count, self.routed = 0, experts, routed

    def plan(self, per_expert) -> Plan:
        return Plan([int(np.sum(per_expert))], np.asarray(per_expert)[None, :])

    def send(self, rows, plan):
        return rows

    back = send


def _expert_order(routing: Routing) -> tuple:
    """The kept assignments ``(token, choice)`` sorted by expert, and within an expert in capacity order."""
    tokens, choices = np.nonzero(routing.kept.T)[::-1]  # choice-major, then token: GShard's order
    experts = routing.choice[tokens, choices]
    order = np.argsort(experts, kind="stable")
    return tokens[order], choices[order], experts[order]


def _by_expert(plan) -> tuple:
    """For rows that arrive source by source (each source's block by local expert), the permutation that lays
    them expert by expert (source order within an expert), and the rows per local expert."""
    plan = np.asarray(plan)
    starts = np.concatenate([[0], np.cumsum(plan.ravel())]).reshape(-1)[:-1].reshape(plan.shape)
    perm = [np.arange(starts[s, j], starts[s, j] + plan[s, j]) for j in range(plan.shape[1])
            for s in range(plan.shape[0])]  # fmt: skip
    perm = np.concatenate(perm).astype(int) if perm else np.zeros(0, dtype=int)
    return perm, plan.sum(axis=0)


def _weights(p, e: int) -> tuple:
    return tuple(p[name] for name in expert_names(e))


def _sum(reduce, x):
    """``x`` summed in place over the tensor-parallel ranks (nothing to do without ``reduce``)."""
    if reduce is not None:
        reduce(x)
    return x


def _experts_forward(p, rows, sizes, first: int, mlp, reduce=None) -> tuple:
    """Each local expert on its rows (laid expert by expert, ``sizes`` each): outputs and what backward needs.

    ``mlp`` gives an expert's output before its ``b2`` (a partial sum under tensor parallelism): the outputs are
    summed over the tensor-parallel ranks once, then each expert's ``b2`` added once."""
    out, caches, at = np.empty_like(rows), [], 0
    for j, n in enumerate(sizes):
        out[at : at + n], cache = mlp(rows[at : at + n], *_weights(p, first + j))
        caches.append(cache)
        at += n
    _sum(reduce, out)
    at = 0
    for j, n in enumerate(sizes):
        out[at : at + n] += p[f"b2.{first + j}"]
        at += n
    return out, caches


def moe_forward(p: dict, h, *, top_k: int, mlp, factor=None, exchange=None, reduce=None) -> tuple:
    """The mixture's output for rows ``h`` (T, hidden), before the residual: ``(y, cache)``.

    ``p`` holds the router ``wr`` (hidden, E) and the local experts' tensors (:func:`expert_names`); ``mlp(x,
    w1, b1, w2, b2)`` is one expert on its rows, ``(out, cache)``, ``out`` before ``b2`` (the model's MLP);
    ``exchange`` moves rows to the experts' ranks and back (default: :class:`LocalExperts`, every expert here);
    ``reduce(buf)`` sums in place over the tensor-parallel ranks (``None``: one rank, the experts whole).

    >>> rng = np.random.default_rng(0)
    >>> p = {"wr": rng.standard_normal((4, 2))}
    >>> for e in range(2):
    ...     p.update({f"w1.{e}": rng.standard_normal((4, 8)), f"b1.{e}": np.zeros(8),
    ...               f"w2.{e}": rng.standard_normal((8, 4)), f"b2.{e}": np.zeros(4)})
    >>> h, relu = rng.standard_normal((5, 4)), lambda x, w1, b1, w2, b2: (np.maximum(x @ w1 + b1, 0) @ w2, None)
    >>> y2, _ = moe_forward(p, h, top_k=2, mlp=relu)      # top-2 of 2 experts: every token sees both
    >>> y1, cache = moe_forward(p, h, top_k=1, mlp=relu, factor=0.2)    # capacity ceil(0.2 * 5 / 2) = 1 each
    >>> y2.shape, cache[0].dropped, int((np.abs(y1).sum(axis=1) == 0).sum())   # 3 tokens: residual only
    ((5, 4), 3, 3)
    """
    experts = p["wr"].shape[1]
    exchange = LocalExperts(experts) if exchange is None else exchange
    routing = route(h @ p["wr"], top_k, factor=factor)
    tokens, choices, chosen = _expert_order(routing)
    per_expert = np.bincount(chosen, minlength=experts)
    if exchange.routed is not None:
        exchange.routed.record(per_expert, routing.dropped)
    plan = exchange.plan(per_expert)
    arrived = exchange.send(h[tokens], plan)
    perm, sizes = _by_expert(plan.arriving)
    out, caches = _experts_forward(p, arrived[perm], sizes, exchange.first, mlp, reduce)
    done = np.empty_like(out)
    done[perm] = out
    o = exchange.back(done, plan)  # each assignment's expert output, in the order the rows were sent
    y = np.zeros_like(h)
    np.add.at(y, tokens, routing.gates[tokens, choices][:, None] * o)
    return y, (routing, tokens, choices, plan, perm, sizes, arrived[perm], caches, o)


def _experts_backward(p, g, dout, rows, sizes, caches, first: int, mlp_back):
    """Each local expert's weight gradients into ``g``; the gradient of its input rows (expert by expert)."""
    drows, at = np.empty_like(rows), 0
    for j, (n, cache) in enumerate(zip(sizes, caches)):
        e = first + j
        drows[at : at + n] = mlp_back(dout[at : at + n], rows[at : at + n], cache, *_weights(p, e),
                                      *_weights(g, e))  # fmt: skip
        at += n
    return drows


def moe_backward(p: dict, g: dict, dy, h, cache, *, mlp_back, exchange=None, reduce=None):
    """The backward of :func:`moe_forward`: the router's and local experts' gradients into ``g``; ``dh``.

    ``mlp_back(d, x, cache, w1, b1, w2, b2, gw1, gb1, gw2, gb2)`` is one expert's backward: its weights'
    gradients into the last four, the gradient of ``x`` returned (a partial sum under tensor parallelism, summed
    here through ``reduce``). The router's gradient is a replicated weight's: every tensor-parallel rank has the
    same rows and gates, so the same whole gradient, with nothing to sum."""
    routing, tokens, choices, plan, perm, sizes, rows, caches, o = cache
    exchange = LocalExperts(p["wr"].shape[1]) if exchange is None else exchange
    gates = routing.gates[tokens, choices][:, None]
    dgates = np.zeros_like(routing.gates)
    dgates[tokens, choices] = (dy[tokens] * o).sum(axis=1)  # dropped assignments: no gradient
    arrived = exchange.send(gates * dy[tokens], plan)  # the outputs' gradients to the experts
    drows = _sum(reduce, _experts_backward(p, g, arrived[perm], rows, sizes, caches, exchange.first, mlp_back))
    done = np.empty_like(drows)
    done[perm] = drows
    dh = np.zeros_like(h)
    np.add.at(dh, tokens, exchange.back(done, plan))
    # gates = picked / sum(picked): d picked = (dgates - sum(dgates * gates)) / sum(picked)
    picked = np.take_along_axis(routing.probs, routing.choice, axis=-1)
    dpicked = (dgates - (dgates * routing.gates).sum(axis=-1, keepdims=True)) / picked.sum(axis=-1, keepdims=True)
    dprobs = np.zeros_like(routing.probs)
    np.put_along_axis(dprobs, routing.choice, dpicked, axis=-1)
    dlogits = routing.probs * (dprobs - (dprobs * routing.probs).sum(axis=-1, keepdims=True))
    g["wr"][...] = h.T @ dlogits
    return dh + dlogits @ p["wr"].T
