"""The registry of collective and algorithm names: one home for every list of them.

The cost models (:mod:`distlib.collectives.costs`), the engines
(:mod:`distlib.engines.algorithms`, ``selftest``, ``tuner``), the DDP model
(:mod:`distlib.overlap`) and the plots all take their lists from these
tuples, so a name is added in one place. :func:`canonical_collective` maps the
other spellings (torch.distributed's, nccl-tests', NCCL's) to the book's.
Everything here is re-exported by :mod:`distlib.collectives`.
"""

from __future__ import annotations

__all__ = [
    "COLLECTIVES",
    "ALGORITHMS",
    "ALLREDUCE_ALGORITHMS",
    "TWO_LEVEL_ALGORITHMS",
    "OWN_ALLREDUCE_ALGORITHMS",
    "ENGINE_ALLREDUCE_ALGORITHMS",
    "ENGINE_SCATTER_GATHER_ALGORITHMS",
    "BUS_FACTOR_COLLECTIVES",
    "ALLTOALL_ALGORITHMS",
    "COLLECTIVE_ALIASES",
    "canonical_collective",
]

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce")

ALGORITHMS = ("ring", "tree", "halving_doubling")
"""Algorithms modelled for every collective."""
ALLREDUCE_ALGORITHMS = ALGORITHMS + ("recursive_doubling",)
"""Algorithms modelled for all-reduce: recursive doubling (the whole buffer
swapped ``lg p`` times) is an all-reduce of its own, the short-message choice.
The engines run each of them, and their ``"auto"`` chooses among these."""
TWO_LEVEL_ALGORITHMS = ("ring", "hierarchical")
"""All-reduces over nodes of ranks (:func:`two_level_allreduce_time`): the flat
ring and the book's hierarchical one (reduce-scatter inside a node, all-reduce
across, all-gather inside), in the order the chapter races them."""
OWN_ALLREDUCE_ALGORITHMS = ALLREDUCE_ALGORITHMS + ("hierarchical",)
"""Every all-reduce distlib itself runs over an engine."""
ENGINE_ALLREDUCE_ALGORITHMS = OWN_ALLREDUCE_ALGORITHMS + ("builtin", "auto")
"""What :func:`distlib.engines.allreduce` accepts: distlib's own, the engine's
own all-reduce (``"builtin"``) and the tuner's pick (``"auto"``)."""
ENGINE_SCATTER_GATHER_ALGORITHMS = ("ring", "halving_doubling", "builtin")
"""What the engines' reduce-scatter and all-gather accept."""
BUS_FACTOR_COLLECTIVES = COLLECTIVES + ("alltoall", "sendrecv")
ALLTOALL_ALGORITHMS = ("pairwise", "bruck")
"""The all-to-alls the book models (:mod:`distlib.collectives.alltoall`) and runs
(:mod:`distlib.engines.alltoall`): pairwise exchange and Bruck's algorithm."""

#: Other spellings of the collectives: torch.distributed's and nccl-tests'
#: (``all_reduce_perf``) names, and NCCL's ``ncclAllReduce`` style.
COLLECTIVE_ALIASES = {
    "all_reduce": "allreduce", "all-reduce": "allreduce",
    "all_gather": "allgather", "all-gather": "allgather",
    "reducescatter": "reduce_scatter", "reduce-scatter": "reduce_scatter",
    "all_to_all": "alltoall", "all-to-all": "alltoall",
    "send_recv": "sendrecv", "sendrecv": "sendrecv",
}


def canonical_collective(name) -> str:
    """The book's name for a collective, from any common spelling.

    Accepts the book's names (``"allreduce"``), torch.distributed's and
    nccl-tests' (``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
    ``"all_to_all"``), hyphenated forms and NCCL's ``ncclAllReduce`` style,
    case-insensitively. Unknown names are returned lower-cased for the caller
    to reject with its own list.

    Examples
    --------
    >>> canonical_collective("all_reduce"), canonical_collective("AllGather"), canonical_collective("ncclReduceScatter")
    ('allreduce', 'allgather', 'reduce_scatter')
    """
    if not isinstance(name, str):
        raise TypeError(f"collective must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    if key.startswith("nccl"):
        key = key[4:]
    key = COLLECTIVE_ALIASES.get(key, key)
    return {"allreduce": "allreduce", "allgather": "allgather", "reduce_scatter": "reduce_scatter"}.get(key, key)



def _canon(collective):
    return canonical_collective(collective) if isinstance(collective, str) else collective

