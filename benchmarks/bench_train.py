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
   gloo, on the book's small model and on a larger one (``--peers-models``)
   where the book's side overlaps its communication as PyTorch's does: median step times (after the first step) and their ratio
   (book / PyTorch; above 1, the book is slower), and the largest relative
   loss difference. PyTorch's side runs without ``CommDebugMode``
   (``count=False``): it dispatches every operator through Python and
   would make PyTorch's step about six times slower here; the book's
   counter (:class:`~distlib.engines.comm.CountingComm`) costs nothing and
   stays on.

3. **Overlap across two nodes** (``--overlap``, as root where a mini cluster
   can be made): DDP's buckets, ZeRO-3's prefetch, tensor parallelism's
   backward sums and a pipeline's receives posted ahead, each blocking and
   overlapped, one rank a node over a throttled link, beside the step the
   chapters' models predict (chapter 8's and 10's timelines, chapter 11's
   weight-gradient rule, chapter 12's schedule with messages;
   :mod:`distlib.train.overlap_measure`).

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


PEER_MODELS = {"small": Config(), "large": Config(hidden=256, layers=4, heads=4, seq=64, batch=8, vocab=64)}
"""The peers' models: the book's small one (Python's overhead sets its step), and one whose matmuls and messages
take most of the step (1.6 MB of float64 gradient a block), where the book's side overlaps its communication
(ZeRO-3: ``--overlap prefetch,buckets``, as FSDP2 prefetches by default; TP: ``--overlap tp``)."""


