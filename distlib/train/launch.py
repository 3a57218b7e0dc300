"""Checking a run's flags, starting its ranks, and reading their reports back typed.

:func:`train` is what ``python -m distlib.train`` calls: it checks every
flag first (:func:`run_problem`, one line naming the flag and its range,
before any process starts), launches :attr:`Layout.ranks` ranks of the one
rank program, :mod:`distlib.train.rank`, with :func:`distlib.engines.run_mpi`
or (``engine="gloo"``) :func:`distlib.engines.run_torch` (the book's launch
paths: their timeouts, watchdog and clean-up), and folds their
:class:`~distlib.train.results.RankReport` s into a
:class:`~distlib.train.results.TrainResult`.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..layout import CP_KINDS, DEGREES, SCHEDULES, Layout
from ..limits import cluster_problem, launch_problem
from .expert_parallel import ep_run_problem
from .model import Config
from .overlap import Overlap, fitting_overlaps, overlap_problem, parse_overlap
from .rank import ENGINES, run_argv
from .results import RankReport, TrainResult

__all__ = ["ENGINES", "MAX_STEPS", "MAX_SEED", "PIPELINE_MPI_ENV", "layout_of", "run_problem", "check_run",
           "cluster_nodes", "overlap_of", "train"]

MAX_STEPS = 100_000
MAX_SEED = 2**32 - 1
PIPELINE_MPI_ENV = {"MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD": "4096"}
"""MPICH settings for a pipeline's ranks: messages of 4 KiB and more are copied by their receiver (CMA).

