"""Published training layouts and the utilization their papers print (``data/published_layouts.csv``).

Each row is one run: the model's shape, the cluster (accelerator, nodes, the
node's scale-out rate), the layout (``dp``, ``tp``, ``pp``, ``cp`` and its kind,
ZeRO stage, sequence parallelism, schedule and chunks, held as one
:class:`~distlib.layout.Layout`), how each GPU ran it (recomputation,
microbatch, attention kernel, the recipe of bytes a parameter keeps, and
whether the first and last stages hold a layer fewer) and the printed figure,
with its ``source``. Every row prints its four degrees; an empty field is one
the source does not print (the chunks, the microbatch, the recomputation), and
the planner (:func:`distlib.planner.step.published_step`) picks it, the fastest
that fits. ``metric`` says which utilization the source prints: ``"mfu"``
(model FLOPs: PaLM, Korthikanti et al. 2022, Llama 3) or ``"hfu"`` (FLOPs the
hardware ran, recomputation included: Megatron-LM 2021's "% of theoretical
peak", BLOOM's TFLOPs); ``printed_hfu`` is the HFU a source prints beside its
MFU (Korthikanti et al.'s Table 5). ``role`` is ``"fit"`` for the three rows
the planner's constants are computed from
(:func:`distlib.planner.step.planner_constants`); every other row is a
prediction.

Mixture-of-experts runs (chapter 15) are rows of the same file with ``role``
``"moe"``: their shape adds ``experts``, ``top_k``, ``expert_ffn_hidden``,
``shared_experts`` and ``moe_layers`` (:func:`distlib.transformer`), their
layout an ``ep`` degree. Their papers print a layout and a cost, not a
utilization, so :func:`published_layouts` (chapter 13's table) leaves them
out and :func:`published_moe_layouts` returns them; ``metric`` is
``"gpu_hours_per_t_tokens"`` and ``printed`` that figure. An accelerator the
hardware table does not hold (the H800) is described by
:data:`ROW_ACCELERATORS` from the paper's own figures.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from ..layout import Layout

__all__ = ["LAYOUT_COLUMNS", "MOE_COLUMNS", "RESIDUAL_CAUSES", "ROW_ACCELERATORS", "PublishedLayout",
           "published_layouts", "published_moe_layouts", "row_accelerator", "residual_cause"]

_INTS = ("layers", "hidden", "heads", "seq", "vocab", "ffn_hidden", "kv_heads", "nodes", "nics", "global_batch", "dp",
         "tp", "pp", "cp", "zero", "chunks", "micro_batch", "experts", "top_k", "expert_ffn_hidden", "shared_experts",
         "moe_layers", "ep")
_BOOLS = ("gated_ffn", "biases", "tied_embeddings", "learned_positions", "sequence_parallel", "lighter_ends")
#: The CSV's columns that make up a row's :class:`~distlib.layout.Layout`.
LAYOUT_COLUMNS = ("dp", "tp", "pp", "cp", "cp_kind", "zero", "sequence_parallel", "schedule", "chunks", "ep")
#: The CSV's columns of a mixture of experts' shape (empty for a dense model).
MOE_COLUMNS = ("experts", "top_k", "expert_ffn_hidden", "shared_experts", "moe_layers")
#: Accelerators a published row names that the hardware table does not hold: the part they share their chip with,
#: and what the row's paper says differs. The H800 is the H100 SXM with its NVLink cut; DeepSeek-V3's section 3.2.2
#: gives the rate its kernels see: "NVLink offers a bandwidth of 160 GB/s, roughly 3.2 times that of IB (50 GB/s)".
ROW_ACCELERATORS = {
    "H800": {"base": "H100", "link_bandwidth": 160e9, "link_name": "NVLink (H800)",
             "source": "DeepSeek-V3 technical report (arXiv:2412.19437), section 3.2.2"},
}


@dataclass(frozen=True)
class PublishedLayout:
    """One published run (see the module's docstring); ``None`` where the source prints nothing.

    ``layout`` is the run's :class:`~distlib.layout.Layout` (its ``chunks`` ``None`` where the source does not
    print them, its ``microbatches`` the global batch over ``dp`` microbatches of ``micro_batch`` sequences, or
    ``None`` with the microbatch unprinted); ``recompute``, ``micro_batch`` and ``attention`` are how each GPU
    ran it, ``recipe`` the bytes a parameter keeps (:data:`distlib.walls.RECIPES`) and ``lighter_ends``
    whether its first and last stages hold a layer fewer (Llama 3's measure against their memory imbalance).
    """

    id: str
    role: str
    metric: str
    printed: float
    printed_hfu: float | None
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn_hidden: int | None
    kv_heads: int | None
    gated_ffn: bool
    biases: bool
    tied_embeddings: bool
    learned_positions: bool
    accelerator: str
    nodes: int
    nic_gbit_per_node: float
    nics: int
    network: str
    global_batch: int
    layout: Layout
    recompute: str | None
    micro_batch: int | None
    attention: str
    recipe: str
    lighter_ends: bool
    source: str
    note: str
    experts: int | None = None
    top_k: int | None = None
    expert_ffn_hidden: int | None = None
    shared_experts: int | None = None
    moe_layers: int | None = None


def _value(name: str, text: str):
    if text == "":
        return None
    if name in _INTS:
        return int(text)
    if name in _BOOLS:
        return {"True": True, "False": False}[text]
    if name in ("printed", "printed_hfu", "nic_gbit_per_node"):
        return float(text)
    return text


def _row(values: dict) -> PublishedLayout:
    """A CSV row's values as a :class:`PublishedLayout`: the layout columns become its :class:`Layout`."""
    degrees = {k: values.pop(k) for k in LAYOUT_COLUMNS}
    for name in ("cp_kind", "ep"):  # cp_kind printed only where cp > 1 (Llama 3's all-gather), ep with experts
        if degrees[name] is None:
            del degrees[name]
    b = values["micro_batch"]
    microbatches = values["global_batch"] // (degrees["dp"] * b) if b else None
    return PublishedLayout(layout=Layout(**degrees, microbatches=microbatches), **values)


@lru_cache(maxsize=None)
def _all_rows() -> tuple:
    text = resources.files("distlib").joinpath("data/published_layouts.csv").read_text(encoding="utf-8")
    return tuple(_row({k: _value(k, v) for k, v in row.items()}) for row in csv.DictReader(text.splitlines()))


@lru_cache(maxsize=None)
def published_moe_layouts() -> tuple:
    """The mixture-of-experts rows of ``data/published_layouts.csv`` (``role`` ``"moe"``; chapter 15).

    Examples
    --------
    >>> rows = {r.id: r for r in published_moe_layouts()}
    >>> v3 = rows["deepseek_v3_671b"]       # arXiv:2412.19437, sections 3.1, 3.2 and 4.2
    >>> v3.nodes * 8, (v3.layout.pp, v3.layout.ep, v3.layout.tp, v3.layout.zero), v3.layout.dp
    (2048, (16, 64, 1, 1), 128)
    >>> v3.experts, v3.top_k, v3.shared_experts, v3.expert_ffn_hidden, v3.moe_layers
    (256, 8, 1, 2048, 58)
    """
    return tuple(r for r in _all_rows() if r.role == "moe")


@lru_cache(maxsize=None)
def published_layouts() -> tuple:
    """Every dense row of ``data/published_layouts.csv`` (those printing a utilization), as :class:`PublishedLayout`.

    Examples
    --------
    >>> rows = {r.id: r for r in published_layouts()}
    >>> r = rows["llama3_405b_8k_16384"]
    >>> r.layout.ranks == r.nodes * 8, (r.layout.dp, r.layout.tp, r.layout.pp, r.layout.zero), r.metric, r.printed
    (True, (128, 8, 16, 2), 'mfu', 0.41)
    >>> r.layout.chunks, r.recipe   # one layer a chunk (section 3.3.2); gradients reduced in fp32
    (8, 'fp32_grads_adam')
    >>> sorted(r.id for r in rows.values() if r.role == "fit")
    ['korthikanti2022_1t', 'korthikanti2022_22b', 'korthikanti2022_530b_dp8']
    """
    return tuple(r for r in _all_rows() if r.role != "moe")


def row_accelerator(name: str):
    """The accelerator a row names: the name itself when the hardware table holds it, else an
    :class:`~distlib.hardware.Accelerator` built from :data:`ROW_ACCELERATORS`.

    >>> h800 = row_accelerator("H800")
    >>> h800.name, h800.link_bandwidth / 1e9, h800.bf16_flops == row_accelerator_base("H800").bf16_flops
    ('H800', 160.0, True)
    >>> row_accelerator("A100")
    'A100'
    """
    if name not in ROW_ACCELERATORS:
        return name
    from dataclasses import replace

    spec = ROW_ACCELERATORS[name]
    return replace(row_accelerator_base(name), name=name, variant=f"{name} SXM", link_bandwidth=spec["link_bandwidth"],
                   link_name=spec["link_name"], aliases=(), notes=f"link rate from {spec['source']}")


def row_accelerator_base(name: str):
    """The hardware table's part a row's accelerator shares its chip with (:data:`ROW_ACCELERATORS`)."""
    from ..hardware import accelerator

    return accelerator(ROW_ACCELERATORS[name]["base"] if name in ROW_ACCELERATORS else name)


#: What the planner leaves out where a published row's residual comes from, by the start of the row's id (the
#: longest match wins), short enough for a table's column; chapter 13 says each at length. Each names what the
#: model does not do, not what the run did; the residual's size is :func:`distlib.planner.step.published_residuals`'s.
RESIDUAL_CAUSES = {
    "megatron2021_t1_": "small layers at constants fitted on large ones",
    "megatron2021_t1_145": "matmul efficiency fitted on 2022's code",
    "megatron2021_t1_310": "matmul efficiency fitted on 2022's code",
    "megatron2021_t1_529": "matmul efficiency fitted on 2022's code",
    "megatron2021_t1_1008": "matmul efficiency fitted on 2022's code",
    "megatron2021_t2_zero3_": "DeepSpeed's prefetch not modelled",
    "megatron2021_t2_ptd_": "chunks the planner's; thin stages free",
    "korthikanti2022_": "the fitted constants, interleaved",
    "korthikanti2022_22b": "fitted",
    "korthikanti2022_1t": "fitted",
    "korthikanti2022_530b_dp8": "DP term fitted; the rest the 530B's",
    "llama3_405b_8k_": "FSDP's overlap charged in full",
    "llama3_405b_128k_": "attention at the products' efficiency",
    "bloom_": "Omni-Path as InfiniBand, uncalibrated",
    "deepseek_": "FP8 products and DualPipe not modelled",
}


def residual_cause(row_id: str) -> str:
    """What the planner leaves out where ``row_id``'s residual comes from (:data:`RESIDUAL_CAUSES`).

    >>> residual_cause("megatron2021_t1_1.7b")
    'small layers at constants fitted on large ones'
    >>> residual_cause("korthikanti2022_1t")
    'fitted'
    """
    keys = [k for k in RESIDUAL_CAUSES if row_id.startswith(k)]
    if not keys:
        raise ValueError(f"row_id must start with one of {', '.join(RESIDUAL_CAUSES)}, got {row_id!r}")
    return RESIDUAL_CAUSES[max(keys, key=len)]