def run_peers(ranks_list, steps: int, seed: int, say, models=("small", "large")) -> list:
    from distlib.train.peers import fsdp_beside_zero3, tp_beside_megatron

    rows = []
    for ranks in ranks_list:
        for model, check in ((m, c) for m in models for c in (fsdp_beside_zero3, tp_beside_megatron)):
            config, overlap = PEER_MODELS[model], model == "large"
            say(f"# {check.__name__} on {ranks} gloo ranks, {steps} steps, the {model} model")
            c = check(ranks=ranks, steps=steps, seed=seed, timeout=300, count=False, config=config,
                      overlap=overlap)  # CommDebugMode off
            book, peer = _after_first(c.book_step_seconds), _after_first(c.peer_step_seconds)
            rows.append({"book": c.book + (" +overlap" if overlap else ""), "peer": c.peer, "ranks": ranks,
                         "model": model, "book_median_step_s": book,
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
    lines = [f"{'book':<21} {'PyTorch':<27} {'model':<6} {'ranks':>5} {'book ms':>9} {'torch ms':>9} "
             f"{'book/torch':>10} {'loss diff':>9}"]  # fmt: skip
    for r in rows:
        lines.append(f"{r['book']:<21} {r['peer']:<27} {r['model']:<6} {r['ranks']:>5} "
                     f"{r['book_median_step_s'] * 1e3:>9.1f} "
                     f"{r['peer_median_step_s'] * 1e3:>9.1f} {r['time_ratio']:>10.2f} "
                     f"{r['max_loss_difference']:>9.1e}")  # fmt: skip
    return "\n".join(lines)


def run_overlaps(kinds, link_gbit: float, engines, steps: int, say) -> list:
    """Each of ``kinds`` across two mini-cluster nodes, blocking and overlapped, beside its timeline's prediction
    (:func:`distlib.train.overlap_measure.measure_overlap`)."""
    from distlib.train.overlap_measure import measure_overlap

    rows = []
    for kind in kinds:
        for engine in engines:
            say(f"# {kind} across two nodes at {link_gbit:g} Gbit/s on {engine}")
            r = measure_overlap(kind, link_gbit=link_gbit, engine=engine, steps=steps, repeats=2)
            rows.append({"kind": kind, "engine": engine, "link_gbit": link_gbit, "blocking_s": r.blocking_seconds,
                         "overlapped_s": r.overlapped_seconds, "predicted_s": r.predicted_overlapped_seconds,
                         "measured_saving_s": r.measured_saving, "predicted_saving_s": r.predicted_saving_seconds,
                         "prediction_error": r.prediction_error, "compute_s": r.compute_seconds,
                         "comm_s": r.comm_seconds, "losses_equal": r.losses_equal})  # fmt: skip
    return rows


def overlap_table(rows) -> str:
    lines = [f"{'overlap':<8} {'engine':<6} {'blocking ms':>11} {'overlapped':>10} {'predicted':>9} {'|error|':>7} "
             f"{'saved ms':>8} {'predicted':>9} {'compute':>8} {'comm':>6}"]  # fmt: skip
    for r in rows:
        lines.append(f"{r['kind']:<8} {r['engine']:<6} {r['blocking_s'] * 1e3:>11.1f} {r['overlapped_s'] * 1e3:>10.1f} "
                     f"{r['predicted_s'] * 1e3:>9.1f} {r['prediction_error']:>7.0%} "
                     f"{r['measured_saving_s'] * 1e3:>8.1f} {r['predicted_saving_s'] * 1e3:>9.1f} "
                     f"{r['compute_s'] * 1e3:>8.1f} {r['comm_s'] * 1e3:>6.1f}")  # fmt: skip
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
    parser.add_argument("--peers-models", default="small,large",
                        help="the peers' models: small (the book's), large (communication a visible part of the "
                             "step, the book's side overlapping), or both (default small,large)")
    parser.add_argument("--overlap", default="auto",
                        help="overlaps measured across two mini-cluster nodes (root): buckets, zero3, tp, pp, "
                             "comma-separated, none, or auto (all four where a mini cluster can be made; default)")
    parser.add_argument("--overlap-link", default="0.3", help="the nodes' link in Gbit/s (default 0.3)")
    parser.add_argument("--overlap-engines", default="gloo,mpi",
                        help="the engines the overlaps are measured on: gloo, mpi or gloo,mpi (default; gloo only "
                             "where torch is installed)")
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
        models = [m.strip() for m in ns.peers_models.split(",") if m.strip()]
        if not models or any(m not in PEER_MODELS for m in models):
            raise ValueError(f"--peers-models must be small, large or small,large; got {ns.peers_models!r}")
        ns.peers_models = models
        ns.overlap = _overlap_flag(ns.overlap)
        try:
            ns.overlap_link = float(ns.overlap_link)
        except ValueError:
            ns.overlap_link = -1.0
        if not 0.01 <= ns.overlap_link <= 100:
            raise ValueError("--overlap-link must be a rate in Gbit/s from 0.01 to 100")
        ns.overlap_engines = [e.strip() for e in ns.overlap_engines.split(",") if e.strip()]
        if not ns.overlap_engines or any(e not in ENGINES for e in ns.overlap_engines) \
                or len(set(ns.overlap_engines)) != len(ns.overlap_engines):
            raise ValueError(f"--overlap-engines must be gloo, mpi or gloo,mpi; got {','.join(ns.overlap_engines)!r}")
        if ns.engine not in ENGINES:
            raise ValueError(f"--engine must be one of {', '.join(ENGINES)}; got {ns.engine!r}")
        if ns.engine == "gloo" and importlib.util.find_spec("torch") is None:
            raise ValueError("--engine gloo needs PyTorch (torch.distributed): pip install torch")
    except ValueError as exc:
        parser.error(str(exc))
    return ns


def _overlap_flag(text: str) -> list:
    from distlib.train.overlap_measure import MEASURED_OVERLAPS

    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["none"]:
        return []
    if words == ["auto"]:
        from distlib.minicluster import minicluster_support

        return [] if minicluster_support() else list(MEASURED_OVERLAPS)
    if not words or any(w not in MEASURED_OVERLAPS for w in words):
        raise ValueError(f"--overlap must be auto, none, or a comma-separated list of {', '.join(MEASURED_OVERLAPS)}; "
                         f"got {text!r}")  # fmt: skip
    return words


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
    peers = run_peers(ns.peers_ranks, ns.steps, ns.seed, say, ns.peers_models) if torch and ns.peers_ranks else []
    if peers:
        print(f"\nPeers over gloo: medians over steps 2-{ns.steps}; loss diff relative, the largest; the large "
              f"model is {PEER_MODELS['large']}", file=out)
        print(peer_table(peers), file=out)
    elif ns.peers_ranks:
        print("\nPeers: skipped, torch is not importable (pip install torch)", file=out)
    engines = [e for e in ns.overlap_engines if torch or e != "gloo"]
    overlaps = run_overlaps(ns.overlap, ns.overlap_link, engines, ns.steps, say) if ns.overlap else []
    if overlaps:
        print(f"\nOverlap across two nodes at {ns.overlap_link:g} Gbit/s, one rank each: medians over steps "
              f"2-{ns.steps} of 2 runs a mode; predicted = blocking - the saving the chapters' "
              f"models give (buckets: 8, zero3: 10, tp: 11, pp: 12) for the measured compute and the link's rate",
              file=out)  # fmt: skip
        print(overlap_table(overlaps), file=out)
    seconds = time.monotonic() - started
    print(f"\n# {seconds:.0f} s", file=out, flush=True)
    if ns.json:
        print(json.dumps({"machine": machine, "engine": ns.engine, "torch": torch, "steps": ns.steps,
                          "seed": ns.seed, "layouts": layouts, "peers": peers, "overlaps": overlaps,
                          "seconds": seconds}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
