"""``python -m distlib.bench``: nccl-tests style tables for real engines.

::

    mpiexec -n 4 python -m mpi4py -m distlib.bench allreduce --engine mpi
    python -m distlib.bench allreduce --engine gloo --ranks 4
    python -m distlib.bench allreduce --engine nccl --ranks 8 -b 8 -e 1G -f 2
    python -m distlib.bench allreduce --engine mpi --ranks 2 --algorithms tree,hd,auto --json

For every buffer size (``-b`` to ``-e``, multiplied by ``-f`` each time; the
suffixes K, M, G are powers of 1024, as in nccl-tests) the engine's built-in
all-reduce and the book's algorithms (:mod:`distlib.engines.algorithms`)
run on the same engine and the same data. Columns, per algorithm:

``time``
    median microseconds of one all-reduce (slowest rank; see
    :mod:`distlib.engines.timing`);
``algbw``
    ``size / time`` in GB/s (1 GB = 1e9 bytes);
``busbw``
    ``algbw * 2 (p - 1) / p``, comparable with a link's one-direction
    bandwidth (:func:`distlib.bus_bandwidth`);
``wrong``
    elements that differ from the exact sum (``ok`` if none): the data are
    small integers, so every correct algorithm gives the exact result;
``/builtin``
    the book algorithm's time divided by the built-in's (below 1: faster).

The header gives the machine's memory-copy bandwidth (a NumPy copy of a
large buffer, median), the physical ceiling for processes on one machine,
and, with ``auto``, the alpha-beta fit it chose by.

With ``--engine mpi`` run it under ``mpiexec`` (or pass ``--ranks P`` and it
starts ``mpiexec`` itself); gloo and nccl ranks are always started by this
command (``--ranks P``, default 2). ``--engine nccl`` without a CUDA GPU
prints why it cannot run and exits with status 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

__all__ = ["main", "parse_size", "sizes", "format_table", "ALGORITHM_NAMES"]

ALGORITHM_NAMES = {"ring": "ring", "tree": "tree", "hd": "halving_doubling", "halving_doubling": "halving_doubling",
                   "rd": "recursive_doubling", "recursive_doubling": "recursive_doubling", "auto": "auto",
                   "hier": "hierarchical", "hierarchical": "hierarchical"}  # fmt: skip
"""Names accepted by ``--algorithms`` (``hd`` is short for halving_doubling, ``rd`` for recursive_doubling)."""

_SHORT = {"halving_doubling": "hd", "recursive_doubling": "rd", "hierarchical": "hier"}
_DTYPE_NAMES = {"float32": "float", "float64": "double", "int32": "int32"}


def parse_size(text: str) -> int:
    """Bytes from ``"8"``, ``"64K"``, ``"1M"``, ``"2G"`` (powers of 1024, as nccl-tests).

    >>> parse_size("8"), parse_size("64K"), parse_size("1M")
    (8, 65536, 1048576)
    """
    text = str(text).strip().upper().removesuffix("B")
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = float(number) * scale
    except ValueError:
        raise ValueError(f"size must be a number of bytes with an optional K, M or G suffix, got {text!r}") from None
    if value < 0 or value != int(value):
        raise ValueError(f"size must be a whole, non-negative number of bytes, got {text!r}")
    return int(value)


def sizes(begin: int, end: int, factor: float) -> list:
    """``begin, begin * factor, ...`` up to ``end`` (inclusive), as nccl-tests steps.

    >>> sizes(8, 64, 2)
    [8, 16, 32, 64]
    """
    if begin < 1 or end < begin:
        raise ValueError(f"need 1 <= -b <= -e, got -b {begin} -e {end}")
    if factor <= 1:
        raise ValueError(f"-f (the size factor) must be > 1, got {factor}")
    out, n = [], begin
    while n <= end:
        out.append(int(n))
        n = int(n * factor) if int(n * factor) > n else n + 1
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m distlib.bench",
        description="nccl-tests style all-reduce benchmark: the engine's built-in against the book's algorithms.",
    )
    parser.add_argument("collective", choices=["allreduce"], help="the collective to time (allreduce)")
    parser.add_argument("--engine", choices=["mpi", "gloo", "nccl"], required=True)
    parser.add_argument("--ranks", type=int, default=None, help="ranks to start (gloo/nccl: default 2; mpi: start mpiexec)")
    parser.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("8"), help="smallest size (default 8)")
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("64M"), help="largest size (default 64M)")
    parser.add_argument("-f", "--stepfactor", type=float, default=2.0, help="size multiplier (default 2)")
    parser.add_argument("--algorithms", default="ring", help="book algorithms, comma-separated: ring,tree,hd,rd,auto (default ring)")
    parser.add_argument("-d", "--dtype", choices=list(_DTYPE_NAMES), default="float32")
    parser.add_argument("-n", "--iters", type=int, default=20, help="timed samples per size (default 20)")
    parser.add_argument("-w", "--warmup", type=int, default=5, help="untimed calls per size (default 5)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    parser.add_argument("--recalibrate", action="store_true", help="measure auto's alpha-beta fit afresh (ignore the cache)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a launched run is killed")
    # A cluster on one machine (distlib.minicluster; chapter "A cluster on one machine").
    parser.add_argument("--nodes", type=int, default=None,
                        help="run on a simulated cluster of this many nodes (root only; --ranks spread evenly)")
    parser.add_argument("--link-gbit", type=float, default=None,
                        help="with --nodes: each node's link rate in Gbit/s per direction (default: unthrottled)")
    return parser


def _algorithms(text: str) -> list:
    out = []
    for name in filter(None, (t.strip() for t in text.split(","))):
        if name not in ALGORITHM_NAMES:
            raise SystemExit(f"--algorithms: unknown algorithm {name!r}; choose from ring, tree, hd, rd, hier(archical), auto")
        if ALGORITHM_NAMES[name] not in out:
            out.append(ALGORITHM_NAMES[name])
    return out


def _under_mpiexec() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"))


# ----------------------------------------------------------------------------
# Running (every rank)
# ----------------------------------------------------------------------------


def run_sweep(comm, ns, *, progress=None) -> dict:
    """Time every size and algorithm on ``comm``; the same dict on every rank."""
    from distlib.engines.timing import compare_allreduce
    from distlib.engines.tuner import calibrate, set_calibration

    algorithms = _algorithms(ns.algorithms)
    itemsize = {"float32": 4, "float64": 8, "int32": 4}[ns.dtype]
    todo = sizes(ns.minbytes, ns.maxbytes, ns.stepfactor)
    comm.barrier()
    membw = _reference_bandwidth(comm) if comm.rank == 0 else None  # the others wait in the barrier
    membw = comm.bcast_object(membw)
    calibration = None
    if "auto" in algorithms and comm.size > 1:
        calibration = calibrate(comm, refresh=ns.recalibrate)
        set_calibration(comm, calibration)
    rows = []
    start = time.monotonic()
    for k, n_bytes in enumerate(todo):
        count = n_bytes // itemsize
        results = {}
        # Samples of at least 1 ms: a barrier's exit skew (a few us) then
        # spreads over dozens of small calls instead of a handful.
        timings = compare_allreduce(comm, count, ["builtin"] + algorithms, dtype=ns.dtype, iters=ns.iters,
                                    warmup=ns.warmup, min_sample=1e-3)  # fmt: skip
        for name, timing in timings.items():
            entry = {
                "seconds": timing.seconds,
                "algbw": count * itemsize / timing.seconds if timing.seconds > 0 else None,
                "busbw": _busbw(count * itemsize, comm.size, timing.seconds),
                "wrong": timing.wrong,
                "batch": timing.batch,
            }
            if name == "auto":
                entry["choice"] = calibration.choose(count * itemsize) if calibration else "ring"
            results[name] = entry
        for name in algorithms:
            base = results["builtin"]["seconds"]
            results[name]["ratio"] = results[name]["seconds"] / base if base > 0 else None
        rows.append({"n_bytes": count * itemsize, "count": count, "dtype": ns.dtype, "results": results})
        if progress is not None:
            progress(k + 1, len(todo), count * itemsize, time.monotonic() - start)
    return {
        "collective": "allreduce",
        "engine": comm.engine,
        "p": comm.size,
        "dtype": ns.dtype,
        "iters": ns.iters,
        "warmup": ns.warmup,
        "algorithms": ["builtin"] + algorithms,
        "memcpy_bandwidth": membw,
        "transport": _transport(comm),
        "cluster": os.environ.get("DISTLIB_CLUSTER"),
        "calibration": calibration.to_dict() if calibration else None,
        "rows": rows,
    }


def _transport(comm) -> str:
    """How the ranks' bytes travel, in words (printed under the table's title)."""
    if os.environ.get("DISTLIB_CLUSTER"):  # set by the launchers on a mini cluster
        inside = "MPICH shared memory" if comm.engine == "mpi" else "gloo over TCP on the node"
        return f"{os.environ['DISTLIB_CLUSTER']}: {inside} inside a node, TCP over the throttled links between nodes"
    if comm.engine == "mpi":
        single = os.environ.get("MPIR_CVAR_CH4_CMA_ENABLE") == "1"
        return ("MPICH shared memory, single copy (CMA: the receiver reads the sender's buffer)" if single else
                "MPICH shared memory, two copies (in through a shared buffer, out again)")  # fmt: skip
    if comm.engine == "gloo":
        return "gloo over TCP on the loopback interface"
    return "NCCL, over whatever links it finds between the GPUs (NVLink, PCIe, shared memory, network)"


def _reference_bandwidth(comm) -> float:
    """Bytes/s of one large copy in the memory the engine works in: host RAM, or the GPU's for NCCL."""
    from distlib.engines.timing import memcpy_bandwidth

    if comm.engine != "nccl":
        return memcpy_bandwidth()
    import torch  # NCCL: a device-to-device copy of 256 MiB on this rank's GPU

    src = torch.ones(2**26, device=comm.device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(7):
        torch.cuda.synchronize(comm.device)
        t0 = time.perf_counter()
        dst.copy_(src)
        torch.cuda.synchronize(comm.device)
        times.append(time.perf_counter() - t0)
    return src.numel() * src.element_size() / sorted(times)[len(times) // 2]


def _busbw(n_bytes, p, seconds):
    from distlib.collectives import bus_bandwidth

    return bus_bandwidth("allreduce", n_bytes, p, seconds) if seconds > 0 else None


def _progress_printer(enabled: bool):
    if not enabled:
        return None

    def show(done, total, n_bytes, elapsed):
        from distlib.fmt import fmt_bytes

        print(f"# progress: {done}/{total} sizes done (last {fmt_bytes(n_bytes)}), {elapsed:.1f} s", file=sys.stderr, flush=True)

    return show


def format_table(result: dict) -> str:
    """The nccl-tests style text table of a :func:`run_sweep` result."""
    from distlib.fmt import fmt_rate

    names = result["algorithms"]
    p = result["p"]
    out = [
        f"# distlib.bench {result['collective']}: engine {result['engine']}, p = {p} ranks, "
        f"dtype {result['dtype']}, {result['iters']} timed samples (median) after {result['warmup']} warm-up calls",
        (f"# memory-copy reference (GPU copy of 256 MiB on rank 0's device, median): {fmt_rate(result['memcpy_bandwidth'])}"
         if result["engine"] == "nccl" else
         f"# memory-copy reference (NumPy copy of 128 MiB, median): {fmt_rate(result['memcpy_bandwidth'])} "
         "(bytes copied per second; the physical ceiling for ranks on one machine)"),
        f"# transport: {result.get('transport', 'not recorded')}",
        "# time in us; algbw and busbw in GB/s (1e9 bytes/s); busbw = algbw * 2(p-1)/p; "
        "wrong = elements off the exact sum; /builtin = time / built-in's time",
    ]
    cal = result.get("calibration")
    if cal:
        fits = ", ".join(
            f"{_SHORT.get(a, a)}: alpha {cal['alpha'][a] * 1e6:.1f} us, bandwidth {cal['bandwidth'][a] / 1e9:.2f} GB/s"
            for a in cal["alpha"]
        )
        out.append(f"# auto chooses by the alpha-beta fit on this machine: {fits}")
    head1 = f"{'':>12} {'':>11} {'':>6}"
    head2 = f"{'size':>12} {'count':>11} {'type':>6}"
    for name in names:
        label = _SHORT.get(name, name)
        width = 34 if name == "builtin" else 43 + (7 if name == "auto" else 0)
        head1 += "  " + label.center(width)
        head2 += f"  {'time':>9} {'algbw':>7} {'busbw':>7} {'wrong':>6}"
        if name != "builtin":
            head2 += f" {'/builtin':>8}"
        if name == "auto":
            head2 += f" {'choice':>6}"
    out += [head1.rstrip(), head2]
    for row in result["rows"]:
        line = f"{row['n_bytes']:>12} {row['count']:>11} {_DTYPE_NAMES[row['dtype']]:>6}"
        for name in names:
            r = row["results"][name]
            wrong = "ok" if r["wrong"] == 0 else str(r["wrong"])
            algbw = (r["algbw"] or 0) / 1e9
            busbw = (r["busbw"] or 0) / 1e9
            line += f"  {r['seconds'] * 1e6:>9.1f} {algbw:>7.3f} {busbw:>7.3f} {wrong:>6}"
            if name != "builtin":
                line += f" {r['ratio']:>8.2f}" if r.get("ratio") is not None else f" {'-':>8}"
            if name == "auto":
                line += f" {_SHORT.get(r['choice'], r['choice']):>6}"
        out.append(line)
    bad = sum(1 for row in result["rows"] for r in row["results"].values() if r["wrong"])
    out.append(f"# wrong results: {bad} (of {len(result['rows']) * len(names)} size/algorithm pairs)")
    for name in names:
        bus = [row["results"][name]["busbw"] for row in result["rows"] if row["results"][name]["busbw"]]
        if bus:
            out.append(f"# avg busbw {_SHORT.get(name, name)}: {sum(bus) / len(bus) / 1e9:.3f} GB/s")
    return "\n".join(out)


def _report(comm, ns) -> int:
    result = run_sweep(comm, ns, progress=_progress_printer(comm.rank == 0 and not ns.quiet))
    if comm.rank == 0:
        print(json.dumps(result, indent=1) if ns.json else format_table(result), flush=True)
    bad = any(r["wrong"] for row in result["rows"] for r in row["results"].values())
    return 1 if bad else 0


def _torch_rank_main() -> None:
    """Entry point of one gloo/nccl rank started by :func:`main`."""
    import torch

    from distlib.engines.torch_dist import init

    ns = _parser().parse_args(sys.argv[1:])
    if ns.engine == "gloo":
        torch.set_num_threads(1)
    comm = init(ns.engine, timeout=max(60.0, ns.timeout / 2))
    code = _report(comm, ns)
    if code:
        sys.exit(code)


def main(argv=None) -> int:
    """Command line entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = _parser().parse_args(argv)
    _algorithms(ns.algorithms)  # fail early on a bad name
    if (ns.nodes is not None or ns.link_gbit is not None) and not _under_mpiexec() and "RANK" not in os.environ:
        return _run_on_mini_cluster(argv, ns)
    if ns.engine == "mpi":
        if _under_mpiexec():
            from distlib.engines.mpi import world

            return _report(world(), ns)
        if ns.ranks is None:
            print("--engine mpi: run under mpiexec (mpiexec -n P python -m mpi4py -m distlib.bench ...) "
                  "or pass --ranks P to have it started for you", file=sys.stderr)  # fmt: skip
            return 2
        from distlib.engines.launch import run_mpi

        result = run_mpi("distlib.bench", ns.ranks, args=argv, timeout=ns.timeout, check=False)
        sys.stderr.write(result.stderr[0])
        sys.stdout.write(result.stdout[0])
        if result.returncode:
            sys.stderr.write(result.launcher)
        return result.returncode
    # gloo / nccl: this process launches the ranks.
    if "RANK" in os.environ:
        _torch_rank_main()
        return 0
    ranks = ns.ranks if ns.ranks is not None else 2
    if ranks < 1:
        print(f"--ranks must be >= 1, got {ranks}", file=sys.stderr)
        return 2
    if ns.engine == "nccl":
        from distlib.engines.torch_dist import cuda_available, import_torch

        torch, _ = import_torch()
        gpus = torch.cuda.device_count() if cuda_available() else 0
        if gpus == 0:
            print("SKIPPED: --engine nccl needs CUDA GPUs and PyTorch sees none on this machine "
                  "(use --engine gloo or --engine mpi for CPU collectives)", flush=True)  # fmt: skip
            return 0
        if ranks > gpus:
            print(f"--engine nccl needs one GPU per rank: {ranks} ranks but {gpus} GPU(s) visible. NCCL refuses two "
                  "ranks of one communicator on one GPU ('Duplicate GPU detected'); use --ranks "
                  f"{gpus} or --engine gloo", file=sys.stderr)  # fmt: skip
            return 2
    from distlib.engines.launch import run_torch

    result = run_torch("distlib.bench:_torch_rank_main", ranks, backend=ns.engine, args=argv, timeout=ns.timeout, check=False, echo=True)
    if result.returncode:
        for r in range(1, result.p):
            if result.stderr[r].strip():
                sys.stderr.write(f"--- rank {r} stderr ---\n{result.stderr[r]}")
    return result.returncode


# ----------------------------------------------------------------------------
# A cluster on one machine: --nodes N --link-gbit R
# ----------------------------------------------------------------------------


def _run_on_mini_cluster(argv, ns) -> int:
    """Make a mini cluster, run the bench's ranks across it with the engine's launcher, remove it."""
    from distlib.engines.launch import run_mpi, run_torch
    from distlib.minicluster import MiniClusterUnavailable, mini_cluster

    nodes = 2 if ns.nodes is None else ns.nodes
    ranks = 2 * nodes if ns.ranks is None else ns.ranks
    if not 1 <= nodes <= 64:
        print(f"--nodes must be between 1 and 64, got {nodes}", file=sys.stderr)
        return 2
    if ranks < nodes or ranks % nodes:
        print(f"--ranks must be a positive multiple of --nodes ({nodes}), got {ranks}", file=sys.stderr)
        return 2
    if ns.link_gbit is not None and not 0.01 <= ns.link_gbit <= 100:
        print(f"--link-gbit must be between 0.01 and 100 (Gbit/s per direction), got {ns.link_gbit:g}", file=sys.stderr)
        return 2
    if ns.engine == "nccl":
        print("--nodes: the mini cluster runs CPU engines (--engine mpi or gloo); NCCL needs GPUs", file=sys.stderr)
        return 2
    try:
        cluster_cm = mini_cluster(nodes, link_gbit=ns.link_gbit)
        cluster = cluster_cm.__enter__()
    except MiniClusterUnavailable as exc:
        print(f"--nodes: cannot make a mini cluster here: {exc}", file=sys.stderr)
        return 2
    try:
        if ns.engine == "mpi":
            result = run_mpi("distlib.bench", ranks, args=argv, timeout=ns.timeout, check=False, cluster=cluster)
        else:
            result = run_torch("distlib.bench:_torch_rank_main", ranks, backend=ns.engine, args=argv,
                               timeout=ns.timeout, check=False, cluster=cluster)  # fmt: skip
        links = {node.hostname: cluster.link_bytes(node) for node in cluster.nodes}
    finally:
        cluster_cm.__exit__(None, None, None)
    sys.stderr.write(result.stderr[0])
    out = result.stdout[0]
    if ns.json and out.strip():
        try:
            data = json.loads(out)
        except ValueError:
            pass
        else:
            data["link_gbit"] = ns.link_gbit
            data["nodes"] = nodes
            data["link_bytes"] = {h: {"sent": b.sent, "received": b.received} for h, b in links.items()}
            out = json.dumps(data, indent=1) + "\n"
    sys.stdout.write(out)
    if not ns.json:
        for host, b in links.items():
            print(f"# link of {host}: {b.sent} bytes sent, {b.received} bytes received (tc counters)")
    if result.returncode:
        sys.stderr.write(result.launcher)
        for r in range(1, result.p):
            if result.stderr[r].strip():
                sys.stderr.write(f"--- rank {r} stderr ---\n{result.stderr[r]}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
