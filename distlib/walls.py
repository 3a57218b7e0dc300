"""The three walls: memory, compute and communication, as arithmetic.

Chapter "The three walls" asks three questions of a training run and answers
each with a formula from this module:

* **Memory**: do the weights, gradients and optimizer state fit in one chip's
  HBM? (:func:`model_state_bytes`, :func:`zero_state_bytes_per_gpu`)
* **Compute**: how long do ``6 N D`` FLOP take at a realistic utilisation?
  (:func:`training_flops`, :func:`training_time`)
* **Communication**: how many gradient bytes must cross the links each step,
  and how long does that take? (:func:`gradient_comm_bytes_per_gpu`,
  :func:`gradient_comm_time`)

:func:`three_walls` puts the three together for one model on one kind of chip.
Model state only: activations, temporary buffers and fragmentation come on
top, so "fits" here is a necessary condition, not a sufficient one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ._check import check_array, check_choice, check_int, check_real
from .collectives import alpha_beta_time, collective_time
from .fmt import Text, fmt_bytes, fmt_rate, fmt_seconds
from .hardware import Accelerator
from .hardware import accelerator as _accelerator
from .ring import ring_bytes_per_rank
from .units import gbit_to_bytes_per_s

__all__ = [
    "RECIPES",
    "Recipe",
    "round_to_bf16",
    "StateBytes",
    "FLOPS_PER_PARAM_TOKEN",
    "training_flops",
    "ADAM_UPDATE_FLOPS_PER_PARAM",
    "optimizer_flops_share",
    "model_state_bytes",
    "ZERO_STAGES",
    "ZeroStage",
    "zero_stage",
    "zero_state_bytes_per_gpu",
    "min_gpus_to_fit",
    "max_params_to_fit",
    "training_time",
    "gradient_bytes",
    "gradient_comm_bytes_per_gpu",
    "gradient_comm_time",
    "Walls",
    "NODE_NIC_BANDWIDTH",
    "three_walls",
    "FP8_OVER_BF16",
    "dense_peak",
    "hsdp_state_bytes_per_gpu",
    "hsdp_comm_bytes_per_gpu",
    "accumulation_comm_bytes_per_gpu",
    "accumulation_grad_bytes_per_gpu",
    "fsdp_compute_bound_tokens",
    "tp_compute_bound_hidden",
]

#: Training FLOP per parameter per token of a dense transformer: 2 forward, 4 backward
#: (:func:`training_flops` derives it). Every ``6 N D`` in the library is this number.
FLOPS_PER_PARAM_TOKEN = 6.0


@dataclass(frozen=True)
class ZeroStage:
    """What one ZeRO stage shards, and what it sends each step (Rajbhandari et al. 2020).

    The one home of the ZeRO coefficients: memory (:func:`zero_state_bytes_per_gpu`,
    :func:`min_gpus_to_fit`), traffic (:func:`gradient_comm_bytes_per_gpu`,
    :func:`gradient_comm_time`) and :func:`three_walls` all read them here.

    ``sharded`` names the parts of :class:`StateBytes` split over the ``dp``
    ranks (the others are replicated). ``gradient_passes`` and
    ``weight_passes`` count the collectives per step that each move
    ``(p - 1) / p`` of the gradient or of the weights (one ring pass of
    ``p - 1`` steps): plain data parallelism all-reduces the gradient
    (reduce-scatter + all-gather, 2 passes); stages 1 and 2 reduce-scatter
    it and all-gather the updated weights; stage 3 gathers the weights in
    the forward and again in the backward pass.
    """

    stage: int
    sharded: tuple
    gradient_passes: int
    weight_passes: int

    @property
    def ring_passes(self) -> int:
        """Ring collectives of ``p - 1`` steps each per training step."""
        return self.gradient_passes + self.weight_passes

    @property
    def traffic_factor(self) -> float:
        """Bytes sent per step relative to plain data parallelism (gradients and weights of one width).

        >>> [zero_stage(s).traffic_factor for s in ZERO_STAGES]   # ZeRO-3: 1.5x, as the paper states
        [1.0, 1.0, 1.0, 1.5]
        """
        return self.ring_passes / _ZERO[0].ring_passes


_ZERO = {
    0: ZeroStage(0, (), gradient_passes=2, weight_passes=0),
    1: ZeroStage(1, ("optimizer", "master"), gradient_passes=1, weight_passes=1),
    2: ZeroStage(2, ("grads", "optimizer", "master"), gradient_passes=1, weight_passes=1),
    3: ZeroStage(3, ("weights", "grads", "optimizer", "master"), gradient_passes=1, weight_passes=2),
}

#: ZeRO stages: 0 = plain data parallelism, 1 = shard optimizer state,
#: 2 = also gradients, 3 = also weights (Rajbhandari et al. 2020).
ZERO_STAGES = tuple(_ZERO)


def zero_stage(stage) -> ZeroStage:
    """The :class:`ZeroStage` of ZeRO ``stage`` (0 to 3).

    >>> zero_stage(2).sharded
    ('grads', 'optimizer', 'master')
    >>> zero_stage(4)
    Traceback (most recent call last):
    ...
    ValueError: stage must be an integer in [0, 3], got 4
    """
    return _ZERO[check_int("stage", stage, minimum=min(_ZERO), maximum=max(_ZERO))]


@dataclass(frozen=True)
class Recipe:
    """Bytes per parameter a training recipe keeps in memory.

    ``optimizer`` counts the Adam moments; ``master`` an fp32 copy of the
    weights kept for the update. ZeRO's "K" (optimizer state in the paper's
    sense) is ``optimizer + master``.
    """

    name: str
    weights: float
    grads: float
    optimizer: float
    master: float
    description: str

    @property
    def bytes_per_param(self) -> float:
        return self.weights + self.grads + self.optimizer + self.master


#: The recipes the book compares. Adam keeps two moments (m and v) per
#: parameter, in fp32: 8 bytes. ``fp32_grads_adam`` is what Megatron-LM keeps
#: when it trains in bf16 (its ``arguments.py`` then sets
#: ``accumulate_allreduce_grads_in_fp32``: "accumulate and all-reduce
#: gradients in fp32 for bfloat16 data type") and what Llama 3 reduce-scatters
#: ("FP32 gradient accumulation" and "reduce-scatter gradients in FP32", section 3.3.2): 18 bytes.
RECIPES = MappingProxyType(
    {
        "bf16_adam": Recipe("bf16_adam", 2, 2, 8, 0,
                            "bf16 weights and gradients, fp32 Adam m and v (12 bytes/param)"),
        "mixed_precision_adam": Recipe("mixed_precision_adam", 2, 2, 8, 4,
                                       "bf16 weights and gradients, fp32 Adam m and v, fp32 master "
                                       "weights (16 bytes/param)"),
        "fp32_grads_adam": Recipe("fp32_grads_adam", 2, 4, 8, 4,
                                  "bf16 weights, fp32 gradients (accumulated and reduced in fp32), fp32 Adam m and "
                                  "v, fp32 master weights (18 bytes/param)"),
        "fp32_adam": Recipe("fp32_adam", 4, 4, 8, 0,
                            "fp32 weights and gradients, fp32 Adam m and v (16 bytes/param)"),
    }
)


def round_to_bf16(x):
    """Round to the nearest bfloat16 value (ties to even), returned as float32.

    bfloat16 keeps float32's 8 exponent bits and only 8 significant bits
    (7 stored), so near 1.0 its values are ``2**-7`` apart. Adding an update
    smaller than half that spacing to a bf16 weight changes nothing: this is
    why mixed-precision training keeps an fp32 master copy of the weights
    and applies the update there (see :func:`model_state_bytes`).

    Parameters
    ----------
    x : float or array_like
        Numbers (converted to float32 first). NaN stays NaN.

    Returns
    -------
    float or ndarray
        float32 values that bfloat16 can represent exactly; a float for a
        scalar input.

    Examples
    --------
    >>> float(round_to_bf16(1.0 + 1e-3)), float(round_to_bf16(1.0 + 5e-3))
    (1.0, 1.0078125)
    >>> round_to_bf16([3.14159265, 0.1]).tolist()
    [3.140625, 0.10009765625]
    """
    arr = check_array("x", x).astype(np.float32)
    bits = arr.view(np.uint32).astype(np.uint64)
    lsb = (bits >> np.uint64(16)) & np.uint64(1)
    rounded = ((bits + np.uint64(0x7FFF) + lsb) & np.uint64(0xFFFF0000)).astype(np.uint32).view(np.float32)
    out = np.where(np.isnan(arr), arr, rounded).astype(np.float32)
    return float(out) if out.ndim == 0 else out


def _recipe(recipe) -> Recipe:
    if isinstance(recipe, Recipe):
        return recipe
    return RECIPES[check_choice("recipe", recipe, list(RECIPES))]


class StateBytes(float):
    """Bytes of model state, and what they are made of.

    A ``float`` (the total, in bytes), so it compares and computes like a
    number, with the parts as attributes: ``weights``, ``grads``,
    ``optimizer`` (Adam's moments) and ``master`` (fp32 master weights).

    >>> s = model_state_bytes(1e9, recipe="mixed_precision_adam")
    >>> s == 16e9, s.total, s.optimizer, s.master
    (True, 16000000000.0, 8000000000.0, 4000000000.0)
    """

    __slots__ = ("weights", "grads", "optimizer", "master", "recipe", "params")

    def __new__(cls, *, weights, grads, optimizer, master, recipe="", params=math.nan):
        obj = super().__new__(cls, weights + grads + optimizer + master)
        obj.weights = float(weights)
        obj.grads = float(grads)
        obj.optimizer = float(optimizer)
        obj.master = float(master)
        obj.recipe = recipe
        obj.params = float(params)
        return obj

    @property
    def total(self) -> float:
        """All of it, bytes."""
        return float(self)

    @property
    def optimizer_states(self) -> float:
        """Adam moments plus master weights: the ZeRO paper's ``K * N``."""
        return self.optimizer + self.master

    def parts(self) -> dict[str, float]:
        """``{"weights": ..., "grads": ..., "optimizer": ..., "master": ...}``."""
        return {"weights": self.weights, "grads": self.grads, "optimizer": self.optimizer, "master": self.master}

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:.4g}" for k, v in self.parts().items())
        return f"StateBytes(total={float(self):.4g}, {inner})"

    def __reduce__(self):
        return (_state_bytes, (self.weights, self.grads, self.optimizer, self.master, self.recipe, self.params))