A stage sends its output with a non-blocking send and goes on computing.
On one machine MPICH moves a message of more than one shared-memory cell
(8 KiB) and less than its single-copy threshold only while the sender is
inside an MPI call, so the next stage would wait out the sender's compute:
with an 8 or 12 KiB message and a sender computing for 50 ms, the receiver
waited about 47 ms here (16 KiB and more: 0.1 ms, single copy already).
With single copy (``process_vm_readv``) from 4 KiB on, the receiver takes
the message itself and waited 0.1 ms. The microbatches'
activations are 4 to 48 KiB, so without this the measured idle time would
be MPICH's progress rule, not the schedule's bubble.
"""
_LAYOUT_FIELDS = tuple(f.name for f in fields(Layout))


def _torch_installed() -> bool:
    """Whether PyTorch can be imported here (found, not imported: that takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _range_problem(name: str, value, low: int, high: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return f"--{name} must be an integer from {low} to {high}, got {value!r}"
    return None


def layout_of(layout: Layout | None = None, **degrees) -> Layout:
    """The run's layout: ``layout``, or one built from keywords (:class:`~distlib.layout.Layout`'s fields).

    >>> layout_of(dp=2, zero=1).words()
    'dp 2 x tp 1, zero 1'
    >>> layout_of(Layout(tp=2), zero=1) == Layout(tp=2, zero=1)
    True
    """
    unknown = sorted(set(degrees) - set(_LAYOUT_FIELDS))
    if unknown:
        raise TypeError(f"unknown layout keywords {unknown}: a layout has {', '.join(_LAYOUT_FIELDS)}")
    return replace(layout or Layout(), **degrees)


def _flag_problems(degrees: dict, *, steps, seed, engine, timeout, most: int) -> str | None:
    """Every flag that is not a layout's rule: its type and range, the engine, the timeout."""
    checks = [(name, degrees.get(name, 1), 1, most) for name in DEGREES]
    checks += [("zero", degrees.get("zero", 0), 0, 3), ("steps", steps, 1, MAX_STEPS), ("seed", seed, 0, MAX_SEED)]
    for name, value, low, high in checks:
        problem = _range_problem(name, value, low, high)
        if problem:
            return problem
    for name, choices in (("schedule", SCHEDULES), ("cp_kind", CP_KINDS)):
        if name in degrees and degrees[name] not in choices:
            return f"--{name.replace('_', '-')} must be one of {', '.join(choices)}; got {degrees[name]!r}"
    if engine not in ENGINES:
        return f"--engine must be one of {', '.join(ENGINES)}; got {engine!r}"
    if engine == "gloo" and not _torch_installed():
        return "--engine gloo needs PyTorch (torch.distributed): pip install torch"
    return launch_problem(timeout=timeout)


def run_problem(layout: Layout | None = None, *, steps, seed, engine, timeout, ranks=None, nodes=None,
                link_gbit=None, config: Config = Config(), max_ranks: int | None = None, overlap="none",
                bucket_mb: float | None = None, prefetch_depth: int | None = None, checkpoint_dir=None,
                checkpoint_every: int = 1, resume: bool = False, kill_rank=None, kill_at_step=None,
                checkpoint_async: bool = False, max_restarts: int = 0, kill_during: str = "step",
                **degrees) -> str | None:  # fmt: skip
    """The first flag of a run out of its range, as one line naming it and the range; ``None`` if all fit.

    Examples
    --------
    >>> print(run_problem(tp=3, steps=5, seed=0, engine="mpi", timeout=60.0, max_ranks=16))
    --tp must divide heads (4), hidden (32) and ffn (128): one of 1, 2, 4; got 3
    >>> print(run_problem(dp=5, steps=5, seed=0, engine="mpi", timeout=60.0, max_ranks=16))
    --dp must divide the global batch of 12 sequences: one of 1, 2, 3, 4, 6, 12; got 5
    >>> print(run_problem(Layout(dp=4, tp=4, pp=2), steps=5, seed=0, engine="mpi", timeout=60.0, max_ranks=16))
    --dp times --tp times --pp must be at most 16 ranks on this machine, got 32
    >>> print(run_problem(dp=3, ep=2, steps=5, seed=0, engine="mpi", timeout=60.0, max_ranks=16,
    ...                   config=Config(experts=4, top_k=2)))
    --ep must divide the --dp times --cp ranks (3) that hold the same parameters: one of 1, 3; got 2
    """
    if max_ranks is None:
        from ..engines._processes import max_ranks as machine_ranks

        max_ranks = machine_ranks()
    raw = {f: getattr(layout, f) for f in _LAYOUT_FIELDS} if layout is not None else {}
    raw.update(degrees)
    problem = _flag_problems(raw, steps=steps, seed=seed, engine=engine, timeout=timeout, most=max_ranks)
    if problem:
        return problem
    try:
        lay = layout_of(layout, **degrees)
    except (TypeError, ValueError) as exc:
        return f"--{exc}"
    words = lay.degree_words() if lay.pp > 1 or lay.cp > 1 else "--dp times --tp"
    if lay.ranks > max_ranks:
        return f"{words} must be at most {max_ranks} ranks on this machine, got {lay.ranks}"
    problem = lay.problem(config) or _overlap_flags_problem(lay, overlap, bucket_mb, prefetch_depth)
    problem = problem or ep_run_problem(lay, overlap=bool(overlap_of(lay, overlap, bucket_mb=bucket_mb,
                                                                     prefetch_depth=prefetch_depth).kinds))
    problem = problem or _checkpoint_problem(lay, config, steps=steps, checkpoint_dir=checkpoint_dir,
                                             checkpoint_every=checkpoint_every, resume=resume, kill_rank=kill_rank,
                                             kill_at_step=kill_at_step, checkpoint_async=checkpoint_async,
                                             kill_during=kill_during)  # fmt: skip
    problem = problem or _restart_problem(engine, max_restarts, checkpoint_dir)
    return problem or _placement_problem(lay, ranks=ranks, nodes=nodes, link_gbit=link_gbit, engine=engine)


def _restart_problem(engine, max_restarts, checkpoint_dir) -> str | None:
    """``--max-restarts``: 0 to 10, gloo only (torchrun restarts its ranks), and a checkpoint to come back from."""
    problem = _range_problem("max-restarts", max_restarts, 0, 10)
    if problem or not max_restarts:
        return problem
    if engine != "gloo":
        return "--max-restarts needs --engine gloo: torchrun starts the ranks again (an MPI run ends with its rank)"
    if checkpoint_dir is None:
        return "--max-restarts needs --checkpoint-dir: restarted ranks resume from the newest checkpoint there"
    return None


def _checkpoint_problem(lay: Layout, config: Config, *, steps, checkpoint_dir, checkpoint_every, resume, kill_rank,
                        kill_at_step, checkpoint_async=False, kill_during="step") -> str | None:  # fmt: skip
    """``--checkpoint-dir``, ``--checkpoint-every``, ``--resume`` (the newest checkpoint there, checked whole:
    the model's sizes, every shard's size and checksum, its step below ``--steps``), ``--kill-rank`` and
    ``--kill-at-step``."""
    from pathlib import Path

    from .checkpoint import CheckpointError, check_config, check_files, newest_checkpoint, read_meta

    problem = _range_problem("checkpoint-every", checkpoint_every, 1, MAX_STEPS)
    if problem:
        return problem
    if checkpoint_async and checkpoint_dir is None:
        return "--checkpoint-async needs --checkpoint-dir, the folder to write into"
    if checkpoint_dir is not None and Path(checkpoint_dir).exists() and not Path(checkpoint_dir).is_dir():
        return f"--checkpoint-dir must be a folder (or not exist yet), got the file {checkpoint_dir}"
    first = 1
    if resume:
        if checkpoint_dir is None:
            return "--resume needs --checkpoint-dir, the folder to resume from"
        path = newest_checkpoint(checkpoint_dir)
        if path is None:
            return f"--resume: no complete checkpoint in {checkpoint_dir}"
        try:
            meta = read_meta(path)
            check_config(meta, config, path)
            check_files(meta, path)
        except CheckpointError as exc:
            return f"--resume: {exc}"
        if meta["step"] >= steps:
            return f"--steps must be above the checkpoint's step {meta['step']} ({path}) to resume, got {steps}"
        first = meta["step"] + 1
    if (kill_rank is None) != (kill_at_step is None):
        return "--kill-rank and --kill-at-step go together: the rank that kills itself, and during which step"
    if kill_rank is not None:
        problem = _range_problem("kill-rank", kill_rank, 0, lay.ranks - 1)
        problem = problem or _range_problem("kill-at-step", kill_at_step, first, steps)
        if problem:
            return problem
    if kill_during not in ("step", "save"):
        return f"--kill-during must be step or save, got {kill_during!r}"
    if kill_during == "save" and (checkpoint_dir is None or checkpoint_async or kill_at_step is None
                                  or kill_at_step % checkpoint_every):  # fmt: skip
        return ("--kill-during save needs --kill-rank, a blocking --checkpoint-dir and a --kill-at-step that saves "
                f"(a multiple of --checkpoint-every {checkpoint_every})")
    return None


def _overlap_flags_problem(lay: Layout, overlap, bucket_mb, prefetch_depth) -> str | None:
    """``--overlap`` (its words, and each kind named against the layout), ``--bucket-mb``, ``--prefetch-depth``."""
    try:
        overlap_of(lay, overlap, bucket_mb=bucket_mb, prefetch_depth=prefetch_depth)
    except ValueError as exc:
        return str(exc)
    return None


def overlap_of(lay: Layout, overlap="none", *, bucket_mb=None, prefetch_depth=None) -> Overlap:
    """The run's :class:`~distlib.train.overlap.Overlap`: ``overlap`` as ``--overlap`` takes it (``"none"``,
    ``"all"``: every kind the layout has, or a list), or an ``Overlap`` already; ``ValueError`` naming the flag.

    >>> overlap_of(Layout(dp=2, zero=3), "all").kinds
    ('prefetch', 'buckets')
    >>> overlap_of(Layout(dp=2), "prefetch")
    Traceback (most recent call last):
    ...
    ValueError: --overlap prefetch needs --zero 3 over more than one data-parallel rank (it prefetches ZeRO-3's all-gathers)
    """
    from .overlap import DEFAULT_BUCKET_MB, MAX_PREFETCH_DEPTH, bucket_mb_problem

    if isinstance(overlap, Overlap):
        kinds, bucket_mb, prefetch_depth = overlap.kinds, overlap.bucket_mb, overlap.prefetch_depth
    else:
        words = parse_overlap(overlap if isinstance(overlap, str) else ",".join(overlap))
        kinds = fitting_overlaps(lay) if words == "all" else words
    problem = overlap_problem(kinds, lay)
    if problem:
        raise ValueError(problem)
    bucket_mb = DEFAULT_BUCKET_MB if bucket_mb is None else bucket_mb
    prefetch_depth = 1 if prefetch_depth is None else prefetch_depth
    problem = bucket_mb_problem(bucket_mb) or _range_problem("prefetch-depth", prefetch_depth, 1, MAX_PREFETCH_DEPTH)
    if problem:
        raise ValueError(problem)
    return Overlap(kinds, bucket_mb=float(bucket_mb), prefetch_depth=prefetch_depth)


def cluster_nodes(nodes, link_gbit) -> int | None:
    """The mini cluster's nodes a run asks for: ``nodes``, 2 when only ``link_gbit`` is given, ``None`` for none.

    >>> cluster_nodes(None, None), cluster_nodes(None, 1.0), cluster_nodes(3, None)
    (None, 2, 3)
    """
    if nodes is None and link_gbit is None:
        return None
    return 2 if nodes is None else nodes


def _placement_problem(lay: Layout, *, ranks, nodes, link_gbit, engine) -> str | None:
    """``--ranks`` (it must be the layout's) and ``--nodes`` / ``--link-gbit`` (a mini cluster that can be made here)."""
    words = "--dp times --tp times --pp" + (" times --cp" if lay.cp > 1 else "")
    if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int) or ranks != lay.ranks):
        return f"--ranks must equal {words} ({lay.ranks}) when given, got {ranks!r}"
    nodes = cluster_nodes(nodes, link_gbit)
    if nodes is None:
        return None
    problem = cluster_problem(ranks=lay.ranks, nodes=nodes, link_gbit=link_gbit, engine=engine, ranks_flag=words)
    if problem:
        return problem
    from ..minicluster import minicluster_support

    reason = minicluster_support()
    return f"--nodes: cannot make a mini cluster here: {reason}" if reason else None


