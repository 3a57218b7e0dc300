"""Expert parallelism's model (chapter 15): parameters, routing, capacity, balance, node limits and the all-to-all.

A mixture-of-experts (MoE) layer replaces a transformer block's MLP by ``E`` expert MLPs and a router. Each
token goes to ``top_k`` of them (``K``), so a model holds far more parameters than one token uses.

Parameters (:func:`moe_params`)
    Total against *active* parameters: the active ones are those one token's forward pass multiplies by,
    every parameter but the experts it was not routed to and the input embedding (a table lookup). Its
    forward pass costs ``2`` FLOP per active parameter (a multiply-add), its training ``6`` (the ``6 N`` rule
    of :func:`distlib.training_flops`, with ``N`` the active parameters). Checked against DeepSeek-V3 and
    Mixtral 8x7B (:data:`MOE_MODELS`).
Routing (:func:`route`)
    ``gate="softmax"``: probabilities ``softmax(logits)``, the ``K`` largest chosen, their probabilities
    renormalised to sum to one: Mixtral's ``softmax(TopK(logits))`` (Jiang et al. 2024, arXiv:2401.04088) and
    the book's trainer (:mod:`distlib.train.experts`). ``gate="sigmoid"``: affinities ``sigmoid(logits)``,
    DeepSeek-V3's (DeepSeek-AI 2024, arXiv:2412.19437, section 2.1.2). A ``bias`` per expert is added to the
    scores *for choosing only*; the gate weights come from the scores without it, normalised over the chosen
    (DeepSeek-V3's auxiliary-loss-free balancing, section 2.1.2, and its released inference code).
Capacity (:func:`capacity`, :func:`keep_mask`, :func:`dispatch_stats`)
    An expert takes at most ``ceil(F * T * K / E)`` of the ``T * K`` assignments (capacity factor ``F``,
    Switch Transformer, Fedus et al. 2021, arXiv:2101.03961). Places are given in GShard's order (Lepikhin et
    al. 2020, arXiv:2006.16668): every token's first choice in token order, then every second choice, ...;
    an assignment past its expert's capacity is dropped. The very rule of :mod:`distlib.train.experts` (the
    tests check that the two keep and drop the same assignments).
Balance (:func:`switch_aux_loss`, :func:`bias_update`, :func:`balance_simulation`)
    Switch's auxiliary loss ``alpha * E * sum_i f_i P_i`` and DeepSeek-V3's bias update, and a small
    simulation of a router with a fixed preference for some experts, balanced by either.
Node-limited routing (:func:`node_limited_route`, :func:`node_traffic`)
    DeepSeek-V3 sends each token to experts on at most ``M`` nodes (section 2.2): the nodes whose experts
    have the highest sum of the ``K / M`` best affinities among them.
The all-to-all (:func:`moe_alltoall`, :func:`dispatch_matrix`)
    Each MoE layer sends the tokens to their experts' ranks (*dispatch*) and the outputs back (*combine*),
    two all-to-alls forward and two backward; the bytes and time come from
    :mod:`distlib.collectives.alltoall`.

Units: bytes, FLOP, seconds. Arrays: ``(T, E)`` logits and scores, ``(T, K)`` choices, best first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._check import check_array, check_choice, check_int, check_real
from .collectives import alltoall_coefficients, alltoall_time
from .walls import FLOPS_PER_PARAM_TOKEN

__all__ = ["ROUTER_GATES", "BALANCING_RULES", "MoeParams", "moe_params", "gqa_attention_params", "mla_attention_params",
           "MOE_MODELS", "moe_model", "Routes", "route", "capacity", "keep_mask", "DispatchStats", "dispatch_stats",
           "switch_aux_loss", "aux_loss_gradient", "bias_update", "router_logits", "BalanceRun",
           "balance_simulation", "node_limited_route", "NodeTraffic", "node_traffic", "MoeAlltoall", "moe_alltoall",
           "expert_ranks", "dispatch_matrix"]

#: The router's score functions: ``softmax`` (Switch, GShard, Mixtral) and ``sigmoid`` (DeepSeek-V3).
ROUTER_GATES = ("softmax", "sigmoid")
#: How :func:`balance_simulation` balances the experts: not at all, Switch's auxiliary loss, DeepSeek-V3's bias.
BALANCING_RULES = ("none", "aux", "bias")
#: Forward FLOP per active parameter and token: one multiply-add.
_FORWARD_FLOPS_PER_PARAM = 2.0


# ---- parameters ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoeParams:
    """Parameter counts of an MoE transformer, and what one token costs.

    Attributes
    ----------
    expert : int
        Parameters of one expert MLP.
    moe_layer_total, moe_layer_active : int
        One MoE layer's MLP part: every expert, shared ones and the router; or the ``top_k`` routed experts,
        the shared ones and the router (what one token uses).
    attention, norms, dense_ffn, routed, shared, router, embedding, head : int
        The model's parts, all layers together: attention, RMSNorm weights, the dense layers' MLPs, the
        routed experts, the shared experts, the routers, the input embedding and the output projection
        (``0`` when tied to the embedding).
    total : int
        Every parameter (the sum of the parts).
    active : int
        Parameters one token's forward pass multiplies by: everything but the routed experts not chosen and
        the input embedding (a lookup); the output projection counts once, tied or not.
    bytes_per_param : float
    """

    expert: int
    moe_layer_total: int
    moe_layer_active: int
    attention: int
    norms: int
    dense_ffn: int
    routed: int
    shared: int
    router: int
    embedding: int
    head: int
    total: int
    active: int
    bytes_per_param: float

    @property
    def active_fraction(self) -> float:
        """``active / total``."""
        return self.active / self.total

    @property
    def active_with_embedding(self) -> float:
        """``active`` plus the input embedding (some model cards count it)."""
        return self.active + self.embedding

    @property
    def weight_bytes(self) -> float:
        """Bytes of every weight, at ``bytes_per_param``."""
        return self.total * self.bytes_per_param

    @property
    def active_bytes(self) -> float:
        """Bytes of the weights one token uses."""
        return self.active * self.bytes_per_param

    @property
    def forward_flops_per_token(self) -> float:
        """``2 * active``: the matrix products of one token's forward pass (attention's scores left out)."""
        return _FORWARD_FLOPS_PER_PARAM * self.active

    @property
    def training_flops_per_token(self) -> float:
        """``6 * active``, the ``6 N`` rule with ``N`` the active parameters (:data:`distlib.FLOPS_PER_PARAM_TOKEN`)."""
        return FLOPS_PER_PARAM_TOKEN * self.active


def _pos(name, value):
    return check_int(name, value, minimum=1)


def moe_params(hidden, ffn_hidden, experts, top_k, shared_experts=0, layers=1, *, dense_layers=0,
               dense_ffn_hidden=None, attention=None, vocab=0, tied_embeddings=False, gated=True,
               bytes_per_param=2.0) -> MoeParams:
    """Total and active parameters of an MoE transformer: ``layers`` blocks, the first ``dense_layers`` dense.

    Each block has attention (``attention`` parameters; default ``4 hidden**2``, multi-head attention without
    biases), two RMSNorms (``hidden`` each) and an MLP. The MLP of a dense block has ``dense_ffn_hidden``
    (default ``ffn_hidden``); that of an MoE block ``experts`` routed and ``shared_experts`` shared experts of
    ``ffn_hidden`` each and a router (``hidden * experts``, no bias). An MLP is ``3 hidden ffn`` parameters
    with a gated unit (SwiGLU: three matrices), ``2 hidden ffn`` without. Then a final norm, the embedding
    (``vocab * hidden``) and the output projection (as many, unless tied). Biases are left out (the models
    of :data:`MOE_MODELS` have none).

    Parameters
    ----------
    hidden, ffn_hidden, experts, top_k : int
        Model width, one expert's intermediate width, routed experts per MoE layer, experts per token.
    shared_experts : int
        Experts every token goes through (DeepSeekMoE's shared experts).
    layers, dense_layers : int
        Blocks in all, and how many of them (the first) keep a dense MLP.
    attention : int, optional
        One block's attention parameters (:func:`gqa_attention_params`, :func:`mla_attention_params`).
    vocab : int
    tied_embeddings, gated : bool
    bytes_per_param : float
        For the byte counts (2: bf16).

    Returns
    -------
    MoeParams

    Examples
    --------
    One MoE layer of Mixtral's shape: 8 experts of ``3 * 4096 * 14336`` parameters, 2 per token:

    >>> p = moe_params(4096, 14336, 8, 2, attention=0)
    >>> p.expert, p.moe_layer_total == 8 * p.expert + 4096 * 8, p.moe_layer_active == 2 * p.expert + 4096 * 8
    (176160768, True, True)
    >>> p.forward_flops_per_token == 2 * p.active, p.training_flops_per_token == 6 * p.active
    (True, True)
    """
    hidden, ffn_hidden, experts = _pos("hidden", hidden), _pos("ffn_hidden", ffn_hidden), _pos("experts", experts)
    top_k = check_int("top_k", top_k, minimum=1, maximum=experts)
    shared_experts = check_int("shared_experts", shared_experts, minimum=0)
    layers = _pos("layers", layers)
    dense_layers = check_int("dense_layers", dense_layers, minimum=0, maximum=layers - 1)
    dense_ffn = ffn_hidden if dense_ffn_hidden is None else _pos("dense_ffn_hidden", dense_ffn_hidden)
    attn = 4 * hidden * hidden if attention is None else check_int("attention", attention, minimum=0)
    vocab = check_int("vocab", vocab, minimum=0)
    bytes_per_param = check_real("bytes_per_param", bytes_per_param, minimum=0, strict_min=True)
    mats = 3 if gated else 2
    expert, moe_layers = mats * hidden * ffn_hidden, layers - dense_layers
    router = hidden * experts
    parts = dict(attention=layers * attn, norms=(2 * layers + 1) * hidden,
                 dense_ffn=dense_layers * mats * hidden * dense_ffn, routed=moe_layers * experts * expert,
                 shared=moe_layers * shared_experts * expert, router=moe_layers * router,
                 embedding=vocab * hidden, head=0 if tied_embeddings else vocab * hidden)
    total = sum(parts.values())
    active = (total - parts["embedding"] - parts["head"] + vocab * hidden
              - moe_layers * (experts - top_k) * expert)
    return MoeParams(expert=expert, moe_layer_total=(experts + shared_experts) * expert + router,
                     moe_layer_active=(top_k + shared_experts) * expert + router, **parts, total=total,
                     active=active, bytes_per_param=bytes_per_param)


def gqa_attention_params(hidden, heads, kv_heads, head_dim) -> int:
    """One block's attention with grouped-query attention, no biases: ``Q``, ``K``, ``V`` and the output.

    ``hidden * heads * head_dim`` for ``Q`` and for the output, ``hidden * kv_heads * head_dim`` each for
    ``K`` and ``V``.

    >>> gqa_attention_params(4096, 32, 8, 128)      # Mixtral 8x7B's
    41943040
    """
    hidden, heads, head_dim = _pos("hidden", hidden), _pos("heads", heads), _pos("head_dim", head_dim)
    kv_heads = check_int("kv_heads", kv_heads, minimum=1, maximum=heads)
    return 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim


def mla_attention_params(hidden, heads, *, q_lora, kv_lora, qk_nope_dim, qk_rope_dim, v_head_dim) -> int:
    """One block's multi-head latent attention (MLA, DeepSeek-V2 and V3), no biases.

    The query is compressed to ``q_lora`` and expanded to ``heads * (qk_nope_dim + qk_rope_dim)``; keys and
    values share a latent of ``kv_lora``, expanded to ``heads * (qk_nope_dim + v_head_dim)``, beside one
    decoupled RoPE key of ``qk_rope_dim``; the output projects ``heads * v_head_dim`` back to ``hidden``.
    The two latents' RMSNorms are counted.

    >>> mla_attention_params(7168, 128, q_lora=1536, kv_lora=512, qk_nope_dim=128, qk_rope_dim=64,
    ...                      v_head_dim=128)      # DeepSeek-V3's
    187107328
    """
    hidden, heads = _pos("hidden", hidden), _pos("heads", heads)
    q_lora, kv_lora = _pos("q_lora", q_lora), _pos("kv_lora", kv_lora)
    nope, rope, v = _pos("qk_nope_dim", qk_nope_dim), _pos("qk_rope_dim", qk_rope_dim), _pos("v_head_dim", v_head_dim)
    query = hidden * q_lora + q_lora + q_lora * heads * (nope + rope)
    key_value = hidden * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v)
    return query + key_value + heads * v * hidden


#: Two published MoE models as :func:`moe_params` keywords, from their papers and released configurations.
#: DeepSeek-V3 (arXiv:2412.19437, sections 2 and 4.2): 61 layers of width 7168, the first 3 dense (MLP width
#: 18432), then 1 shared and 256 routed experts of width 2048, 8 routed per token; MLA with 128 heads; a
#: vocabulary of 129,280; 671B parameters, 37B active per token (the paper), the multi-token-prediction module
#: left out. Mixtral 8x7B (arXiv:2401.04088, Table 1): 32 layers of width 4096, 8 experts of width 14336,
#: 2 per token, 32 query and 8 key-value heads of 128, a vocabulary of 32,000; 46.7B parameters, 12.9B active
#: (Mistral AI's release; the paper rounds to 47B and 13B).
MOE_MODELS = {
    "deepseek-v3": dict(hidden=7168, ffn_hidden=2048, experts=256, top_k=8, shared_experts=1, layers=61,
                        dense_layers=3, dense_ffn_hidden=18432, vocab=129280,
                        attention=dict(heads=128, q_lora=1536, kv_lora=512, qk_nope_dim=128, qk_rope_dim=64,
                                       v_head_dim=128)),
    "mixtral-8x7b": dict(hidden=4096, ffn_hidden=14336, experts=8, top_k=2, layers=32, vocab=32000,
                         attention=dict(heads=32, kv_heads=8, head_dim=128)),
}


def moe_model(name: str, *, bytes_per_param=2.0) -> MoeParams:
    """:func:`moe_params` of a model of :data:`MOE_MODELS`.

    Examples
    --------
    DeepSeek-V3: the paper's 671B in all and 37B active; its release's notes count 36.6B active (the output
    head in, the input embedding out, as here). Mixtral 8x7B: Mistral AI's 46.7B and 12.9B, which counts the
    input embedding as active too:

    >>> v3 = moe_model("deepseek-v3")
    >>> round(v3.total / 1e9, 1), round(v3.active / 1e9, 1), round(v3.active_with_embedding / 1e9, 1)
    (671.0, 36.6, 37.6)
    >>> mx = moe_model("mixtral-8x7b")
    >>> round(mx.total / 1e9, 1), round(mx.active / 1e9, 1), round(mx.active_with_embedding / 1e9, 1)
    (46.7, 12.7, 12.9)
    """
    name = check_choice("name", name, MOE_MODELS)
    kw = dict(MOE_MODELS[name])
    attn = dict(kw.pop("attention"))
    if "q_lora" in attn:
        count = mla_attention_params(kw["hidden"], attn.pop("heads"), **attn)
    else:
        count = gqa_attention_params(kw["hidden"], **attn)
    return moe_params(**kw, attention=count, bytes_per_param=bytes_per_param)


# ---- routing ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Routes:
    """Where ``T`` tokens go: ``choices`` (T, K) their experts, best first; ``weights`` (T, K) their gate
    weights (each row sums to one); ``scores`` (T, E) the gate's probabilities or affinities, no bias."""

    choices: np.ndarray
    weights: np.ndarray
    scores: np.ndarray

    @property
    def experts(self) -> int:
        return self.scores.shape[1]

    def load(self) -> np.ndarray:
        """Assignments each expert is chosen for, shape (E,) (before any capacity)."""
        return np.bincount(self.choices.ravel(), minlength=self.experts)


def _logits(logits) -> np.ndarray:
    arr = check_array("logits", logits, ndim=2, finite=True).astype(float)
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"logits must have at least one token and one expert, got shape {arr.shape}")
    return arr


