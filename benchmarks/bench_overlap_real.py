"""DDP with and without overlap on this machine, measured next to the model.

Runs :mod:`distlib.examples.ddp_overlap` on ``--ranks`` gloo processes with
more iterations than the chapter can afford, then prints, per
``bucket_cap_mb``, the measured median step times beside the predictions of
:func:`distlib.overlap.measure.compare_ddp` (measured per-layer backward
times, DDP's own buckets, measured all-reduce times), with the ratios, and
the CPU time per step. Optionally also times classic and pipelined CG.

    python benchmarks/bench_overlap_real.py [--ranks 2] [--iters 20] [--caps 0.25,1,2,4,25]
                                            [--batch 64] [--comm measured|fit] [--cg] [--json FILE]

Every run is bounded by ``--timeout`` seconds. On a machine with few cores,
gloo's communication threads compete with the ranks' compute for the same
cores; the CPU columns show how much processor time communication took.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distlib.collectives import collective_time  # noqa: E402
from distlib.examples import ddp_overlap  # noqa: E402
from distlib.overlap.measure import compare_ddp  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--layer-iters", type=int, default=40)
    ap.add_argument("--caps", default="0.25,1,2,4,25", help="bucket_cap_mb values (MiB), comma-separated")
    ap.add_argument("--width", type=int, default=ddp_overlap.DEFAULTS["width"])
    ap.add_argument("--layers", type=int, default=ddp_overlap.DEFAULTS["layers"])
    ap.add_argument("--batch", type=int, default=ddp_overlap.DEFAULTS["batch"])
    ap.add_argument("--comm", choices=["measured", "fit"], default="measured",
                    help="bucket all-reduce times: measured per size, or the fitted alpha-beta line")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--cg", action="store_true", help="also time classic and pipelined CG (mpiexec)")
    ap.add_argument("--json", help="write the raw reports to this file")
    ns = ap.parse_args(argv)

    caps = tuple(float(c) for c in ns.caps.split(","))
    t0 = time.perf_counter()
    report = ddp_overlap.launch(ns.ranks, timeout=ns.timeout, caps=caps, iters=ns.iters, layer_iters=ns.layer_iters,
                                warmup=2, width=ns.width, layers=ns.layers, batch=ns.batch, check_steps=3)
    wall = time.perf_counter() - t0
    c = compare_ddp(report, comm=ns.comm)
    m = report["model"]
    print(f"DDP on {report['p']} gloo ranks (torch {report['torch']}, {report['threads']} compute thread per rank, "
          f"{report['cpu_count']} CPUs); MLP {m['layers']} x Linear({m['width']}, {m['width']}), "
          f"batch {m['batch']} per rank, {ns.iters} timed steps per point; run took {wall:.1f} s")
    print(f"measured compute: forward {report['forward_time'] * 1e3:.2f} ms, backward "
          f"{sum(report['backward_times']) * 1e3:.2f} ms over {len(report['backward_times'])} layers")
    print("all-reduce (one flat float32 buffer, slowest rank, median):")
    for n, s in zip(report["allreduce"]["n_bytes"], report["allreduce"]["seconds"]):
        fit = collective_time("allreduce", n, c.p, alpha=c.alpha, bandwidth=c.bandwidth)
        print(f"  {n:>10d} B  {s * 1e3:8.3f} ms   fit {fit * 1e3:8.3f} ms")
    print(f"  fitted ring model: alpha = {c.alpha * 1e6:.1f} µs per step, bandwidth = {c.bandwidth / 1e9:.3f} GB/s "
          "(per direction)")
    print(f"\nstep times (bucket all-reduce times from the {ns.comm} values):")
    print(c.table())
    print("\nCPU time per step (all threads of the slowest rank):")
    print(c.cpu_table())
    chk = report["checks"]
    print(f"\nchecks: ranks identical (overlap / no overlap): {chk['max_rank_diff_overlap'] == 0} / "
          f"{chk['max_rank_diff_no_overlap'] == 0}; |on - off| = {chk['max_diff_overlap_vs_no_overlap']:.2g}, "
          f"|on - one process| = {chk['max_diff_overlap_vs_single_process']:.2g} "
          f"(largest update {chk['max_update']:.2g})")
    out = {"ddp": report}
    if ns.cg:
        from distlib.examples import pipelined_cg

        cg = pipelined_cg.launch(ns.ranks, n=256, repeats=3, timeout=ns.timeout)
        out["cg"] = cg
        print(f"\nCG on a {cg['n']} x {cg['n']} Poisson grid, {cg['p']} MPI ranks "
              f"(all-reduce of 2 doubles: {cg['allreduce_latency'] * 1e6:.1f} µs):")
        for name in ("classic", "pipelined"):
            r = cg[name]
            print(f"  {name:>9}: {r['iterations']} iterations, residual {r['true_residual']:.2e}, "
                  f"{r['seconds'] * 1e3:.1f} ms ({r['seconds_per_iteration'] * 1e6:.0f} µs per iteration, "
                  f"{r['spmv_seconds_per_call'] * 1e6:.0f} µs per matrix-vector product)")
    if ns.json:
        Path(ns.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