def check_run(layout: Layout | None = None, **flags) -> Layout:
    """The run's layout, after :func:`run_problem` found nothing; else ``ValueError`` with its line."""
    problem = run_problem(layout, **flags)
    if problem:
        raise ValueError(problem)
    degrees = {k: v for k, v in flags.items() if k in _LAYOUT_FIELDS}
    return layout_of(layout, **degrees)


def _start(layout: Layout, args: list, engine: str, timeout: float, cluster=None, max_restarts: int = 0):
    """Launch the layout's ranks of :mod:`distlib.train.rank` on ``engine``; with ``cluster``, ``ranks / nodes``
    consecutive ranks on each of its nodes; with ``max_restarts`` (gloo), under ``torchrun``, which starts them
    all again after a failure."""
    from ..engines.launch import run_mpi, run_torch, run_torchrun

    if engine == "gloo" and max_restarts:
        return run_torchrun("distlib.train.rank", layout.ranks, args=args, timeout=timeout, cluster=cluster,
                            max_restarts=max_restarts)  # fmt: skip
    if engine == "gloo":
        return run_torch("distlib.train.rank:main", layout.ranks, args=args, timeout=timeout, cluster=cluster)
    env = PIPELINE_MPI_ENV if layout.is_pipeline else None
    return run_mpi("distlib.train.rank", layout.ranks, args=args, timeout=timeout, env=env, cluster=cluster)


