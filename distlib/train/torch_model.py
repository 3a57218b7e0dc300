"""The book's model again, as a ``torch.nn.Module`` in float64: the twin PyTorch's own parallel tools can take.

The same architecture as :mod:`distlib.train.model`, layer for layer: token
and position embeddings, pre-LayerNorm blocks with causal attention through
separate ``q``, ``k``, ``v`` and ``o`` linear layers and a tanh-GELU MLP
(``mlp_in``, ``mlp_out``), a final LayerNorm, an output projection, the mean
cross-entropy. :func:`load_units` copies the NumPy parameters in (so the
same seed gives the same model) and :func:`units_of` reads them back out;
autograd does the backward pass the NumPy model does by hand.

Adam is ``torch.optim.Adam`` with the book's hyper-parameters
(:func:`adam_for`). Its documented algorithm is the one
:class:`distlib.train.adam.Adam` runs: ``eps`` added to the square root of
the bias-corrected second moment, both moments bias-corrected, no weight
decay; the two differ only in the order of rounding.

The twin exists for the checks beside PyTorch's FSDP2, DTensor tensor
parallelism and ``torch.distributed.pipelining`` (:mod:`distlib.train.peers`):
``fully_shard``, ``parallelize_module`` and ``PipelineStage`` take
``nn.Module`` s (a pipeline stage one :class:`Chunk` of the twin). The trainer itself
(``python -m distlib.train``, on MPI or gloo) runs the NumPy model. A block
reads its number of heads from the width its ``q`` layer hands it, so it
runs unchanged when tensor parallelism has cut ``q``, ``k`` and ``v`` by
heads.
"""

from __future__ import annotations

import math

import numpy as np

from .._check import check_int
from ..engines.torch_dist import import_torch
from .adam import Adam
from .data import global_batch
from .model import LN_EPS, Config, init_units, unit_specs

torch, _ = import_torch()
nn, F = torch.nn, torch.nn.functional

__all__ = ["Block", "TinyTransformer", "Chunk", "load_units", "units_of", "adam_for", "train_twin", "LINEARS"]

LINEARS = {"q": "wq", "k": "wk", "v": "wv", "o": "wo", "mlp_in": "w1", "mlp_out": "w2"}
"""A block's linear layers and the NumPy tensor each holds (transposed: ``nn.Linear`` keeps ``(out, in)``)."""
_BIASES = {"mlp_in": "b1", "mlp_out": "b2"}
_NORMS = {"ln1": ("ln1_g", "ln1_b"), "ln2": ("ln2_g", "ln2_b")}


