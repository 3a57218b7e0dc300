"""One training step of a layout (DP x TP x PP x CP, ZeRO, recomputation), and the planner that ranks them.

Chapter "Choosing a layout" asks which way to cut a model over a cluster. The
answer here is arithmetic over the library's other models, each asked in its
home: parameters and FLOPs from :mod:`distlib.planner.model`, model-state
bytes per ZeRO stage from :func:`distlib.walls.zero_state_bytes_per_gpu`,
activations from :func:`distlib.activations.activation_bytes_per_layer`
(Korthikanti et al. 2022), every collective's time from the GPU-cluster model
of chapter 7 (:func:`distlib.gpu_cluster.predict_time`, NCCL's tuner), the
bubble from :mod:`distlib.pipeline_schedule`'s closed forms, peak FLOP/s and
HBM from the hardware table.

Placement. Ranks are numbered TP fastest, then CP, then PP, then DP (Llama 3's
order), ``gpus_per_node`` to a node. Each collective runs on the sub-cluster
its group occupies (counted rank by rank: how many nodes, how many of its
members on each); groups that share a node share its NICs.

Time of one step (the names of :attr:`LayoutStep.breakdown`, in seconds;
``m = global_batch / (dp b)`` microbatches of ``b`` sequences per pipeline):

* ``compute``: the stage's matrix products, hardware FLOPs (recomputation
  included) over ``peak * matmul_efficiency``;
* ``memory_bound``: the layer norms, softmax, dropout and activations between
  the products, which stream memory: ``memory_traffic`` times the bytes of
  activations a layer keeps with no recomputation (Korthikanti's count; without
  the attention scores when the kernel is FlashAttention), over the HBM
  bandwidth; recomputation runs a forward again, a third more traffic: of the
  whole layer with full recomputation, of the attention core with selective;
* ``tp_comm``: Megatron's four all-reduces of ``s b h`` bf16 values per layer
  per microbatch (two forward, two backward; six with full recomputation);
  with sequence parallelism each is a reduce-scatter and an all-gather, the
  same bytes. Counted as not overlapped, an upper bound: the forward ones are
  exposed (the next product needs their result), but Megatron-LM issues each
  backward one asynchronously before the weight-gradient product that does
  not need it (Korthikanti et al. 2022, section 6.2;
  ``LinearWithGradAccumulationAndAsyncCommunication`` in
  ``megatron/core/tensor_parallel/layers.py``), so up to half of the term hides;
* ``cp_comm``: context parallelism's collectives per layer as
  :func:`distlib.context_parallel.cp_collectives` lists them for Llama 3's
  all-gather method (keys and values gathered forward and again backward,
  their gradients reduce-scattered);
* ``pp_comm``: one activation and one gradient per microbatch per chunk
  between neighbouring stages (split ``tp`` ways, Megatron's scatter/gather);
* ``bubble``: ``(p - 1) / v`` microbatch-times (1F1B and interleaved);
* ``dp_comm``: the data-parallel collectives of the ZeRO stage (their passes
  from :class:`distlib.walls.ZeroStage`, gradients at the recipe's gradient
  width, 4 bytes when they are reduced in fp32; ZeRO-3's gathers and
  reduce-scatter once per microbatch, one collective per module, so each
  pays the latency of a collective over every data-parallel rank), times
  ``dp_exposure``;
* ``optimizer``: Adam's update streaming the GPU's share of the
  mixed-precision state through HBM once;
* ``ep_comm`` (a mixture of experts, chapter 15): each MoE layer's two
  all-to-alls (dispatch and combine) forward and again backward (and once
  more forward under full recomputation), each rank sending its ``T`` tokens'
  ``top_k`` copies of ``h`` bf16 values, ``(ep - 1)/ep`` of them to other
  ranks (:func:`distlib.collectives.alltoall_time`, pairwise), at the NVLink
  rate when the ``ep x tp`` ranks fit in a node, else at the GPU's share of
  the node's NICs (its in-node share counted at that rate too: an upper
  bound). Counted as not overlapped; DeepSeek-V3's DualPipe hides it.

Experts. Expert parallelism splits the routed experts over ``ep`` of the
``dp x cp`` ranks (consecutive replicas), so a GPU holds ``1 / (tp pp ep)`` of
them; their state is sharded by ZeRO over the ``dp cp / ep`` ranks that hold
the same experts, and their gradients are reduced over those ranks only. The
FLOPs are the active parameters' (:attr:`distlib.planner.model.Transformer.active_params`);
the activations are a dense layer's with the MLP as wide as a token's experts
together.

Three constants are fitted (:func:`planner_constants`) and everything else
is predicted: ``matmul_efficiency`` and ``memory_traffic`` on Korthikanti et
al.'s 22B and 1T rows, ``dp_exposure`` on what 8-way data parallelism added
to their 530B run (the difference of two printed steps, section 6.3;
``data/published_layouts.csv``, ``role`` "fit").

Memory (peak per GPU): the model state of the recipe (16 bytes a parameter,
18 with fp32 gradients) for the GPU's ``1 / (tp pp)`` of the weights under its
ZeRO stage over ``dp cp`` ranks, plus one microbatch's activations per layer
times the layers the first stage holds at its peak: its chunks' layers, each
chunk weighted by the microbatches it holds then in the schedule's order of ops
(:func:`distlib.pipeline_schedule.peak_held`: ``min(p, m)`` microbatches of
the stage for 1F1B, ``p + (p - 1)/v`` for interleaved when the chunks are
equal), plus, with full recomputation, the one layer being recomputed. Logits,
ZeRO-3's gathered layer, temporary buffers and fragmentation are not counted.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache

from .._check import check_bool, check_choice, check_int
from ..layout import Layout
from ..activations import RECOMPUTE_MODES, activation_bytes_per_layer
from ..context_parallel import cp_activation_bytes_per_layer, cp_collectives
from ..collectives.alltoall import alltoall_time
from ..gpu_cluster import _HW_LAT, GpuCluster, calibration, gpu_cluster, predict_time
from ..pipeline_schedule import peak_held
from .published import published_layouts, residual_cause, row_accelerator
from .model import Transformer, transformer
from .tensor_parallel import tp_collectives_per_layer, tp_message_bytes
from ..units import gbit_to_bytes_per_s
from ..walls import RECIPES, training_flops, zero_stage, zero_state_bytes_per_gpu

__all__ = ["LAYOUT_SCHEDULES", "ATTENTION_KERNELS", "BREAKDOWN_TERMS", "MIN_CP_TOKENS", "PlannerConstants", "Residual",
           "published_residuals", "exposure_fitted_on_the_step",
           "planner_constants", "LayoutStep", "layout_step", "plan_layouts", "published_model", "published_cluster", "published_step"]

#: Pipeline schedules the planner times (the closed forms of :mod:`distlib.pipeline_schedule`).
LAYOUT_SCHEDULES = ("1f1b", "interleaved")
#: How attention is computed: scores written to HBM, or FlashAttention (they never are).
ATTENTION_KERNELS = ("materialized", "flash")
#: The named seconds of a step, in the order they are summed.
BREAKDOWN_TERMS = ("compute", "memory_bound", "tp_comm", "cp_comm", "pp_comm", "bubble", "dp_comm", "optimizer",
                   "ep_comm")
#: Tokens of a sequence each GPU keeps before :func:`plan_layouts` tries context parallelism. The model
#: charges nothing for short matrices, so it would split 2K sequences 8 ways; practice (Llama 3's 128K
#: stage) keeps CP for long contexts. Pass ``cp=`` to try any degree.
MIN_CP_TOKENS = 8192
_BF16 = 2  # bytes per activation, weight or gradient value
_CP_KIND = "allgather"  # how the planner's CP ranks get the keys and values: Llama 3's all-gather


@dataclass(frozen=True)
class PlannerConstants:
    """The planner's three fitted constants.

    Attributes
    ----------
    matmul_efficiency : float
        Achieved fraction of the dense BF16 peak in the matrix products.
    memory_traffic : float
        Bytes the non-matmul operations move per byte of activations a layer keeps.
    dp_exposure : float
        Step seconds per second of NCCL-predicted data-parallel communication
        (0: hidden; 1: exposed at nccl-tests speed; more: slower than that).
        Fitted on one measured difference and applied to every data-parallel
        collective, ZeRO-3's gathers included: its magnitude is a fit, not a
        derivation.
    sources : dict
        Constant -> the published row ids it was fitted on.
    """

    matmul_efficiency: float
    memory_traffic: float
    dp_exposure: float
    sources: dict = field(default_factory=dict, repr=False, hash=False, compare=False)


@dataclass(frozen=True)
class LayoutStep:
    """One training step of a layout: its time, terms, utilization and memory.

    ``layout`` is the :class:`distlib.layout.Layout` it ran (its degrees, ZeRO stage, sequence parallelism,
    schedule, chunks and microbatches per replica); ``recompute``, ``micro_batch`` (sequences per
    microbatch), ``attention``, ``recipe`` (the bytes a parameter keeps) and ``lighter_ends`` (a layer fewer on
    the first and last stages) are how each GPU runs it.
    """

    layout: Layout
    recompute: str
    micro_batch: int
    attention: str
    global_batch: int
    step_time: float
    mfu: float
    hfu: float
    memory_bytes: float
    hbm_bytes: float
    breakdown: dict = field(hash=False, compare=False)
    memory: dict = field(hash=False, compare=False)
    recipe: str = "mixed_precision_adam"
    lighter_ends: bool = False

    @property
    def fits(self) -> bool:
        """The first stage's peak memory is within the GPU's HBM."""
        return self.memory_bytes <= self.hbm_bytes

    @property
    def chunks(self) -> int:
        """Model chunks per stage (the layout's)."""
        return self.layout.chunks

    @property
    def name(self) -> str:
        """A short name, e.g. ``dp8 tp4 pp12 cp1 zero1 full``."""
        lay = self.layout
        return (f"dp{lay.dp} tp{lay.tp} pp{lay.pp} cp{lay.cp}{f' ep{lay.ep}' if lay.ep > 1 else ''} zero{lay.zero} "
                f"{self.recompute}"
                f"{' sp' if lay.sequence_parallel else ''} {lay.schedule} v{lay.chunks} b{self.micro_batch}")


@dataclass(frozen=True)
class _Plan:
    """A layout as the planner prices it: the :class:`Layout` (its ``chunks`` and ``microbatches`` may be unset
    until :func:`_choices` fills them) and how each GPU runs it."""

    layout: Layout
    recompute: str
    micro_batch: int | None
    attention: str
    recipe: str = "mixed_precision_adam"
    lighter_ends: bool = False


@dataclass(frozen=True)
class _Terms:
    """A step's pieces before the constants: per microbatch, and per step."""

    microbatches: int
    bubble_units: float  # microbatch-times of bubble
    compute_at_peak: float  # s per microbatch at 100 % of peak
    memory_at_hbm: float  # s per microbatch with memory_traffic = 1
    tp_comm: float
    cp_comm: float
    pp_comm: float
    dp_comm: float  # s per step at nccl-tests speed
    optimizer: float  # s per step
    ep_comm: float = 0.0  # s per microbatch


@lru_cache(maxsize=4096)
def _group(cluster: GpuCluster, *dims):
    """The sub-cluster one group runs on (``None`` for one rank); ``dims`` are ``(size, stride)`` pairs.

    Group 0's members are the ranks ``sum(i_k * stride_k)``, ``i_k < size_k``; rank ``r`` is on node
    ``r // gpus_per_node``. The group's nodes each hold ``per_node`` of them, and share their NICs with the
    ``gpus_per_node / per_node`` groups alike.
    """
    ranks = [0]
    for size, stride in dims:
        ranks = [r + i * stride for r in ranks for i in range(size)]
    return _group_of(cluster, tuple(ranks))


@lru_cache(maxsize=4096)
def _group_of(cluster: GpuCluster, ranks: tuple):
    """The sub-cluster the group of world ``ranks`` runs on (``None`` for one rank)."""
    if len(ranks) == 1:
        return None
    gpn = cluster.gpus_per_node
    counts = Counter(r // gpn for r in ranks)
    per_node, nodes = max(counts.values()), len(counts)
    if nodes == 1:
        return gpu_cluster(1, gpus_per_node=per_node, accelerator=cluster.accelerator, nvls=cluster.nvls and per_node > 1)
    share = per_node / gpn  # groups on one node share its NICs
    return gpu_cluster(nodes, gpus_per_node=per_node, accelerator=cluster.accelerator, network=cluster.network,
                       nic_bandwidth=cluster.nic_bandwidth * share, nics=max(1, round(cluster.nics * share)),
                       nvls=cluster.nvls and per_node > 1, sharp=cluster.sharp)


@lru_cache(maxsize=65536)
def _time(collective: str, n_bytes: float, group) -> float:
    return 0.0 if group is None else predict_time(collective, n_bytes, group)


def _stage_layers(model: Transformer, pp: int, chunks: int) -> int:
    """Layers on the busiest stage: ``chunks`` chunks of ``ceil(layers / (pp chunks))``."""
    return chunks * math.ceil(model.layers / (pp * chunks))


def _traffic_mode(lay: _Plan) -> str:
    return "selective" if lay.attention == "flash" else "none"  # FlashAttention never writes the scores


def _layer_shape(model: Transformer) -> dict:
    """The MLP's width, the key/value heads and the gating, for the activation count."""
    return {"ffn_hidden": model.active_ffn_hidden, "kv_heads": model.kv_heads, "gated_ffn": model.gated_ffn}


def _compute_terms(model: Transformer, cluster: GpuCluster, lay: _Plan) -> tuple:
    """Seconds per microbatch of the stage's products at peak, and of its memory traffic at one pass."""
    acc, h, s = cluster.accelerator, model.hidden, model.seq
    tokens = lay.micro_batch * s / lay.layout.cp  # tokens of one microbatch on one GPU's CP shard
    layer_flops = (training_flops(model.active_params_per_layer, 1.0)  # one layer, per token: products and attention
                   + (3 * model.attention_flops_per_token + model.recompute_flops_per_token(lay.recompute)) / model.layers)
    output_flops = training_flops(model.vocab * h, 1.0)  # the output layer, forward and backward, spread over the stages
    stage_flops = tokens / lay.layout.tp * (_stage_layers(model, lay.layout.pp, lay.layout.chunks) * layer_flops + output_flops / lay.layout.pp)
    memory = _stage_layers(model, lay.layout.pp, lay.layout.chunks) * _traffic_bytes(model, lay) / acc.hbm_bandwidth
    return stage_flops / acc.bf16_flops, memory


def _traffic_bytes(model: Transformer, lay: _Plan) -> float:
    """The activation bytes whose element-wise traffic one layer pays per microbatch (times ``memory_traffic``).

    A pass of the layer moves the bytes it would keep with no recomputation (the scores too, unless the kernel
    is FlashAttention). Recomputation runs a forward again, a third of a forward and backward's traffic: of the
    whole layer with full recomputation, of the attention core (the scores, their softmax and its dropout) with
    selective recomputation.
    """
    args = (round(model.seq / lay.layout.cp), lay.micro_batch, model.hidden, model.heads)
    kw = {"tp": lay.layout.tp, "sequence_parallel": lay.layout.sequence_parallel, **_layer_shape(model)}
    kept = activation_bytes_per_layer(*args, recompute=_traffic_mode(lay), **kw)
    if lay.recompute == "full":
        return kept * 4 / 3
    if lay.recompute == "selective":
        return kept + (kept - activation_bytes_per_layer(*args, recompute="selective", **kw)) / 3
    return kept


def _comm_terms(model: Transformer, cluster: GpuCluster, lay: _Plan) -> tuple:
    """Seconds per microbatch of TP, CP and PP communication (exposed)."""
    layers = _stage_layers(model, lay.layout.pp, lay.layout.chunks)
    b, s, h = lay.micro_batch, model.seq / lay.layout.cp, model.hidden
    tp_group = _group(cluster, (lay.layout.tp, 1))
    tp = layers * tp_collectives_per_layer(lay.recompute) * _time("allreduce", tp_message_bytes(s, b, h), tp_group)
    cp_group = _group(cluster, (lay.layout.cp, lay.layout.tp))
    shape = dict(seq=model.seq, heads=model.heads, head_dim=model.hidden // model.heads, kv_heads=model.kv_heads,
                 cp=lay.layout.cp, tp=lay.layout.tp, batch=b, bytes_per_value=_BF16)
    cp = layers * sum((_time(name, n, cp_group) for name, n in cp_collectives(lay.layout.cp_kind, **shape)), 0.0)
    pp = 0.0
    if lay.layout.pp > 1:
        cal, across = calibration(), lay.layout.tp * lay.layout.cp >= cluster.gpus_per_node and cluster.nodes > 1
        rate = cluster.nic_bandwidth_per_gpu * cal.nic_efficiency if across else cluster.link_bandwidth * cal.ring_efficiency
        pp = 2 * lay.layout.chunks * _BF16 * b * s * h / lay.layout.tp / rate
    return tp, cp, pp


def ep_alltoall_link(cluster: GpuCluster, *, ep: int, tp: int = 1) -> tuple:
    """``(alpha, bandwidth, where)`` of expert parallelism's all-to-all: NVLink when the ``ep x tp`` ranks fit in a
    node, else the GPU's share of the node's NICs (``where`` is ``"nvlink"`` or ``"network"``).

    The rates are the cluster's line rates times the GPU-cluster model's calibrated efficiencies (as ``pp_comm``'s);
    ``alpha`` is NCCL's per-step hardware latency of that fabric (Simple protocol).

    >>> c = gpu_cluster(256, accelerator="H100", nic_bandwidth=8 * 50e9)
    >>> ep_alltoall_link(c, ep=8)[2], ep_alltoall_link(c, ep=64)[2]
    ('nvlink', 'network')
    """
    cal = calibration()
    if ep * tp <= cluster.gpus_per_node or cluster.nodes == 1:
        return _HW_LAT["nvlink"]["ring"]["Simple"] * 1e-6, cluster.link_bandwidth * cal.ring_efficiency, "nvlink"
    return _HW_LAT["net"]["ring"]["Simple"] * 1e-6, cluster.nic_bandwidth_per_gpu * cal.nic_efficiency, "network"


def ep_alltoall_bytes(model: Transformer, tokens: float, *, tp: int = 1) -> float:
    """Bytes each rank holds for one all-to-all of ``tokens`` tokens (split over ``tp`` ranks): ``top_k`` copies of
    ``h`` bf16 values a token; the pairwise exchange sends ``(ep - 1)/ep`` of them.

    >>> m = transformer(2, 64, 4, seq=128, vocab=100, experts=8, top_k=2)
    >>> ep_alltoall_bytes(m, 128)    # 128 tokens x 2 experts x 64 values x 2 bytes
    32768.0
    """
    return float(tokens) * model.top_k * model.hidden * _BF16 / tp


def _moe_stage_layers(model: Transformer, pp: int, chunks: int) -> int:
    """MoE layers on the busiest stage (the last layers are the MoE ones)."""
    if not model.is_moe:
        return 0
    return min(_stage_layers(model, pp, chunks), chunks * math.ceil(model.moe_layers / (pp * chunks)))


def _ep_comm(model: Transformer, cluster: GpuCluster, lay: _Plan) -> float:
    """Seconds per microbatch of the MoE layers' all-to-alls on the busiest stage (exposed)."""
    ep, tp = lay.layout.ep, lay.layout.tp
    if ep == 1 or not model.is_moe:
        return 0.0
    alpha, bandwidth, _ = ep_alltoall_link(cluster, ep=ep, tp=tp)
    n_bytes = ep_alltoall_bytes(model, lay.micro_batch * model.seq / lay.layout.cp, tp=tp)
    per_layer = (4 + (2 if lay.recompute == "full" else 0)) * alltoall_time(n_bytes, ep, alpha=alpha,
                                                                           bandwidth=bandwidth)
    return _moe_stage_layers(model, lay.layout.pp, lay.layout.chunks) * float(per_layer)


def _layer_modules(model: Transformer) -> tuple:
    """Parameters of each module of one layer, as a framework holds them: the fused query-key-value projection,
    the output projection, the MLP's matrices (each with its bias, if any) and the two norms."""
    h, f, kv = model.hidden, model.ffn_hidden, model.kv_dim
    bias = 1 if model.biases else 0
    mlp = [h * f + bias * f] * (2 if model.gated_ffn else 1) + [f * h + bias * h]
    return (h * (h + 2 * kv) + bias * (h + 2 * kv), h * h + bias * h, *mlp, *[(1 + bias) * h] * 2)


def _zero3_microbatch(model: Transformer, lay: _Plan, group, r) -> float:
    """Seconds of ZeRO-3's collectives for one microbatch at nccl-tests speed.

    Each module's weights are all-gathered before its forward and again before its backward (the recomputed
    forward of full recomputation runs just before the backward, on the same gathered weights), and its gradient
    is reduce-scattered: one collective per module, as DeepSpeed's stage 3 fetches a module's parameters, so each
    pays the latency of a collective over all the data-parallel ranks. The embeddings and the last norm are one
    more module.
    """
    share = 1 / lay.layout.tp

    def one(params):
        return 2 * _time("allgather", r.weights * params * share, group) + _time("reduce_scatter",
                                                                                  r.grads * params * share, group)

    layer = sum(one(n) for n in _layer_modules(model))
    rest = model.non_layer_params
    return _stage_layers(model, lay.layout.pp, lay.layout.chunks) * layer + one(rest) / lay.layout.pp


def _dp_terms(model: Transformer, cluster: GpuCluster, lay: _Plan, microbatches: int) -> tuple:
    """Seconds per step of the data-parallel collectives (nccl-tests speed) and of the optimizer update.

    The gradients are reduced at the recipe's gradient width (4 bytes for Megatron-LM under bf16 and for Llama 3,
    2 otherwise), the weights gathered at its weight width. ZeRO-1 and 2 run once a step, ZeRO-3 once a microbatch
    (:func:`_zero3_microbatch`).
    """
    lay_ = lay.layout
    ranks = lay_.dp * lay_.cp
    shard, expert_shard = _shards(model, lay_)
    group = _group(cluster, (lay_.cp, lay_.tp), (lay_.dp, lay_.tp * lay_.cp * lay_.pp))
    r = RECIPES[lay.recipe]
    comm = (microbatches * _zero3_microbatch(model, lay, group, r) if lay_.zero == 3
            else _dp_comm_once(lay_.zero, shard, group, r))
    if expert_shard:  # the experts' gradients are reduced over the ranks that hold the same experts
        comm += (microbatches * _zero3_experts(model, lay, _expert_replicas(cluster, lay_), r) if lay_.zero == 3
                 else _dp_comm_once(lay_.zero, expert_shard, _expert_replicas(cluster, lay_), r))
    streamed = r.grads + 2 * (r.master + r.optimizer) + r.weights  # read grads, read/write state, write weights
    sharded = lay_.zero >= 1
    updated = shard / (ranks if sharded else 1) + expert_shard / (ranks // lay_.ep if sharded else 1)
    return comm, updated * streamed / cluster.accelerator.hbm_bandwidth


def _dp_comm_once(zero: int, shard: float, group, r) -> float:
    """ZeRO 0, 1 or 2's data-parallel collectives of a ``shard`` of parameters, once a step."""
    if zero == 0:
        return _time("allreduce", r.grads * shard, group)
    stage = zero_stage(zero)
    return (stage.gradient_passes * _time("reduce_scatter", r.grads * shard, group)
            + stage.weight_passes * _time("allgather", r.weights * shard, group))


def _zero3_experts(model: Transformer, lay: _Plan, group, r) -> float:
    """ZeRO-3's gathers and reduce-scatter of the stage's experts for one microbatch, one collective per expert."""
    per = r.weights * model.expert_params / lay.layout.tp
    one = 2 * _time("allgather", per, group) + _time("reduce_scatter", per * r.grads / r.weights, group)
    return _moe_stage_layers(model, lay.layout.pp, lay.layout.chunks) * model.experts // lay.layout.ep * one


def _shards(model: Transformer, lay: Layout) -> tuple:
    """Parameters of one GPU's model-parallel shard: ``(replicated over dp x cp, experts replicated over dp cp/ep)``."""
    experts = model.routed_expert_params
    return (model.params - experts) / (lay.tp * lay.pp), experts / (lay.tp * lay.pp * lay.ep)


def _expert_replicas(cluster: GpuCluster, lay: Layout):
    """The sub-cluster of the ``dp cp / ep`` ranks holding the same experts as rank 0 (every ``ep``-th replica)."""
    ranks = tuple(((r // lay.cp) * lay.pp * lay.cp + r % lay.cp) * lay.tp for r in range(0, lay.dp * lay.cp, lay.ep))
    return _group_of(cluster, ranks)


def _terms(model: Transformer, cluster: GpuCluster, global_batch: int, lay: _Plan) -> _Terms:
    m = global_batch // (lay.layout.dp * lay.micro_batch)
    at_peak, memory = _compute_terms(model, cluster, lay)
    tp, cp, pp = _comm_terms(model, cluster, lay)
    dp, optimizer = _dp_terms(model, cluster, lay, m)
    return _Terms(microbatches=m, bubble_units=(lay.layout.pp - 1) / lay.layout.chunks, compute_at_peak=at_peak,
                  memory_at_hbm=memory, tp_comm=tp, cp_comm=cp, pp_comm=pp, dp_comm=dp, optimizer=optimizer,
                  ep_comm=_ep_comm(model, cluster, lay))


def _breakdown(t: _Terms, c: PlannerConstants) -> dict:
    m = t.microbatches
    per_mb = {"compute": t.compute_at_peak / c.matmul_efficiency, "memory_bound": t.memory_at_hbm * c.memory_traffic,
              "tp_comm": t.tp_comm, "cp_comm": t.cp_comm, "pp_comm": t.pp_comm}
    if t.ep_comm:
        per_mb["ep_comm"] = t.ep_comm
    out = {name: m * value for name, value in per_mb.items()}
    out["bubble"] = t.bubble_units * sum(per_mb.values())
    out.setdefault("ep_comm", 0.0)
    out["dp_comm"] = c.dp_exposure * t.dp_comm
    out["optimizer"] = t.optimizer
    return {name: out[name] for name in BREAKDOWN_TERMS}


def _layer_slots(model: Transformer, lighter_ends: bool) -> int:
    """The layer places a pipeline cuts into chunks: the model's layers, and with ``lighter_ends`` one place more
    on each end stage, which holds the embedding or the output layer there instead (Llama 3 405B: 126 layers in
    128 places, so one layer a chunk on 16 stages of 8 chunks, "the first model chunk on the first stage has only
    the embedding", section 3.3.2)."""
    return model.layers + (2 if lighter_ends else 0)


def _first_stage_weights(model: Transformer, lay: _Plan) -> list:
    """Layers in each chunk of the first stage: ``ceil(layers / (p v))`` each, the first chunk one fewer with
    ``lighter_ends`` (Llama 3's measure: the first stage also holds the embedding, the last the output layer)."""
    per_chunk = math.ceil(model.layers / (lay.layout.pp * lay.layout.chunks))
    weights = [per_chunk] * lay.layout.chunks
    if lay.lighter_ends and lay.layout.pp > 1:
        weights[0] -= 1
    return weights


@lru_cache(maxsize=4096)
def _held_layers(kind: str, p: int, m: int, v: int, weights: tuple) -> float:
    """Layer-microbatches of activations the first stage holds at its peak (:func:`distlib.pipeline_schedule.peak_held`)."""
    if p == 1:
        return float(sum(weights))  # one microbatch in flight, whatever m
    return peak_held("interleaved" if v > 1 else "1f1b", p, m, chunks=v, weights=weights)


def _memory(model: Transformer, cluster: GpuCluster, lay: _Plan, microbatches: int) -> dict:
    """Peak bytes per GPU, by part: the first stage's model state and the activations it holds at its peak (its
    chunks' layers weighted by the microbatches each holds then, :func:`_held_layers`)."""
    shard, expert_shard = _shards(model, lay.layout)
    state = zero_state_bytes_per_gpu(shard, recipe=lay.recipe, dp=lay.layout.dp * lay.layout.cp, stage=lay.layout.zero)
    mode = "selective" if lay.attention == "flash" and lay.recompute == "none" else lay.recompute
    args = (round(model.seq / lay.layout.cp), lay.micro_batch, model.hidden, model.heads)
    kw = {"tp": lay.layout.tp, "sequence_parallel": lay.layout.sequence_parallel, **_layer_shape(model)}
    per_layer = cp_activation_bytes_per_layer(model.seq, *args[1:], cp=lay.layout.cp, recompute=mode, **kw)
    held = _held_layers(lay.layout.schedule, lay.layout.pp, microbatches, lay.layout.chunks,
                        tuple(_first_stage_weights(model, lay)))
    parts = dict(state.parts())
    if expert_shard:
        experts = zero_state_bytes_per_gpu(expert_shard, recipe=lay.recipe, stage=lay.layout.zero,
                                           dp=lay.layout.dp * lay.layout.cp // lay.layout.ep)
        parts = {k: v + experts.parts()[k] for k, v in parts.items()}
    parts["activations"] = per_layer * held
    parts["recompute_buffer"] = (activation_bytes_per_layer(*args, recompute=_traffic_mode(lay), **kw)
                                 if lay.recompute == "full" else 0.0)
    return parts


def _step(model: Transformer, cluster: GpuCluster, global_batch: int, lay: _Plan, c: PlannerConstants) -> LayoutStep:
    t = _terms(model, cluster, global_batch, lay)
    breakdown = _breakdown(t, c)
    if not model.is_moe:  # a dense model has no all-to-all term (chapters 10-14 print their terms)
        del breakdown["ep_comm"]
    step = sum(breakdown.values())
    tokens = global_batch * model.seq
    peak = cluster.p * cluster.accelerator.bf16_flops
    memory = _memory(model, cluster, lay, t.microbatches)
    return LayoutStep(layout=replace(lay.layout, microbatches=t.microbatches), recompute=lay.recompute,
                      micro_batch=lay.micro_batch, attention=lay.attention, global_batch=global_batch,
                      step_time=step, mfu=model.training_flops_per_token * tokens / (step * peak),
                      hfu=model.hardware_flops_per_token(lay.recompute) * tokens / (step * peak),
                      memory_bytes=sum(memory.values()), hbm_bytes=cluster.accelerator.hbm_bytes,
                      breakdown=breakdown, memory=memory, recipe=lay.recipe, lighter_ends=lay.lighter_ends)


def _layout(model: Transformer, cluster: GpuCluster, global_batch: int, *, dp, tp, pp, cp, zero, recompute,
            sequence_parallel, schedule, chunks, micro_batch, attention, recipe="mixed_precision_adam",
            lighter_ends=False, ep=1) -> _Plan:
    """Check a layout against the model and the cluster; ``chunks``/``micro_batch`` may be ``None``."""
    dp, tp, pp, cp = (check_int(n, v, minimum=1) for n, v in (("dp", dp), ("tp", tp), ("pp", pp), ("cp", cp)))
    if dp * tp * pp * cp != cluster.p:
        raise ValueError(f"dp*tp*pp*cp must equal the cluster's {cluster.p} GPUs, got {dp}*{tp}*{pp}*{cp} = "
                         f"{dp * tp * pp * cp}")
    if model.heads % tp:
        raise ValueError(f"tp must divide the model's {model.heads} heads, got {tp}")
    if pp > model.layers:
        raise ValueError(f"pp must be at most the model's {model.layers} layers, got {pp}")
    if model.seq % cp:
        raise ValueError(f"cp must divide the sequence length {model.seq}, got {cp}")
    if global_batch % dp:
        raise ValueError(f"global_batch must be a multiple of dp ({dp}), got {global_batch}")
    ep = _check_ep(model, ep, dp * cp)
    schedule = check_choice("schedule", schedule, LAYOUT_SCHEDULES)
    if chunks is not None:
        chunks = check_int("chunks", chunks, minimum=2 if schedule == "interleaved" else 1,
                           maximum=max(1, math.ceil(_layer_slots(model, lighter_ends) / pp)) if schedule == "interleaved"
                           else 1)
    if micro_batch is not None:
        micro_batch = check_int("micro_batch", micro_batch, minimum=1)
        if (global_batch // dp) % micro_batch:
            raise ValueError(f"micro_batch must divide global_batch/dp = {global_batch // dp}, got {micro_batch}")
    layout = Layout(dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, cp_kind=_CP_KIND, zero=zero_stage(zero).stage, schedule=schedule,
                    chunks=chunks,
                    sequence_parallel=check_bool("sequence_parallel", sequence_parallel) and tp > 1, microbatches=None)
    return _Plan(layout=layout, recompute=check_choice("recompute", recompute, RECOMPUTE_MODES), micro_batch=micro_batch,
                 attention=check_choice("attention", attention, ATTENTION_KERNELS),
                 recipe=check_choice("recipe", recipe, list(RECIPES)),
                 lighter_ends=check_bool("lighter_ends", lighter_ends))


def _check_ep(model: Transformer, ep, replicas: int) -> int:
    """``ep`` checked: it divides the ``dp * cp`` ranks it is taken from and the model's routed experts."""
    ep = check_int("ep", ep, minimum=1)
    if ep == 1:
        return ep
    if not model.is_moe:
        raise ValueError(f"ep must be 1 for a dense model (no experts to split), got {ep}")
    if replicas % ep:
        raise ValueError(f"ep must divide dp*cp = {replicas} (the experts split over data-parallel ranks), got {ep}")
    if model.experts % ep:
        raise ValueError(f"ep must divide the model's {model.experts} routed experts, got {ep}")
    return ep


def _choices(model: Transformer, global_batch: int, lay: _Plan) -> list:
    """Every (chunks, micro_batch) a practitioner would try for a layout, or the ones given."""
    per_dp = global_batch // lay.layout.dp
    sizes = [lay.micro_batch] if lay.micro_batch else [b for b in (1, 2, 4, 8, 16) if per_dp % b == 0]
    if lay.layout.chunks:
        chunks = [lay.layout.chunks]
    elif lay.layout.schedule == "interleaved" and lay.layout.pp > 1:
        chunks = [v for v in (2, 3, 4, 6, 8) if lay.layout.pp * v <= _layer_slots(model, lay.lighter_ends)]
    else:
        chunks = [1]
    return [replace(lay, layout=replace(lay.layout, chunks=v, microbatches=per_dp // b), micro_batch=b)
            for v in (chunks or [1]) for b in sizes]


def _best(steps: list) -> LayoutStep:
    fitting = [s for s in steps if s.fits]
    return min(fitting, key=lambda s: s.step_time) if fitting else min(steps, key=lambda s: s.memory_bytes)


def layout_step(model, cluster, *, global_batch, dp, tp, pp, cp=1, zero=0, recompute="selective",
                sequence_parallel=True, schedule="1f1b", chunks=None, micro_batch=None, attention="materialized",
                recipe="mixed_precision_adam", lighter_ends=False, constants=None, ep=1) -> LayoutStep:
    """One training step of ``model`` on ``cluster`` in one layout, every term named (chapter "Choosing a layout").

    Parameters
    ----------
    model : Transformer
        From :func:`distlib.transformer`.
    cluster : GpuCluster
        From :func:`distlib.gpu_cluster`, ``dp * tp * pp * cp`` GPUs in all.
    global_batch : int
        Sequences of ``model.seq`` tokens per step (a multiple of ``dp``).
    dp, tp, pp, cp : int
        Data-, tensor-, pipeline- and context-parallel degrees (>= 1; ``tp``
        divides the heads, ``cp`` the sequence, ``pp`` at most the layers).
    zero : int
        ZeRO stage over the ``dp * cp`` ranks, 0 to 3.
    recompute : {"none", "selective", "full"}
    sequence_parallel : bool
        Megatron's sequence parallelism (ignored when ``tp == 1``).
    schedule : {"1f1b", "interleaved"}
    chunks, micro_batch : int, optional
        Model chunks per stage (interleaved: >= 2) and sequences per
        microbatch; ``None`` picks the fastest that fits (the smallest
        footprint if none does).
    attention : {"materialized", "flash"}
        Whether the attention scores go through HBM (before FlashAttention) or not.
    recipe : str
        The bytes a parameter keeps (:data:`distlib.walls.RECIPES`): 16 with
        ``"mixed_precision_adam"``, 18 with ``"fp32_grads_adam"`` (gradients
        accumulated and reduced in fp32, as Megatron-LM does under bf16 and
        Llama 3 did). The data-parallel traffic moves gradients and weights
        at the recipe's widths.
    lighter_ends : bool
        The first and last stages hold one layer fewer (their first and last
        chunk), as Llama 3 did to balance the embedding and the output layer.
    constants : PlannerConstants, optional
        Default :func:`planner_constants`.
    ep : int
        Expert-parallel ranks (experts only), dividing ``dp * cp`` and the model's routed experts.

    Returns
    -------
    LayoutStep
        ``.step_time`` (s), ``.mfu``, ``.hfu``, ``.memory_bytes``, ``.fits``,
        ``.micro_batch``, ``.chunks`` and ``.breakdown`` (named seconds that
        add up to ``.step_time``).

    Raises
    ------
    ValueError, TypeError
        A bad argument, named with its range.

    Examples
    --------
    GPT-3 175B on 1,024 A100s in plain data parallelism: 16 bytes a parameter
    alone are 2.8 TB a GPU, so it does not fit; Megatron's TP 8 x PP 8 does.

    >>> gpt3 = transformer(96, 12288, 96, seq=2048, vocab=51200)
    >>> selene = gpu_cluster(128, accelerator="A100", nic_bandwidth=8 * 25e9)
    >>> layout_step(gpt3, selene, global_batch=1024, dp=1024, tp=1, pp=1).fits
    False
    >>> r = layout_step(gpt3, selene, global_batch=1024, dp=16, tp=8, pp=8, schedule="interleaved")
    >>> r.fits, math.isclose(sum(r.breakdown.values()), r.step_time), r.hfu > r.mfu
    (True, True, True)
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a Transformer from distlib.transformer(...), got {type(model).__name__}")
    if not isinstance(cluster, GpuCluster):
        raise TypeError(f"cluster must be a GpuCluster from distlib.gpu_cluster(...), got {type(cluster).__name__}")
    global_batch = check_int("global_batch", global_batch, minimum=1)
    lay = _layout(model, cluster, global_batch, dp=dp, tp=tp, pp=pp, cp=cp, zero=zero, recompute=recompute,
                  sequence_parallel=sequence_parallel, schedule=schedule, chunks=chunks, micro_batch=micro_batch,
                  attention=attention, recipe=recipe, lighter_ends=lighter_ends, ep=ep)
    if constants is None:
        constants = planner_constants()
    elif not isinstance(constants, PlannerConstants):
        raise TypeError(f"constants must be PlannerConstants or None, got {type(constants).__name__}")
    return _best([_step(model, cluster, global_batch, c, constants) for c in _choices(model, global_batch, lay)])


_FIXED = ("dp", "tp", "pp", "cp", "ep", "zero", "recompute", "sequence_parallel", "schedule", "chunks", "micro_batch",
          "attention", "recipe", "lighter_ends", "constants")


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def _degrees(model: Transformer, cluster: GpuCluster, global_batch: int, fixed: dict):
    """Every (dp, tp, pp, cp) of the cluster that the model and the batch allow, within ``fixed``."""
    p = cluster.p
    tps = [t for t in _divisors(cluster.gpus_per_node) if model.heads % t == 0]
    cps = [c for c in (1, 2, 4, 8, 16) if model.seq % c == 0 and (c == 1 or model.seq // c >= MIN_CP_TOKENS)]
    for tp in [fixed["tp"]] if "tp" in fixed else tps:
        for cp in [fixed["cp"]] if "cp" in fixed else cps:
            if p % (tp * cp):
                continue
            pps = [q for q in _divisors(p // (tp * cp)) if q <= model.layers]
            for pp in [fixed["pp"]] if "pp" in fixed else pps:
                dp, left = divmod(p, tp * cp * pp)
                if not left and dp == fixed.get("dp", dp) and global_batch % dp == 0:
                    yield dp, tp, pp, cp


def plan_layouts(model, cluster, *, global_batch, **fixed) -> list:
    """Every layout of ``model`` on ``cluster`` that fits, fastest first (chapter "Choosing a layout").

    Enumerates ``dp x tp x pp x cp`` (TP within a node, dividing the heads;
    CP 2 to 16 only while each GPU keeps :data:`MIN_CP_TOKENS` tokens), ZeRO stage, recomputation, sequence parallelism, schedule,
    then chunks and microbatch size as :func:`layout_step` picks them.

    Parameters
    ----------
    model, cluster, global_batch
        As for :func:`layout_step`.
    **fixed
        Any of ``dp``, ``tp``, ``pp``, ``cp``, ``ep``, ``zero``, ``recompute``,
        ``sequence_parallel``, ``schedule``, ``chunks``, ``micro_batch``,
        ``attention``, ``recipe``, ``lighter_ends`` and ``constants``: held at that value.

    Returns
    -------
    list of LayoutStep
        The layouts that fit, sorted by ``step_time``.

    Raises
    ------
    TypeError
        A keyword that is not one of the above.

    Examples
    --------
    >>> gpt3 = transformer(96, 12288, 96, seq=2048, vocab=51200)
    >>> selene = gpu_cluster(48, accelerator="A100", nic_bandwidth=8 * 25e9)
    >>> plans = plan_layouts(gpt3, selene, global_batch=1536, zero=0, recompute="full", sequence_parallel=False)
    >>> all(r.fits for r in plans), plans[0].step_time <= plans[-1].step_time, {r.layout.zero for r in plans}
    (True, True, {0})
    """
    unknown = sorted(set(fixed) - set(_FIXED))
    if unknown:
        raise TypeError(f"plan_layouts got unexpected keyword(s) {', '.join(unknown)}; fixed may hold {', '.join(_FIXED)}")
    if not isinstance(model, Transformer) or not isinstance(cluster, GpuCluster):
        layout_step(model, cluster, global_batch=global_batch, dp=1, tp=1, pp=1)  # raises, naming the argument
    global_batch = check_int("global_batch", global_batch, minimum=1)
    for name in ("dp", "tp", "pp", "cp", "ep"):
        if name in fixed:
            fixed[name] = check_int(name, fixed[name], minimum=1)
    options = {
        "zero": [fixed["zero"]] if "zero" in fixed else list(range(4)),
        "recompute": [fixed["recompute"]] if "recompute" in fixed else list(RECOMPUTE_MODES),
        "schedule": [fixed["schedule"]] if "schedule" in fixed else list(LAYOUT_SCHEDULES),
    }
    rest = {k: fixed[k] for k in ("chunks", "micro_batch", "attention", "recipe", "lighter_ends", "constants") if k in fixed}
    out = []
    for dp, tp, pp, cp in _degrees(model, cluster, global_batch, fixed):
        sps = [fixed["sequence_parallel"]] if "sequence_parallel" in fixed else ([True, False] if tp > 1 else [False])
        for ep in _eps(model, dp * cp, fixed):
            out += _fitting(model, cluster, global_batch, dict(dp=dp, tp=tp, pp=pp, cp=cp, ep=ep), sps, options, rest)
    return sorted(out, key=lambda r: r.step_time)


def _eps(model: Transformer, replicas: int, fixed: dict) -> list:
    """The expert-parallel degrees to try: the one fixed, or every divisor of ``replicas`` and of the experts."""
    if "ep" in fixed:
        return [fixed["ep"]] if replicas % fixed["ep"] == 0 else []
    return [e for e in _divisors(replicas) if model.experts % e == 0] if model.is_moe else [1]


def _fitting(model, cluster, global_batch, degrees: dict, sps: list, options: dict, rest: dict) -> list:
    """The layouts of these degrees that fit, over the options not fixed."""
    out = []
    for zero in options["zero"]:
        for recompute in options["recompute"]:
            for schedule in options["schedule"]:
                if schedule == "interleaved" and degrees["pp"] == 1:
                    continue
                for sp in sps:
                    r = layout_step(model, cluster, global_batch=global_batch, **degrees, zero=zero,
                                    recompute=recompute, sequence_parallel=sp, schedule=schedule, **rest)
                    if r.fits:
                        out.append(r)
    return out


def published_model(row) -> Transformer:
    """The :class:`Transformer` of a :class:`~distlib.planner.published.PublishedLayout` row.

    Parameters
    ----------
    row : PublishedLayout
        From :func:`distlib.published_layouts`.

    Returns
    -------
    Transformer

    Examples
    --------
    >>> from distlib.planner.published import published_layouts
    >>> rows = {r.id: r for r in published_layouts()}
    >>> round(published_model(rows["bloom_176b"]).params / 1e6)   # the BLOOM paper's 176,247M
    176247
    """
    return transformer(row.layers, row.hidden, row.heads, seq=row.seq, vocab=row.vocab, ffn_hidden=row.ffn_hidden,
                       kv_heads=row.kv_heads, gated_ffn=row.gated_ffn, biases=row.biases,
                       tied_embeddings=row.tied_embeddings, learned_positions=row.learned_positions,
                       experts=row.experts or 0, top_k=row.top_k, expert_ffn_hidden=row.expert_ffn_hidden,
                       shared_experts=row.shared_experts or 0, moe_layers=row.moe_layers)


def published_cluster(row) -> GpuCluster:
    """The :class:`GpuCluster` of a published row (eight GPUs a node, the row's NIC rate per node).

    Examples
    --------
    >>> from distlib.planner.published import published_layouts
    >>> rows = {r.id: r for r in published_layouts()}
    >>> c = published_cluster(rows["megatron2021_t1_1008.0b"])
    >>> c.p, c.accelerator.name, c.nic_bandwidth / 1e9    # Selene: 8 x 200 Gb/s HDR a node
    (3072, 'A100', 200.0)
    """
    nic = gbit_to_bytes_per_s(row.nic_gbit_per_node) if row.nodes > 1 else None
    return gpu_cluster(row.nodes, accelerator=row_accelerator(row.accelerator), nic_bandwidth=nic, nics=row.nics,
                       network=row.network)


def _row_layout(row) -> dict:
    """The keywords of :func:`layout_step` a published row fixes (``None`` where it prints nothing)."""
    lay = row.layout
    return {"dp": lay.dp, "tp": lay.tp, "pp": lay.pp, "cp": lay.cp, "ep": lay.ep, "zero": lay.zero, "recompute": row.recompute,
            "sequence_parallel": lay.sequence_parallel, "schedule": lay.schedule, "chunks": lay.chunks,
            "micro_batch": row.micro_batch, "attention": row.attention, "recipe": row.recipe,
            "lighter_ends": row.lighter_ends}


def published_step(row, *, constants=None) -> LayoutStep:
    """The planner's step for a published row; what the row leaves empty, the planner picks (fastest that fits).

    Parameters
    ----------
    row : PublishedLayout
    constants : PlannerConstants, optional
        Default :func:`planner_constants`.

    Returns
    -------
    LayoutStep

    Raises
    ------
    ValueError
        When no layout the row allows fits the memory model.

    Examples
    --------
    >>> from distlib.planner.published import published_layouts
    >>> rows = {r.id: r for r in published_layouts()}
    >>> s = published_step(rows["korthikanti2022_22b"])   # a fit row: its printed MFU by construction
    >>> round(s.mfu, 3), s.fits
    (0.415, True)
    """
    model, cluster = published_model(row), published_cluster(row)
    given = {k: v for k, v in _row_layout(row).items() if v is not None}
    if constants is not None:
        given["constants"] = constants
    if all(k in given for k in ("tp", "pp", "recompute")):
        return layout_step(model, cluster, global_batch=row.global_batch, **given)
    plans = plan_layouts(model, cluster, global_batch=row.global_batch, **given)
    if not plans:
        raise ValueError(f"no layout of {row.id} fits the planner's memory model")
    return plans[0]


@dataclass(frozen=True)
class Residual:
    """A published row beside the planner's prediction of it (:func:`published_residuals`).

    ``error`` is predicted over printed, minus one (the row's own metric, MFU or HFU); ``term`` the largest term
    of the predicted step beside compute and ``share`` its part of the step; ``cause`` what the planner leaves
    out there (:data:`distlib.planner.published.RESIDUAL_CAUSES`).
    """

    row: object
    step: LayoutStep
    predicted: float
    error: float
    term: str
    share: float
    cause: str


def published_residuals(*, constants=None) -> tuple:
    """Every published row's residual, smallest model first (chapter "Choosing a layout").

    Examples
    --------
    >>> res = published_residuals()
    >>> [r.row.id for r in res if r.cause == "fitted"]
    ['korthikanti2022_22b', 'korthikanti2022_1t']
    >>> all(abs(r.error) < 0.25 for r in res)
    True
    """
    out = []
    for row in published_layouts():
        step = published_step(row, constants=constants)
        predicted = step.mfu if row.metric == "mfu" else step.hfu
        term = max((t for t in BREAKDOWN_TERMS if t != "compute"), key=lambda t: step.breakdown.get(t, 0.0))
        out.append(Residual(row=row, step=step, predicted=predicted, error=predicted / row.printed - 1, term=term,
                            share=step.breakdown[term] / step.step_time, cause=residual_cause(row.id)))
    return tuple(sorted(out, key=lambda r: (published_model(r.row).params, r.row.id)))


def _published_seconds(row) -> float:
    """The step time a row's printed utilization implies, in the planner's FLOP count."""
    model = published_model(row)
    per_token = model.training_flops_per_token if row.metric == "mfu" else model.hardware_flops_per_token(row.recompute)
    peak = row.nodes * 8 * published_cluster(row).accelerator.bf16_flops
    return per_token * row.global_batch * row.seq / (row.printed * peak)


def _row_terms(row) -> _Terms:
    model, cluster = published_model(row), published_cluster(row)
    lay = _layout(model, cluster, row.global_batch, **_row_layout(row))
    return _terms(model, cluster, row.global_batch, lay)


@lru_cache(maxsize=None)
def planner_constants() -> PlannerConstants:
    """Fit the planner's three constants on the ``fit`` rows of the published layouts.

    ``matmul_efficiency`` and ``memory_traffic`` make Korthikanti et al.'s
    22B (one node, TP 8) and 1T (TP 8 x PP 64) steps take exactly as long as
    their printed MFU says (two linear equations in ``1 / matmul_efficiency``
    and ``memory_traffic``). ``dp_exposure`` makes the data-parallel term of
    their 530B run at 8-way data parallelism equal to what it added to the same
    run without data parallelism (section 6.3: 54.2 % MFU against 56.0 %, the
    gradient all-reduce not overlapped): a difference of two printed steps, so
    the planner's own error on the 530B step stays out of the constant.

    Examples
    --------
    >>> c = planner_constants()
    >>> 0 < c.matmul_efficiency < 1, c.memory_traffic > 0, c.dp_exposure > 0
    (True, True, True)
    >>> c.sources["dp_exposure"]          # a difference: the run with 8-way data parallelism, and without
    ('korthikanti2022_530b_dp8', 'korthikanti2022_530b')
    """
    rows = {r.id: r for r in published_layouts() if r.role == "fit"}
    pair = [rows["korthikanti2022_22b"], rows["korthikanti2022_1t"]]
    eqs = []
    for row in pair:  # T = (m + bubble) (x C + k M + R) + optimizer, with x = 1 / matmul_efficiency
        t = _row_terms(row)
        n = t.microbatches + t.bubble_units
        eqs.append((n * t.compute_at_peak, n * t.memory_at_hbm,
                    _published_seconds(row) - n * (t.tp_comm + t.cp_comm + t.pp_comm) - t.optimizer - t.dp_comm * 0))
    (a, b, e), (c, d, f) = eqs
    det = a * d - b * c
    x, k = (e * d - b * f) / det, (a * f - e * c) / det
    row = rows["korthikanti2022_530b_dp8"]
    alone = {r.id: r for r in published_layouts()}["korthikanti2022_530b"]  # the same run without data parallelism
    exposure = (_published_seconds(row) - _published_seconds(alone)) / _row_terms(row).dp_comm
    return PlannerConstants(matmul_efficiency=1 / x, memory_traffic=k, dp_exposure=exposure, sources={
        "matmul_efficiency": tuple(r.id for r in pair), "memory_traffic": tuple(r.id for r in pair),
        "dp_exposure": (row.id, alone.id)})


def exposure_fitted_on_the_step() -> float:
    """The DP exposure fitted on Korthikanti et al.'s 530B step at DP 8 alone (its other terms as predicted),
    as this planner once fitted it: it takes in the planner's own error on that step, which
    :func:`planner_constants`, fitting the difference of the two 530B runs, keeps out.

    >>> round(exposure_fitted_on_the_step() / planner_constants().dp_exposure, 1)
    2.1
    """
    c = planner_constants()
    row = {r.id: r for r in published_layouts()}["korthikanti2022_530b_dp8"]
    t = _row_terms(row)
    rest = sum(_breakdown(t, replace(c, dp_exposure=0.0)).values())
    return (_published_seconds(row) - rest) / t.dp_comm
