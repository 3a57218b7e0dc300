"""One data-parallel training step: compute, then a ring all-reduce of gradients.

Chapter 1 uses this to ask when a cluster is communication-bound. Every GPU
holds a full model copy, computes gradients for its own tokens, and the
gradients are summed with a ring all-reduce over links of a given bandwidth
(bytes/s, one direction: in a ring each GPU sends on one link and receives on
another at the same time, so the one-way rate is the one that limits).

Compute time follows the usual transformer estimate: a forward and backward
pass costs ``6 * params * tokens`` FLOP (2 for the forward multiply-add,
4 for the backward, which computes gradients for both activations and
weights): :func:`distlib.training_flops`, where chapter 2 derives the 6.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import check_int, check_real
from .collectives import collective_time
from .ring import ring_bytes_per_rank
from .walls import FLOPS_PER_PARAM_TOKEN, training_flops

__all__ = ["StepTime", "cluster_step", "ring_allreduce_time", "balance_tokens"]


def ring_allreduce_time(n_bytes, p, *, bandwidth, alpha=0.0) -> float:
    """Seconds for a ring all-reduce of ``n_bytes`` over ``p`` ranks (flat ring, one link per rank).

    The alpha-beta cost lives in :func:`distlib.collective_time`; this is its
    ring all-reduce with ``alpha`` defaulting to 0.
    ``2 * (p - 1) * (alpha + n_bytes / (p * bandwidth))``: ``2 (p - 1)`` steps,
    each paying the per-message latency ``alpha`` (s) and sending one
    ``n_bytes / p`` chunk at ``bandwidth`` (bytes/s, one direction).

    Examples
    --------
    >>> ring_allreduce_time(8e9, 8, bandwidth=100e9)   # 2*7/8*8 GB at 100 GB/s
    0.14
    """
    return float(collective_time("allreduce", n_bytes, p, alpha=alpha, bandwidth=bandwidth, algorithm="ring"))


@dataclass(frozen=True)
class StepTime:
    """Timing of one data-parallel step on a cluster (all in SI units)."""

    p: int
    params: float
    tokens_per_gpu: float
    flops_per_step: float  # FLOP one GPU performs in one step
    achieved_flops: float  # FLOP/s one GPU sustains (peak * mfu)
    grad_bytes: float  # gradient buffer each GPU all-reduces
    bytes_sent_per_gpu: float
    compute_time: float  # s
    comm_time: float  # s

    @property
    def step_time_no_overlap(self) -> float:
        """Compute, then communicate: the two add up."""
        return self.compute_time + self.comm_time

    @property
    def step_time_overlap(self) -> float:
        """Perfect overlap: the longer of the two hides the shorter."""
        return max(self.compute_time, self.comm_time)

    @property
    def utilization_no_overlap(self) -> float:
        """Fraction of the step the GPU spends computing, without overlap."""
        total = self.step_time_no_overlap
        return self.compute_time / total if total > 0 else 1.0

    @property
    def utilization_overlap(self) -> float:
        """Fraction of the step the GPU spends computing, with perfect overlap."""
        total = self.step_time_overlap
        return self.compute_time / total if total > 0 else 1.0

    @property
    def communication_bound(self) -> bool:
        """True when the all-reduce takes longer than the compute it follows.

        Then even perfect overlap leaves the GPU idle, and adding GPUs
        (more tokens per step at fixed tokens per GPU) cannot shorten it.
        """
        return self.comm_time > self.compute_time

    @property
    def tokens_per_second(self) -> float:
        """Cluster throughput without overlap (tokens/s)."""
        return self.p * self.tokens_per_gpu / self.step_time_no_overlap


def cluster_step(
    *,
    p,
    params,
    link_bandwidth,
    flops_per_gpu,
    tokens_per_gpu,
    mfu=0.4,
    bytes_per_value=2,
    alpha=0.0,
) -> StepTime:
    """Time one data-parallel step: local compute, then a ring all-reduce.

    Parameters
    ----------
    p : int
        GPUs in the ring (>= 1).
    params : float
        Model parameters (> 0).
    link_bandwidth : float
        Bytes/s each GPU can send to its ring neighbour, one direction (> 0).
    flops_per_gpu : float
        Peak dense FLOP/s of one GPU at the training precision (> 0).
    tokens_per_gpu : float
        Tokens each GPU processes per step (> 0).
    mfu : float
        Model FLOP utilisation, the fraction of peak the compute achieves,
        in (0, 1]. 0.4 is typical of well-tuned large runs.
    bytes_per_value : float
        Bytes per gradient value (2 for bf16, 4 for fp32).
    alpha : float
        Per-message latency of a ring step, seconds (>= 0).

    Returns
    -------
    StepTime

    Examples
    --------
    A 7B-parameter model, bf16 gradients, 8 GPUs on 100 GB/s links:

    >>> s = cluster_step(p=8, params=7e9, link_bandwidth=100e9,
    ...                  flops_per_gpu=1e15, mfu=0.5, tokens_per_gpu=4096)
    >>> round(s.compute_time, 4), round(s.comm_time, 4)
    (0.3441, 0.245)
    >>> s.communication_bound
    False
    """
    p = check_int("p", p, minimum=1)
    params = check_real("params", params, minimum=0, strict_min=True)
    link_bandwidth = check_real("link_bandwidth", link_bandwidth, minimum=0, strict_min=True)
    flops_per_gpu = check_real("flops_per_gpu", flops_per_gpu, minimum=0, strict_min=True)
    tokens_per_gpu = check_real("tokens_per_gpu", tokens_per_gpu, minimum=0, strict_min=True)
    mfu = check_real("mfu", mfu, minimum=0, maximum=1, strict_min=True)
    bytes_per_value = check_real("bytes_per_value", bytes_per_value, minimum=0, strict_min=True)
    alpha = check_real("alpha", alpha, minimum=0)

    flops = training_flops(params, tokens_per_gpu)
    achieved = flops_per_gpu * mfu
    grad_bytes = params * bytes_per_value
    return StepTime(
        p=p,
        params=params,
        tokens_per_gpu=tokens_per_gpu,
        flops_per_step=flops,
        achieved_flops=achieved,
        grad_bytes=grad_bytes,
        bytes_sent_per_gpu=ring_bytes_per_rank(grad_bytes, p),
        compute_time=flops / achieved,
        comm_time=ring_allreduce_time(grad_bytes, p, bandwidth=link_bandwidth, alpha=alpha),
    )


def balance_tokens(*, p, link_bandwidth, flops_per_gpu, mfu=0.4, bytes_per_value=2) -> float:
    """Tokens per GPU per step at which compute time equals all-reduce time.

    Setting ``6 N T / (F m) = 2 (p - 1) / p * b N / B`` (latency ignored)
    gives ``T = F m / B * 2 (p - 1) / p * b / 6``. The parameter count ``N``
    cancels: both sides grow with the model. Below this many tokens per GPU
    the step is communication-bound, and no perfect overlap can hide it.

    Examples
    --------
    >>> balance_tokens(p=2, link_bandwidth=1e9, flops_per_gpu=3e12, mfu=1.0, bytes_per_value=2)
    1000.0
    """
    p = check_int("p", p, minimum=1)
    link_bandwidth = check_real("link_bandwidth", link_bandwidth, minimum=0, strict_min=True)
    flops_per_gpu = check_real("flops_per_gpu", flops_per_gpu, minimum=0, strict_min=True)
    mfu = check_real("mfu", mfu, minimum=0, maximum=1, strict_min=True)
    bytes_per_value = check_real("bytes_per_value", bytes_per_value, minimum=0, strict_min=True)
    return flops_per_gpu * mfu / link_bandwidth * 2 * (p - 1) / p * bytes_per_value / FLOPS_PER_PARAM_TOKEN