class Block(nn.Module):
    """One pre-LayerNorm transformer block, as :func:`distlib.train.model.forward_unit` computes it."""

    def __init__(self, config: Config):
        super().__init__()
        h, f, kw = config.hidden, config.ffn, {"dtype": torch.float64}
        self.head_dim = config.head_dim
        self.ln1, self.ln2 = nn.LayerNorm(h, eps=LN_EPS, **kw), nn.LayerNorm(h, eps=LN_EPS, **kw)
        self.q, self.k, self.v, self.o = (nn.Linear(h, h, bias=False, **kw) for _ in range(4))
        self.mlp_in, self.mlp_out = nn.Linear(h, f, **kw), nn.Linear(f, h, **kw)

    def _heads(self, x):
        b, s, w = x.shape
        return x.reshape(b, s, w // self.head_dim, self.head_dim).transpose(1, 2)

    def forward(self, x):
        h = self.ln1(x)
        q, k, v = self._heads(self.q(h)), self._heads(self.k(h)), self._heads(self.v(h))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        s = scores.shape[-1]
        causal = torch.ones(s, s, dtype=torch.bool).tril()
        probs = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(x.shape[0], s, -1)
        x1 = x + self.o(ctx)
        return x1 + self.mlp_out(F.gelu(self.mlp_in(self.ln2(x1)), approximate="tanh"))


class TinyTransformer(nn.Module):
    """The whole model; ``forward(tokens, targets)`` returns the mean cross-entropy over every token.

    Examples
    --------
    >>> c = Config(layers=1)
    >>> model = load_units(TinyTransformer(c), init_units(c, 0))
    >>> sum(p.numel() for p in model.parameters()) == c.params
    True
    """

    def __init__(self, config: Config = Config()):
        super().__init__()
        kw = {"dtype": torch.float64}
        self.config = config
        self.tok = nn.Embedding(config.vocab, config.hidden, **kw)
        self.pos = nn.Embedding(config.seq, config.hidden, **kw)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.lnf = nn.LayerNorm(config.hidden, eps=LN_EPS, **kw)
        self.out = nn.Linear(config.hidden, config.vocab, bias=False, **kw)

    def forward(self, tokens, targets):
        x = self.tok(tokens) + self.pos.weight[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        logits = self.out(self.lnf(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class Chunk(nn.Module):
    """Some of a twin's units as one module: a pipeline stage's model chunk, cut where the book's stages cut.

    ``units`` are unit indices as :func:`distlib.train.pipeline_parallel.chunk_units` gives them (0 the embeddings,
    ``1..layers`` the blocks, ``layers + 1`` the head), contiguous. ``forward`` takes the tokens (a chunk
    holding the embeddings) or the activations before its first block, and returns the activations after
    its last block, or the logits (a chunk holding the head): the loss is the pipeline schedule's
    ``loss_fn``. The modules are ``model``'s own (shared, not copied).

    Examples
    --------
    >>> c = Config(layers=2)
    >>> model = load_units(TinyTransformer(c), init_units(c, 0))
    >>> tokens, targets = (torch.from_numpy(a) for a in global_batch(0, 0, seq=c.seq, vocab=c.vocab))
    >>> logits = Chunk(model, [2, 3])(Chunk(model, [0, 1])(tokens))
    >>> loss = F.cross_entropy(logits.reshape(-1, c.vocab), targets.reshape(-1))
    >>> bool(torch.allclose(loss, model(tokens, targets), rtol=0, atol=1e-12))
    True
    """

    def __init__(self, model: TinyTransformer, units):
        super().__init__()
        last, units = len(model.blocks) + 1, list(units)
        if not units or units != list(range(units[0], units[-1] + 1)) or units[0] < 0 or units[-1] > last:
            raise ValueError(f"units must be contiguous unit indices from 0 to {last}, got {units}")
        self.embed, self.head = units[0] == 0, units[-1] == last
        if self.embed:
            self.tok, self.pos = model.tok, model.pos
        self.blocks = nn.ModuleList(model.blocks[u - 1] for u in units if 1 <= u < last)
        if self.head:
            self.lnf, self.out = model.lnf, model.out

    def forward(self, x):
        if self.embed:
            x = self.tok(x) + self.pos.weight[: x.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.out(self.lnf(x)) if self.head else x


def _pairs(model: TinyTransformer) -> list:
    """``[(unit index, NumPy tensor name, torch parameter, transposed?)]`` for every parameter."""
    out = [(0, "tok", model.tok.weight, False), (0, "pos", model.pos.weight, False)]
    for i, block in enumerate(model.blocks, start=1):
        for norm, (g, b) in _NORMS.items():
            out += [(i, g, getattr(block, norm).weight, False), (i, b, getattr(block, norm).bias, False)]
        out += [(i, name, getattr(block, layer).weight, True) for layer, name in LINEARS.items()]
        out += [(i, name, getattr(block, layer).bias, False) for layer, name in _BIASES.items()]
    last = len(model.blocks) + 1
    return out + [(last, "lnf_g", model.lnf.weight, False), (last, "lnf_b", model.lnf.bias, False),
                  (last, "w_out", model.out.weight, True)]  # fmt: skip


def load_units(model: TinyTransformer, units) -> TinyTransformer:
    """Copy the NumPy model's parameters (laid out as :func:`~distlib.train.model.init_units` lays them out)
    into ``model``; returns it."""
    views = [spec.views(np.asarray(u, dtype=np.float64)) for spec, u in zip(unit_specs(model.config), units)]
    with torch.no_grad():
        for k, name, param, transposed in _pairs(model):
            value = torch.from_numpy(np.ascontiguousarray(views[k][name]))
            param.copy_(value.T if transposed else value)
    return model


def units_of(model: TinyTransformer) -> list:
    """``model``'s parameters as the NumPy model's flat units (the inverse of :func:`load_units`).

    >>> c = Config(layers=1)
    >>> all(np.array_equal(a, b) for a, b in zip(units_of(load_units(TinyTransformer(c), init_units(c, 4))),
    ...                                          init_units(c, 4)))
    True
    """
    units = [np.zeros(spec.size) for spec in unit_specs(model.config)]
    views = [spec.views(u) for spec, u in zip(unit_specs(model.config), units)]
    for k, name, param, transposed in _pairs(model):
        value = param.detach().numpy()
        views[k][name][...] = value.T if transposed else value
    return units


def adam_for(model, adam: Adam = Adam()):
    """``torch.optim.Adam`` over ``model``'s parameters with ``adam``'s learning rate, betas and epsilon."""
    return torch.optim.Adam(model.parameters(), lr=adam.lr, betas=(adam.beta1, adam.beta2), eps=adam.eps)


def train_twin(*, steps: int, seed: int, config: Config = Config(), adam: Adam = Adam()) -> tuple:
    """Train the twin in one process as the trainer's one process does; ``(losses, units after the last step)``.

    Step ``t`` (from 1) takes the global batch :func:`~distlib.train.data.global_batch` ``(seed, t - 1)``.

    Examples
    --------
    >>> losses, units = train_twin(steps=2, seed=0, config=Config(layers=1))
    >>> len(losses), losses[1] < losses[0], len(units)
    (2, True, 3)
    """
    steps = check_int("steps", steps, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    model = load_units(TinyTransformer(config), init_units(config, seed))
    optimizer = adam_for(model, adam)
    losses = []
    for step in range(steps):
        tokens, targets = (torch.from_numpy(a) for a in global_batch(seed, step, seq=config.seq, vocab=config.vocab))
        loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    return losses, units_of(model)