def train(layout: Layout | None = None, *, steps: int = 10, seed: int = 0, engine: str = "mpi",
          timeout: float = 300.0, ranks: int | None = None, nodes: int | None = None,
          link_gbit: float | None = None, config: Config = Config(), overlap="none", bucket_mb: float | None = None,
          prefetch_depth: int | None = None, checkpoint_dir=None, checkpoint_every: int = 1, resume: bool = False,
          kill_rank: int | None = None, kill_at_step: int | None = None, checkpoint_async: bool = False,
          max_restarts: int = 0, kill_during: str = "step", **degrees) -> TrainResult:  # fmt: skip
    """Train the book's model with a layout on its ranks of ``engine``; the run's :class:`TrainResult`.

    Parameters
    ----------
    layout : Layout, optional
        The layout (:class:`distlib.layout.Layout`); its fields may also be given, or changed, as keywords
        (``dp=2, zero=1``, ``tp=2, sequence_parallel=True``, ``pp=2, schedule="1f1b", microbatches=4``).
        Ranks are numbered tensor-parallel fastest (rank ``((d * pp + s) * cp + c) * tp + t``).
    steps, seed : int
        Training steps; the seed of the parameters and of the data.
    engine : {"mpi", "gloo"}
        MPI ranks, or torch.distributed ranks over gloo; both run the same NumPy program and the book's own
        collectives (:mod:`distlib.train.rank`), pipeline stages included, so they give the same losses and
        send the same bytes.
    timeout : float
        Seconds before the run is declared hung and every rank stopped.
    ranks : int, optional
        The number of ranks, a check: it must equal the layout's.
    nodes, link_gbit : optional
        Run across a fresh mini cluster (:func:`distlib.minicluster.mini_cluster`, root only) of ``nodes``
        nodes (default 2 when only ``link_gbit`` is given) whose links carry ``link_gbit`` Gbit/s per
        direction (``None``: unthrottled). Ranks are placed ``ranks / nodes`` per node in rank order, so a TP
        group stays inside a node whenever ``tp`` divides the ranks per node, as on a real cluster. The
        result's ``nodes``, ``link_gbit`` and ``link_bytes`` say where it ran and what crossed the links.
    config : Config
        The model's sizes (the book's small model by default).
    overlap, bucket_mb, prefetch_depth
        Which communication runs under computation (:mod:`distlib.train.overlap`): ``"none"`` (the default),
        ``"all"`` (every kind the layout has) or a list of ``prefetch``, ``buckets``, ``tp``, ``pp``; DDP and
        ZeRO-1's bucket size in MiB (default 25, PyTorch DDP's); ZeRO-3's prefetch depth (default 1). The
        losses and parameters are the blocking run's.
    checkpoint_dir, checkpoint_every, resume, checkpoint_async
        Sharded checkpoints (:mod:`distlib.train.checkpoint`): one after every ``checkpoint_every`` steps into
        ``checkpoint_dir``; with ``resume``, start from the newest complete one there, whatever layout wrote
        it, and run the steps after it up to ``steps`` (``first_step`` says where it started); with
        ``checkpoint_async``, each written by a thread while the next steps run.
    kill_rank, kill_at_step, kill_during
        That rank ``SIGKILL`` s itself during that step (``kill_during="save"``: during that step's
        checkpoint, after writing its shard, before the commit): the run then fails, naming it
        (:class:`distlib.engines.RunError`), as a node that dies would make it.
    max_restarts : int
        gloo only: the ranks run under ``torchrun --max-restarts``, which starts them all again after a
        failure; restarted, they resume from the newest checkpoint (and a rank killed on purpose does not kill
        itself again).

    Raises
    ------
    ValueError
        A flag out of range, or naming a part not built yet, before any process starts.
    distlib.engines.RunError
        A rank failed, stalled or the run timed out (the message names the rank).
    """
    run = dict(steps=steps, seed=seed, engine=engine, timeout=timeout)
    hide = dict(overlap=overlap, bucket_mb=bucket_mb, prefetch_depth=prefetch_depth)
    saving = dict(checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every, resume=resume,
                  checkpoint_async=checkpoint_async)
    lay = check_run(layout, **run, ranks=ranks, nodes=nodes, link_gbit=link_gbit, config=config, **hide, **saving,
                    kill_rank=kill_rank, kill_at_step=kill_at_step, max_restarts=max_restarts, kill_during=kill_during,
                    **degrees)  # fmt: skip
    run["overlap"] = overlap_of(lay, **hide)
    run.update(saving, kill_at=None if kill_rank is None else (kill_rank, kill_at_step, kill_during),
               max_restarts=max_restarts)
    nodes = cluster_nodes(nodes, link_gbit)
    if nodes is None:
        return _train_here(lay, config=config, **run)
    import dataclasses

    from ..minicluster import mini_cluster

    with mini_cluster(nodes, link_gbit=link_gbit) as cluster:
        result = _train_here(lay, config=config, **run, cluster=cluster)
        links = {node.hostname: cluster.link_bytes(node).total for node in cluster.nodes}
    return dataclasses.replace(result, nodes=nodes, link_gbit=link_gbit, link_bytes=links)


def _train_here(layout: Layout, *, steps, seed, engine, timeout, config, overlap=Overlap(), checkpoint_dir=None,
                checkpoint_every=1, resume=False, kill_at=None, checkpoint_async=False, max_restarts=0,
                cluster=None) -> TrainResult:  # fmt: skip
    """One run, checked already: on this machine, or across ``cluster``."""
    import dataclasses

    from ..engines.report import read_all

    if checkpoint_dir is not None:  # the ranks may run elsewhere (a mini cluster's node): one absolute path
        import os

        checkpoint_dir = os.path.abspath(checkpoint_dir)
    args = run_argv(layout, steps=steps, seed=seed, engine=engine, config=config, overlap=overlap,
                    checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every, resume=resume,
                    kill_at=kill_at, checkpoint_async=checkpoint_async)  # fmt: skip
    result = _start(layout, args, engine, timeout, cluster, max_restarts)
    reports = read_all(result, RankReport)
    out = TrainResult.from_ranks(reports, layout=layout, seed=seed, log=result.stderr[0], run_id=result.run_id)
    return dataclasses.replace(out, checkpointing=checkpoint_dir is not None)
