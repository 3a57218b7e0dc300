"""Flat ring against the hierarchical all-reduce on a cluster on one machine, beside the model.

::

    sudo .venv/bin/python benchmarks/bench_minicluster.py                 # 2 nodes x 2 ranks at 1, 2, 5 Gbit/s, ~1.5 minutes
    sudo .venv/bin/python benchmarks/bench_minicluster.py --rates 0.5,1 --sizes 4M,32M --iters 7
    sudo .venv/bin/python benchmarks/bench_minicluster.py --engine gloo --out race.json

For every link rate it makes a mini cluster (:mod:`distlib.minicluster`:
network namespaces joined by veth links that ``tc tbf`` throttles to the rate,
per direction), runs ``python -m distlib.bench allreduce --engine mpi --nodes 2
--ranks 4 --link-gbit R --algorithms ring,hierarchical`` across it, removes it,
and prints, per size: the measured bus bandwidth of the flat ring and of the
hierarchical all-reduce, the measured gain (ring time / hierarchical time),
and what the two-level alpha-beta model predicts for the same link rate
(:func:`distlib.collectives.two_level_allreduce_time`: the link's rate between
nodes, this machine's memory-copy bandwidth inside a node, no latency, so
meant for the large sizes). For 2 nodes of 2 ranks the model's gain tends to
1.5 when the link is the bottleneck: the ring sends 2(p-1)/p = 1.5 times the
buffer over it, the hierarchy 2(N-1)/N = 1 times.

Where the measured numbers fall short of the model, the CPU is the usual
reason: the ranks' TCP copies and MPICH's busy polling share the machine's
cores, which matters more the faster the link (compare 1 and 5 Gbit/s).
tc counts packet headers too (about 4 % of a full TCP segment), so a
flat ring's busbw tops out a little under the link rate.

(Integrator's note: when ``dl.gpu_cluster``/``dl.predict_busbw`` land, the
prediction column can ask them instead, for a cluster of these nodes with
``nic_bandwidth`` = the link rate; the two-level function here stays the
closed form this chapter derives.)

Needs root (see :func:`distlib.minicluster.minicluster_support`); elsewhere it
prints why and exits with status 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distlib.bench import parse_size  # noqa: E402
from distlib.bench import race  # noqa: E402
from distlib.minicluster import minicluster_support  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1,2,5", help="link rates in Gbit/s per direction (default 1,2,5)")
    parser.add_argument("--sizes", default="1M,16M", help="buffer sizes per rank (default 1M,16M)")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--engine", choices=["mpi", "gloo"], default="mpi")
    parser.add_argument("--out", help="also write the results as JSON here")
    ns = parser.parse_args(argv)
    reason = minicluster_support()
    if reason:
        print(f"SKIPPED: {reason}")
        return 0
    rates = [float(r) for r in ns.rates.split(",")]
    sizes = [parse_size(s) for s in ns.sizes.split(",")]
    print(f"# {ns.nodes} nodes x {ns.ranks // ns.nodes} ranks, engine {ns.engine}, {ns.iters} timed samples (median)")
    print("# busbw in MB/s (1e6 bytes/s); model = two-level alpha-beta, link rate between nodes, memcpy inside")
    head = (f"{'link':>10} {'size':>10} | {'ring':>8} {'hier':>8} {'gain':>6} | {'model ring':>10} {'model hier':>10} "
            f"{'model gain':>10} | {'link MB':>8} {'wrong':>5}")  # fmt: skip
    print(head)
    print("-" * len(head))
    out = []
    t0 = time.monotonic()
    for rate in rates:
        result = race(nodes=ns.nodes, ranks=ns.ranks, link_gbit=rate, sizes=sizes, iters=ns.iters, engine=ns.engine)
        moved = result.link_bytes["node0"].sent / 1e6
        for row in result.rows:
            ring, hier = row.busbw["ring"], row.busbw["hierarchical"]
            m_ring = result.predicted_busbw("ring", row.n_bytes)
            m_hier = result.predicted_busbw("hierarchical", row.n_bytes)
            wrong = sum(row.wrong.values())
            print(f"{rate:>6g} Gb/s {row.n_bytes:>10} | {ring / 1e6:>8.1f} {hier / 1e6:>8.1f} "
                  f"{result.gain(row.n_bytes):>6.2f} | {m_ring / 1e6:>10.1f} {m_hier / 1e6:>10.1f} "
                  f"{m_hier / m_ring:>10.2f} | {moved:>8.0f} {wrong:>5}")  # fmt: skip
            out.append({"link_gbit": rate, "n_bytes": row.n_bytes, "busbw": row.busbw, "seconds": row.seconds,
                        "model_busbw": {"ring": m_ring, "hierarchical": m_hier}, "wrong": row.wrong})  # fmt: skip
    print(f"# link MB: bytes node0 sent over its link in that rate's runs (tc counters); {time.monotonic() - t0:.0f} s in all")
    if ns.out:
        Path(ns.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
