"""Where a run's ranks go when they are not all on this host: the declared shape of a placement.

The launchers (:func:`~distlib.engines.run_mpi`, :func:`~distlib.engines.run_torch`,
:func:`~distlib.engines.run_torchrun`) take ``cluster=``, anything that satisfies
:class:`Placement`; :class:`distlib.minicluster.MiniCluster` does, and a real
cluster's placement (Slurm's node list, say) would. These are all the launchers
use of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

__all__ = ["Placement", "PlacedNode", "check_placement"]


@runtime_checkable
class PlacedNode(Protocol):
    """One node: how the others reach it, and which interface its traffic takes."""

    hostname: str
    address: str
    iface: str


@runtime_checkable
class Placement(Protocol):
    """Nodes to spread ranks over, and how to start a process on one."""

    n_nodes: int
    nodes: Sequence[PlacedNode]
    link_gbit: float | None
    """Each node's link rate in Gbit/s per direction, or ``None`` (unthrottled): said in the ranks' environment."""

    def prefix(self, which) -> list:
        """The argv prefix that runs a command on node ``which`` (an index, a hostname or a node)."""

    def hostfile(self, ranks_per_node: int) -> Path:
        """A Hydra host file with ``ranks_per_node`` slots on every node."""

    def launcher_exec(self) -> Path:
        """An ``ssh`` stand-in Hydra calls to start its proxy on a node."""

    def health(self):
        """``None`` while every node is reachable, else a :class:`~distlib.engines.progress.Stall` naming the one
        that is not."""


_NODE_FIELDS = ("hostname", "address", "iface")
_FIELDS = ("n_nodes", "nodes", "link_gbit", "prefix", "hostfile", "launcher_exec", "health")


def check_placement(cluster) -> Placement:
    """``cluster`` if it satisfies :class:`Placement` (nodes included), else a ``TypeError`` naming what it lacks."""
    missing = [name for name in _FIELDS if not hasattr(cluster, name)]
    if not missing:
        nodes = list(cluster.nodes)
        missing = [f"nodes[{i}].{name}" for i, node in enumerate(nodes) for name in _NODE_FIELDS
                   if not hasattr(node, name)]  # fmt: skip
        if not missing and len(nodes) != cluster.n_nodes:
            raise TypeError(f"cluster says n_nodes={cluster.n_nodes} but lists {len(nodes)} nodes")
    if missing:
        raise TypeError(f"cluster must be a placement (e.g. a distlib.minicluster.MiniCluster) with "
                        f"{', '.join(_FIELDS)}; {type(cluster).__name__} lacks {', '.join(missing)}")  # fmt: skip
    return cluster