def _state_bytes(weights, grads, optimizer, master, recipe, params):
    return StateBytes(weights=weights, grads=grads, optimizer=optimizer, master=master, recipe=recipe, params=params)


def training_flops(params, tokens) -> float:
    """FLOP to train a dense transformer of ``params`` parameters on ``tokens`` tokens: ``6 N D``.

    Where the 6 comes from: in the forward pass every parameter takes part in
    one multiply-add per token, and a multiply-add is 2 FLOP, so the forward
    pass costs ``2 N`` FLOP per token. The backward pass costs twice that,
    ``4 N``: for each weight matrix it computes one matrix product for the
    gradient with respect to the layer's input (to continue backpropagation)
    and one for the gradient with respect to the weights. ``2 + 4 = 6``.

    The optimizer update is *not* in the 6: Adam touches each parameter a
    handful of times **per step**, not per token, so it costs ``O(N)`` per
    step, which is negligible next to ``6 N`` times the hundreds of thousands
    to millions of tokens in a step. Attention's ``O(s^2)`` score FLOP and
    activation recomputation are also left out.

    Parameters
    ----------
    params : float
        Parameters ``N`` (> 0).
    tokens : float
        Training tokens ``D`` (> 0).

    Returns
    -------
    float
        FLOP.

    Examples
    --------
    GPT-3: 175 billion parameters on 300 billion tokens.

    >>> training_flops(175e9, 300e9)
    3.15e+23
    """
    params = check_real("params", params, minimum=0, strict_min=True)
    tokens = check_real("tokens", tokens, minimum=0, strict_min=True)
    return FLOPS_PER_PARAM_TOKEN * params * tokens


