"""Published training layouts and the utilization their papers print (``data/published_layouts.csv``).

Each row is one run: the model's shape, the cluster (accelerator, nodes, the
node's scale-out rate), the layout (``dp``, ``tp``, ``pp``, ``cp``, ZeRO stage,
recomputation, sequence parallelism, schedule, chunks, microbatch) and the
printed figure, with its ``source``. An empty layout field is one the source
does not print; the planner (:func:`distlib.planner.step.layout_step`, or
:func:`distlib.planner.step.plan_layouts` for a degree) picks it. ``metric`` says
which utilization the source prints: ``"mfu"`` (model FLOPs: PaLM,
Korthikanti et al. 2022, Llama 3) or ``"hfu"`` (FLOPs the hardware ran,
recomputation included: Megatron-LM 2021's "% of theoretical peak", BLOOM's
TFLOPs); ``printed_hfu`` is the HFU a source prints beside its MFU
(Korthikanti et al.'s Table 5). ``role`` is ``"fit"`` for the three rows the planner's constants are
computed from (:func:`distlib.planner.step.planner_constants`); every other row is
a prediction.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

__all__ = ["PublishedLayout", "published_layouts"]

_INTS = ("layers", "hidden", "heads", "seq", "vocab", "ffn_hidden", "kv_heads", "nodes", "nics", "global_batch", "dp",
         "tp", "pp", "cp", "zero", "chunks", "micro_batch")
_BOOLS = ("gated_ffn", "biases", "tied_embeddings", "learned_positions", "sequence_parallel")


@dataclass(frozen=True)
class PublishedLayout:
    """One published run (see the module's docstring); ``None`` where the source prints nothing."""

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
    dp: int
    tp: int | None
    pp: int | None
    cp: int
    zero: int
    recompute: str | None
    sequence_parallel: bool
    schedule: str
    chunks: int | None
    micro_batch: int | None
    attention: str
    source: str
    note: str


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


@lru_cache(maxsize=None)
def published_layouts() -> tuple:
    """Every row of ``data/published_layouts.csv``, as :class:`PublishedLayout`.

    Examples
    --------
    >>> rows = {r.id: r for r in published_layouts()}
    >>> r = rows["llama3_405b_8k_16384"]
    >>> r.dp * r.tp * r.pp * r.cp == r.nodes * 8, r.metric, r.printed
    (True, 'mfu', 0.41)
    >>> sorted(r.id for r in rows.values() if r.role == "fit")
    ['korthikanti2022_1t', 'korthikanti2022_22b', 'korthikanti2022_530b_dp8']
    """
    text = resources.files("distlib").joinpath("data/published_layouts.csv").read_text(encoding="utf-8")
    return tuple(PublishedLayout(**{k: _value(k, v) for k, v in row.items()}) for row in csv.DictReader(text.splitlines()))