def _gate_scores(logits: np.ndarray, gate: str) -> np.ndarray:
    if gate == "softmax":
        z = np.exp(logits - logits.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)
    return 1.0 / (1.0 + np.exp(-logits))


def _bias(bias, experts: int):
    if bias is None:
        return None
    b = check_array("bias", bias, ndim=1, finite=True).astype(float)
    if b.shape != (experts,):
        raise ValueError(f"bias must have one entry per expert ({experts}), got shape {b.shape}")
    return b


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` largest per row, best first; ties: the lower index first (the trainer's rule).

    The same as ``np.argsort(-values, axis=1, kind="stable")[:, :k]``, without sorting whole rows: a partition
    finds each row's ``k`` best, and only rows with a tie at the ``k``-th place are sorted in full.
    """
    if k >= values.shape[1]:
        return np.argsort(-values, axis=1, kind="stable")[:, :k]
    neg = -values
    idx = np.sort(np.argpartition(neg, k - 1, axis=1)[:, :k], axis=1)  # each row's k best, by index
    kth = np.take_along_axis(neg, idx, axis=1).max(axis=1, keepdims=True)
    tied = (neg <= kth).sum(axis=1) > k  # another entry equals the k-th: the partition may have picked either
    order = np.argsort(np.take_along_axis(neg, idx, axis=1), axis=1, kind="stable")
    out = np.take_along_axis(idx, order, axis=1)
    if tied.any():
        out[tied] = np.argsort(neg[tied], axis=1, kind="stable")[:, :k]
    return out


def _weights(scores: np.ndarray, choices: np.ndarray) -> np.ndarray:
    picked = np.take_along_axis(scores, choices, axis=1)
    return picked / picked.sum(axis=1, keepdims=True)


def route(logits, top_k, *, gate="softmax", bias=None) -> Routes:
    """Route tokens by their router logits (T, E): the ``top_k`` best experts and their gate weights.

    The gate turns logits into scores (``softmax`` over the experts, or an elementwise ``sigmoid``). The
    experts chosen are the ``top_k`` largest of ``scores + bias`` (ties: the lower expert); the weights are
    the chosen experts' *scores*, without the bias, divided by their sum. (DeepSeek-V3 then scales them by a
    constant, 2.5 in its release; Switch, with ``top_k = 1``, keeps the raw probability. Both leave the
    choice alone, and this module keeps the trainer's one rule.)

    Parameters
    ----------
    logits : array_like, (T, E)
    top_k : int
        Experts per token, 1 to ``E``.
    gate : {"softmax", "sigmoid"}
    bias : array_like, (E,), optional
        Added to the scores to choose, never to weigh (DeepSeek-V3's balancing bias).

    Returns
    -------
    Routes

    Examples
    --------
    >>> r = route([[2.0, 1.0, 0.0]], 2)
    >>> r.choices.tolist(), np.round(r.weights[0], 4).tolist()     # e/(e+1), 1/(e+1)
    ([[0, 1]], [0.7311, 0.2689])

    A bias that favours expert 2 changes the choice, not the weight of expert 0, measured without it:

    >>> b = route([[2.0, 1.0, 0.0]], 2, gate="sigmoid", bias=[0.0, 0.0, 0.3])
    >>> b.choices.tolist(), bool(np.isclose(b.weights[0, 0], b.scores[0, 0] / (b.scores[0, 0] + b.scores[0, 2])))
    ([[0, 2]], True)
    """
    arr = _logits(logits)
    top_k = check_int("top_k", top_k, minimum=1, maximum=arr.shape[1])
    gate = check_choice("gate", gate, ROUTER_GATES)
    b = _bias(bias, arr.shape[1])
    scores = _gate_scores(arr, gate)
    choices = _top(scores if b is None else scores + b, top_k)
    return Routes(choices=choices, weights=_weights(scores, choices), scores=scores)


# ---- capacity and drops -------------------------------------------------------------------------------------


def capacity(tokens, experts, top_k, capacity_factor) -> int | None:
    """Assignments one expert takes at most: ``ceil(capacity_factor * tokens * top_k / experts)``.

    Rounded up (a product such as ``1.1 * 100`` that lands a hair above an integer counts as that integer).
    ``None`` without a factor (``capacity_factor=None``): no bound, nothing dropped. The trainer's
    :func:`distlib.train.experts.capacity` is the same formula, and the tests hold the two equal (this module
    cannot import the trainer's: importing :mod:`distlib.train` would close an import circle through its
    launcher).

    Examples
    --------
    >>> capacity(192, 4, 2, 1.0), capacity(192, 4, 2, 1.25), capacity(10, 4, 1, 1.0), capacity(10, 4, 1, None)
    (96, 120, 3, None)
    """
    tokens, experts = check_int("tokens", tokens, minimum=0), _pos("experts", experts)
    top_k = check_int("top_k", top_k, minimum=1, maximum=experts)
    if capacity_factor is None:
        return None
    factor = check_real("capacity_factor", capacity_factor, minimum=0, strict_min=True)
    return math.ceil(factor * tokens * top_k / experts - 1e-9)  # 1e-9: 1.1 * 100 lands on 110


def _choices(choices, experts) -> tuple:
    experts = _pos("experts", experts)
    arr = check_array("choices", choices, ndim=2)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"choices must be an array of expert indices (integers), got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= experts):
        raise ValueError(f"choices must be expert indices in [0, {experts - 1}], got {arr.min()} to {arr.max()}")
    return arr.astype(int), experts


def keep_mask(choices, experts, capacity) -> np.ndarray:
    """Which assignments get a place (T, K): GShard's order, each expert keeping its first ``capacity``.

    Every token's first choice in token order, then every second choice, ...; ``capacity=None`` keeps all.

    >>> keep_mask([[0, 1], [0, 1], [0, 2]], 3, 2).tolist()      # expert 0 full after two first choices
    [[True, True], [True, True], [False, True]]
    >>> keep_mask([[1, 0], [0, 1]], 2, 1).tolist()             # first choices first: token 1 takes expert 0
    [[True, False], [True, False]]
    """
    arr, experts = _choices(choices, experts)
    if capacity is None:
        return np.ones(arr.shape, dtype=bool)
    cap = check_int("capacity", capacity, minimum=0)
    kept = np.ones(arr.shape, dtype=bool)
    filled = np.zeros(experts, dtype=int)
    for c in range(arr.shape[1]):
        onehot = np.eye(experts, dtype=int)[arr[:, c]]
        place = filled + np.cumsum(onehot, axis=0) - 1  # each token's place in its expert, from 0
        kept[:, c] = np.take_along_axis(place, arr[:, c : c + 1], axis=1)[:, 0] < cap
        filled += onehot.sum(axis=0)
    return kept


@dataclass(frozen=True)
class DispatchStats:
    """What a capacity does to one batch's routing.

    ``load`` (E,): assignments routed to each expert; ``kept`` and ``dropped`` (E,): those it computes and
    those past its capacity; ``mask`` (T, K): whether each assignment was kept; ``capacity`` (None:
    unbounded)."""

    load: np.ndarray
    kept: np.ndarray
    dropped: np.ndarray
    mask: np.ndarray
    capacity: int | None

    @property
    def assignments(self) -> int:
        """``T * K``."""
        return int(self.mask.size)

    @property
    def dropped_total(self) -> int:
        return int(self.dropped.sum())

    @property
    def drop_fraction(self) -> float:
        """Dropped assignments over all of them."""
        return self.dropped_total / self.assignments if self.assignments else 0.0

    @property
    def tokens_unserved(self) -> int:
        """Tokens all of whose choices were dropped (they pass through the residual only)."""
        return int((~self.mask).all(axis=1).sum()) if self.mask.shape[1] else 0

    @property
    def imbalance(self) -> float:
        """Most-loaded expert's load over the mean load (1: perfectly balanced)."""
        mean = self.load.mean()
        return float(self.load.max() / mean) if mean > 0 else 1.0


def dispatch_stats(choices, experts, capacity) -> DispatchStats:
    """Per-expert load, kept and dropped assignments of ``choices`` (T, K) under ``capacity`` (:func:`keep_mask`).

    >>> s = dispatch_stats([[0, 1], [0, 1], [0, 2]], 3, 2)
    >>> s.load.tolist(), s.kept.tolist(), s.dropped.tolist(), s.drop_fraction
    ([3, 2, 1], [2, 2, 1], [1, 0, 0], 0.16666666666666666)
    """
    arr, experts = _choices(choices, experts)
    mask = keep_mask(arr, experts, capacity)
    load = np.bincount(arr.ravel(), minlength=experts)
    kept = np.bincount(arr[mask], minlength=experts)
    return DispatchStats(load=load, kept=kept, dropped=load - kept, mask=mask,
                         capacity=None if capacity is None else int(capacity))


# ---- balance ------------------------------------------------------------------------------------------------


def _fractions(probs, choices) -> tuple:
    p = check_array("probs", probs, ndim=2, finite=True, minimum=0).astype(float)
    arr, experts = _choices(choices, p.shape[1])
    if arr.shape[0] != p.shape[0]:
        raise ValueError(f"choices must have one row per token of probs ({p.shape[0]}), got {arr.shape[0]}")
    f = np.bincount(arr.ravel(), minlength=experts) / arr.size
    return f, p


def switch_aux_loss(probs, choices, *, alpha=0.01) -> float:
    """Switch Transformer's load-balancing loss ``alpha * E * sum_i f_i P_i`` (Fedus et al. 2021, eq. 4).

    ``f_i``: the share of the ``T * K`` assignments routed to expert ``i`` (Switch's ``K = 1``: the share of
    tokens); ``P_i``: the mean router probability of expert ``i`` over the tokens (``probs``, (T, E), the
    softmax). ``alpha = 0.01`` is Switch's. Uniform routing gives ``alpha``; all on one expert, ``alpha * E``.

    >>> round(switch_aux_loss(np.full((4, 4), 0.25), [[0], [1], [2], [3]]), 12)
    0.01
    >>> switch_aux_loss(np.tile([1.0, 0, 0, 0], (4, 1)), [[0]] * 4)
    0.04
    """
    alpha = check_real("alpha", alpha, minimum=0)
    f, p = _fractions(probs, choices)
    return float(alpha * p.shape[1] * np.dot(f, p.mean(axis=0)))


def aux_loss_gradient(probs, choices, *, alpha=0.01) -> np.ndarray:
    """The gradient of :func:`switch_aux_loss` with respect to a logit offset per expert, shape (E,).

    ``f`` does not depend on the logits (a count); ``P_i`` does through the softmax, so with ``o_j`` added to
    every token's logit ``j``: ``d/do_j = alpha E mean_t[p_tj (f_j - sum_i f_i p_ti)]``. It pushes the
    offsets of the experts with more than their share of assignments down.

    >>> g = aux_loss_gradient(np.full((2, 2), 0.5), [[0], [0]])
    >>> g.tolist()              # expert 0 has every token: its offset's gradient is positive
    [0.005, -0.005]
    """
    alpha = check_real("alpha", alpha, minimum=0)
    f, p = _fractions(probs, choices)
    return alpha * p.shape[1] * (p * (f[None, :] - (p @ f)[:, None])).mean(axis=0)


def bias_update(bias, load, gamma) -> np.ndarray:
    """DeepSeek-V3's balancing step: ``bias_i - gamma`` for an overloaded expert, ``+ gamma`` for an underloaded one.

    "At the end of each step, we will decrease the bias term by gamma if its corresponding expert is
    overloaded, and increase it by gamma if its corresponding expert is underloaded" (arXiv:2412.19437,
    section 2.1.2; ``gamma = 0.001`` for most of its pre-training). Over- and underloaded are read here
    against the mean load: ``bias - gamma * sign(load - mean(load))``; an expert exactly at the mean keeps its
    bias.

    >>> bias_update([0.0, 0.0, 0.0], [5, 3, 1], 0.001).tolist()
    [-0.001, 0.0, 0.001]
    """
    b = check_array("bias", bias, ndim=1, finite=True).astype(float)
    load = check_array("load", load, ndim=1, finite=True, minimum=0).astype(float)
    if load.shape != b.shape:
        raise ValueError(f"load must have one entry per expert ({b.size}), got shape {load.shape}")
    gamma = check_real("gamma", gamma, minimum=0)
    return b - gamma * np.sign(load - load.mean())


def router_logits(tokens, experts, *, skew=0.0, seed=0) -> np.ndarray:
    """Synthetic router logits (T, E) with a preference: ``skew * popularity_e + noise``.

    ``popularity`` falls linearly from ``+1`` (expert 0) to ``-1`` (the last); the noise is standard normal,
    drawn afresh per token and expert from ``seed``. ``skew = 0``: every expert equally likely; larger, the
    first experts are chosen more often. A stand-in for a trained router, whose preferences come from the
    data; nothing here is fitted to one.

    >>> x = router_logits(4000, 8, skew=2.0)
    >>> x.shape, bool(x[:, 0].mean() > 1.5 > -1.5 > x[:, 7].mean())
    ((4000, 8), True)
    """
    tokens, experts = _pos("tokens", tokens), _pos("experts", experts)
    skew = check_real("skew", skew, minimum=0)
    seed = check_int("seed", seed, minimum=0)
    popularity = np.linspace(1.0, -1.0, experts) if experts > 1 else np.zeros(1)
    return skew * popularity[None, :] + np.random.default_rng(seed).standard_normal((tokens, experts))


@dataclass(frozen=True)
class BalanceRun:
    """A :func:`balance_simulation`: per step the load per expert (steps, E) and its max over mean; the
    balancing offsets at the end (the bias, or the aux loss's logit offsets; zeros without balancing)."""

    balancing: str
    loads: np.ndarray
    imbalance: np.ndarray
    offsets: np.ndarray
    top_k: int

    @property
    def steps(self) -> int:
        return int(self.loads.shape[0])


def _balance_step(logits, top_k, balancing, offsets, *, gamma, alpha, lr) -> tuple:
    """One step of :func:`balance_simulation`: ``(load, new offsets)``."""
    if balancing == "aux":
        r = route(logits + offsets, top_k, gate="softmax")
        return r.load(), offsets - lr * aux_loss_gradient(r.scores, r.choices, alpha=alpha)
    r = route(logits, top_k, gate="sigmoid", bias=offsets if balancing == "bias" else None)
    load = r.load()
    return load, (bias_update(offsets, load, gamma) if balancing == "bias" else offsets)


def balance_simulation(*, tokens, experts, top_k, skew, steps=40, balancing="bias", gamma=0.01, alpha=0.01,
                       lr=None, seed=0) -> BalanceRun:
    """A router with a fixed preference, over ``steps`` steps of fresh tokens, balanced one way or none.

    What is modelled: each step draws :func:`router_logits` (the same ``skew``, new noise); the router's own
    learning is left out, so the preference stays. ``balancing``:

    * ``"none"``: the experts are chosen by the logits alone (softmax or sigmoid choose alike);
    * ``"bias"``: DeepSeek-V3's: sigmoid affinities plus a bias for choosing, the bias moved by
      :func:`bias_update` (``gamma``, in units of affinity) after each step;
    * ``"aux"``: the pressure of Switch's loss alone: a logit offset per expert takes a gradient step
      (``lr``) on :func:`switch_aux_loss` (:func:`aux_loss_gradient`) after each step. In training that
      gradient reaches the router's weights along with the language-model loss's, which here is the fixed
      skew. ``lr`` defaults to ``E / (10 alpha)``.

    The step sizes (``gamma``, ``lr``) are this simulation's, chosen so that both balance within tens of steps
    for up to 64 experts and a skew of 2; a larger ``lr`` overshoots (the popular experts' probabilities make
    their gradients large). How fast the two compare in training is not modelled, nor what either does to
    the model's quality (DeepSeek-V3's reason for the bias: no gradient that competes with the language-model
    loss).

    Examples
    --------
    >>> kw = dict(tokens=2048, experts=16, top_k=2, skew=1.5, steps=40)
    >>> none, bias = balance_simulation(**kw, balancing="none"), balance_simulation(**kw, balancing="bias")
    >>> bool(none.imbalance[-1] > 2 > 1.3 > bias.imbalance[-1])
    True
    """
    tokens, experts = _pos("tokens", tokens), _pos("experts", experts)
    top_k = check_int("top_k", top_k, minimum=1, maximum=experts)
    steps = _pos("steps", steps)
    balancing = check_choice("balancing", balancing, BALANCING_RULES)
    gamma = check_real("gamma", gamma, minimum=0)
    alpha = check_real("alpha", alpha, minimum=0, strict_min=True)
    lr = experts / (10 * alpha) if lr is None else check_real("lr", lr, minimum=0)
    seed = check_int("seed", seed, minimum=0)
    offsets = np.zeros(experts)
    loads = np.empty((steps, experts), dtype=int)
    for s in range(steps):
        logits = router_logits(tokens, experts, skew=skew, seed=seed + s)
        loads[s], offsets = _balance_step(logits, top_k, balancing, offsets, gamma=gamma, alpha=alpha, lr=lr)
    return BalanceRun(balancing=balancing, loads=loads, imbalance=loads.max(axis=1) / loads.mean(axis=1),
                      offsets=offsets, top_k=top_k)


# ---- node-limited routing -----------------------------------------------------------------------------------


def node_limited_route(logits, top_k, experts_per_node, max_nodes, *, gate="sigmoid", bias=None) -> Routes:
    """DeepSeek-V3's node-limited routing: each token's ``top_k`` experts on at most ``max_nodes`` nodes.

    Experts ``n * experts_per_node`` to ``(n + 1) * experts_per_node - 1`` live on node ``n``. A node's score
    for a token is the sum of the ``top_k // max_nodes`` (at least 1) highest ``scores + bias`` of its experts
    (arXiv:2412.19437, section 2.2: "the sum of the highest K_r/M affinity scores of the experts distributed
    on each node"); the ``max_nodes`` best nodes are kept (ties: the lower node) and the ``top_k`` experts are
    chosen among theirs, weighted as :func:`route` does. DeepSeek-V3: ``top_k = 8``, ``max_nodes = 4``, 32
    experts per node (256 over 8 nodes).

    Examples
    --------
    Two nodes of two experts, top-2, at most one node: node 1 (0.9 + 0.8) beats node 0's best pair
    (the single best expert, 0.95, sits there):

    >>> x = np.log(np.array([[0.95, 0.1, 0.9, 0.8]]) / (1 - np.array([[0.95, 0.1, 0.9, 0.8]])))
    >>> node_limited_route(x, 2, 2, 1).choices.tolist(), route(x, 2, gate="sigmoid").choices.tolist()
    ([[2, 3]], [[0, 2]])
    """
    arr = _logits(logits)
    experts = arr.shape[1]
    per = check_int("experts_per_node", experts_per_node, minimum=1, maximum=experts)
    if experts % per:
        raise ValueError(f"experts_per_node must divide the {experts} experts, got {per}")
    nodes = experts // per
    max_nodes = check_int("max_nodes", max_nodes, minimum=1, maximum=nodes)
    top_k = check_int("top_k", top_k, minimum=1, maximum=max_nodes * per)
    gate = check_choice("gate", gate, ROUTER_GATES)
    b = _bias(bias, experts)
    scores = _gate_scores(arr, gate)
    choosing = scores if b is None else scores + b
    grouped = choosing.reshape(-1, nodes, per)
    best = -np.sort(-grouped, axis=2)[:, :, : max(1, top_k // max_nodes)]
    node_score = best.sum(axis=2)
    keep = _top(node_score, max_nodes)
    allowed = np.zeros((arr.shape[0], nodes), dtype=bool)
    np.put_along_axis(allowed, keep, True, axis=1)
    masked = np.where(np.repeat(allowed, per, axis=1), choosing, -np.inf)
    choices = _top(masked, top_k)
    return Routes(choices=choices, weights=_weights(scores, choices), scores=scores)


@dataclass(frozen=True)
class NodeTraffic:
    """Where each token's chosen experts live, counted per token (T,): ``nodes`` distinct nodes used,
    ``remote_nodes`` of them other than the token's own, ``remote_experts`` chosen experts on other nodes."""

    nodes: np.ndarray
    remote_nodes: np.ndarray
    remote_experts: np.ndarray

    def bytes_per_token(self, hidden, bytes_per_element=2.0, *, deduplicate=True) -> float:
        """Mean bytes one token sends across nodes in one dispatch: once per remote node (``deduplicate``:
        DeepSeek-V3 sends a token to a node once and forwards it inside over NVLink), or once per remote
        expert."""
        hidden = _pos("hidden", hidden)
        bytes_per_element = check_real("bytes_per_element", bytes_per_element, minimum=0, strict_min=True)
        count = self.remote_nodes if deduplicate else self.remote_experts
        return float(count.mean() * hidden * bytes_per_element)


def node_traffic(choices, experts_per_node, *, nodes, source_node=None) -> NodeTraffic:
    """Count the nodes each token's experts are on (:class:`NodeTraffic`).

    ``source_node`` (T,): the node each token starts on; default token ``t`` on node ``t mod nodes`` (tokens
    spread evenly).

    >>> t = node_traffic([[0, 1], [0, 3], [2, 3]], 2, nodes=2, source_node=[0, 0, 0])
    >>> t.nodes.tolist(), t.remote_nodes.tolist(), t.remote_experts.tolist()
    ([1, 2, 1], [0, 1, 1], [0, 1, 2])
    """
    nodes = _pos("nodes", nodes)
    per = _pos("experts_per_node", experts_per_node)
    arr, _ = _choices(choices, nodes * per)
    src = (np.arange(arr.shape[0]) % nodes if source_node is None
           else check_array("source_node", source_node, ndim=1).astype(int))
    if src.shape != (arr.shape[0],) or (src.size and (src.min() < 0 or src.max() >= nodes)):
        raise ValueError(f"source_node must give each of the {arr.shape[0]} tokens a node in [0, {nodes - 1}]")
    where = arr // per
    used = np.zeros((arr.shape[0], nodes), dtype=bool)
    np.put_along_axis(used, where, True, axis=1)
    own = used[np.arange(arr.shape[0]), src]
    return NodeTraffic(nodes=used.sum(axis=1), remote_nodes=used.sum(axis=1) - own,
                       remote_experts=(where != src[:, None]).sum(axis=1))


# ---- the all-to-all -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoeAlltoall:
    """The all-to-alls of one MoE layer on ``ep`` ranks, uniform routing, nothing dropped.

    Each rank holds ``T * K`` rows of ``hidden * bytes_per_element`` bytes: ``n_bytes`` (its whole buffer
    of one all-to-all, as :func:`distlib.alltoall_time` counts it). It sends ``(ep - 1)/ep`` of it
    (:func:`distlib.alltoall_coefficients`, pairwise): ``sent`` per all-to-all. Forward: dispatch and
    combine; backward: the outputs' gradients to the experts and the inputs' back; ``4 * sent`` per layer.
    """

    tokens: int
    hidden: int
    top_k: int
    ep: int
    bytes_per_element: float
    n_bytes: float
    sent: float
    alltoalls_forward: int = 2
    alltoalls_backward: int = 2

    @property
    def sent_per_layer(self) -> float:
        """Bytes one rank sends in the layer's four all-to-alls."""
        return (self.alltoalls_forward + self.alltoalls_backward) * self.sent

    def time(self, *, alpha, bandwidth, algorithm="pairwise") -> float:
        """Seconds of the layer's four all-to-alls, none overlapped (:func:`distlib.alltoall_time` each)."""
        one = alltoall_time(self.n_bytes, self.ep, alpha=alpha, bandwidth=bandwidth, algorithm=algorithm)
        return (self.alltoalls_forward + self.alltoalls_backward) * float(one)


def moe_alltoall(tokens, hidden, *, top_k, ep, bytes_per_element=2.0) -> MoeAlltoall:
    """Bytes each rank sends in one MoE layer's all-to-alls: ``T K (ep - 1)/ep hidden bytes`` each, four of them.

    ``tokens``: ``T``, the tokens on one rank. With uniform routing each of a rank's ``T K`` assignments goes
    to any of the ``ep`` ranks alike, and ``1/ep`` of them stay.

    Examples
    --------
    4096 tokens a rank, width 7168, bf16, top-8 over 64 ranks: 4096 * 8 * 63/64 * 7168 * 2 bytes, 0.46 GB
    per all-to-all:

    >>> a = moe_alltoall(4096, 7168, top_k=8, ep=64)
    >>> a.sent == 4096 * 8 * 63 / 64 * 7168 * 2, round(a.sent_per_layer / 1e9, 3)
    (True, 1.85)
    """
    tokens, hidden = check_int("tokens", tokens, minimum=0), _pos("hidden", hidden)
    top_k, ep = _pos("top_k", top_k), _pos("ep", ep)
    bytes_per_element = check_real("bytes_per_element", bytes_per_element, minimum=0, strict_min=True)
    n_bytes = float(tokens * top_k * hidden * bytes_per_element)
    _, share = alltoall_coefficients(ep, algorithm="pairwise")
    return MoeAlltoall(tokens=tokens, hidden=hidden, top_k=top_k, ep=ep, bytes_per_element=bytes_per_element,
                       n_bytes=n_bytes, sent=share * n_bytes)


def expert_ranks(experts, ep) -> np.ndarray:
    """The rank holding each expert (E,): ``ep`` ranks of ``E / ep`` consecutive experts (the trainer's layout).

    >>> expert_ranks(8, 4).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    experts, ep = _pos("experts", experts), _pos("ep", ep)
    if experts % ep:
        raise ValueError(f"ep must divide the {experts} experts, got {ep}")
    return np.arange(experts) // (experts // ep)


def dispatch_matrix(choices, kept, *, experts, ep, source_rank=None, to="rank") -> np.ndarray:
    """Rows rank ``s`` sends rank ``d`` in the dispatch (ep, ep): kept assignments only; the diagonal stays.

    ``source_rank`` (T,): each token's rank, default ``T / ep`` consecutive tokens a rank. ``to="expert"``:
    rows from rank ``s`` to expert ``e`` instead (ep, E); its columns summed by :func:`expert_ranks` give the
    first. The combine sends the transpose back; the backward pass the same two again.

    >>> m = dispatch_matrix([[0], [3], [1], [2]], [[True], [True], [True], [False]], experts=4, ep=2)
    >>> m.tolist()
    [[1, 1], [1, 0]]
    >>> dispatch_matrix([[0], [3], [1], [2]], [[True], [True], [True], [False]], experts=4, ep=2, to="expert").tolist()
    [[1, 0, 0, 1], [0, 1, 0, 0]]
    """
    to = check_choice("to", to, ("rank", "expert"))
    arr, experts = _choices(choices, experts)
    mask = np.asarray(kept, dtype=bool)
    if mask.shape != arr.shape:
        raise ValueError(f"kept must have the shape of choices {arr.shape}, got {mask.shape}")
    owner = expert_ranks(experts, ep)
    tokens = arr.shape[0]
    if source_rank is None:
        if tokens % ep:
            raise ValueError(f"ep must divide the {tokens} tokens (or give source_rank), got {ep}")
        src = np.arange(tokens) // (tokens // ep)
    else:
        src = check_array("source_rank", source_rank, ndim=1).astype(int)
        if src.shape != (tokens,) or (src.size and (src.min() < 0 or src.max() >= ep)):
            raise ValueError(f"source_rank must give each of the {tokens} tokens a rank in [0, {ep - 1}]")
    rows = np.broadcast_to(src[:, None], arr.shape)[mask]
    cols = owner[arr[mask]] if to == "rank" else arr[mask]
    out = np.zeros((ep, ep if to == "rank" else experts), dtype=int)
    np.add.at(out, (rows, cols), 1)
    return out
