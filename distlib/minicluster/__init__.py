"""A cluster on one machine (chapter "A cluster on one machine"): simulated nodes, a throttled network, Slurm.

* :mod:`~distlib.minicluster.cluster` -- the nodes, their links and :func:`mini_cluster`;
* :mod:`~distlib.minicluster.slurm` -- a Slurm controller and node daemons on them;
* :mod:`~distlib.minicluster.login` -- a command line typed at the head node;
* :mod:`~distlib.minicluster.cli` -- ``python -m distlib.minicluster run|shell``.
"""

from .cluster import (LinkBytes, MiniCluster, MiniClusterUnavailable, Node, leftovers, mini_cluster,
                      minicluster_support)

__all__ = ["MiniClusterUnavailable", "Node", "LinkBytes", "MiniCluster", "mini_cluster", "minicluster_support",
           "leftovers"]