#: FLOP per parameter of one AdamW update as PyTorch computes it, counting a
#: square root or a division as one FLOP: weight decay 1, first moment 3
#: (``m += (1 - b1) (g - m)``), second moment 4 (``v = b2 v + (1 - b2) g g``),
#: denominator 3 (``sqrt(v) / c2 + eps``), step 3 (``p -= s m / denom``).
ADAM_UPDATE_FLOPS_PER_PARAM = 14


def optimizer_flops_share(tokens_per_step, *, update_flops_per_param=ADAM_UPDATE_FLOPS_PER_PARAM) -> float:
    """Fraction of a training step's FLOP spent in the optimizer update.

    A step costs ``6 N`` FLOP per token for the forward and backward passes,
    ``6 N T`` for ``T`` tokens, and the update ``u N`` once, whatever ``T``:
    the share ``u / (6 T + u)`` does not depend on the model size ``N``.
    This is why :func:`training_flops` leaves the update out of the 6.

    Parameters
    ----------
    tokens_per_step : float
        Tokens in one optimizer step, the global batch (> 0).
    update_flops_per_param : float
        FLOP per parameter of one update (>= 0); default
        :data:`ADAM_UPDATE_FLOPS_PER_PARAM`.

    Returns
    -------
    float
        A number in [0, 1).

    Examples
    --------
    GPT-3's batch of 3.2 million tokens: the update is about a millionth of the work.

    >>> round(optimizer_flops_share(3.2e6) * 1e6, 2)
    0.73
    >>> optimizer_flops_share(1, update_flops_per_param=6)   # one token: half
    0.5
    """
    tokens_per_step = check_real("tokens_per_step", tokens_per_step, minimum=0, strict_min=True)
    u = check_real("update_flops_per_param", update_flops_per_param, minimum=0)
    return u / (FLOPS_PER_PARAM_TOKEN * tokens_per_step + u)


def model_state_bytes(params, *, recipe) -> StateBytes:
    """Bytes of weights, gradients and optimizer state of one model copy.

    Parameters
    ----------
    params : float
        Parameters (> 0).
    recipe : str
        ``"bf16_adam"``: bf16 weights (2 B) and gradients (2 B), fp32 Adam
        moments m and v (4 + 4 B): 12 bytes per parameter.
        ``"mixed_precision_adam"``: the same plus an fp32 master copy of the
        weights (4 B): 16 bytes per parameter, the ZeRO paper's accounting
        (2 + 2 + K with K = 12).
        ``"fp32_grads_adam"``: the mixed-precision recipe with fp32 gradients,
        2 + 4 + 4 + 8 = 18 bytes per parameter (Megatron-LM under bf16).
        ``"fp32_adam"``: everything in fp32: 4 + 4 + 8 = 16 bytes per parameter.

    Returns
    -------
    StateBytes
        A float (the total) with ``.weights``, ``.grads``, ``.optimizer``,
        ``.master`` and ``.total``.

    Examples
    --------
    A 7B model with mixed-precision Adam needs 112 GB, more than one 80 GB GPU:

    >>> model_state_bytes(7e9, recipe="mixed_precision_adam").total / 1e9
    112.0
    >>> model_state_bytes(7e9, recipe="bf16_adam") / 1e9
    84.0
    >>> model_state_bytes(7e9, recipe="fp32_grads_adam") / 1e9     # 18 bytes: the gradient in fp32
    126.0
    """
    params = check_real("params", params, minimum=0, strict_min=True)
    r = _recipe(recipe)
    return StateBytes(weights=r.weights * params, grads=r.grads * params, optimizer=r.optimizer * params,
                      master=r.master * params, recipe=r.name, params=params)


def zero_state_bytes_per_gpu(params, *, recipe, dp, stage) -> StateBytes:
    """Model-state bytes on each of ``dp`` data-parallel GPUs under ZeRO ``stage``.

    ZeRO (Rajbhandari et al. 2020) shards the replicated state across the
    ``dp`` ranks: stage 1 shards the optimizer state (Adam moments *and* the
    fp32 master weights), stage 2 also the gradients, stage 3 also the
    weights. Stage 0 is plain data parallelism: every GPU holds everything.
    With the paper's mixed-precision Adam (``2 + 2 + K`` bytes per parameter,
    K = 12) the per-GPU memory is ``(4 + K / dp) N`` at stage 1,
    ``(2 + (2 + K) / dp) N`` at stage 2 and ``(4 + K) N / dp`` at stage 3.

    Parameters
    ----------
    params : float
        Parameters (> 0).
    recipe : str
        See :func:`model_state_bytes`.
    dp : int
        Data-parallel ranks sharing the state (>= 1).
    stage : int
        ZeRO stage, 0, 1, 2 or 3.

    Returns
    -------
    StateBytes

    Examples
    --------
    The paper's example, 7.5B parameters on 64 GPUs: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.

    >>> [round(zero_state_bytes_per_gpu(7.5e9, recipe="mixed_precision_adam", dp=64, stage=s) / 1e9, 1)
    ...  for s in (0, 1, 2, 3)]
    [120.0, 31.4, 16.6, 1.9]
    """
    full = model_state_bytes(params, recipe=recipe)
    dp = check_int("dp", dp, minimum=1)
    sharded = zero_stage(stage).sharded
    parts = {name: value / (dp if name in sharded else 1) for name, value in full.parts().items()}
    return StateBytes(**parts, recipe=full.recipe, params=full.params)


