"""Ring context parallelism across two nodes of the mini cluster: the step with and without overlap, beside the model.

::

    sudo .venv/bin/python benchmarks/bench_context.py                    # cp 2, 0.2 and 1 Gbit/s: ~1 min
    sudo .venv/bin/python benchmarks/bench_context.py --link-gbit 0.5 --cp 4 --steps 4 --json

As root (the mini cluster's network namespaces), for each link rate:
:func:`distlib.train.ring_overlap.measure_ring_overlap` makes a fresh cluster of two nodes joined by a
link throttled to that rate per direction and runs the book's trainer with ``--cp C`` (ring) across it,
``C / 2`` ranks a node, overlapped (each hop's send and receive posted before the block it hides under,
what the trainer runs) and blocking (``--cp-blocking``), alternately. The model is bigger than the book's
(:data:`~distlib.train.ring_overlap.RING_BENCH_CONFIG`) so that a block's compute and a hop's transfer
are of a size.

Printed side by side, per link: the hop's transfer at the link's rate, the fastest step of each mode
(slowest rank, first step left out), the step the model predicts for the overlapped run from the blocking
one (:func:`distlib.context_parallel.ring_step_saving`), the two ratios, blocking over overlapped, and
per step and rank the seconds each mode waited for the ring's messages and one layer's attention compute:
overlapping takes the waits away, but on this machine the transfer's own work (TCP, the link's shaping)
shares the two cores with the compute and slows it.
Nothing is asserted: both nodes share this machine's cores, and whatever else runs on it moves the
milliseconds. ``--engine mpi`` runs MPICH, which moves a non-blocking message between nodes only inside an
MPI call: there the overlapped ring hides little, which the ratio shows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from distlib.measure import describe_cpu
from distlib.train.ring_overlap import RING_BENCH_CONFIG, measure_ring_overlap


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--link-gbit", default="0.2,1", help="link rates in Gbit/s per direction (default 0.2,1)")
    parser.add_argument("--cp", type=int, default=2, help="context-parallel ranks, split over two nodes (default 2)")
    parser.add_argument("--steps", type=int, default=4, help="steps per run (default 4)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each mode per link (default 2)")
    parser.add_argument("--engine", default="gloo", choices=("gloo", "mpi"), help="the ranks' engine (default gloo)")
    parser.add_argument("--json", action="store_true")
    ns = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_context: the mini cluster needs root (network namespaces): run it with sudo", file=sys.stderr)
        return 2
    rows = [measure_ring_overlap(cp=ns.cp, link_gbit=float(r), steps=ns.steps, repeats=ns.repeats, engine=ns.engine)
            for r in ns.link_gbit.split(",")]
    if ns.json:
        print(json.dumps([dataclasses.asdict(r) | {"measured_ratio": r.measured_ratio,
                                                    "predicted_ratio": r.predicted_ratio} for r in rows]))
        return 0
    model = ", ".join(f"{k} {v}" for k, v in RING_BENCH_CONFIG.items())
    print(f"# {describe_cpu()}; cp {ns.cp} ring over 2 mini-cluster nodes, {ns.engine}; model: {model}")
    print(f"{'link Gbit/s':>11} {'hop ms':>7} {'blocking ms':>12} {'overlapped ms':>14} {'predicted ms':>13} "
          f"{'ratio measured':>15} {'predicted':>10} {'waits ms (blocking, overlapped)':>32} "
          f"{'attention ms a layer (blocking, overlapped)':>44}")
    for r in rows:
        waits = f"{r.blocking_wait_seconds * 1e3:.1f}, {r.overlapped_wait_seconds * 1e3:.1f}"
        work = f"{r.attention_seconds * 1e3:.1f}, {r.overlapped_attention_seconds * 1e3:.1f}"
        print(f"{r.link_gbit:11g} {r.hop_seconds * 1e3:7.2f} {r.blocking_seconds * 1e3:12.1f} "
              f"{r.overlapped_seconds * 1e3:14.1f} {r.predicted_overlapped_seconds * 1e3:13.1f} "
              f"{r.measured_ratio:15.2f} {r.predicted_ratio:10.2f} {waits:>32} {work:>44}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
