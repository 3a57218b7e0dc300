"""Why a mixture of experts is laid out as it is: the planner's reasons for a published MoE layout (chapter 15).

:func:`explain_layout` prices a published mixture-of-experts row
(:func:`distlib.planner.published.published_moe_layouts`) with
:func:`distlib.planner.step.layout_step`, and beside it the same GPUs with
tensor parallelism of a node's width in place of part of the data-parallel
ranks (expert parallelism then takes what is left of them). From the two it
says, in numbers, why the run has no tensor parallelism, what its expert
parallelism costs a step, and what each GPU holds. Every number comes from
the step model; the sentences only place them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..fmt import fmt_bytes, fmt_seconds
from .published import PublishedLayout, published_moe_layouts
from .step import LayoutStep, ep_alltoall_bytes, ep_alltoall_link, layout_step, published_cluster, published_model

__all__ = ["LayoutExplanation", "explain_layout"]


@dataclass(frozen=True)
class LayoutExplanation:
    """A published MoE layout's step, the tensor-parallel alternative's, and the reasons in words.

    ``numbers`` holds every figure the reasons quote (SI units), by name.
    """

    row: PublishedLayout
    step: LayoutStep
    with_tp: LayoutStep
    reasons: tuple
    numbers: dict = field(hash=False, compare=False)

    def text(self) -> str:
        """The reasons, one paragraph each."""
        return "\n\n".join(self.reasons)


def _row_keywords(row) -> dict:
    lay = row.layout
    return dict(global_batch=row.global_batch, pp=lay.pp, cp=lay.cp, zero=lay.zero, schedule=lay.schedule,
                recompute=row.recompute or "selective", attention=row.attention, recipe=row.recipe,
                micro_batch=row.micro_batch, lighter_ends=row.lighter_ends)


def _numbers(row, step: LayoutStep, alt: LayoutStep) -> dict:
    model, cluster = published_model(row), published_cluster(row)
    lay = step.layout
    alpha, bandwidth, where = ep_alltoall_link(cluster, ep=lay.ep, tp=lay.tp)
    tokens = step.micro_batch * model.seq / lay.cp
    state = sum(v for k, v in step.memory.items() if k in ("weights", "grads", "optimizer", "master"))
    return {
        "expert_share": model.routed_expert_params / model.params,
        "experts_per_gpu": model.experts // lay.ep,
        "nodes_per_ep_group": -(-lay.ep * lay.tp // cluster.gpus_per_node),
        "alltoall_bytes": ep_alltoall_bytes(model, tokens, tp=lay.tp) * (lay.ep - 1) / lay.ep,
        "alltoall_bandwidth": bandwidth, "alltoall_where": where,
        "ep_comm": step.breakdown["ep_comm"], "step_time": step.step_time,
        "ep_share": step.breakdown["ep_comm"] / step.step_time,
        "step_without_ep_comm": step.step_time - step.breakdown["ep_comm"],
        "tp": alt.layout.tp, "tp_comm": alt.breakdown["tp_comm"], "tp_step_time": alt.step_time,
        "tp_ep": alt.layout.ep, "tp_ep_comm": alt.breakdown["ep_comm"],
        "nic_bandwidth_per_gpu": cluster.nic_bandwidth_per_gpu, "link_bandwidth": cluster.link_bandwidth,
        "memory": step.memory_bytes, "state": state, "activations": step.memory["activations"],
        "hbm": step.hbm_bytes, "tp_memory": alt.memory_bytes,
    }


def _reasons(row, n: dict) -> tuple:
    lay = row.layout
    why_no_tp = (
        f"No tensor parallelism. The routed experts are {n['expert_share']:.1%} of the weights, and expert "
        f"parallelism already splits them {lay.ep} ways ({n['experts_per_gpu']} experts of each layer a GPU), so "
        f"tensor parallelism would only cut the rest. It would cost four all-reduces a layer a microbatch: TP "
        f"{n['tp']} inside a node adds {fmt_seconds(n['tp_comm'])} a step, and pushes expert parallelism "
        f"({n['tp_ep']} ways) onto the {fmt_bytes(n['nic_bandwidth_per_gpu'])}/s of InfiniBand a GPU has, where its "
        f"all-to-alls take {fmt_seconds(n['tp_ep_comm'])}: a step of {fmt_seconds(n['tp_step_time'])} against "
        f"{fmt_seconds(n['step_time'])}.")
    ep_cost = (
        f"Expert parallelism {lay.ep} ways spans {n['nodes_per_ep_group']} nodes, so its all-to-alls cross the "
        f"network at {fmt_bytes(n['alltoall_bandwidth'])}/s a GPU (of NVLink's {fmt_bytes(n['link_bandwidth'])}/s "
        f"inside a node). Each MoE layer dispatches and combines forward and again backward; each of those sends "
        f"{fmt_bytes(n['alltoall_bytes'])} a GPU a microbatch. Together {fmt_seconds(n['ep_comm'])} a step, "
        f"{n['ep_share']:.0%} of {fmt_seconds(n['step_time'])} if nothing hid it; hidden (DualPipe's purpose), the "
        f"step would be {fmt_seconds(n['step_without_ep_comm'])}.")
    memory = (
        f"Memory a GPU: {fmt_bytes(n['memory'])} of {fmt_bytes(n['hbm'])}: {fmt_bytes(n['state'])} of model state "
        f"(weights, gradients and ZeRO-{lay.zero}'s share of the optimizer) and {fmt_bytes(n['activations'])} of "
        f"activations held by the first pipeline stage.")
    return why_no_tp, ep_cost, memory


def explain_layout(row="deepseek_v3_671b", *, constants=None) -> LayoutExplanation:
    """The planner's reasons for a published mixture-of-experts layout (chapter 15).

    Parameters
    ----------
    row : str or PublishedLayout
        A row of :func:`distlib.planner.published.published_moe_layouts`, or its id.
    constants : PlannerConstants, optional

    Returns
    -------
    LayoutExplanation
        ``.step`` (the published layout), ``.with_tp`` (tensor parallelism of a node's width, the same pipeline,
        expert parallelism over what is left of the data-parallel ranks), ``.reasons`` (three paragraphs: why no
        tensor parallelism, what expert parallelism costs a step, memory a GPU) and ``.numbers``.

    Raises
    ------
    ValueError
        ``row`` not an MoE row's id.

    Examples
    --------
    >>> e = explain_layout("deepseek_v3_671b")
    >>> e.step.layout.ep, e.step.layout.tp, e.with_tp.layout.tp, e.step.fits
    (64, 1, 8, True)
    >>> e.numbers["alltoall_where"], e.numbers["tp_step_time"] > e.numbers["step_time"]
    ('network', True)
    """
    rows = {r.id: r for r in published_moe_layouts()}
    if isinstance(row, str):
        if row not in rows:
            raise ValueError(f"row must be one of {', '.join(rows)}, got {row!r}")
        row = rows[row]
    model, cluster = published_model(row), published_cluster(row)
    kw = dict(_row_keywords(row), constants=constants)
    lay = row.layout
    step = layout_step(model, cluster, dp=lay.dp, tp=lay.tp, ep=lay.ep, sequence_parallel=lay.sequence_parallel, **kw)
    tp = cluster.gpus_per_node
    dp = lay.dp * lay.tp // tp
    ep = max(e for e in range(1, min(lay.ep, dp * lay.cp) + 1) if (dp * lay.cp) % e == 0 and model.experts % e == 0)
    with_tp = layout_step(model, cluster, dp=dp, tp=tp, ep=ep, sequence_parallel=True, **kw)
    numbers = _numbers(row, step, with_tp)
    return LayoutExplanation(row=row, step=step, with_tp=with_tp, reasons=_reasons(row, numbers), numbers=numbers)
