"""``python -m distlib.bench``: nccl-tests style tables for real engines.

::

    mpiexec -n 4 python -m mpi4py -m distlib.bench allreduce --engine mpi
    python -m distlib.bench allreduce --engine gloo --ranks 4
    python -m distlib.bench allreduce --engine nccl --ranks 8 -b 8 -e 1G -f 2
    python -m distlib.bench allreduce --engine mpi --ranks 2 --algorithms tree,hd,auto --json

It speaks nccl-tests: ``all_reduce`` or ``allreduce``; ``-b/-e/-f`` sizes,
``-n/--iters``, ``-w/--warmup_iters``, ``-d float|double|int32`` (``half`` and
``bfloat16`` are recognised and refused with the reason), ``-o sum``,
``-g 1`` (one GPU per process), ``-c 0|1`` (check the results or not); the
table has nccl-tests' ``size count type redop root`` columns, then per
algorithm ``time algbw busbw #wrong``, and ends with nccl-tests'
``# Out of bounds values`` and ``# Avg bus bandwidth`` lines (of the built-in
all-reduce), so log parsers written for ``all_reduce_perf`` read it.

For every buffer size (``-b`` to ``-e``, multiplied by ``-f`` each time; the
suffixes K, M, G are powers of 1024, as in nccl-tests) the engine's built-in
all-reduce and the book's algorithms (:mod:`distlib.engines.algorithms`)
run on the same engine and the same data. Columns, per algorithm:

``time``
    the **median** microseconds of one all-reduce over the timed samples
    (each sample the slowest rank's; see :mod:`distlib.engines.timing`).
    nccl-tests prints the *mean* over its iterations instead; the median
    is steadier on a shared machine;
``algbw``
    ``size / time`` in GB/s (1 GB = 1e9 bytes);
``busbw``
    ``algbw * 2 (p - 1) / p``, comparable with a link's one-direction
    bandwidth (:func:`distlib.bus_bandwidth`);
``#wrong``
    elements that differ from the exact sum (0 if none; ``N/A`` with
    ``-c 0``): the data are small integers, so every correct algorithm
    gives the exact result;
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
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field

__all__ = ["main", "parse_size", "sizes", "format_table", "ALGORITHM_NAMES", "DTYPE_NAMES", "Timing", "BenchRow",
           "BenchResult", "run_sweep", "run_bench"]

ALGORITHM_NAMES = {"ring": "ring", "tree": "tree", "hd": "halving_doubling", "halving_doubling": "halving_doubling",
                   "rd": "recursive_doubling", "recursive_doubling": "recursive_doubling", "auto": "auto",
                   "hier": "hierarchical", "hierarchical": "hierarchical"}  # fmt: skip
"""Names accepted by ``--algorithms`` (``hd`` is short for halving_doubling, ``rd`` for recursive_doubling)."""

_SHORT = {"halving_doubling": "hd", "recursive_doubling": "rd", "hierarchical": "hier"}
_DTYPE_NAMES = {"float32": "float", "float64": "double", "int32": "int32"}
DTYPE_NAMES = {"float": "float32", "float32": "float32", "double": "float64", "float64": "float64", "int32": "int32",
               "int": "int32", "half": "float16", "float16": "float16", "bfloat16": "bfloat16"}  # fmt: skip
"""``-d`` spellings (nccl-tests' and NumPy's) -> the engines' dtype names."""
_UNSUPPORTED_DTYPES = ("float16", "bfloat16")


@dataclass(frozen=True)
class Timing:
    """One algorithm at one size (SI units).

    ``seconds`` is the median over the timed samples; ``algbw``/``busbw`` in
    bytes/s (``None`` when the time is 0); ``wrong`` elements off the exact
    sum (``None`` when not checked); ``ratio`` the time over the built-in's;
    ``choice`` what ``auto`` picked.
    """

    seconds: float
    algbw: float | None
    busbw: float | None
    wrong: int | None
    batch: int = 1
    ratio: float | None = None
    choice: str | None = None


@dataclass(frozen=True)
class BenchRow:
    """One size of the sweep: ``results`` maps algorithm name -> :class:`Timing`."""

    n_bytes: int
    count: int
    dtype: str
    results: dict


