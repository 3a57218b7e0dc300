"""The bench on every rank: the sweep of sizes and algorithms, its options, and the nccl-tests table.

:func:`run_sweep` times the engine's built-in all-reduce (or all-to-all) and the book's
algorithms on a communicator, the same :class:`~distlib.collectives.measured.BenchResult`
on every rank; :func:`format_table` prints one as ``all_reduce_perf`` does.
The names the options accept (``--algorithms``, ``-d``) and the size
steps (``-b``, ``-e``, ``-f``) live here too, for the command line
(:mod:`distlib.bench.__main__`) and the launchers (:mod:`distlib.bench.launch`)
alike. Engines are imported inside the functions that use them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..collectives.measured import BenchResult, BenchRow, Timing

__all__ = ["ALGORITHM_NAMES", "ALLTOALL_ALGORITHM_NAMES", "BENCH_COLLECTIVES", "DEFAULT_ALGORITHMS", "DTYPE_NAMES", "BadInput", "parse_size", "sizes", "run_sweep", "format_table"]

ALGORITHM_NAMES = {"ring": "ring", "tree": "tree", "hd": "halving_doubling", "halving_doubling": "halving_doubling",
                   "rd": "recursive_doubling", "recursive_doubling": "recursive_doubling", "auto": "auto",
                   "hier": "hierarchical", "hierarchical": "hierarchical"}  # fmt: skip
"""Names accepted by ``--algorithms`` (``hd`` is short for halving_doubling, ``rd`` for recursive_doubling)."""
ALLTOALL_ALGORITHM_NAMES = {"pairwise": "pairwise", "bruck": "bruck"}
"""Names ``--algorithms`` accepts for ``alltoall`` (:mod:`distlib.engines.alltoall`)."""
BENCH_COLLECTIVES = ("allreduce", "alltoall")
"""What the bench times (first argument; nccl-tests' spellings ``all_reduce``, ``all_to_all`` accepted)."""
DEFAULT_ALGORITHMS = {"allreduce": ("ring",), "alltoall": ("pairwise", "bruck")}
"""The book's algorithms timed beside the built-in when ``--algorithms`` is left out."""
_NAMES = {"allreduce": ALGORITHM_NAMES, "alltoall": ALLTOALL_ALGORITHM_NAMES}

_SHORT = {"halving_doubling": "hd", "recursive_doubling": "rd", "hierarchical": "hier"}
_DTYPE_NAMES = {"float32": "float", "float64": "double", "int32": "int32"}
DTYPE_NAMES = {"float": "float32", "float32": "float32", "double": "float64", "float64": "float64", "int32": "int32",
               "int": "int32", "half": "float16", "float16": "float16", "bfloat16": "bfloat16"}  # fmt: skip
"""``-d`` spellings (nccl-tests' and NumPy's) -> the engines' dtype names."""
_UNSUPPORTED_DTYPES = ("float16", "bfloat16")


class BadInput(SystemExit):
    """A command-line value out of range, said in one line that names the flag and the range; exit status 2."""

    def __init__(self, message: str):
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


# ----------------------------------------------------------------------------
# The options' vocabulary
# ----------------------------------------------------------------------------


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


def _collective(text: str) -> str:
    from distlib.collectives import canonical_collective

    name = canonical_collective(text)
    if name not in BENCH_COLLECTIVES:
        raise argparse.ArgumentTypeError(f"only allreduce (all_reduce) and alltoall (all_to_all) are benchmarked, "
                                         f"got {text!r}")  # fmt: skip
    return name


def _dtype(text: str) -> str:
    name = DTYPE_NAMES.get(str(text).strip().lower())
    if name is None:
        raise argparse.ArgumentTypeError(f"unknown type {text!r}; choose float, double or int32")
    if name in _UNSUPPORTED_DTYPES:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the engines time float, double and int32 only (NumPy, which MPI ranks reduce with, has no "
            "bfloat16, and 16-bit sums of the check pattern would not be exact); use -d float")
    return name


def _algorithms(text, collective: str = "allreduce") -> list:
    """The book's algorithms named by ``--algorithms`` for ``collective`` (``None``: :data:`DEFAULT_ALGORITHMS`)."""
    if text is None:
        return list(DEFAULT_ALGORITHMS[collective])
    names = _NAMES[collective]
    out = []
    for name in filter(None, (t.strip() for t in text.split(","))):
        if name not in names:
            choices = "ring, tree, hd, rd, hier(archical), auto" if collective == "allreduce" else "pairwise, bruck"
            raise BadInput(f"--algorithms: unknown algorithm {name!r} for {collective}; choose from {choices}")
        if names[name] not in out:
            out.append(names[name])
    return out


# ----------------------------------------------------------------------------
# Running (every rank)
# ----------------------------------------------------------------------------


def run_sweep(comm, *, algorithms=None, dtype="float32", min_bytes=8, max_bytes=64 * 2**20, step_factor=2.0,
              iters=20, warmup=5, recalibrate=False, check=True, progress=None,
              collective="allreduce") -> BenchResult:  # fmt: skip
    """Time every size and algorithm on ``comm``; the same :class:`BenchResult` on every rank.

    Parameters
    ----------
    comm : distlib.engines communicator
    algorithms : sequence of str, optional
        Book algorithms besides the built-in. All-reduce: ``ring``, ``tree``,
        ``halving_doubling``, ``recursive_doubling``, ``auto`` (short names
        ``hd``/``rd`` accepted); default ``ring``. All-to-all: ``pairwise``,
        ``bruck`` (:mod:`distlib.engines.alltoall`); default both.
    dtype : str
        ``float32``, ``float64`` or ``int32`` (or nccl-tests' ``float``/``double``).
    min_bytes, max_bytes, step_factor : sizes as ``-b``, ``-e``, ``-f``.
    iters, warmup : timed samples and untimed calls per size.
    recalibrate : bool
        Measure ``auto``'s alpha-beta fit afresh.
    check : bool
        Count wrong elements (``False``: ``Timing.wrong`` is ``None``).
    progress : callable, optional
        ``progress(done, total, n_bytes, elapsed)`` after each size.
    collective : {"allreduce", "alltoall"}
        For ``alltoall`` each size is what every rank sends in all (``p``
        blocks), as nccl-tests' ``alltoall_perf`` counts it; ``#wrong``
        counts elements off the NumPy answer, and busbw is algbw times
        ``(p - 1)/p``.
    """
    from distlib.collectives import canonical_collective
    from distlib.engines.timing import compare_allreduce, paired_ratio
    from distlib.engines.tuner import calibrate, set_calibration

    collective = canonical_collective(collective)
    if collective not in BENCH_COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(BENCH_COLLECTIVES)}; got {collective!r}")
    if algorithms is not None and not isinstance(algorithms, str):
        algorithms = ",".join(algorithms)
    algorithms = _algorithms(algorithms, collective)
    dtype = _dtype(dtype)
    itemsize = {"float32": 4, "float64": 8, "int32": 4}[dtype]
    todo = sizes(min_bytes, max_bytes, step_factor)
    comm.barrier()
    membw = _reference_bandwidth(comm) if comm.rank == 0 else None  # the others wait in the barrier
    membw = comm.bcast_object(membw)
    calibration = None
    if "auto" in algorithms and comm.size > 1:
        calibration = calibrate(comm, refresh=recalibrate)
        set_calibration(comm, calibration)
    rows = []
    start = time.monotonic()
    for k, n_bytes in enumerate(todo):
        count = n_bytes // itemsize
        # Samples of at least 1 ms: a barrier's exit skew (a few us) then
        # spreads over dozens of small calls instead of a handful.
        compare = compare_allreduce if collective == "allreduce" else _compare_alltoall
        timings = compare(comm, count, ["builtin"] + algorithms, dtype=dtype, iters=iters,
                          warmup=warmup, check=check, min_sample=1e-3)  # fmt: skip
        results = {}
        for name, timing in timings.items():
            results[name] = Timing(
                seconds=timing.seconds,
                algbw=count * itemsize / timing.seconds if timing.seconds > 0 else None,
                busbw=_busbw(count * itemsize, comm.size, timing.seconds, collective),
                wrong=timing.wrong if check else None,
                batch=timing.batch,
                ratio=paired_ratio(timing.samples, timings["builtin"].samples) if name != "builtin" else None,
                choice=(calibration.choose(count * itemsize) if calibration else "ring") if name == "auto" else None,
                samples=tuple(float(x) for x in timing.samples),
            )
        rows.append(BenchRow(count * itemsize, count, dtype, results))
        if progress is not None:
            progress(k + 1, len(todo), count * itemsize, time.monotonic() - start)
    return BenchResult(
        collective=collective, engine=comm.engine, p=comm.size, dtype=dtype, iters=iters, warmup=warmup,
        algorithms=tuple(["builtin"] + algorithms), memcpy_bandwidth=membw, transport=_transport(comm),
        calibration=calibration.to_dict() if calibration else None, rows=tuple(rows), check=bool(check),
        cluster=os.environ.get("DISTLIB_CLUSTER"), redop="sum" if collective == "allreduce" else "none")