def min_gpus_to_fit(params, *, recipe, hbm_bytes, stage) -> float:
    """Fewest data-parallel GPUs whose HBM holds the model state under ZeRO ``stage``.

    Returns ``math.inf`` when no number of GPUs is enough (stage 0 never
    shards anything; stages 1 and 2 keep some state replicated).

    Examples
    --------
    A 70B model with mixed-precision Adam on 80 GB GPUs with ZeRO-3 needs
    ``16 * 70e9 / 80e9 = 14`` of them:

    >>> min_gpus_to_fit(70e9, recipe="mixed_precision_adam", hbm_bytes=80e9, stage=3)
    14
    >>> min_gpus_to_fit(70e9, recipe="mixed_precision_adam", hbm_bytes=80e9, stage=0)
    inf
    """
    full = model_state_bytes(params, recipe=recipe)
    hbm_bytes = check_real("hbm_bytes", hbm_bytes, minimum=0, strict_min=True)
    sharded_parts = zero_stage(stage).sharded
    replicated = sum((value for name, value in full.parts().items() if name not in sharded_parts), 0.0)
    sharded = full.total - replicated
    if replicated > hbm_bytes or (sharded > 0 and replicated == hbm_bytes):
        return math.inf
    if sharded == 0:
        return 1

    def fits(dp):  # the very sum zero_state_bytes_per_gpu makes, so both agree to the last bit
        return zero_state_bytes_per_gpu(params, recipe=recipe, dp=dp, stage=stage).total <= hbm_bytes

    dp = max(1, math.ceil(sharded / (hbm_bytes - replicated)))
    while dp > 1 and fits(dp - 1):
        dp -= 1
    while not fits(dp):
        dp += 1
    return dp


def max_params_to_fit(hbm_bytes, *, recipe, dp=1, stage=0) -> float:
    """Most parameters whose model state fits in ``hbm_bytes`` per GPU.

    The state per GPU is linear in the parameter count, ``b N`` with ``b``
    the bytes per parameter left on each GPU after ZeRO ``stage`` shards
    over ``dp`` GPUs (:func:`zero_state_bytes_per_gpu`), so the answer is
    ``hbm_bytes / b``. Activations are not counted: a real run fits less.

    Parameters
    ----------
    hbm_bytes : float
        Memory of one GPU, bytes (> 0).
    recipe : str
        See :func:`model_state_bytes`.
    dp : int
        Data-parallel GPUs sharing the state (>= 1).
    stage : int
        ZeRO stage, 0 to 3.

    Returns
    -------
    float
        Parameters.

    Examples
    --------
    One 80 GB GPU holds the training state of a 5B model with mixed-precision
    Adam (16 bytes each), 6.67B with bf16 Adam (12 bytes each):

    >>> max_params_to_fit(80e9, recipe="mixed_precision_adam") / 1e9
    5.0
    >>> round(max_params_to_fit(80e9, recipe="bf16_adam") / 1e9, 2)
    6.67
    >>> max_params_to_fit(80e9, recipe="mixed_precision_adam", dp=8, stage=3) / 1e9
    40.0
    """
    hbm_bytes = check_real("hbm_bytes", hbm_bytes, minimum=0, strict_min=True)
    per_param = zero_state_bytes_per_gpu(1.0, recipe=recipe, dp=dp, stage=stage).total
    return hbm_bytes / per_param


def _peak(flops_per_chip) -> float:
    if isinstance(flops_per_chip, (Accelerator, str)):
        return _accelerator(flops_per_chip).bf16_flops
    return check_real("flops_per_chip", flops_per_chip, minimum=0, strict_min=True)


def training_time(params, tokens, *, flops_per_chip, mfu, chips=1) -> float:
    """Seconds to train on ``chips`` chips that each sustain ``mfu`` of their peak.

    ``6 N D / (chips * mfu * flops_per_chip)``: perfect scaling across chips,
    no communication (the communication wall is separate).

    Parameters
    ----------
    params, tokens : float
        Model size ``N`` and training tokens ``D`` (> 0).
    flops_per_chip : float, str or Accelerator
        Peak dense FLOP/s of one chip, or an accelerator (name or spec), whose
        dense BF16 peak is used.
    mfu : float
        Model FLOP utilisation in (0, 1]: the fraction of peak actually used.
    chips : int
        Chips working together (>= 1).

    Examples
    --------
    GPT-3 on one A100 at 100% of its 312 TFLOP/s dense BF16 peak: 32 years.

    >>> round(training_time(175e9, 300e9, flops_per_chip=312e12, mfu=1.0) / (365.25 * 86400), 1)
    32.0
    """
    flops = training_flops(params, tokens)
    peak = _peak(flops_per_chip)
    mfu = check_real("mfu", mfu, minimum=0, maximum=1, strict_min=True)
    chips = check_int("chips", chips, minimum=1)
    return flops / (chips * mfu * peak)


def gradient_bytes(params, *, bytes_per_value=2) -> float:
    """Size of one full gradient, bytes (``params * bytes_per_value``).

    >>> gradient_bytes(7e9) / 1e9
    14.0
    """
    params = check_real("params", params, minimum=0, strict_min=True)
    bytes_per_value = check_real("bytes_per_value", bytes_per_value, minimum=0, strict_min=True)
    return params * bytes_per_value


def gradient_comm_bytes_per_gpu(params, p, *, recipe="bf16_adam", stage=0) -> float:
    """Bytes each GPU sends per step to keep ``p`` data-parallel replicas in step.

    Stage 0 (plain data parallelism): one ring all-reduce of the gradient,
    ``2 (p - 1) / p * N * grad_bytes`` (:func:`distlib.ring_bytes_per_rank`).
    Stages 1 and 2: a reduce-scatter of the gradient (each GPU keeps the sum
    for its shard) and an all-gather of the updated weights, ``(p - 1) / p``
    of a buffer each: the same volume when gradients and weights have the
    same width. Stage 3: weights are gathered in the forward and again in the
    backward pass, plus the gradient reduce-scatter: 1.5 times stage 0, as the
    ZeRO paper states.

    Examples
    --------
    >>> gradient_comm_bytes_per_gpu(7e9, 8) / 1e9       # 2 * 7/8 * 14 GB
    24.5
    >>> gradient_comm_bytes_per_gpu(7e9, 8, stage=3) / 1e9
    36.75
    """
    params = check_real("params", params, minimum=0, strict_min=True)
    p = check_int("p", p, minimum=1)
    r = _recipe(recipe)
    z = zero_stage(stage)
    grad = params * r.grads
    weights = params * r.weights
    if z.stage == 0:  # its two passes over the gradient are one all-reduce
        return ring_bytes_per_rank(grad, p)
    return (p - 1) / p * (z.gradient_passes * grad + z.weight_passes * weights)


