"""The book's fixed small transformer in NumPy, float64, with its backward pass written out.

A decoder-only language model: token and position embeddings, ``layers``
pre-LayerNorm blocks (causal multi-head attention with separate ``q``,
``k``, ``v`` and ``o`` weights, then a GELU MLP of ``4 * hidden``), a final
LayerNorm, an output projection and the mean cross-entropy of predicting
each next token. Every gradient is derived by hand (the tests check them
against central finite differences).

The parameters come in *units*, the pieces a layout moves as one: the
embeddings, each block, and the head (final norm and output projection).
A unit is stored as one flat float64 vector; :class:`UnitSpec` says where
each tensor sits in it and how Megatron-style tensor parallelism splits it
over ``tp`` ranks (Shoeybi et al. 2019): ``"col"`` tensors are cut along
their last axis (``q``, ``k``, ``v`` by heads, the MLP's first matmul and
its bias), ``"row"`` tensors along their first (``o``, the MLP's second
matmul), ``"rep"`` tensors are whole on every rank. A block's forward then
needs one sum over the tensor-parallel ranks after each row-parallel
matmul, and its backward one sum of each column-parallel input gradient:
the model asks the ``reduce`` callable it is given for both, so this
module runs no communication itself.

Sequence parallelism (``sp``, Korthikanti et al. 2022, as Megatron-LM's
``--sequence-parallel``) goes further: the activations *outside* the
tensor-parallel regions (the layer norms, the residual adds, the bias
``b2`` added after the MLP) are cut along the sequence, each of the ``tp`` ranks holding
``seq / tp`` consecutive positions of every sequence. The model is handed a
:class:`distlib.train.sequence_parallel.SequenceParallel` (the tensor-parallel group's all-gather and
reduce-scatter along the sequence) instead of ``reduce``, and per block:

* forward: an **all-gather** of ``ln1``'s output before ``q``, ``k``, ``v``
  and of ``ln2``'s before ``w1`` (each column-parallel region gets the whole
  sequence), a **reduce-scatter** after ``wo`` and after ``w2`` (in place of
  the row-parallel all-reduce: each rank keeps the sum of its positions only);
* backward: the two swap: an all-gather of the output gradient where the
  forward reduce-scattered, a reduce-scatter of the input gradient where it
  all-gathered; and one all-reduce of the gradients of the replicated
  norms, which only saw this rank's positions (:data:`SP_SUMMED`).

So a block sends what plain tensor parallelism sends (a ring all-reduce is a
reduce-scatter and an all-gather, :func:`distlib.cost_coefficients`), plus
that small all-reduce. The embeddings are computed for this rank's
positions only (Megatron's scatter to the sequence-parallel region after
the embedding: its backward is an all-gather of the output gradient, so
the replicated tables get the whole gradient on every rank), and the
sequence is all-gathered again before the head (final norm and output
projection, replicated here: not vocabulary-parallel as in Megatron), whose
backward then just keeps this rank's positions, without communication.

Context parallelism (``cp``, chapter "Context parallelism") cuts the
sequence instead: the model is handed a
:class:`distlib.train.context_parallel.ContextParallel`, every unit sees
only that rank's positions of each sequence (``cp.positions``, which the
embeddings also look their positions up with), and each attention asks
``cp`` for its output and, backward, for the gradients of its queries, keys
and values; the rest of a block works position by position, unchanged.

The chapter on parallel training (Part IV) teaches with it; the layouts
that run it over ranks are in :mod:`distlib.train.data_parallel`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._check import check_int, check_real
from .data import GLOBAL_BATCH
from .experts import moe_backward, moe_forward

__all__ = ["Config", "UnitSpec", "unit_specs", "init_units", "shard_unit", "forward_unit", "backward_unit",
           "loss_and_grads", "LN_EPS", "SP_SUMMED"]

LN_EPS = 1e-5
"""LayerNorm's epsilon, added to the variance."""

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


