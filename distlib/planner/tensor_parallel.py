"""What tensor parallelism costs one layer: its collectives, their bytes and time, and its matrix products.

Chapter 11 derives these; its widget (:mod:`distlib.widgets.tp`) draws them,
and the planner (:mod:`distlib.planner.step`) counts the same collectives of
the same bytes in its ``tp_comm`` term, timed there by chapter 7's NCCL model
instead of the plain ring.

* **Communication.** Megatron's tensor parallelism (Shoeybi et al. 2019) ends
  the attention block and the MLP each with an all-reduce of the layer's
  activations, ``s b h`` 16-bit values (``2 s b h`` bytes,
  :func:`tp_message_bytes`), in the forward pass, and does two more of the
  same size on the gradients in the backward: four per layer per micro
  batch; full recomputation runs the forward again in the backward, with
  its two, so six (:func:`tp_collectives_per_layer`). With sequence
  parallelism (Korthikanti et al. 2022, section 4.2.2) each all-reduce
  becomes a reduce-scatter and an all-gather: the same ring steps and the
  same bytes, so the same time. (Megatron also gathers the layer norm's
  output again in the backward, overlapped with the weight-gradient
  product; not counted.) :func:`tp_comm_seconds` times each collective with
  chapter 5's alpha-beta model and the ring's coefficients
  (:func:`distlib.cost_coefficients`): ``2 (T - 1)`` steps of ``alpha`` plus
  ``2 (T - 1) / T`` of the buffer through one link of bandwidth ``B``, one
  direction, nothing overlapped. Inside a node ``B`` is the accelerator's
  scale-up link from the hardware table (the H100's NVLink 4, 450 GB/s);
  across nodes it is one InfiniBand NDR NIC per GPU
  (:data:`distlib.NDR_NIC_BANDWIDTH`, 50 GB/s), which caps a ring that
  crosses nodes whatever NVLink does inside them. ``alpha`` per ring step is
  NCCL's own latency for its ring with the Simple protocol (the one it picks
  for messages of megabytes), from ``src/graph/tuning.cc``'s ``hwLat`` table
  as chapter 7's model (:mod:`distlib.gpu_cluster`) carries it: 3.4 us a
  step over NVLink, 14 us a step over the network (:data:`ALPHA`). At GPT-3's
  layer each buffer is 50 MB: latency is a fifth of the NVLink time at
  T = 8 (a third at T = 16) and a tenth of the NIC's.
* **Compute.** The matrix products of one layer, forward, for ``b``
  sequences of ``s`` tokens: the query, key and value projections
  ``3 x 2 b s h^2``, the output projection ``2 b s h^2``, the MLP's two
  ``h x 4h`` products ``2 x 8 b s h^2``, and attention's scores ``Q K^T`` and
  weighted values ``2 x 2 b s^2 h``; in all ``F = 24 b s h^2 + 4 b s^2 h``
  FLOP (Narayanan et al. 2021's count, the causal mask not exploited). The
  backward pass costs two forwards, so a step runs ``3 F``; selective
  recomputation adds the attention core's ``4 b s^2 h`` again, full
  recomputation a whole ``F``. Tensor parallelism splits every product ``T``
  ways, so one GPU runs ``(3 F + recomputed) / T`` (:func:`layer_matmul_flops`),
  at ``matmul_efficiency`` of the accelerator's dense BF16 peak from the
  hardware table. Layer norms, softmax and dropout are memory-bound and left
  out, which flatters compute.

:func:`tp_view` gathers them for one choice of ``T``, sequence parallelism,
recomputation and placement, with the activations a layer keeps
(:func:`distlib.activation_bytes_per_layer`), as a :class:`TensorParallelView`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._check import check_bool, check_choice, check_int, check_real
from ..activations import RECOMPUTE_MODES, activation_bytes_per_layer
from ..collectives.costs import alpha_beta_time, cost_coefficients
from ..hardware import accelerator as _accelerator
from ..topology.graphs import NDR_NIC_BANDWIDTH

__all__ = ["PLACEMENTS", "ALPHA", "GPT3_LAYER", "GPUS_PER_NODE", "tp_message_bytes", "tp_collectives_per_layer",
           "tp_comm_seconds", "layer_matmul_flops", "TensorParallelView", "tp_view"]

#: Where the T ranks sit: inside one node (the accelerator's scale-up link) or across nodes (one NIC per GPU).
PLACEMENTS = ("nvlink", "nic")
#: Seconds of latency per ring step: NCCL's hwLat for the ring, Simple protocol (src/graph/tuning.cc),
#: NVLink and network rows, the values chapter 7's distlib.gpu_cluster carries.
ALPHA = {"nvlink": 3.4e-6, "nic": 14e-6}
#: GPT-3 175B's layer (Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1:
#: d_model 12288, 96 heads, context 2048), one sequence per micro batch.
GPT3_LAYER = {"hidden": 12288, "heads": 96, "seq": 2048, "micro_batch": 1}
#: GPUs in one NVLink node (a DGX/HGX H100): a larger T inside one needs a larger NVLink domain.
GPUS_PER_NODE = 8
_BF16 = 2  # bytes per activation value


def tp_message_bytes(seq, micro_batch, hidden) -> float:
    """Bytes of one tensor-parallel collective: the layer's activations, ``s b h`` 16-bit values.

    Parameters
    ----------
    seq : int
        Tokens per sequence on this GPU (a context-parallel shard's), ``>= 1``.
    micro_batch : int
        Sequences per micro batch, ``>= 1``.
    hidden : int
        The model's width ``h``, ``>= 1``.

    Returns
    -------
    float
        ``2 s b h``.

    Raises
    ------
    ValueError, TypeError
        Naming the argument that is not an integer ``>= 1``.

    Examples
    --------
    >>> tp_message_bytes(2048, 1, 12288)   # GPT-3's layer: 2 x 2048 x 12288
    50331648.0
    """
    s = check_int("seq", seq, minimum=1)
    b = check_int("micro_batch", micro_batch, minimum=1)
    h = check_int("hidden", hidden, minimum=1)
    return float(_BF16 * b * s * h)


def tp_collectives_per_layer(recompute="none") -> int:
    """All-reduces (or reduce-scatter + all-gather pairs) per layer per micro batch.

    Parameters
    ----------
    recompute : {"none", "selective", "full"}
        Full recomputation runs the forward pass, and its two all-reduces, again.

    Returns
    -------
    int
        Two forward and two backward: 4; 6 with ``"full"``.

    Raises
    ------
    ValueError
        For another ``recompute``.

    Examples
    --------
    >>> tp_collectives_per_layer(), tp_collectives_per_layer("selective"), tp_collectives_per_layer("full")
    (4, 4, 6)
    """
    return 6 if check_choice("recompute", recompute, RECOMPUTE_MODES) == "full" else 4


def tp_comm_seconds(seq, micro_batch, hidden, *, tp, sequence_parallel=False, recompute="none", alpha,
                    bandwidth) -> float:
    """Seconds of tensor-parallel collectives per layer per micro batch on a ring of ``tp`` ranks (not overlapped).

    ``tp_collectives_per_layer(recompute)`` collectives of
    ``tp_message_bytes(seq, micro_batch, hidden)`` bytes: ring all-reduces, or
    with ``sequence_parallel`` a ring reduce-scatter and a ring all-gather each
    (the same steps and bytes), timed ``A alpha + B n / bandwidth`` with the
    ring's ``(A, B)``.

    Parameters
    ----------
    seq, micro_batch, hidden : int
        The layer's shape, as :func:`tp_message_bytes`.
    tp : int
        Ranks of the tensor-parallel group, ``>= 1`` (one rank: no traffic).
    sequence_parallel : bool
    recompute : {"none", "selective", "full"}
    alpha : float
        Seconds of latency per ring step, ``>= 0``.
    bandwidth : float
        Bytes/s of one link, one direction, ``> 0``.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError, TypeError
        Naming the argument out of range.

    Examples
    --------
    >>> t = tp_comm_seconds(2048, 1, 12288, tp=8, alpha=0.0, bandwidth=50e9)
    >>> round(t * 1e3, 3)   # 4 x 2 (7/8) x 50.3 MB / 50 GB/s, in ms
    7.046
    >>> tp_comm_seconds(2048, 1, 12288, tp=1, alpha=3.4e-6, bandwidth=450e9)
    0.0
    """
    n = tp_message_bytes(seq, micro_batch, hidden)
    t = check_int("tp", tp, minimum=1)
    if check_bool("sequence_parallel", sequence_parallel):
        pairs = [cost_coefficients("reduce_scatter", t), cost_coefficients("allgather", t)]
        steps, factor = sum(a for a, _ in pairs), sum(c for _, c in pairs)
    else:
        steps, factor = cost_coefficients("allreduce", t)
    one = alpha_beta_time(steps, factor, n, alpha=alpha, bandwidth=bandwidth)
    return tp_collectives_per_layer(recompute) * float(one)


def layer_matmul_flops(seq, micro_batch, hidden, *, tp=1, recompute="none") -> float:
    """FLOP of one layer's matrix products for one micro batch on one of ``tp`` GPUs, forward and backward.

    ``F = 24 b s h^2 + 4 b s^2 h`` forward (the module's docstring counts
    it), three times that for forward and backward, plus what ``recompute``
    runs again (``"selective"``: ``4 b s^2 h``; ``"full"``: ``F``), over ``tp``.

    Parameters
    ----------
    seq, micro_batch, hidden : int
        The layer's shape, each ``>= 1``.
    tp : int
        The tensor-parallel degree, ``>= 1``.
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float
        FLOP.

    Raises
    ------
    ValueError, TypeError
        Naming the argument out of range.

    Examples
    --------
    >>> f = layer_matmul_flops(2048, 1, 12288, tp=8)
    >>> round(f / (3 * 24 * 2048 * 12288**2 / 8), 3)   # the h^2 terms, and s / (6 h) more for attention
    1.028
    >>> layer_matmul_flops(1, 1, 1, recompute="full") / layer_matmul_flops(1, 1, 1)   # a fourth forward
    1.3333333333333333
    """
    s = check_int("seq", seq, minimum=1)
    b = check_int("micro_batch", micro_batch, minimum=1)
    h = check_int("hidden", hidden, minimum=1)
    t = check_int("tp", tp, minimum=1)
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    attention = 4.0 * b * s * s * h
    forward = 24.0 * b * s * h * h + attention
    again = {"none": 0.0, "selective": attention, "full": forward}[mode]
    return (3 * forward + again) / t


@dataclass(frozen=True)
class TensorParallelView:
    """Tensor parallelism's costs for one layer at one choice of T, sequence parallelism, recomputation, placement."""

    tp: int
    sequence_parallel: bool
    recompute: str
    placement: str
    accelerator: str
    seq: int
    micro_batch: int
    hidden: int
    heads: int
    #: activations one layer keeps on one GPU (Korthikanti et al. 2022), bytes
    activation_bytes: float
    #: one layer's matrix-product FLOP for one micro batch on one GPU, recomputation included
    flops: float
    #: FLOP/s those products run at: the dense BF16 peak times the efficiency
    flops_rate: float
    #: collectives per layer per micro batch, and the bytes of each
    collectives: int
    message_bytes: float
    #: placement -> seconds of TP communication per layer per micro batch
    comm: dict
    #: placement -> link bandwidth (bytes/s, one direction) and alpha (s per ring step)
    bandwidth: dict
    alpha: dict

    @property
    def compute_seconds(self) -> float:
        return self.flops / self.flops_rate

    @property
    def comm_seconds(self) -> float:
        """The chosen placement's communication time."""
        return self.comm[self.placement]

    @property
    def ratio(self) -> float:
        """Communication time over compute time, for the chosen placement."""
        return self.comm_seconds / self.compute_seconds


def tp_view(tp, sequence_parallel, recompute, placement, *, hidden=12288, heads=96, seq=2048, micro_batch=1,
            accelerator="H100", matmul_efficiency=0.5) -> TensorParallelView:
    """Tensor parallelism's memory, communication and compute for one layer, both placements' communication.

    Parameters
    ----------
    tp : int
        The tensor-parallel degree, ``>= 1``.
    sequence_parallel : bool
    recompute : {"none", "selective", "full"}
    placement : {"nvlink", "nic"}
        The chosen placement (:attr:`TensorParallelView.comm_seconds`); both are priced.
    hidden, heads, seq, micro_batch : int
        The layer's shape; by default GPT-3 175B's (:data:`GPT3_LAYER`).
    accelerator : str
        A name from the hardware table (peak FLOP/s and link bandwidth).
    matmul_efficiency : float
        The fraction of the dense BF16 peak the matrix products reach, in (0, 1].

    Returns
    -------
    TensorParallelView

    Raises
    ------
    ValueError, TypeError
        Naming the argument out of range.

    Examples
    --------
    >>> v = tp_view(8, False, "none", "nvlink")
    >>> v.collectives, v.message_bytes, v.comm["nic"] > v.comm["nvlink"]
    (4, 50331648.0, True)
    """
    placement = check_choice("placement", placement, PLACEMENTS)
    efficiency = check_real("matmul_efficiency", matmul_efficiency, minimum=0, maximum=1, strict_min=True)
    spec = _accelerator(accelerator)
    act = activation_bytes_per_layer(seq, micro_batch, hidden, heads, tp=tp, sequence_parallel=sequence_parallel,
                                     recompute=recompute)
    bandwidth = {"nvlink": float(spec.link_bandwidth), "nic": float(NDR_NIC_BANDWIDTH)}
    comm = {p: tp_comm_seconds(seq, micro_batch, hidden, tp=tp, sequence_parallel=sequence_parallel,
                               recompute=recompute, alpha=ALPHA[p], bandwidth=bandwidth[p]) for p in PLACEMENTS}
    return TensorParallelView(int(tp), bool(sequence_parallel), recompute, placement, spec.name, int(seq),
                              int(micro_batch), int(hidden), int(heads), act,
                              layer_matmul_flops(seq, micro_batch, hidden, tp=tp, recompute=recompute),
                              float(spec.bf16_flops) * efficiency, tp_collectives_per_layer(recompute),
                              tp_message_bytes(seq, micro_batch, hidden), comm, bandwidth, dict(ALPHA))