@dataclass(frozen=True)
class BenchResult:
    """What ``python -m distlib.bench`` measured, typed.

    ``algorithms`` starts with ``"builtin"`` (the engine's own all-reduce).
    :meth:`to_dict` gives the ``--json`` form, :meth:`from_dict` reads it
    back; :meth:`column` pulls one quantity of one algorithm over the sizes.
    """

    collective: str
    engine: str
    p: int
    dtype: str
    iters: int
    warmup: int
    algorithms: tuple
    memcpy_bandwidth: float | None
    transport: str
    calibration: dict | None
    rows: tuple
    statistic: str = "median"
    redop: str = "sum"
    check: bool = True
    cluster: str | None = None  # the mini cluster the ranks ran across (distlib.minicluster), if any

    @property
    def sizes(self) -> list:
        """Buffer sizes in bytes, one per row."""
        return [row.n_bytes for row in self.rows]

    def column(self, algorithm: str, quantity: str = "seconds") -> list:
        """``quantity`` (a :class:`Timing` field) of ``algorithm`` over the sizes."""
        if algorithm not in self.algorithms:
            raise ValueError(f"algorithm must be one of {', '.join(self.algorithms)}; got {algorithm!r}")
        return [getattr(row.results[algorithm], quantity) for row in self.rows]

    def wrong_total(self, algorithm: str | None = None) -> int:
        """Wrong elements summed over the sizes (and over algorithms, if none is named)."""
        names = self.algorithms if algorithm is None else (algorithm,)
        return sum(row.results[a].wrong or 0 for row in self.rows for a in names)

    def avg_busbw(self, algorithm: str = "builtin") -> float:
        """Mean busbw over the sizes, bytes/s: nccl-tests' ``# Avg bus bandwidth``."""
        bus = [b for b in self.column(algorithm, "busbw") if b]
        return sum(bus) / len(bus) if bus else 0.0

    def to_dict(self) -> dict:
        """The JSON form (``--json``)."""
        out = asdict(self)
        out["algorithms"] = list(self.algorithms)
        out["rows"] = [{"n_bytes": r.n_bytes, "count": r.count, "dtype": r.dtype,
                        "results": {k: asdict(v) for k, v in r.results.items()}} for r in self.rows]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "BenchResult":
        """Read the JSON form back (older outputs without the newer keys included)."""
        rows = tuple(BenchRow(int(r["n_bytes"]), int(r["count"]), r["dtype"],
                              {k: Timing(**{f: v.get(f) for f in Timing.__dataclass_fields__ if f in v})
                               for k, v in r["results"].items()}) for r in data["rows"])
        keys = {f for f in cls.__dataclass_fields__} - {"rows", "algorithms"}
        kw = {k: data[k] for k in keys if k in data}
        kw.setdefault("transport", "not recorded")
        return cls(algorithms=tuple(data["algorithms"]), rows=rows, **kw)

    @classmethod
    def from_json(cls, text: str) -> "BenchResult":
        """Parse ``--json`` output (leading progress or log lines before the object are skipped)."""
        start = text.find("{")
        if start < 0:
            raise ValueError("no JSON object in the benchmark's output")
        return cls.from_dict(json.loads(text[start:]))


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
    parser.add_argument("collective", type=_collective, help="the collective to time: allreduce (or all_reduce)")
    parser.add_argument("--engine", choices=["mpi", "gloo", "nccl"], required=True)
    parser.add_argument("--ranks", type=int, default=None, help="ranks to start (gloo/nccl: default 2; mpi: start mpiexec)")
    parser.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("8"), help="smallest size (default 8)")
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("64M"), help="largest size (default 64M)")
    parser.add_argument("-f", "--stepfactor", type=float, default=2.0, help="size multiplier (default 2)")
    parser.add_argument("--algorithms", default="ring", help="book algorithms, comma-separated: ring,tree,hd,rd,auto (default ring)")
    parser.add_argument("-d", "--datatype", "--dtype", dest="dtype", type=_dtype, default="float32",
                        help="float, double or int32 (float32/float64 also accepted; default float)")
    parser.add_argument("-o", "--op", default="sum", help="reduction: sum (the only one the engines run)")
    parser.add_argument("-g", "--ngpus", type=int, default=1, help="GPUs per process: 1 (one rank per GPU)")
    parser.add_argument("-c", "--check", type=int, choices=[0, 1], default=1,
                        help="1: count wrong elements (default); 0: skip the check (#wrong shows N/A)")
    parser.add_argument("-n", "--iters", type=int, default=20, help="timed samples per size (default 20)")
    parser.add_argument("-w", "--warmup_iters", "--warmup", dest="warmup", type=int, default=5,
                        help="untimed calls per size (default 5)")
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


