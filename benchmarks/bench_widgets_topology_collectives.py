"""Update latency of the topology and collectives widgets, per control.

Sets each control to a series of values across its range, headless, and
times the assignment (it recomputes the model and redraws the PNG
synchronously). The topology widget caches what it computed per (kind,
size, ring order), so it is timed twice: every value for the first time
("cold") and again ("warm"). Target: median <= 50 ms per control.

    python benchmarks/bench_widgets_topology_collectives.py [--repeats 20] [--check]

``--check`` exits with status 1 when a control's median misses the target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import HEADER, control_values, row  # noqa: E402

TARGET_MS = 50.0


def _stats(samples) -> dict:
    s = np.array(samples)
    return {"median_ms": float(np.median(s)), "p95_ms": float(np.percentile(s, 95)), "n": len(s)}


def _time_control(control, values) -> list:
    samples = []
    for v in values:
        if v == control.value:
            continue
        t = time.perf_counter()
        control.value = v
        samples.append((time.perf_counter() - t) * 1e3)
    return samples


def bench_topology() -> list:
    from distlib.widgets import topology as mod

    mod._CACHE.clear()
    wdg = mod.TopologyWidget()
    rows = []
    for label in ("cold", "warm"):
        per_kind = []
        size_samples = []
        for key in mod.KIND_SPECS:
            t = time.perf_counter()
            wdg.kind.value = key
            per_kind.append((time.perf_counter() - t) * 1e3)
            size_samples += _time_control(wdg.size, control_values(wdg.size, 30))
        ring_samples = []
        for key in mod.KIND_SPECS:
            wdg.kind.value = key
            ring_samples += _time_control(wdg.ring, control_values(wdg.ring, 2))
        rows.append((f"topology: kind dropdown ({label})", _stats(per_kind)))
        rows.append((f"topology: size slider, every kind ({label})", _stats(size_samples)))
        rows.append((f"topology: ring order toggle ({label})", _stats(ring_samples)))
    return rows


def bench_collectives(repeats: int) -> list:
    from distlib.widgets.collectives import CollectivesWidget

    wdg = CollectivesWidget()
    rows = []
    for control in wdg.controls:
        default = control.value
        samples = _time_control(control, control_values(control, repeats))
        control.value = default
        rows.append((f"collectives: {control.description}", _stats(samples)))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    rows = bench_topology() + bench_collectives(args.repeats)
    print(HEADER)
    miss = False
    for name, stats in rows:
        print(row(name[:44], stats, TARGET_MS))
        miss |= stats["median_ms"] > TARGET_MS
    return 1 if args.check and miss else 0


if __name__ == "__main__":
    sys.exit(main())