def gradient_comm_time(params, p, *, bandwidth, alpha=0.0, recipe="bf16_adam", stage=0) -> float:
    """Seconds per step for the communication of :func:`gradient_comm_bytes_per_gpu`.

    Ring collectives over links of ``bandwidth`` bytes/s (one direction), each
    ring step paying latency ``alpha``. Stage 0 is exactly
    :func:`distlib.ring_allreduce_time` of the gradient.

    Examples
    --------
    >>> gradient_comm_time(7e9, 8, bandwidth=450e9)   # 24.5 GB at 450 GB/s
    0.05444444444444444
    """
    n_bytes = gradient_comm_bytes_per_gpu(params, p, recipe=recipe, stage=stage)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    alpha = check_real("alpha", alpha, minimum=0)
    z = zero_stage(stage)
    if z.stage == 0:
        grad = params * _recipe(recipe).grads
        return float(collective_time("allreduce", grad, p, alpha=alpha, bandwidth=bandwidth, algorithm="ring"))
    return alpha_beta_time(z.ring_passes * (p - 1), 1.0, n_bytes, alpha=alpha, bandwidth=bandwidth)


@dataclass(frozen=True)
class Walls:
    """One training run against the three walls (SI units throughout).

    Memory: ``state`` (one full model copy), ``state_per_gpu`` (after ZeRO
    sharding over ``chips``), ``hbm_bytes`` and ``fits``. Compute: ``flops``,
    ``time_one_chip``, ``compute_time_cluster``. Communication per step:
    ``comm_bytes_per_step`` (sent by each GPU), ``comm_time_per_step``, and
    over the run ``steps``, ``comm_time_total`` and ``time_cluster`` (compute
    then communication, no overlap).
    """

    params: float
    tokens: float
    recipe: str
    accelerator: Accelerator
    mfu: float
    chips: int
    stage: int
    tokens_per_step: float
    link_bandwidth: float
    alpha: float
    flops: float
    state: StateBytes
    state_per_gpu: StateBytes
    hbm_bytes: float
    time_one_chip: float
    compute_time_cluster: float
    steps: int
    compute_time_per_step: float
    comm_bytes_per_step: float
    comm_time_per_step: float
    cluster: object = None  # the GpuCluster whose NCCL model timed the communication, or None (flat ring)

    @property
    def fits(self) -> bool:
        """True when the model state per GPU fits in one chip's HBM."""
        return self.state_per_gpu.total <= self.hbm_bytes

    @property
    def memory_fraction(self) -> float:
        """Model state per GPU as a fraction of HBM (above 1: does not fit)."""
        return self.state_per_gpu.total / self.hbm_bytes

    @property
    def min_gpus(self) -> float:
        """Fewest GPUs that would hold the state at this ZeRO stage (``inf``: none)."""
        return min_gpus_to_fit(self.params, recipe=self.recipe, hbm_bytes=self.hbm_bytes, stage=self.stage)

    @property
    def comm_time_total(self) -> float:
        """Communication over the whole run, seconds."""
        return self.steps * self.comm_time_per_step

    @property
    def time_cluster(self) -> float:
        """Training time on the cluster, compute then communication (no overlap)."""
        return self.compute_time_cluster + self.comm_time_total

    @property
    def time_cluster_overlap(self) -> float:
        """Training time with communication perfectly hidden behind compute."""
        return self.steps * max(self.compute_time_per_step, self.comm_time_per_step)

    @property
    def speedup(self) -> float:
        """One-chip time over cluster time (no overlap)."""
        return self.time_one_chip / self.time_cluster

    @property
    def communication_bound(self) -> bool:
        """True when a step's communication outlasts its compute."""
        return self.comm_time_per_step > self.compute_time_per_step

    def summary(self) -> Text:
        """A few lines of plain text with the three verdicts."""
        chip = self.accelerator.name
        lines = [
            f"memory: {fmt_bytes(self.state_per_gpu.total)} of model state per GPU "
            f"({self.recipe}, ZeRO-{self.stage} over {self.chips}) vs {fmt_bytes(self.hbm_bytes)} HBM on {chip}: "
            + ("fits" if self.fits else f"does not fit ({self.memory_fraction:.1f}x HBM)"),
            f"compute: {self.flops:.3g} FLOP; one {chip} at MFU {self.mfu:.0%}: {fmt_seconds(self.time_one_chip)}; "
            f"{self.chips} chips: {fmt_seconds(self.time_cluster)}",
            f"communication: {fmt_bytes(self.comm_bytes_per_step)} sent per GPU per step over "
            + (f"{self.cluster.describe()} (NCCL model: {fmt_rate(self.link_bandwidth)} bus bandwidth)"
               if self.cluster is not None else f"{fmt_rate(self.link_bandwidth)} links (one direction)")
            + f": {fmt_seconds(self.comm_time_per_step)} vs {fmt_seconds(self.compute_time_per_step)} of compute per step",
        ]
        return Text("\n".join(lines))


#: The node :func:`three_walls` assumes for each NVIDIA GPU it times with the NCCL cluster model:
#: eight GPUs with one NIC each, the node's total NIC bandwidth in bytes/s, one direction. A DGX A100
#: has eight 200 Gb/s HDR InfiniBand NICs (NVIDIA DGX A100 datasheet); DGX H100, H200 and B200 have
#: eight 400 Gb/s ConnectX-7 NICs (NVIDIA DGX BasePOD reference architecture, "Core Components",
#: https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html).
NODE_NIC_BANDWIDTH = {"A100": 8 * gbit_to_bytes_per_s(200), "H100": 8 * gbit_to_bytes_per_s(400),
                      "H200": 8 * gbit_to_bytes_per_s(400), "B200": 8 * gbit_to_bytes_per_s(400)}