@dataclass(frozen=True)
class Config:
    """The model's sizes (the defaults are the book's model: a step takes milliseconds).

    Examples
    --------
    >>> Config().head_dim, Config().ffn
    (8, 128)
    >>> Config().params
    105280
    """

    vocab: int = 64
    hidden: int = 32
    heads: int = 4
    seq: int = 16
    layers: int = 8
    batch: int = GLOBAL_BATCH
    """Sequences in a step's global batch, which the data-parallel replicas and the microbatches split."""
    experts: int = 0
    """Experts per block (0: the dense MLP); each block's MLP is then a router and this many expert MLPs
    (:mod:`distlib.train.experts`)."""
    top_k: int = 0
    """Experts each token is routed to (1 to ``experts``; 0 without experts)."""
    capacity_factor: float | None = None
    """Each expert takes at most ``ceil(capacity_factor * tokens * top_k / experts)`` of a rank's assignments,
    the rest dropped (:func:`distlib.train.experts.capacity`); ``None``: no bound, nothing dropped."""

    @property
    def ffn(self) -> int:
        """The MLP's hidden width, four times ``hidden``."""
        return 4 * self.hidden

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def params(self) -> int:
        """Parameters of the whole model."""
        return sum(spec.size for spec in unit_specs(self))

    def __post_init__(self):
        for name in ("vocab", "hidden", "heads", "seq", "layers", "batch"):
            check_int(name, getattr(self, name), minimum=1)
        if self.hidden % self.heads:
            raise ValueError(f"hidden must be a multiple of heads ({self.heads}), got {self.hidden}")
        check_int("experts", self.experts, minimum=0)
        if self.experts:
            check_int("top_k", self.top_k, minimum=1, maximum=self.experts)
        elif self.top_k or self.capacity_factor is not None:
            raise ValueError(f"{'top_k' if self.top_k else 'capacity_factor'} needs experts (experts above 0)")
        if self.capacity_factor is not None:
            check_real("capacity_factor", self.capacity_factor, minimum=0.0, strict_min=True)

    @property
    def moe(self) -> bool:
        """Whether the blocks' MLPs are mixtures of experts."""
        return self.experts > 0


@dataclass(frozen=True)
class UnitSpec:
    """One unit's tensors: ``(name, shape, split)`` in storage order, ``split`` one of ``"rep"``, ``"col"``, ``"row"``.

    ``shapes`` are this rank's (after a ``tp``-way split).
    """

    name: str
    tensors: tuple

    @property
    def size(self) -> int:
        """Elements of the unit's flat vector."""
        return sum(math.prod(shape) for _, shape, _ in self.tensors)

    def offsets(self) -> dict:
        """``{tensor name: (start, stop)}`` in the flat vector."""
        out, start = {}, 0
        for name, shape, _ in self.tensors:
            out[name] = (start, start + math.prod(shape))
            start += math.prod(shape)
        return out

    def views(self, flat) -> dict:
        """``{tensor name: array}``, views into ``flat`` (which must have :attr:`size` elements)."""
        if len(flat) != self.size:
            raise ValueError(f"flat must have {self.size} elements (unit {self.name}), got {len(flat)}")
        return {name: flat[a:b].reshape(shape) for (name, shape, _), (a, b) in
                zip(self.tensors, self.offsets().values())}  # fmt: skip

    def replicated_mask(self) -> np.ndarray:
        """1.0 where the element is whole on every tensor-parallel rank (``"rep"``), else 0.0."""
        return np.concatenate([np.full(math.prod(shape), 1.0 if split == "rep" else 0.0)
                               for _, shape, split in self.tensors])  # fmt: skip