def _collective(text: str) -> str:
    from distlib.collectives import canonical_collective

    name = canonical_collective(text)
    if name != "allreduce":
        raise argparse.ArgumentTypeError(f"only allreduce (all_reduce) is benchmarked, got {text!r}")
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


MAX_SIZES = 200
"""At most this many sizes in one sweep (``-b``, ``-e``, ``-f``): nccl-tests' doubling from 8 B to 64 GiB is 34."""
MAX_ITERS = 100_000
MAX_TIMEOUT = 7 * 24 * 3600.0
RANK_MEMORY = {"mpi": 80 * 2**20, "gloo": 400 * 2**20, "nccl": 400 * 2**20}
"""What one rank needs before its buffers (an interpreter with NumPy; with torch), measured here with ``ps``."""
BUFFERS_PER_RANK = 4
"""Buffers of the largest size each rank holds at once: the input, the built-in's copy, a book algorithm's, the check's."""


class BadInput(SystemExit):
    """A command-line value out of range, said in one line that names the flag and the range; exit status 2."""

    def __init__(self, message: str):
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


def max_ranks() -> int:
    """The most ranks one run may start here: eight per core (at least 16), and no more than the process limit."""
    limit = max(16, 8 * (os.cpu_count() or 1))
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, max(1, soft // 4))  # each rank may start a few threads' worth of tasks
    except (ImportError, ValueError, OSError):  # pragma: no cover - not Unix
        pass
    return limit


def available_memory() -> int | None:
    """Bytes of memory available for new processes (``MemAvailable``), or ``None`` where unknown."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # pragma: no cover - psutil is a dependency; without it, claim nothing
        return None


def _count_sizes(begin: int, end: int, factor: float, cap: int) -> int:
    count, n = 0, begin
    while n <= end and count <= cap:
        count += 1
        n = int(n * factor) if int(n * factor) > n else n + 1
    return count


def _check_cli(ns) -> None:
    """Every option checked before any process starts; a bad one raises :class:`BadInput` naming it and its range."""
    if ns.op != "sum":
        raise BadInput(f"-o/--op: only sum is run, got {ns.op!r}")
    if ns.ngpus != 1:
        raise BadInput(f"-g/--ngpus: one GPU per process only (start more ranks with --ranks), got {ns.ngpus}")
    if not 1 <= ns.iters <= MAX_ITERS:
        raise BadInput(f"-n/--iters must be between 1 and {MAX_ITERS}, got {ns.iters}")
    if not 0 <= ns.warmup <= MAX_ITERS:
        raise BadInput(f"-w/--warmup_iters must be between 0 and {MAX_ITERS}, got {ns.warmup}")
    if not (math.isfinite(ns.timeout) and 0 < ns.timeout <= MAX_TIMEOUT):
        raise BadInput(f"--timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds, got {ns.timeout:g}")
    itemsize = {"float32": 4, "float64": 8, "int32": 4}[ns.dtype]
    if ns.minbytes < itemsize:
        raise BadInput(f"-b/--minbytes must be at least one element of {ns.dtype} ({itemsize} bytes), got {ns.minbytes}")
    if ns.maxbytes < ns.minbytes:
        raise BadInput(f"-e/--maxbytes must be at least -b ({ns.minbytes} bytes), got {ns.maxbytes}")
    if not (math.isfinite(ns.stepfactor) and ns.stepfactor > 1):
        raise BadInput(f"-f/--stepfactor must be a finite number above 1, got {ns.stepfactor:g}")
    if _count_sizes(ns.minbytes, ns.maxbytes, ns.stepfactor, MAX_SIZES) > MAX_SIZES:
        raise BadInput(f"-f/--stepfactor {ns.stepfactor:.10g} from -b {ns.minbytes} to -e {ns.maxbytes} makes more than "
                       f"{MAX_SIZES} sizes; use a larger factor or a narrower range")  # fmt: skip
    ranks = _ranks_of(ns)
    if ranks is not None and (ns.nodes is not None or ns.link_gbit is not None):
        nodes = 2 if ns.nodes is None else ns.nodes
        if not 1 <= nodes <= 64:
            raise BadInput(f"--nodes must be between 1 and 64, got {nodes}")
        if ranks < nodes or ranks % nodes:
            raise BadInput(f"--ranks must be a positive multiple of --nodes ({nodes}), got {ranks}")
        if ns.link_gbit is not None and not (math.isfinite(ns.link_gbit) and 0.01 <= ns.link_gbit <= 100):
            raise BadInput(f"--link-gbit must be between 0.01 and 100 (Gbit/s per direction), got {ns.link_gbit:g}")
        if ns.engine == "nccl":
            raise BadInput("--nodes: the mini cluster runs CPU engines (--engine mpi or gloo); NCCL needs GPUs")
    if ranks is not None:
        most = max_ranks()
        if not 1 <= ranks <= most:
            raise BadInput(f"--ranks must be between 1 and {most} on this machine ({os.cpu_count()} cores), got {ranks}")
        need = ranks * (RANK_MEMORY[ns.engine] + BUFFERS_PER_RANK * ns.maxbytes)
        have = available_memory()
        if have is not None and need > have:
            raise BadInput(f"-e/--maxbytes {ns.maxbytes} on {ranks} ranks needs about {need / 2**30:.1f} GiB "
                           f"({BUFFERS_PER_RANK} buffers of -e per rank, plus the rank itself) and this machine has "
                           f"{have / 2**30:.1f} GiB available; use a smaller -e or fewer ranks")  # fmt: skip


def _ranks_of(ns) -> int | None:
    """How many ranks this command will start (``None``: it is a rank itself, or mpiexec starts them)."""
    if _under_mpiexec() or "RANK" in os.environ:
        return None
    if ns.nodes is not None or ns.link_gbit is not None:
        nodes = 2 if ns.nodes is None else ns.nodes
        return 2 * nodes if ns.ranks is None else ns.ranks
    if ns.engine == "mpi":
        return ns.ranks
    return 2 if ns.ranks is None else ns.ranks


def _sweep_kwargs(ns) -> dict:
    """The keyword arguments of :func:`run_sweep` from parsed command-line options."""
    return dict(algorithms=_algorithms(ns.algorithms), dtype=ns.dtype, min_bytes=ns.minbytes, max_bytes=ns.maxbytes,
                step_factor=ns.stepfactor, iters=ns.iters, warmup=ns.warmup, recalibrate=ns.recalibrate,
                check=bool(ns.check))


def _algorithms(text: str) -> list:
    out = []
    for name in filter(None, (t.strip() for t in text.split(","))):
        if name not in ALGORITHM_NAMES:
            raise BadInput(f"--algorithms: unknown algorithm {name!r}; choose from ring, tree, hd, rd, hier(archical), auto")
        if ALGORITHM_NAMES[name] not in out:
            out.append(ALGORITHM_NAMES[name])
    return out


def _under_mpiexec() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"))


# ----------------------------------------------------------------------------
# Running (every rank)
# ----------------------------------------------------------------------------


def run_sweep(comm, *, algorithms=("ring",), dtype="float32", min_bytes=8, max_bytes=64 * 2**20, step_factor=2.0,
              iters=20, warmup=5, recalibrate=False, check=True, progress=None) -> BenchResult:
    """Time every size and algorithm on ``comm``; the same :class:`BenchResult` on every rank.

    Parameters
    ----------
    comm : distlib.engines communicator
    algorithms : sequence of str
        Book algorithms besides the built-in (``ring``, ``tree``,
        ``halving_doubling``, ``recursive_doubling``, ``auto``; short names
        ``hd``/``rd`` accepted).
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
    """
    from distlib.engines.timing import compare_allreduce
    from distlib.engines.tuner import calibrate, set_calibration

    algorithms = _algorithms(",".join(algorithms) if not isinstance(algorithms, str) else algorithms)
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
        timings = compare_allreduce(comm, count, ["builtin"] + algorithms, dtype=dtype, iters=iters,
                                    warmup=warmup, check=check, min_sample=1e-3)  # fmt: skip
        base = timings["builtin"].seconds
        results = {}
        for name, timing in timings.items():
            results[name] = Timing(
                seconds=timing.seconds,
                algbw=count * itemsize / timing.seconds if timing.seconds > 0 else None,
                busbw=_busbw(count * itemsize, comm.size, timing.seconds),
                wrong=timing.wrong if check else None,
                batch=timing.batch,
                ratio=(timing.seconds / base if base > 0 else None) if name != "builtin" else None,
                choice=(calibration.choose(count * itemsize) if calibration else "ring") if name == "auto" else None,
            )
        rows.append(BenchRow(count * itemsize, count, dtype, results))
        if progress is not None:
            progress(k + 1, len(todo), count * itemsize, time.monotonic() - start)
    return BenchResult(
        collective="allreduce", engine=comm.engine, p=comm.size, dtype=dtype, iters=iters, warmup=warmup,
        algorithms=tuple(["builtin"] + algorithms), memcpy_bandwidth=membw, transport=_transport(comm),
        calibration=calibration.to_dict() if calibration else None, rows=tuple(rows), check=bool(check),
        cluster=os.environ.get("DISTLIB_CLUSTER"))


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
        "# time in us; algbw and busbw in GB/s (1e9 bytes/s); busbw = algbw * 2(p-1)/p; "
        "#wrong = elements off the exact sum; /builtin = time / built-in's time",
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


def _report(comm, ns) -> int:
    result = run_sweep(comm, **_sweep_kwargs(ns), progress=_progress_printer(comm.rank == 0 and not ns.quiet))
    if comm.rank == 0:
        print(json.dumps(result.to_dict(), indent=1) if ns.json else format_table(result), flush=True)
    return 1 if result.wrong_total() else 0


def _bench_argv(*, engine, ranks, algorithms, dtype, min_bytes, max_bytes, step_factor, iters, warmup, recalibrate,
                check, timeout) -> list:
    algorithms = algorithms if isinstance(algorithms, str) else ",".join(algorithms)
    argv = ["allreduce", "--engine", engine, "--ranks", str(ranks), "-b", str(min_bytes), "-e", str(max_bytes),
            "-f", str(step_factor), "--algorithms", algorithms, "-d", dtype, "-n", str(iters), "-w", str(warmup),
            "-c", "1" if check else "0", "--timeout", str(timeout), "--json", "--quiet"]
    return argv + (["--recalibrate"] if recalibrate else [])


def run_bench(*, engine="mpi", ranks=2, algorithms=("ring",), dtype="float32", min_bytes=8, max_bytes="64M",
              step_factor=2.0, iters=20, warmup=5, recalibrate=False, check=True, timeout=600.0,
              env=None) -> BenchResult:
    """Launch ``python -m distlib.bench`` on ``ranks`` processes and return its :class:`BenchResult`.

    The notebooks' entry: the ranks run in their own processes (started with
    ``mpiexec`` for ``engine="mpi"``, by torch's launcher for ``gloo``/``nccl``)
    and this process reads their ``--json`` output back, typed. Sizes accept
    nccl-tests' suffixes (``"2M"``). ``engine="nccl"`` without enough GPUs
    raises ``RuntimeError`` saying so. ``env`` adds environment variables for
    the ranks (e.g. ``DISTLIB_CACHE_DIR`` for a fresh ``auto`` fit).
    """
    import subprocess

    for name, value in (("ranks", ranks), ("iters", iters)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if engine not in ("mpi", "gloo", "nccl"):
        raise ValueError(f"engine must be one of mpi, gloo, nccl; got {engine!r}")
    argv = _bench_argv(engine=engine, ranks=ranks, algorithms=algorithms, dtype=dtype, min_bytes=min_bytes,
                       max_bytes=max_bytes, step_factor=step_factor, iters=iters, warmup=warmup,
                       recalibrate=recalibrate, check=check, timeout=timeout)
    proc = subprocess.run([sys.executable, "-m", "distlib.bench", *argv], capture_output=True, text=True,
                          timeout=timeout + 60, env={**os.environ, **(env or {})})
    if proc.returncode != 0 or "SKIPPED" in proc.stdout or "{" not in proc.stdout:
        raise RuntimeError(f"python -m distlib.bench {' '.join(argv)} failed (status {proc.returncode}):\n"
                           f"{(proc.stdout + proc.stderr)[-2000:]}")
    return BenchResult.from_json(proc.stdout)


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
    """Command line entry point; returns the exit status (:data:`distlib.engines.launch.EXIT_STATUS`).

    A run that fails, stalls, loses a node or is interrupted prints the
    launcher's diagnosis on stderr (which rank, which node, doing what, its
    last words) and exits with the status of its kind.
    """
    from distlib.engines.launch import RunError, exit_status, failure_report

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except BadInput as exc:
        print(f"python -m distlib.bench: {exc}", file=sys.stderr)
        return 2
    except (RunError, KeyboardInterrupt) as exc:
        if _under_mpiexec() or "RANK" in os.environ:
            raise  # a rank: its launcher reports
        print(failure_report(exc, "python -m distlib.bench"), file=sys.stderr, flush=True)
        return exit_status(exc)


def _main(argv: list) -> int:
    ns = _parser().parse_args(argv)
    _check_cli(ns)
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

        _launched(lambda: run_mpi("distlib.bench", ns.ranks, args=argv, timeout=ns.timeout))
        return 0
    # gloo / nccl: this process launches the ranks.
    if "RANK" in os.environ:
        _torch_rank_main()
        return 0
    ranks = ns.ranks if ns.ranks is not None else 2
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
                  "ranks of one communicator on one GPU by default ('Duplicate GPU detected' up to 2.29; "
                  f"from 2.30 unless NCCL_MULTI_RANK_GPU_ENABLE=1, and then without NVLS); use --ranks "
                  f"{gpus} or --engine gloo", file=sys.stderr)  # fmt: skip
            return 2
    from distlib.engines.launch import run_torch

    # echo: rank 0's table and progress lines appear as they come; the rest is printed only on failure.
    run_torch("distlib.bench:_torch_rank_main", ranks, backend=ns.engine, args=argv, timeout=ns.timeout, echo=True)
    return 0


def _launched(launch):
    """Run ``launch()`` (a launcher with ``check=True``) and print rank 0's output, also from a run that failed (its
    table up to the failure) before the failure goes on to :func:`main`'s report."""
    from distlib.engines.launch import RunError

    try:
        result = launch()
    except RunError as exc:
        if exc.result is not None:
            _show_rank0(exc.result)
        raise
    _show_rank0(result)
    return result