#: GPUs whose communication :func:`three_walls` times with the NCCL cluster model.
_CLUSTER_GPUS = tuple(NODE_NIC_BANDWIDTH)


def three_walls(params, tokens, *, recipe="mixed_precision_adam", accelerator="H100", mfu=0.4, chips=1,
          stage=0, tokens_per_step=4 * 2**20, link_bandwidth=None, alpha=0.0, gpus_per_node=8,
          nic_bandwidth=None) -> Walls:
    """The three walls for training ``params`` parameters on ``tokens`` tokens.

    Parameters
    ----------
    params, tokens : float
        Model size and training tokens (> 0).
    recipe : str
        Memory recipe, see :func:`model_state_bytes`.
    accelerator : str or Accelerator
        Which chip (a name from :func:`distlib.accelerator_names` or a spec).
    mfu : float
        Model FLOP utilisation in (0, 1].
    chips : int
        Data-parallel chips in the cluster (>= 1); ZeRO shards over all of them.
    stage : int
        ZeRO stage 0-3.
    tokens_per_step : float
        Global batch in tokens (> 0); sets how many steps, hence how many
        gradient exchanges, the run has. Default 4 Mi tokens.
    link_bandwidth : float, optional
        Bytes/s per GPU in one direction for a flat ring (then ``alpha`` is
        its per-step latency). Default: for the NVIDIA GPUs of the table,
        NCCL on a real cluster (:func:`distlib.gpu_cluster`: nodes of
        ``gpus_per_node`` GPUs on NVLink, ``nic_bandwidth`` per node between
        nodes, NCCL's choice of algorithm); for other chips their scale-up
        link, as a flat ring.
    alpha : float
        Per-message latency of a ring step, seconds (>= 0), flat ring only.
    gpus_per_node : int
        GPUs per node for the cluster model (default 8, as in HGX/DGX).
    nic_bandwidth : float, optional
        The node's total NIC bandwidth, bytes/s one direction. Default: that
        GPU's DGX node in :data:`NODE_NIC_BANDWIDTH`, eight NICs, one per GPU:
        200e9 for the A100 (8 x 200 Gb/s HDR), 400e9 for the H100, H200 and
        B200 (8 x 400 Gb/s NDR).

    Returns
    -------
    Walls

    Examples
    --------
    A 7B model on one 80 GB H100 does not fit with mixed-precision Adam:

    >>> w = three_walls(7e9, 1e12, recipe="mixed_precision_adam", accelerator="H100")
    >>> w.state_per_gpu.total / 1e9, w.fits
    (112.0, False)

    A 70B model with ZeRO-3 across an 8-GPU H100 node still needs 140 GB per GPU:

    >>> w = three_walls(70e9, 1e12, accelerator="H100", chips=8, stage=3)
    >>> w.state_per_gpu.total / 1e9, w.fits, w.min_gpus
    (140.0, False, 14)
    """
    spec = _accelerator(accelerator)
    r = _recipe(recipe)
    flops = training_flops(params, tokens)
    mfu = check_real("mfu", mfu, minimum=0, maximum=1, strict_min=True)
    chips = check_int("chips", chips, minimum=1)
    stage = zero_stage(stage).stage
    tokens_per_step = check_real("tokens_per_step", tokens_per_step, minimum=0, strict_min=True)
    alpha = check_real("alpha", alpha, minimum=0)
    cluster, link_bandwidth = _walls_network(spec, chips, link_bandwidth, gpus_per_node, nic_bandwidth)
    params, tokens = float(params), float(tokens)
    steps = max(1, math.ceil(tokens / tokens_per_step))
    comm_time, link_bandwidth = _walls_comm_time(params, spec, r, chips, stage, cluster, link_bandwidth, alpha)
    time_one = training_time(params, tokens, flops_per_chip=spec.bf16_flops, mfu=mfu)
    compute_cluster = time_one / chips
    return Walls(params=params, tokens=tokens, recipe=r.name, accelerator=spec, mfu=mfu, chips=chips, stage=stage,
                 tokens_per_step=tokens_per_step, link_bandwidth=link_bandwidth, alpha=alpha, flops=flops,
                 state=model_state_bytes(params, recipe=r.name),
                 state_per_gpu=zero_state_bytes_per_gpu(params, recipe=r.name, dp=chips, stage=stage),
                 hbm_bytes=spec.hbm_bytes, time_one_chip=time_one, compute_time_cluster=compute_cluster,
                 steps=steps, compute_time_per_step=compute_cluster / steps,
                 comm_bytes_per_step=gradient_comm_bytes_per_gpu(params, chips, recipe=r.name, stage=stage),
                 comm_time_per_step=comm_time, cluster=cluster)


def _walls_network(spec, chips, link_bandwidth, gpus_per_node, nic_bandwidth) -> tuple:
    """``(cluster, link_bandwidth)``: the NCCL cluster model for the table's NVIDIA GPUs when no
    ``link_bandwidth`` is given (nodes of ``gpus_per_node``), else a flat ring on that link
    (default: the chip's scale-up link) and no cluster."""
    cluster = None
    if link_bandwidth is None and spec.name in _CLUSTER_GPUS:
        from .gpu_cluster import gpu_cluster

        gpn = min(chips, check_int("gpus_per_node", gpus_per_node, minimum=1))
        nodes = math.ceil(chips / gpn)
        if nic_bandwidth is None:
            nic_bandwidth = NODE_NIC_BANDWIDTH[spec.name]
        cluster = gpu_cluster(nodes, gpus_per_node=gpn, accelerator=spec,
                              nic_bandwidth=nic_bandwidth if nodes > 1 else None)
    elif link_bandwidth is None:
        link_bandwidth = spec.link_bandwidth
    if cluster is None:
        link_bandwidth = check_real("link_bandwidth", link_bandwidth, minimum=0, strict_min=True)
    return cluster, link_bandwidth


