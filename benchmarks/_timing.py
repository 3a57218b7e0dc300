"""Small timing helpers shared by the benchmark scripts (figures, not tests)."""

from __future__ import annotations

import statistics
import time


def time_calls(fn, values, *, repeat: int = 1) -> dict:
    """Call ``fn(v)`` for each value (``repeat`` rounds); median and p95 in ms."""
    samples = []
    for _ in range(repeat):
        for v in values:
            t0 = time.perf_counter()
            fn(v)
            samples.append((time.perf_counter() - t0) * 1e3)
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))]
    return {"median_ms": statistics.median(samples), "p95_ms": p95, "n": len(samples)}


def row(name: str, stats: dict, target_ms: float | None = None) -> str:
    verdict = ""
    if target_ms is not None:
        verdict = "ok" if stats["median_ms"] <= target_ms else f"MISS (target {target_ms:g} ms)"
    return f"{name:<44} {stats['median_ms']:>9.1f} {stats['p95_ms']:>9.1f} {stats['n']:>5}  {verdict}"


HEADER = f"{'control':<44} {'median ms':>9} {'p95 ms':>9} {'n':>5}"