def _compare_alltoall(comm, count, algorithms, **kw):
    from distlib.engines.timing import compare_alltoall

    return compare_alltoall(comm, count, algorithms, **kw)


OUTPUTS = ("table", "json", "report")
"""What rank 0 prints: the nccl-tests table, ``--json``, or ``--report`` (one typed report line)."""


def rank_main(comm, *, output: str = "table", quiet: bool = False, **sweep) -> int:
    """One rank of the bench: run the sweep; rank 0 prints it as ``output`` says. Returns the exit status.

    ``output="report"`` hands the :class:`BenchResult` to the process that
    launched the ranks as a report line (:func:`distlib.engines.report.emit`),
    which :func:`distlib.bench.run_bench` and :func:`distlib.bench.race` read
    back typed. Status 1 when any result was wrong, else 0.
    """
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}; got {output!r}")
    result = run_sweep(comm, **sweep, progress=_progress_printer(comm.rank == 0 and not quiet))
    if comm.rank == 0:
        if output == "report":
            from distlib.engines.report import emit

            emit(result)
        else:
            print(json.dumps(result.to_dict(), indent=1) if output == "json" else format_table(result), flush=True)
    return 1 if result.wrong_total() else 0


#: UCX transports that move bytes through memory the two processes share (not over a network).
_UCX_SHARED = {"all", "sm", "shm", "posix", "sysv", "cma", "xpmem", "knem"}


