"""Small timing helpers shared by the benchmark scripts (figures, not tests)."""

from __future__ import annotations

import statistics
import time

import numpy as np


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


def control_values(control, n: int) -> list:
    """``n`` values spread over a widget control's range, visited in a zig-zag.

    Dropdowns and toggles cycle through their options; log sliders spread
    over their exponents; integer sliders keep to multiples of their step.
    """
    if hasattr(control, "options") and not hasattr(control, "min"):
        opts = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return [opts[i % len(opts)] for i in range(1, n + 1)]
    if hasattr(control, "base"):  # FloatLogSlider: min/max are exponents
        vals = control.base ** np.linspace(control.min, control.max, n)
    elif isinstance(control.value, int):
        vals = np.arange(control.min, control.max + 1, control.step)
        if len(vals) > n:
            vals = np.unique(np.round(np.linspace(control.min, control.max, n) / control.step) * control.step
                             ).astype(int)
    else:
        vals = np.linspace(control.min, control.max, n)
    order = np.r_[np.arange(0, len(vals), 2), np.arange(1, len(vals), 2)[::-1]]
    return [v.item() if hasattr(v, "item") else v for v in np.asarray(vals)[order]]