def _walls_comm_time(params, spec, r, chips, stage, cluster, link_bandwidth, alpha) -> tuple:
    """``(seconds, link_bandwidth)`` of one step's gradient exchange: a flat ring's alpha-beta time,
    or NCCL's all-reduce on ``cluster`` (whose bus bandwidth is then the link bandwidth reported)."""
    if cluster is None:
        comm_time = gradient_comm_time(params, chips, bandwidth=link_bandwidth, alpha=alpha, recipe=r.name,
                                       stage=stage)
        return comm_time, link_bandwidth
    from .gpu_cluster import predict

    pred = predict("allreduce", params * r.grads, cluster)
    # ZeRO-1/2 move the same bytes as an all-reduce (reduce-scatter + all-gather); ZeRO-3 adds an all-gather.
    comm_time = pred.time * zero_stage(stage).traffic_factor
    return comm_time, (pred.busbw if chips > 1 else spec.link_bandwidth)


# ---------------------------------------------------------------------------------------------------------------
# Part IV: where the walls meet (chapters 10 and 13): hybrid sharding, gradient accumulation under ZeRO, the
# number of tokens past which sharded data parallelism is compute-bound, and the peak an FP8 run is measured on.

#: Dense FP8 tensor-core FLOP/s over dense BF16, per GPU of the hardware table that has FP8: twice on Hopper
#: (H100 SXM datasheet: FP8 3,958 TFLOPS and BF16 1,979 TFLOPS, both with sparsity) and Blackwell (B200: FP8 4.5
#: PFLOPS dense against BF16 2.25). The A100 has no FP8 tensor cores.
FP8_OVER_BF16 = MappingProxyType({"H100": 2.0, "H200": 2.0, "B200": 2.0})


def dense_peak(accelerator, *, precision="bf16") -> float:
    """A GPU's dense tensor-core peak in FLOP/s for ``precision`` (``"bf16"`` or ``"fp8"``): the denominator of
    an MFU (chapter "Choosing a layout": say which peak an MFU is of).

    Examples
    --------
    >>> dense_peak("H100") / 1e12, dense_peak("H100", precision="fp8") / 1e12
    (989.5, 1979.0)
    >>> dense_peak("A100", precision="fp8")
    Traceback (most recent call last):
    ...
    ValueError: precision: A100 has no FP8 tensor cores (FP8 peaks are known for B200, H100, H200)
    """
    spec = _accelerator(accelerator) if not isinstance(accelerator, Accelerator) else accelerator
    precision = check_choice("precision", precision, ["bf16", "fp8"])
    if precision == "bf16":
        return spec.bf16_flops
    if spec.name not in FP8_OVER_BF16:
        raise ValueError(f"precision: {spec.name} has no FP8 tensor cores (FP8 peaks are known for "
                         f"{', '.join(sorted(FP8_OVER_BF16))})")
    return FP8_OVER_BF16[spec.name] * spec.bf16_flops


def hsdp_state_bytes_per_gpu(params, *, recipe, dp, shard) -> StateBytes:
    """Model state per GPU under hybrid sharding (HSDP, ZeRO-3 within groups of ``shard`` ranks, the groups
    replicas of each other): the whole state over ``shard``, whatever ``dp``.

    ``shard = dp`` is ZeRO-3 (FSDP); ``shard = 1`` is plain data parallelism.

    Examples
    --------
    A 70B model with mixed-precision Adam on 64 GPUs: sharded over all, over a node, over two nodes:

    >>> [round(hsdp_state_bytes_per_gpu(70e9, recipe="mixed_precision_adam", dp=64, shard=s) / 1e9, 1) for s in (64, 8, 16)]
    [17.5, 140.0, 70.0]
    """
    dp = check_int("dp", dp, minimum=1)
    shard = check_int("shard", shard, minimum=1, maximum=dp)
    if dp % shard:
        raise ValueError(f"shard must divide dp ({dp}), got {shard}")
    return zero_state_bytes_per_gpu(params, recipe=recipe, dp=shard, stage=3)


def hsdp_comm_bytes_per_gpu(params, *, dp, shard, recipe="mixed_precision_adam") -> dict:
    """Bytes each GPU sends per step under hybrid sharding, by group.

    Inside its group of ``shard`` ranks a GPU runs ZeRO-3's collectives (the
    weights gathered twice, the gradient reduce-scattered: ``(s - 1)/s`` of
    each); across the ``dp / shard`` replicas it all-reduces its ``1/s`` of
    the gradient (``2 (r - 1)/r`` of it). With the group inside one node only
    the second crosses the network, ``shard`` times less than DDP's
    all-reduce; FSDP's ``ShardingStrategy.HYBRID_SHARD`` and FSDP2's 2-D
    mesh (``fully_shard(..., mesh=...)``) run it so.

    Returns
    -------
    dict
        ``{"shard": bytes, "replicas": bytes}``.

    Examples
    --------
    70B, bf16 weights and gradients, 64 GPUs, a group per node of 8:

    >>> b = hsdp_comm_bytes_per_gpu(70e9, dp=64, shard=8)
    >>> round(b["shard"] / 1e9), round(b["replicas"] / 1e9, 1)     # 3 x 7/8 x 140 GB; 2 x 7/8 x 17.5 GB
    (368, 30.6)
    """
    dp = check_int("dp", dp, minimum=1)
    shard = check_int("shard", shard, minimum=1, maximum=dp)
    if dp % shard:
        raise ValueError(f"shard must divide dp ({dp}), got {shard}")
    r = _recipe(recipe)
    params = check_real("params", params, minimum=0, strict_min=True)
    replicas = dp // shard
    inside = (shard - 1) / shard * params * (2 * r.weights + r.grads)
    across = ring_bytes_per_rank(params * r.grads / shard, replicas)
    return {"shard": inside, "replicas": across}


