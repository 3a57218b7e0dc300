"""``python -m distlib.minicluster``: ``run`` and ``shell`` (:mod:`distlib.minicluster.cli`), or with no verb
``[NODES] [GBIT]``: make a cluster, show its nodes, remove it (a manual check)."""

from __future__ import annotations

import os
import sys
import time


def _show(argv) -> int:  # pragma: no cover - a manual check
    from .cluster import leftovers, mini_cluster

    n = int(argv[0]) if argv else 2
    gbit = float(argv[1]) if len(argv) > 1 else 2.0
    t0 = time.monotonic()
    with mini_cluster(n, link_gbit=gbit) as cluster:
        print(cluster, f"made in {time.monotonic() - t0:.2f} s")
        for node in cluster.nodes:
            print(node.hostname, node.address, cluster.run(node, ["hostname"]).stdout.strip())
    print("left behind:", leftovers(owner=os.getpid()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:2] in (["run"], ["shell"], ["-h"], ["--help"]):
        from .cli import main

        sys.exit(main(sys.argv[1:]))
    sys.exit(_show(sys.argv[1:]))