def _split(shape, split, tp):
    if split == "rep" or tp == 1:
        return tuple(shape)
    axis = len(shape) - 1 if split == "col" else 0
    return tuple(n // tp if i == axis else n for i, n in enumerate(shape))


def unit_specs(config: Config, tp: int = 1) -> list:
    """The model's units, in forward order, as one of ``tp`` tensor-parallel ranks holds them.

    Examples
    --------
    >>> [s.name for s in unit_specs(Config(layers=2))]
    ['embed', 'block0', 'block1', 'head']
    >>> dict((n, s) for n, s, _ in unit_specs(Config(), tp=2)[1].tensors)["wq"]   # 2 of 4 heads
    (32, 16)
    >>> [n for n, _, _ in unit_specs(Config(layers=1, experts=2, top_k=1))[1].tensors][8:]  # router, 2 experts
    ['wr', 'w1.0', 'b1.0', 'w2.0', 'b2.0', 'w1.1', 'b1.1', 'w2.1', 'b2.1']
    """
    c = config
    tp = check_int("tp", tp, minimum=1)
    if c.heads % tp or c.ffn % tp:
        raise ValueError(f"tp must divide heads ({c.heads}) and ffn ({c.ffn}), got {tp}")
    h, f = c.hidden, c.ffn
    mlp = [("w1", (h, f), "col"), ("b1", (f,), "col"), ("w2", (f, h), "row"), ("b2", (h,), "rep")]
    if c.moe:  # the router, then each expert's MLP, as the dense one (distlib.train.experts)
        mlp = [("wr", (h, c.experts), "rep")] + [(f"{name}.{e}", shape, split) for e in range(c.experts)
                                                 for name, shape, split in mlp]  # fmt: skip
    block = [("ln1_g", (h,), "rep"), ("ln1_b", (h,), "rep"), ("wq", (h, h), "col"), ("wk", (h, h), "col"),
             ("wv", (h, h), "col"), ("wo", (h, h), "row"), ("ln2_g", (h,), "rep"), ("ln2_b", (h,), "rep"), *mlp]
    units = [("embed", [("tok", (c.vocab, h), "rep"), ("pos", (c.seq, h), "rep")])]
    units += [(f"block{i}", block) for i in range(c.layers)]
    units += [("head", [("lnf_g", (h,), "rep"), ("lnf_b", (h,), "rep"), ("w_out", (h, c.vocab), "rep")])]
    return [UnitSpec(name, tuple((n, _split(s, sp, tp), sp) for n, s, sp in tensors)) for name, tensors in units]


def _init_tensor(rng, name, shape, config):
    name = name.split(".")[0]  # an expert's tensor is drawn as the dense MLP's of its name
    if name.endswith("_g"):
        return np.ones(shape)
    if name.endswith("_b") or name in ("b1", "b2"):
        return 0.02 * rng.standard_normal(shape)  # not zero: the gradient check then sees every term
    scale = 1.0 / math.sqrt(shape[0])
    if name in ("wo", "w2"):
        scale /= math.sqrt(2.0 * config.layers)  # residual branches, as GPT-2 scales them
    if name in ("tok", "pos"):
        scale = 0.5
    return scale * rng.standard_normal(shape)


def init_units(config: Config, seed: int) -> list:
    """The whole model's parameters, one flat float64 vector per unit, drawn from ``seed`` in a fixed order.

    Every rank calls it with the same seed and gets the same numbers, so no
    broadcast is needed; a tensor-parallel rank then keeps its part with
    :func:`shard_unit`.

    >>> a, b = init_units(Config(layers=1), 3), init_units(Config(layers=1), 3)
    >>> all(np.array_equal(x, y) for x, y in zip(a, b)), [len(x) for x in a]
    (True, [2560, 12576, 2112])
    """
    seed = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    out = []
    for spec in unit_specs(config):
        out.append(np.concatenate([_init_tensor(rng, n, s, config).ravel() for n, s, _ in spec.tensors]))
    return out


def shard_unit(full_spec: UnitSpec, flat, tp_rank: int, tp: int) -> np.ndarray:
    """Rank ``tp_rank``'s part of a whole unit ``flat`` (laid out as ``full_spec``), as a new flat vector.

    >>> spec = unit_specs(Config(layers=1))[1]
    >>> len(shard_unit(spec, np.zeros(spec.size), 1, 4)) == unit_specs(Config(layers=1), tp=4)[1].size
    True
    """
    tp = check_int("tp", tp, minimum=1)
    tp_rank = check_int("tp_rank", tp_rank, minimum=0, maximum=tp - 1)
    parts = []
    for (name, shape, split), arr in zip(full_spec.tensors, full_spec.views(flat).values()):
        if split == "rep" or tp == 1:
            parts.append(arr.ravel())
            continue
        axis = arr.ndim - 1 if split == "col" else 0
        width = shape[axis] // tp
        parts.append(np.take(arr, np.arange(tp_rank * width, (tp_rank + 1) * width), axis=axis).ravel())
    return np.concatenate(parts)


# ----------------------------------------------------------------------------
# Pieces: LayerNorm, GELU, causal attention
# ----------------------------------------------------------------------------


def _ln(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + LN_EPS)
    xhat = xc * rstd
    return xhat * g + b, (xhat, rstd)


def _ln_back(dy, cache, g):
    """``(dx, dg, db)`` of LayerNorm with gain ``g`` (the cache holds no parameter: ZeRO-3 frees them)."""
    xhat, rstd = cache
    dxhat = dy * g
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, (dy * xhat).reshape(-1, xhat.shape[-1]).sum(axis=0), dy.reshape(-1, dy.shape[-1]).sum(axis=0)


def _gelu(z):
    t = np.tanh(_GELU_C * (z + _GELU_A * (z * z * z)))
    return 0.5 * z * (1.0 + t), t


def _gelu_back(dy, z, t):
    dinner = _GELU_C * (1.0 + 3.0 * _GELU_A * (z * z))
    return dy * (0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * dinner)


def _heads(x, n_heads):
    b, s, w = x.shape
    return x.reshape(b, s, n_heads, w // n_heads).transpose(0, 2, 1, 3)


def _merge(x):
    b, n, s, d = x.shape
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(b, s, n * d)


def _attention(h, p, head_dim, cp=None):
    """Causal attention of this rank's heads; returns the context (before ``wo``) and the cache.

    With ``cp`` (context parallelism) ``h`` holds this rank's positions only, and ``cp`` brings the other
    ranks' keys and values (its cache is its own)."""
    n_heads = p["wq"].shape[1] // head_dim
    q, k, v = (_heads(h @ p[w], n_heads) for w in ("wq", "wk", "wv"))
    if cp is not None:
        ctx, cache = cp.attention(q, k, v)
        return _merge(ctx), cache
    scores = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(head_dim)
    s = scores.shape[-1]
    scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -np.inf)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    return _merge(probs @ v), (q, k, v, probs)


def _attention_back(dctx, h, p, cache, head_dim, cp=None, start=None):
    """``(dh, {wq, wk, wv grads})``: ``dh`` the input's gradient still to be summed over the tensor-parallel ranks.

    With ``start``, ``start(dh)`` is called as soon as ``dh`` is known, before the three weight gradients (which
    need no communication) are computed, and what it returns is handed back in place of ``dh``: the sum can run
    under those matmuls (Korthikanti et al. 2022, section 6.2)."""
    if cp is not None:
        dq, dk, dv = cp.attention_backward(_heads(dctx, p["wq"].shape[1] // head_dim), cache)
    else:
        q, k, v, probs = cache
        dctx = _heads(dctx, q.shape[1])
        dprobs = dctx @ v.transpose(0, 1, 3, 2)
        dv = probs.transpose(0, 1, 3, 2) @ dctx
        dscores = probs * (dprobs - (dprobs * probs).sum(axis=-1, keepdims=True)) / math.sqrt(head_dim)
        dq, dk = dscores @ k, dscores.transpose(0, 1, 3, 2) @ q
    h2 = h.reshape(-1, h.shape[-1])
    d2s, dh = [], 0.0
    for name, d in (("wq", dq), ("wk", dk), ("wv", dv)):
        d2 = _merge(d).reshape(-1, d.shape[1] * d.shape[3])
        d2s.append((name, d2))
        dh = dh + d2 @ p[name].T
    dh = dh.reshape(h.shape)
    pending = dh if start is None else start(dh)
    return pending, {name: h2.T @ d2 for name, d2 in d2s}


SP_SUMMED = ("ln1_g", "ln1_b", "ln2_g", "ln2_b")
"""A block's replicated tensors whose gradient, under sequence parallelism, each rank has for its positions only:
the norms' (``b2``'s comes from the gathered output gradient, whole)."""


def _sum_tp(reduce, x):
    """``x`` summed over the tensor-parallel ranks (in place, through ``reduce``; nothing to do without one)."""
    if reduce is not None:
        reduce(x)
    return x


def _start_sum(reduce, x):
    """Start summing ``x`` over the tensor-parallel ranks: a callable that waits and returns the sum.

    ``reduce`` that can start a sum in the background (``reduce.start``, :mod:`distlib.train.overlap`'s
    ``tp``) lets the caller compute meanwhile; any other sums now."""
    if reduce is not None and getattr(reduce, "start", None) is not None:
        handle = reduce.start(x)
        return lambda: (handle.wait(), x)[1]
    _sum_tp(reduce, x)
    return lambda: x


def _start_reduce_scatter(sp, x):
    """Start sequence parallelism's reduce-scatter of ``x``: a callable that waits and returns this rank's part."""
    if getattr(sp, "start_reduce_scatter", None) is not None:
        return sp.start_reduce_scatter(x)
    part = sp.reduce_scatter(x)
    return lambda: part


# ----------------------------------------------------------------------------
# Units: forward and backward
# ----------------------------------------------------------------------------


def _block_forward_sp(p, x, config, sp, cp=None):
    """A block under sequence parallelism: ``x`` and ``y`` are this rank's positions."""
    hs, ln1 = _ln(x, p["ln1_g"], p["ln1_b"])
    h = sp.gather(hs)  # all-gather: the attention's column-parallel q, k, v see the whole sequence
    ctx, att = _attention(h, p, config.head_dim, cp)
    x1 = x + sp.reduce_scatter(ctx @ p["wo"])  # row-parallel partial sums: reduce-scatter, not all-reduce
    h2s, ln2 = _ln(x1, p["ln2_g"], p["ln2_b"])
    h2 = sp.gather(h2s)  # all-gather before the MLP's column-parallel w1
    z = h2 @ p["w1"] + p["b1"]
    a, t = _gelu(z)
    y = x1 + sp.reduce_scatter(a @ p["w2"]) + p["b2"]
    return y, (h, ln1, ctx, att, h2, ln2, z, a, t)


def _block_backward_sp(p, dy, cache, config, sp, g, cp=None):
    """The backward of :func:`_block_forward_sp`: each all-gather's backward a reduce-scatter, and back."""
    h, ln1, ctx, att, h2, ln2, z, a, t = cache
    flat = lambda x: x.reshape(-1, x.shape[-1])  # noqa: E731
    dyw = sp.gather(dy)  # the reduce-scatter after w2, backward: all-gather the output gradient
    # b2 is added to this rank's positions, but the gradient just gathered is the whole sequence's, so b2's
    # comes out whole, with nothing to send (DTensor's RowwiseParallel gets it so too; Megatron-LM marks the
    # bias sequence-parallel and all-reduces it with the norms).
    g["b2"][...] = flat(dyw).sum(axis=0)
    g["w2"][...] = flat(a).T @ flat(dyw)
    dz = _gelu_back(dyw @ p["w2"].T, z, t)
    dh2 = _start_reduce_scatter(sp, dz @ p["w1"].T)  # the all-gather before w1, backward: reduce-scatter
    g["w1"][...] = flat(h2).T @ flat(dz)  # (under that reduce-scatter, when it runs in the background)
    g["b1"][...] = flat(dz).sum(axis=0)
    dx1, g["ln2_g"][...], g["ln2_b"][...] = _ln_back(dh2(), ln2, p["ln2_g"])
    dx1 += dy
    dx1w = sp.gather(dx1)  # the reduce-scatter after wo, backward
    g["wo"][...] = flat(ctx).T @ flat(dx1w)
    dh, att_grads = _attention_back(dx1w @ p["wo"].T, h, p, att, config.head_dim, cp,
                                    start=lambda dh: _start_reduce_scatter(sp, dh))  # fmt: skip
    for name, value in att_grads.items():
        g[name][...] = value
    dx, g["ln1_g"][...], g["ln1_b"][...] = _ln_back(dh(), ln1, p["ln1_g"])
    # The norms' gains and biases are replicated, but each rank saw only its positions: their
    # gradients are partial sums over the sequence, summed here over the tensor-parallel group in one
    # all-reduce. Megatron-LM does the same sum (the parameters it marks ``sequence_parallel``, all-reduced
    # over the tensor-parallel group in finalize_model_grads' _allreduce_layernorm_grads), but once per step
    # for all layers together; here once per block, so that a layout that reduce-scatters a unit's gradient
    # right after its backward (ZeRO-2 and 3) hands on whole gradients.
    both = sp.allreduce(np.concatenate([g[name] for name in SP_SUMMED]))
    start = 0
    for name in SP_SUMMED:
        g[name][...], start = both[start : start + g[name].size], start + g[name].size
    return dx + dx1


def _expert_mlp(x, w1, b1, w2, b2):
    """One expert of a mixture on its rows: the dense MLP before its bias ``b2`` (``(out, cache)``), this rank's
    partial sum under tensor parallelism (:func:`distlib.train.experts.moe_forward` sums it and adds ``b2``)."""
    z = x @ w1 + b1
    a, t = _gelu(z)
    return a @ w2, (z, a, t)


def _expert_mlp_back(d, x, cache, w1, b1, w2, b2, gw1, gb1, gw2, gb2):
    """The backward of :func:`_expert_mlp`: its weights' gradients into ``gw1 ... gb2``; the rows' gradient."""
    z, a, t = cache
    gb2[...], gw2[...] = d.sum(axis=0), a.T @ d
    dz = _gelu_back(d @ w2.T, z, t)
    gb1[...], gw1[...] = dz.sum(axis=0), x.T @ dz
    return dz @ w1.T


def _moe_forward(p, x1, h2, config, moe, reduce=None):
    """A block's mixture of experts after its second norm (:mod:`distlib.train.experts`): output and cache."""
    flat = h2.reshape(-1, h2.shape[-1])  # tokens in order: each sequence's positions, sequence after sequence
    y, cache = moe_forward(p, flat, top_k=config.top_k, factor=config.capacity_factor, mlp=_expert_mlp,
                           exchange=moe, reduce=reduce)  # fmt: skip
    return x1 + y.reshape(x1.shape), cache


def _block_forward(p, x, config, reduce, cp=None, moe=None):
    h, ln1 = _ln(x, p["ln1_g"], p["ln1_b"])
    ctx, att = _attention(h, p, config.head_dim, cp)
    x1 = x + _sum_tp(reduce, ctx @ p["wo"])  # row-parallel: partial sums over ranks
    h2, ln2 = _ln(x1, p["ln2_g"], p["ln2_b"])
    if config.moe:
        y, cache = _moe_forward(p, x1, h2, config, moe, reduce)
        return y, (h, ln1, ctx, att, h2, ln2, cache)
    z = h2 @ p["w1"] + p["b1"]
    a, t = _gelu(z)
    y = x1 + _sum_tp(reduce, a @ p["w2"]) + p["b2"]  # the bias once, after the sum
    return y, (h, ln1, ctx, att, h2, ln2, z, a, t)


def _mlp_backward(p, dy, h2, mlp, reduce, g, config, moe):
    """The MLP's (or the mixture's) backward: its gradients into ``g``; a callable giving the gradient of ``h2``."""
    flat = lambda x: x.reshape(-1, x.shape[-1])  # noqa: E731
    if config.moe:
        dh2 = moe_backward(p, g, flat(dy), flat(h2), mlp, mlp_back=_expert_mlp_back, exchange=moe, reduce=reduce)
        return lambda: dh2.reshape(dy.shape)
    z, a, t = mlp
    g["b2"][...] = flat(dy).sum(axis=0)
    g["w2"][...] = flat(a).T @ flat(dy)
    dz = _gelu_back(dy @ p["w2"].T, z, t)
    dh2 = _start_sum(reduce, dz @ p["w1"].T)  # column-parallel input gradient: sum over ranks, started first
    g["w1"][...] = flat(h2).T @ flat(dz)  # (under that sum, when it runs in the background)
    g["b1"][...] = flat(dz).sum(axis=0)
    return dh2


def _block_backward(p, dy, cache, config, reduce, g, cp=None, moe=None):
    h, ln1, ctx, att, h2, ln2, *mlp = cache
    flat = lambda x: x.reshape(-1, x.shape[-1])  # noqa: E731
    dh2 = _mlp_backward(p, dy, h2, mlp[0] if config.moe else mlp, reduce, g, config, moe)
    dx1, g["ln2_g"][...], g["ln2_b"][...] = _ln_back(dh2(), ln2, p["ln2_g"])
    dx1 += dy
    g["wo"][...] = flat(ctx).T @ flat(dx1)
    dh, att_grads = _attention_back(dx1 @ p["wo"].T, h, p, att, config.head_dim, cp,
                                    start=lambda dh: _start_sum(reduce, dh))  # fmt: skip
    for name, value in att_grads.items():
        g[name][...] = value
    dx, g["ln1_g"][...], g["ln1_b"][...] = _ln_back(dh(), ln1, p["ln1_g"])
    return dx + dx1


def _head_forward(p, x, targets):
    h, ln = _ln(x, p["lnf_g"], p["lnf_b"])
    logits = h @ p["w_out"]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logz = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    logp = shifted - logz
    picked = np.take_along_axis(logp, targets[..., None], axis=-1)
    return float(-picked.mean()), (h, ln, logp, targets)


def _head_backward(p, cache, g):
    h, ln, logp, targets = cache
    dlogits = np.exp(logp)
    np.put_along_axis(dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], axis=-1) - 1.0,
                      axis=-1)  # fmt: skip
    dlogits /= targets.size  # the mean over every token
    g["w_out"][...] = h.reshape(-1, h.shape[-1]).T @ dlogits.reshape(-1, dlogits.shape[-1])
    dx, g["lnf_g"][...], g["lnf_b"][...] = _ln_back(dlogits @ p["w_out"].T, ln, p["lnf_g"])
    return dx


def forward_unit(spec: UnitSpec, flat, x, *, config: Config, targets=None, reduce=None, sp=None, cp=None,
                 moe=None):  # fmt: skip
    """One unit's forward pass: ``(output, cache)``.

    Parameters
    ----------
    spec : UnitSpec
        The unit, as this rank holds it (:func:`unit_specs` with its ``tp``).
    flat : ndarray
        Its parameters, ``spec.size`` float64 values.
    x : ndarray
        The token array ``(batch, seq)`` for the embeddings; the activations
        ``(batch, seq, hidden)`` for a block or the head.
    config : Config
    targets : ndarray, optional
        The next tokens ``(batch, seq)``; the head needs them.
    reduce : callable, optional
        ``reduce(buf)`` sums ``buf`` in place over the tensor-parallel ranks
        (``None`` with one rank).
    sp : distlib.train.sequence_parallel.SequenceParallel, optional
        Sequence parallelism over the tensor-parallel group (then ``reduce``
        is not used): the embeddings return, and a block takes and returns,
        this rank's positions only; the head takes them and gathers the
        whole sequence.
    cp : distlib.train.context_parallel.ContextParallel, optional
        Context parallelism: ``x`` holds this rank's positions of every
        sequence only (``cp.positions``, the embeddings' positions too), and
        every attention asks ``cp`` for the other ranks' keys and values.
        Everything else works position by position, unchanged.
    moe : optional
        With experts (``config.experts``): the exchange that brings each expert its rows and counts the
        routing (:class:`distlib.train.experts.LocalExperts`, or expert parallelism's
        :class:`~distlib.train.expert_parallel.ExpertParallel`); ``None``: every expert here, nothing counted.

    Returns
    -------
    tuple
        The unit's output (the head's: the mean cross-entropy, a float) and
        what its backward pass needs.

    Examples
    --------
    >>> c = Config(layers=1)
    >>> spec, flat = unit_specs(c)[0], init_units(c, 0)[0]
    >>> forward_unit(spec, flat, np.zeros((2, 16), int), config=c)[0].shape
    (2, 16, 32)
    """
    p = spec.views(flat)
    if spec.name == "embed":
        where = np.arange(x.shape[1]) if cp is None else cp.positions  # each column's position in the sequence
        if sp is not None:  # only this rank's positions (Megatron's scatter to the sequence-parallel region)
            mine = sp.positions(x.shape[1])
            return p["tok"][x[:, mine]] + p["pos"][where[mine]], x
        if cp is not None:
            return p["tok"][x] + p["pos"][where], x
        return p["tok"][x] + p["pos"][: x.shape[1]], x
    if spec.name == "head":
        return _head_forward(p, x if sp is None else sp.gather(x), targets)  # the whole sequence again
    if sp is not None:
        return _block_forward_sp(p, x, config, sp, cp)
    return _block_forward(p, x, config, reduce, cp, moe)


def backward_unit(spec: UnitSpec, flat, dy, cache, grad, *, config: Config, reduce=None, sp=None, cp=None,
                  moe=None):  # fmt: skip
    """One unit's backward pass: writes its gradient into ``grad``, returns the gradient of its input.

    Parameters
    ----------
    spec, flat
        As for :func:`forward_unit`.
    dy : ndarray or None
        The gradient of the loss with respect to the unit's output (ignored
        for the head, whose output is the loss).
    cache
        What :func:`forward_unit` returned beside the output.
    grad : ndarray
        Where the unit's gradient goes (flat, like ``flat``; overwritten).
    config : Config
    reduce, sp, cp, moe : optional
        As for :func:`forward_unit`.

    Returns
    -------
    ndarray or None
        The gradient with respect to the unit's input (``None`` for the
        embeddings, whose input is tokens).

    Examples
    --------
    >>> c = Config(layers=1)
    >>> spec, flat = unit_specs(c)[0], init_units(c, 0)[0]
    >>> y, cache = forward_unit(spec, flat, np.zeros((1, 16), int), config=c)
    >>> grad = np.empty_like(flat)
    >>> backward_unit(spec, flat, np.ones_like(y), cache, grad, config=c) is None, grad[:32].tolist() == [16.0] * 32
    (True, True)
    """
    p, g = spec.views(flat), spec.views(grad)
    if spec.name == "embed":
        if sp is not None:  # the scatter's backward: all-gather the gradient, the tables' whole gradient
            dy = sp.gather(dy)
        g["tok"][...] = 0.0
        np.add.at(g["tok"], cache, dy)
        g["pos"][...] = 0.0
        if cp is not None:
            g["pos"][cp.positions] = dy.sum(axis=0)
        else:
            g["pos"][: dy.shape[1]] = dy.sum(axis=0)
        return None
    if spec.name == "head":
        dx = _head_backward(p, cache, g)
        return dx if sp is None else sp.split(dx)  # the gather's backward: every rank has it whole, keeps its own
    if sp is not None:
        return _block_backward_sp(p, dy, cache, config, sp, g, cp)
    return _block_backward(p, dy, cache, config, reduce, g, cp, moe)


def loss_and_grads(config: Config, units, tokens, targets):
    """The loss of one process holding the whole model, and the gradient of every unit (new flat vectors).

    Examples
    --------
    >>> c = Config(layers=1)
    >>> loss, grads = loss_and_grads(c, init_units(c, 0), np.zeros((2, 16), int), np.ones((2, 16), int))
    >>> round(loss, 1) > 0, [len(g) for g in grads]
    (True, [2560, 12576, 2112])
    """
    specs = unit_specs(config)
    x, caches = tokens, []
    for spec, flat in zip(specs[:-1], units[:-1]):
        x, cache = forward_unit(spec, flat, x, config=config)
        caches.append(cache)
    loss, head_cache = forward_unit(specs[-1], units[-1], x, config=config, targets=targets)
    grads = [np.empty_like(u) for u in units]
    dy = backward_unit(specs[-1], units[-1], None, head_cache, grads[-1], config=config)
    for i in range(len(specs) - 2, -1, -1):
        dy = backward_unit(specs[i], units[i], dy, caches[i], grads[i], config=config)
    return loss, grads