def accumulation_comm_bytes_per_gpu(params, p, *, stage, accumulation, sync_every_microbatch=False,
                                    recipe="mixed_precision_adam") -> float:
    """Bytes each of ``p`` data-parallel GPUs sends per optimizer step with ``accumulation`` microbatches.

    The global batch is ``micro_batch x accumulation x p`` sequences. DDP
    and ZeRO-1 can sum the microbatches' gradients locally and reduce once
    (PyTorch's ``no_sync()``, FSDP2's ``set_requires_gradient_sync(False)``
    on all but the last); ``sync_every_microbatch`` reduces after each. ZeRO-2
    keeps only its shard of the gradient, so it must reduce-scatter every
    microbatch, unless it holds the whole gradient until the last (the
    memory :func:`accumulation_grad_bytes_per_gpu` counts). ZeRO-3 gathers
    every microbatch's weights, forward and backward, whatever it does with
    the gradients.

    Examples
    --------
    7B on 8 GPUs, 4 microbatches, bf16 gradients and weights: DDP with
    ``no_sync`` sends one all-reduce; ZeRO-2 four reduce-scatters and one
    all-gather; ZeRO-3 eight gathers and four reduce-scatters:

    >>> [round(accumulation_comm_bytes_per_gpu(7e9, 8, stage=s, accumulation=4) / 1e9, 2) for s in (0, 2, 3)]
    [24.5, 61.25, 147.0]
    >>> round(accumulation_comm_bytes_per_gpu(7e9, 8, stage=0, accumulation=4, sync_every_microbatch=True) / 1e9)
    98
    """
    k = check_int("accumulation", accumulation, minimum=1)
    z = zero_stage(stage)
    p = check_int("p", p, minimum=1)
    r = _recipe(recipe)
    params = check_real("params", params, minimum=0, strict_min=True)
    grad, weights, f = params * r.grads, params * r.weights, (p - 1) / p
    reduces = k if (sync_every_microbatch or z.stage >= 2) else 1
    if z.stage == 0:
        return reduces * ring_bytes_per_rank(grad, p)
    gathers = 2 * k if z.stage == 3 else 1
    return f * (reduces * grad + gathers * weights)


def accumulation_grad_bytes_per_gpu(params, *, dp, stage, reduce_every_microbatch=True,
                                    recipe="mixed_precision_adam") -> float:
    """Gradient bytes a GPU holds while it accumulates microbatches (the recipe's gradient width: 4 bytes for
    an fp32 accumulation buffer, Megatron-LM's under bf16).

    ZeRO-2 and 3 keep ``1/dp`` of it if they reduce-scatter every microbatch; to reduce once they must hold the
    whole gradient until the last, as DDP and ZeRO-1 always do.

    Examples
    --------
    >>> [accumulation_grad_bytes_per_gpu(7e9, dp=8, stage=2, reduce_every_microbatch=e, recipe="fp32_grads_adam") / 1e9
    ...  for e in (True, False)]
    [3.5, 28.0]
    """
    dp = check_int("dp", dp, minimum=1)
    z = zero_stage(stage)
    full = model_state_bytes(params, recipe=recipe).grads
    return full / dp if (z.stage >= 2 and reduce_every_microbatch) else full


def fsdp_compute_bound_tokens(flops_per_gpu, bandwidth, *, p=None, mfu=1.0) -> float:
    """Tokens per GPU and step above which ZeRO-3 (FSDP) is compute-bound: ``mfu C / W``, times ``(p - 1)/p``.

    A step computes ``6 N`` FLOP a token; ZeRO-3 sends, per GPU and step, its
    two gathers of bf16 weights and the reduce-scatter of bf16 gradients,
    ``(p - 1)/p 6 N`` bytes (2 bytes a value, three passes). At ``mfu C``
    FLOP/s and ``W`` bytes/s the two take as long when the tokens per GPU are
    ``mfu C / W (p - 1)/p``: past that, prefetch can hide the traffic
    (chapter 10). The parameters cancel: the threshold is the machine's.
    "How to Scale Your Model" derives the same ``C / W`` for FSDP on TPUs.

    Parameters
    ----------
    flops_per_gpu : float, str or Accelerator
        ``C``, dense FLOP/s (or a GPU of the table: its dense BF16 peak).
    bandwidth : float
        ``W``, bytes/s one direction that each GPU's ZeRO-3 traffic gets.
    p : int, optional
        Data-parallel GPUs (default: many, ``(p - 1)/p = 1``).
    mfu : float
        The share of ``C`` the products reach (0, 1].

    Examples
    --------
    An H100 through one 400 Gb/s NIC (50 GB/s per direction): about 20K tokens per GPU, 8K at 40 % MFU:

    >>> round(fsdp_compute_bound_tokens("H100", 50e9)), round(fsdp_compute_bound_tokens("H100", 50e9, mfu=0.4))
    (19790, 7916)
    """
    c = _peak(flops_per_gpu)
    w = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    mfu = check_real("mfu", mfu, minimum=0, maximum=1, strict_min=True)
    share = 1.0 if p is None else (check_int("p", p, minimum=2) - 1) / p
    return mfu * c / w * share


def tp_compute_bound_hidden(flops_per_gpu, bandwidth, *, tp, mfu=1.0) -> float:
    """Hidden size above which a layer's products outlast its tensor-parallel all-reduces: ``(2/9)(T - 1) mfu C / W``.

    Per token and layer, forward and backward: ``72 h^2 / T`` FLOP a GPU
    (``6 x 12 h^2``), and four ring all-reduces of ``2h`` bf16 bytes,
    ``16 h (T - 1)/T`` bytes sent (chapter 11). Equal when
    ``h = (2/9)(T - 1) mfu C / W``: tensor parallelism over a link of rate
    ``W`` can only hide behind layers wider than that.

    Examples
    --------
    8 H100s: over NVLink (450 GB/s) any layer past ~3.4K is wide enough; over one 400 Gb/s NIC none is:

    >>> round(tp_compute_bound_hidden("H100", 450e9, tp=8)), round(tp_compute_bound_hidden("H100", 50e9, tp=8))
    (3420, 30784)
    """
    c = _peak(flops_per_gpu)
    w = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    t = check_int("tp", tp, minimum=2)
    mfu = check_real("mfu", mfu, minimum=0, maximum=1, strict_min=True)
    return 2 / 9 * (t - 1) * mfu * c / w