def _show_rank0(result) -> None:
    sys.stderr.write(result.stderr[0])
    sys.stdout.write(result.stdout[0])
    sys.stdout.flush()


# ----------------------------------------------------------------------------
# A cluster on one machine: --nodes N --link-gbit R
# ----------------------------------------------------------------------------


def _run_on_mini_cluster(argv, ns) -> int:
    """Make a mini cluster, run the bench's ranks across it with the engine's launcher, remove it."""
    from distlib.engines.launch import RunError, run_mpi, run_torch
    from distlib.minicluster import MiniClusterUnavailable, mini_cluster

    nodes = 2 if ns.nodes is None else ns.nodes  # checked with the rest in _check_cli
    ranks = 2 * nodes if ns.ranks is None else ns.ranks
    try:
        cluster_cm = mini_cluster(nodes, link_gbit=ns.link_gbit)
        cluster = cluster_cm.__enter__()
    except MiniClusterUnavailable as exc:
        print(f"--nodes: cannot make a mini cluster here: {exc}", file=sys.stderr)
        return 2
    try:
        if ns.engine == "mpi":
            launch = lambda: run_mpi("distlib.bench", ranks, args=argv, timeout=ns.timeout, cluster=cluster)  # noqa: E731
        else:
            launch = lambda: run_torch("distlib.bench:_torch_rank_main", ranks, backend=ns.engine,  # noqa: E731
                                       args=argv, timeout=ns.timeout, cluster=cluster)  # fmt: skip
        try:
            result = launch()
        except RunError as exc:
            if exc.result is not None:
                _show_rank0(exc.result)
            raise
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
    return 0

if __name__ == "__main__":
    sys.exit(main())