def _between_nodes(engine: str) -> str:
    """How bytes cross between nodes, from what this rank was given (``UCX_TLS`` for MPICH's UCX netmod)."""
    if engine == "gloo":
        return "gloo's TCP between nodes"
    if engine == "nccl":
        return "NCCL's network transport between nodes (InfiniBand, RoCE or sockets)"
    tls = os.environ.get("UCX_TLS")
    if tls is None:
        return ("UCX's pick between nodes: shared memory where the nodes share one machine, the network "
                "otherwise (UCX_TLS=tcp,self forces TCP)")  # fmt: skip
    chosen = {t.strip() for t in tls.split(",")}
    if chosen & _UCX_SHARED:
        return f"UCX_TLS={tls} between nodes (its shared-memory transports included)"
    return f"TCP between nodes (UCX_TLS={tls})" if "tcp" in chosen else f"UCX_TLS={tls} between nodes"


def _transport(comm) -> str:
    """How the ranks' bytes travel, in words (printed under the table's title). Every rank calls it (a gather).

    From what the ranks see, not from who launched them: the nodes are the
    distinct host names of the ranks (so ``srun`` or ``mpiexec`` across
    machines and the book's launchers on a mini cluster read the same), and
    between nodes the transport the rank's environment selects.
    """
    import socket

    hosts = sorted(set(comm.allgather_object(socket.gethostname())))
    where = [f"Slurm job {os.environ['SLURM_JOB_ID']}"] if os.environ.get("SLURM_JOB_ID") else []
    if os.environ.get("DISTLIB_CLUSTER"):  # set by the book's launchers on a mini cluster
        where.append(f"mini cluster of {os.environ['DISTLIB_CLUSTER']}")
    where = "; ".join(where) + "; " if where else ""
    if len(hosts) > 1:
        inside = {"mpi": "MPICH shared memory", "gloo": "gloo over TCP on the node"}.get(comm.engine,
                                                                                       "NVLink or PCIe")
        return (f"{where}ranks on {len(hosts)} nodes ({', '.join(hosts)}): {inside} inside a node, "
                f"{_between_nodes(comm.engine)}")  # fmt: skip
    if comm.engine == "mpi":
        single = os.environ.get("MPIR_CVAR_CH4_CMA_ENABLE") == "1"
        return where + ("MPICH shared memory, single copy (CMA: the receiver reads the sender's buffer)" if single
                        else "MPICH shared memory, two copies (in through a shared buffer, out again)")  # fmt: skip
    if comm.engine == "gloo":
        return where + "gloo over TCP on the loopback interface"
    return where + "NCCL, over whatever links it finds between the GPUs (NVLink, PCIe, shared memory, network)"


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


def _busbw(n_bytes, p, seconds, collective="allreduce"):
    from distlib.collectives import bus_bandwidth

    return bus_bandwidth(collective, n_bytes, p, seconds) if seconds > 0 else None


def _progress_printer(enabled: bool):
    if not enabled:
        return None

    def show(done, total, n_bytes, elapsed):
        from distlib.fmt import fmt_bytes

        print(f"# progress: {done}/{total} sizes done (last {fmt_bytes(n_bytes)}), {elapsed:.1f} s", file=sys.stderr, flush=True)

    return show


# ----------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------


