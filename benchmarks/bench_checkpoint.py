"""What a checkpoint costs a step: none, blocking, asynchronous, side by side in one run.

::

    python benchmarks/bench_checkpoint.py                 # 2 MPI ranks, ZeRO-1, a 3M-parameter model, 8 steps
    python benchmarks/bench_checkpoint.py --engine gloo --steps 12

Each mode trains the same model for ``--steps`` steps with a checkpoint after
every step (:mod:`distlib.train.checkpoint`): ``blocking`` writes each rank's
shard, checksums it and commits the folder before the next step starts;
``async`` copies the state (the snapshot) and writes it on a thread while the
next steps run (``--checkpoint-async``). The table gives each mode's median
step (the slowest rank's, after the first), the median time a step spent on
its checkpoint, the bytes written per checkpoint, and each step over the
step without checkpoints. Absolute times depend on the machine and its disk;
the ratios are what chapter 16 discusses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from distlib.measure import describe_cpu
from distlib.train.launch import train
from distlib.train.model import Config

CONFIG = Config(hidden=256, layers=4, heads=4, seq=64, batch=8, vocab=64)
"""Large enough that a checkpoint (parameters and Adam's two moments, float64) is tens of megabytes."""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="mpi", choices=("mpi", "gloo"))
    ap.add_argument("--steps", type=int, default=8, help="steps per mode, 3 to 50 (default 8)")
    ns = ap.parse_args(argv)
    if not 3 <= ns.steps <= 50:
        ap.error(f"--steps must be an integer from 3 to 50, got {ns.steps}")
    print(f"# {describe_cpu()}; {ns.engine}, dp 2 x ZeRO-1, {CONFIG.params:,} parameters, {ns.steps} steps a mode",
          flush=True)  # fmt: skip
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("none", "blocking", "async"):
            folder = None if mode == "none" else Path(tmp) / mode
            run = train(dp=2, zero=1, steps=ns.steps, seed=0, engine=ns.engine, config=CONFIG, timeout=600,
                        checkpoint_dir=folder, checkpoint_async=mode == "async")  # fmt: skip
            saves = [max(r.save_seconds[i] for r in run.ranks) for i in range(1, ns.steps)]
            written = sum(f.stat().st_size for f in (folder / "step-000001").iterdir()) if folder else 0
            rows[mode] = (statistics.median(run.step_seconds[1:]), statistics.median(saves), written)
    base = rows["none"][0]
    print(f"{'mode':<9} {'step ms':>8} {'save ms':>8} {'MB written':>10} {'step / none':>11}")
    for mode, (step, save, written) in rows.items():
        print(f"{mode:<9} {step * 1e3:>8.1f} {save * 1e3:>8.1f} {written / 1e6:>10.1f} {step / base:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
