"""The trainer's layouts side by side on this machine: step time, bytes measured against the formulas, state.

::

    python benchmarks/bench_train.py                      # 2 and 4 ranks on MPI, 6 steps, peers at 2: ~90 s
    python benchmarks/bench_train.py --ranks 2 --steps 2 --peers-ranks none --json
    python benchmarks/bench_train.py --engine gloo --peers-ranks 2,4

One run, two tables:

1. **Layouts** (``python -m distlib.train``'s :func:`~distlib.train.launch.train`):
   DDP, ZeRO-1, ZeRO-2 and ZeRO-3 (``dp = ranks``) and Megatron TP
   (``tp = ranks``) at each ``--ranks``: the median step time (the slowest
   rank's, over the steps after the first), the bytes each rank sent per
   step (the ranks' mean) beside the bytes the formulas predict, their
   ratio, and the most state bytes a rank held. The prediction is
   ``tests/test_train.py``'s: ZeRO's passes (:func:`distlib.walls.zero_stage`)
   priced by :func:`distlib.cost_coefficients` over the model's float64
   parameters (DDP: one all-reduce), plus the trainer's one-value all-reduce
   of the loss over the data-parallel ranks; TP, chapter 11's four
   all-reduces per block of ``GLOBAL_BATCH * seq * hidden`` float64 values.
   The ratio is 1 to the byte: the formulas are exact for the book's ring.
2. **Peers** (:mod:`distlib.train.peers`, where torch is importable): the
   book's ZeRO-3 beside FSDP2's ``fully_shard`` and the book's TP beside
   DTensor's ``parallelize_module``, same ranks, batches and seed, over
   gloo: median step times (after the first step) and their ratio
   (book / PyTorch; above 1, the book is slower), and the largest relative
   loss difference. PyTorch's side runs without ``CommDebugMode``
   (``count=False``): it dispatches every operator through Python and
   would make PyTorch's step about six times slower here; the book's
   counter (:class:`~distlib.engines.comm.CountingComm`) costs nothing and
   stays on.

Absolute times depend on the machine and whatever else runs on it; the
ratios and the byte counts are what the book discusses. The script prints
the machine, the engine and torch's version first.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time

import distlib as dl
from distlib.measure import describe_cpu
from distlib.train.data import GLOBAL_BATCH
from distlib.train.launch import ENGINES, train
from distlib.train.model import Config
from distlib.walls import zero_stage

RANKS = (2, 4)
"""Where every layout runs: ``dp = ranks`` divides the global batch of 12, ``tp = ranks`` the 4 heads."""
MAX_STEPS = 50
LAYOUTS = (("DDP", 0, 0), ("ZeRO-1", 1, 0), ("ZeRO-2", 2, 0), ("ZeRO-3", 3, 0), ("TP", None, 1))
"""``(name, zero stage, tensor parallel)``: the data-parallel layouts at ``dp = ranks``, TP at ``tp = ranks``."""
FLOAT64 = 8


def predicted_bytes(layout: str, ranks: int, config: Config = Config()) -> float:
    """Bytes each rank sends per step, from the formulas (the module docstring says which).

    Examples
    --------
    >>> predicted_bytes("DDP", 2) == 8 * Config().params + 8  # all-reduce: 2(p-1)/p = 1 of the buffer, + the loss
    True
    """
    factor = {c: dl.cost_coefficients(c, ranks)[1] for c in ("allreduce", "reduce_scatter", "allgather")}
    if layout == "TP":
        return 4 * config.layers * factor["allreduce"] * GLOBAL_BATCH * config.seq * config.hidden * FLOAT64
    zero = dict((name, z) for name, z, _ in LAYOUTS)[layout]
    loss = factor["allreduce"] * FLOAT64  # the global batch's loss, one value, over the data-parallel ranks
    if zero == 0:
        return factor["allreduce"] * FLOAT64 * config.params + loss
    z = zero_stage(zero)
    passes = z.gradient_passes * factor["reduce_scatter"] + z.weight_passes * factor["allgather"]
    return passes * FLOAT64 * config.params + loss


def _after_first(seconds) -> float:
    return statistics.median(seconds[1:] if len(seconds) > 1 else seconds)


def run_layouts(ranks_list, steps: int, engine: str, seed: int, say) -> list:
    rows = []
    for ranks in ranks_list:
        for name, zero, tensor in LAYOUTS:
            dp, tp = (1, ranks) if tensor else (ranks, 1)
            say(f"# {name} on {ranks} ranks ({engine}), {steps} steps")
            result = train(dp=dp, tp=tp, zero=zero or 0, steps=steps, seed=seed, engine=engine, timeout=300)
            measured = statistics.fmean(result.comm_bytes) / steps
            predicted = predicted_bytes(name, ranks)
            rows.append({"layout": name, "ranks": ranks, "dp": dp, "tp": tp, "zero": zero or 0,
                         "median_step_s": _after_first(result.step_seconds), "step_seconds": result.step_seconds,
                         "bytes_per_step_measured": measured, "bytes_per_step_predicted": predicted,
                         "bytes_ratio": measured / predicted, "state_bytes": max(result.state_bytes)})  # fmt: skip
    return rows


def run_peers(ranks_list, steps: int, seed: int, say) -> list:
    from distlib.train.peers import fsdp_beside_zero3, tp_beside_megatron

    rows = []
    for ranks in ranks_list:
        for check in (fsdp_beside_zero3, tp_beside_megatron):
            say(f"# {check.__name__} on {ranks} gloo ranks, {steps} steps")
            c = check(ranks=ranks, steps=steps, seed=seed, timeout=300, count=False)  # CommDebugMode off
            book, peer = _after_first(c.book_step_seconds), _after_first(c.peer_step_seconds)
            rows.append({"book": c.book, "peer": c.peer, "ranks": ranks, "book_median_step_s": book,
                         "peer_median_step_s": peer, "time_ratio": book / peer,
                         "book_step_seconds": c.book_step_seconds, "peer_step_seconds": c.peer_step_seconds,
                         "max_loss_difference": c.max_loss_difference})  # fmt: skip
    return rows


def layout_table(rows) -> str:
    head = (f"{'layout':<8} {'ranks':>5} {'step ms':>9} {'sent B/step':>13} {'predicted B':>13} {'ratio':>12} "
            f"{'state B/rank':>13}")  # fmt: skip
    lines = [head]
    for r in rows:
        lines.append(f"{r['layout']:<8} {r['ranks']:>5} {r['median_step_s'] * 1e3:>9.1f} "
                     f"{r['bytes_per_step_measured']:>13,.0f} {r['bytes_per_step_predicted']:>13,.0f} "
                     f"{r['bytes_ratio']:>12.9f} {r['state_bytes']:>13,}")  # fmt: skip
    return "\n".join(lines)


def peer_table(rows) -> str:
    lines = [f"{'book':<12} {'PyTorch':<27} {'ranks':>5} {'book ms':>9} {'torch ms':>9} {'book/torch':>10} "
             f"{'loss diff':>9}"]  # fmt: skip
    for r in rows:
        lines.append(f"{r['book']:<12} {r['peer']:<27} {r['ranks']:>5} {r['book_median_step_s'] * 1e3:>9.1f} "
                     f"{r['peer_median_step_s'] * 1e3:>9.1f} {r['time_ratio']:>10.2f} "
                     f"{r['max_loss_difference']:>9.1e}")  # fmt: skip
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        self.exit(2, f"{self.prog}: {message}\n")


def _ranks_flag(flag: str, text: str, allow_none: bool = False) -> list:
    allowed = ", ".join(map(str, RANKS))
    if allow_none and text.strip().lower() == "none":
        return []
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = None
    if not values or any(v not in RANKS for v in values) or len(set(values)) != len(values):
        extra = ", or none" if allow_none else ""
        raise ValueError(f"{flag} must be a comma-separated list of distinct ranks from {{{allowed}}}{extra}; "
                         f"got {text!r}")  # fmt: skip
    return values


def parse(argv=None) -> argparse.Namespace:
    parser = _Parser(prog="bench_train.py", description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4", help="ranks of every layout, from {2, 4} (default 2,4)")
    parser.add_argument("--steps", default="6", help=f"steps per run, 2 to {MAX_STEPS} (default 6)")
    parser.add_argument("--engine", default="mpi", help=f"the layouts' engine: {', '.join(ENGINES)} (default mpi)")
    parser.add_argument("--peers-ranks", default="2", help="ranks of the peer checks, from {2, 4}, or none")
    parser.add_argument("--seed", default="0", help="seed of the parameters and the data, 0 to 2**32-1")
    parser.add_argument("--json", action="store_true", help="the numbers as one JSON object on stdout")
    ns = parser.parse_args(argv)
    try:
        ns.ranks = _ranks_flag("--ranks", ns.ranks)
        ns.peers_ranks = _ranks_flag("--peers-ranks", ns.peers_ranks, allow_none=True)
        for flag, name, low, high in (("--steps", "steps", 2, MAX_STEPS), ("--seed", "seed", 0, 2**32 - 1)):
            value = getattr(ns, name)
            if not value.strip().isdigit() or not low <= int(value) <= high:
                raise ValueError(f"{flag} must be an integer from {low} to {high}; got {value!r}")
            setattr(ns, name, int(value))
        if ns.engine not in ENGINES:
            raise ValueError(f"--engine must be one of {', '.join(ENGINES)}; got {ns.engine!r}")
        if ns.engine == "gloo" and importlib.util.find_spec("torch") is None:
            raise ValueError("--engine gloo needs PyTorch (torch.distributed): pip install torch")
    except ValueError as exc:
        parser.error(str(exc))
    return ns


def _torch_version() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:  # importable but not installed as a distribution
        return "unknown"


def main(argv=None) -> int:
    ns = parse(argv)
    started = time.monotonic()
    out = sys.stderr if ns.json else sys.stdout  # with --json, stdout holds the JSON object alone

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    torch = _torch_version()
    machine = describe_cpu()
    print(f"# {machine}", file=out)
    print(f"# layouts' engine: {ns.engine}; torch: {torch or 'not installed (no peers)'}; model: {Config()}, "
          f"{Config().params:,} float64 parameters", file=out, flush=True)  # fmt: skip
    layouts = run_layouts(ns.ranks, ns.steps, ns.engine, ns.seed, say)
    print(f"\nLayouts: medians over steps 2-{ns.steps}, bytes per rank per step", file=out)
    print(layout_table(layouts), file=out, flush=True)
    peers = run_peers(ns.peers_ranks, ns.steps, ns.seed, say) if torch and ns.peers_ranks else []
    if peers:
        print(f"\nPeers over gloo: medians over steps 2-{ns.steps}; loss diff relative, the largest", file=out)
        print(peer_table(peers), file=out)
    elif ns.peers_ranks:
        print("\nPeers: skipped, torch is not importable (pip install torch)", file=out)
    seconds = time.monotonic() - started
    print(f"\n# {seconds:.0f} s", file=out, flush=True)
    if ns.json:
        print(json.dumps({"machine": machine, "engine": ns.engine, "torch": torch, "steps": ns.steps,
                          "seed": ns.seed, "layouts": layouts, "peers": peers, "seconds": seconds}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