def format_table(result) -> str:
    """The nccl-tests style text table of a :class:`BenchResult` (or its ``to_dict()`` form).

    Columns as ``all_reduce_perf`` prints them (``size count type redop root``,
    then ``time algbw busbw #wrong``), one group per algorithm, the built-in
    first; the book's algorithms add ``/builtin`` (time over the built-in's)
    and ``auto`` its ``choice``. The footer carries nccl-tests' lines
    ``# Out of bounds values : 0 OK`` and ``# Avg bus bandwidth    : x`` (GB/s,
    the built-in's mean over the sizes), then one average per algorithm.
    """
    from distlib.fmt import fmt_rate

    if isinstance(result, dict):
        result = BenchResult.from_dict(result)
    names = result.algorithms
    p = result.p
    out = [
        f"# distlib.bench {result.collective}: engine {result.engine}, p = {p} ranks, dtype {result.dtype}, "
        f"redop {result.redop}",
        f"# timing statistic: the {result.statistic} over {result.iters} timed samples (each the slowest rank's), "
        f"after {result.warmup} warm-up calls; nccl-tests prints the mean",
        (f"# memory-copy reference (GPU copy of 256 MiB on rank 0's device, median): {fmt_rate(result.memcpy_bandwidth)}"
         if result.engine == "nccl" else
         f"# memory-copy reference (NumPy copy of 128 MiB, median): {fmt_rate(result.memcpy_bandwidth or 0)} "
         "(bytes copied per second; the physical ceiling for ranks on one machine)"),
        f"# transport: {result.transport}",
        ("# time in us; algbw and busbw in GB/s (1e9 bytes/s); busbw = algbw * 2(p-1)/p; "
         "#wrong = elements off the exact sum; /builtin = time / built-in's time" if result.collective == "allreduce" else
         "# size = bytes each rank sends in all (p blocks); time in us; algbw and busbw in GB/s (1e9 bytes/s); "
         "busbw = algbw * (p-1)/p; #wrong = elements off the NumPy answer; /builtin = time / built-in's time"),
    ]
    cal = result.calibration
    if cal:
        fits = ", ".join(
            f"{_SHORT.get(a, a)}: alpha {cal['alpha'][a] * 1e6:.1f} us, bandwidth {cal['bandwidth'][a] / 1e9:.2f} GB/s"
            for a in cal["alpha"]
        )
        out.append(f"# auto chooses by the alpha-beta fit on this machine: {fits}")
    head1 = f"#{'':>11} {'':>12} {'':>6} {'':>6} {'':>6}"
    head2 = f"#{'size':>11} {'count':>12} {'type':>6} {'redop':>6} {'root':>6}"
    head3 = f"#{'(B)':>11} {'(elements)':>12} {'':>6} {'':>6} {'':>6}"
    for name in names:
        label = _SHORT.get(name, name)
        width = 33 if name == "builtin" else 42 + (7 if name == "auto" else 0)
        head1 += "  " + label.center(width)
        head2 += f"  {'time':>9} {'algbw':>7} {'busbw':>7} {'#wrong':>6}"
        head3 += f"  {'(us)':>9} {'(GB/s)':>7} {'(GB/s)':>7} {'':>6}"
        if name != "builtin":
            head2 += f" {'/builtin':>8}"
            head3 += f" {'':>8}"
        if name == "auto":
            head2 += f" {'choice':>6}"
            head3 += f" {'':>6}"
    out += [head1.rstrip(), head2, head3.rstrip()]
    for row in result.rows:
        line = f"{row.n_bytes:>12} {row.count:>12} {_DTYPE_NAMES[row.dtype]:>6} {result.redop:>6} {-1:>6}"
        for name in names:
            r = row.results[name]
            wrong = "N/A" if r.wrong is None else str(r.wrong)
            line += f"  {r.seconds * 1e6:>9.2f} {(r.algbw or 0) / 1e9:>7.3f} {(r.busbw or 0) / 1e9:>7.3f} {wrong:>6}"
            if name != "builtin":
                line += f" {r.ratio:>8.2f}" if r.ratio is not None else f" {'-':>8}"
            if name == "auto":
                line += f" {_SHORT.get(r.choice, r.choice):>6}"
        out.append(line)
    bad = sum(1 for row in result.rows for r in row.results.values() if r.wrong)
    out.append(f"# Out of bounds values : {bad} {'OK' if bad == 0 else 'FAILED'}")
    out.append(f"# Avg bus bandwidth    : {result.avg_busbw('builtin') / 1e9:.4f}")
    out.append("#")
    out.append(f"# wrong results: {bad} (of {len(result.rows) * len(names)} size/algorithm pairs)")
    for name in names:
        if result.avg_busbw(name):
            out.append(f"# avg busbw {_SHORT.get(name, name)}: {result.avg_busbw(name) / 1e9:.3f} GB/s")
    return "\n".join(out)
