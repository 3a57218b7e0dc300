"""Checking a layout's flags, starting its ranks, and reading their reports back typed.

:func:`train` is what ``python -m distlib.train`` calls: it checks every
flag first (:func:`layout_problem`, one line naming the flag and its range,
before any process starts), launches ``dp * tp`` ranks of
:mod:`distlib.train.worker` with :func:`distlib.engines.run_mpi`, or of
:mod:`distlib.train.gloo` with :func:`distlib.engines.run_torch` (the
book's launch paths: their timeouts, watchdog and clean-up), and folds their
:class:`~distlib.train.results.RankReport` s into a
:class:`~distlib.train.results.TrainResult`.
"""

from __future__ import annotations

from ..limits import cluster_problem, launch_problem
from ..walls import ZERO_STAGES
from .data import GLOBAL_BATCH
from .model import Config
from .results import RankReport, TrainResult

__all__ = ["ENGINES", "MAX_STEPS", "MAX_SEED", "layout_problem", "check_layout", "is_pipeline", "cluster_nodes", "train"]

ENGINES = ("mpi", "gloo")
"""What ``--engine`` names: MPI ranks (mpi4py) or torch.distributed ranks over gloo (:mod:`distlib.train.gloo`)."""
MAX_STEPS = 100_000
MAX_SEED = 2**32 - 1


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def _tp_choices(config: Config) -> list:
    return [t for t in _divisors(config.heads) if config.hidden % t == 0 and config.ffn % t == 0]


def _torch_installed() -> bool:
    """Whether PyTorch can be imported here (found, not imported: that takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _range_problem(name: str, value, low: int, high: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return f"--{name} must be an integer from {low} to {high}, got {value!r}"
    return None


def layout_problem(*, dp, tp, pp, zero, steps, seed, engine, timeout, schedule="1f1b", chunks=1, microbatches=1,
                   ranks=None, nodes=None, link_gbit=None, sp=False, config: Config = Config(),
                   max_ranks: int | None = None) -> str | None:  # fmt: skip
    """The first flag out of its range, as one line naming it and the range; ``None`` if all fit.

    Examples
    --------
    >>> print(layout_problem(dp=2, tp=3, pp=1, zero=0, steps=5, seed=0, engine="mpi", timeout=60.0))
    --tp must divide heads (4), hidden (32) and ffn (128): one of 1, 2, 4; got 3
    >>> print(layout_problem(dp=5, tp=1, pp=1, zero=0, steps=5, seed=0, engine="mpi", timeout=60.0))
    --dp must divide the global batch of 12 sequences: one of 1, 2, 3, 4, 6, 12; got 5
    >>> print(layout_problem(dp=1, tp=1, pp=1, zero=0, steps=5, seed=0, engine="mpi", timeout=60.0, sp=True))
    --sp needs --tp above 1 (it cuts the sequence over the tensor-parallel ranks): one of 2, 4; got 1
    >>> print(layout_problem(dp=1, tp=4, pp=1, zero=0, steps=5, seed=0, engine="mpi", timeout=60.0, sp=True,
    ...                      config=Config(seq=6)))
    --sp needs --tp to divide the sequence of 6 tokens: one of 2; got 4
    """
    if max_ranks is None:
        from ..engines._processes import max_ranks as machine_ranks

        max_ranks = machine_ranks()
    for name, value, low, high in (("dp", dp, 1, max_ranks), ("tp", tp, 1, max_ranks), ("pp", pp, 1, max_ranks),
                                   ("zero", zero, min(ZERO_STAGES), max(ZERO_STAGES)), ("steps", steps, 1, MAX_STEPS),
                                   ("seed", seed, 0, MAX_SEED)):  # fmt: skip
        problem = _range_problem(name, value, low, high)
        if problem:
            return problem
    if engine not in ENGINES:
        return f"--engine must be one of {', '.join(ENGINES)}; got {engine!r}"
    if engine == "gloo" and not _torch_installed():
        return "--engine gloo needs PyTorch (torch.distributed): pip install torch"
    problem = launch_problem(timeout=timeout)
    if problem:
        return problem
    if dp * tp * pp > max_ranks:
        names = "--dp times --tp" if pp == 1 else "--dp times --tp times --pp"
        return f"{names} must be at most {max_ranks} ranks on this machine, got {dp * tp * pp}"
    if tp not in _tp_choices(config):
        return (f"--tp must divide heads ({config.heads}), hidden ({config.hidden}) and ffn ({config.ffn}): "
                f"one of {', '.join(map(str, _tp_choices(config)))}; got {tp}")
    if GLOBAL_BATCH % dp:
        return (f"--dp must divide the global batch of {GLOBAL_BATCH} sequences: one of "
                f"{', '.join(map(str, _divisors(GLOBAL_BATCH)))}; got {dp}")
    problem = _sp_problem(sp=sp, tp=tp, config=config)
    if problem:
        return problem
    problem = _pipeline_problem(pp=pp, zero=zero, dp=dp, schedule=schedule, chunks=chunks,
                                microbatches=microbatches, config=config)  # fmt: skip
    return problem or _placement_problem(dp * tp * pp, ranks=ranks, nodes=nodes, link_gbit=link_gbit, engine=engine)


def _sp_problem(*, sp, tp, config) -> str | None:
    """``--sp``: a tensor-parallel group above one rank whose size divides the sequence.

    ``--sp`` with ``--tp 1`` is refused, not ignored (Megatron-LM turns it off with a warning): there is no
    group to cut the sequence over, and a run that said ``sp`` in its starting line while doing nothing of
    it would mislead. Pipeline stages run it too (:mod:`distlib.train.pipeline`).
    """
    if not isinstance(sp, bool):
        return f"--sp must be given or not (True or False), got {sp!r}"
    if not sp:
        return None
    choices = [t for t in _tp_choices(config) if t > 1 and config.seq % t == 0]
    if tp == 1:
        return (f"--sp needs --tp above 1 (it cuts the sequence over the tensor-parallel ranks): one of "
                f"{', '.join(map(str, choices))}; got 1")  # fmt: skip
    if config.seq % tp:
        return (f"--sp needs --tp to divide the sequence of {config.seq} tokens: one of "
                f"{', '.join(map(str, choices))}; got {tp}")  # fmt: skip
    return None


def cluster_nodes(nodes, link_gbit) -> int | None:
    """The mini cluster's nodes a run asks for: ``nodes``, 2 when only ``link_gbit`` is given, ``None`` for none.

    >>> cluster_nodes(None, None), cluster_nodes(None, 1.0), cluster_nodes(3, None)
    (None, 2, 3)
    """
    if nodes is None and link_gbit is None:
        return None
    return 2 if nodes is None else nodes


def _placement_problem(n: int, *, ranks, nodes, link_gbit, engine) -> str | None:
    """``--ranks`` (it must be D x T x P) and ``--nodes`` / ``--link-gbit`` (a mini cluster that can be made here)."""
    if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int) or ranks != n):
        return f"--ranks must equal --dp times --tp times --pp ({n}) when given, got {ranks!r}"
    nodes = cluster_nodes(nodes, link_gbit)
    if nodes is None:
        return None
    problem = cluster_problem(ranks=n, nodes=nodes, link_gbit=link_gbit, engine=engine,
                              ranks_flag="--dp times --tp times --pp")  # fmt: skip
    if problem:
        return problem
    from ..minicluster import minicluster_support

    reason = minicluster_support()
    return f"--nodes: cannot make a mini cluster here: {reason}" if reason else None


def is_pipeline(*, pp: int, microbatches: int = 1, **_) -> bool:
    """Whether a layout runs as pipeline stages (:mod:`distlib.train.pipeline`): more than one stage or microbatch."""
    return pp > 1 or microbatches != 1


def _pipeline_problem(*, pp, zero, dp, schedule, chunks, microbatches, config) -> str | None:
    """The pipeline flags' problem (:func:`distlib.train.stages.pipeline_problem`), and ZeRO-2/3 refused with them."""
    from .stages import pipeline_problem

    problem = pipeline_problem(layers=config.layers, pp=pp, schedule=schedule, chunks=chunks,
                               microbatches=microbatches, batch=GLOBAL_BATCH // dp)  # fmt: skip
    if problem is None and is_pipeline(pp=pp, microbatches=microbatches) and zero > 1:
        problem = (f"--zero {zero} with pipeline stages: ZeRO-2 and 3 shard the gradient the microbatches add "
                   "into, and Megatron-LM refuses them with pipelines too; use --zero 0 or 1")  # fmt: skip
    return problem


def check_layout(**flags) -> None:
    """Raise ``ValueError`` with :func:`layout_problem`'s line if a flag is out of range or names what is not built."""
    problem = layout_problem(**flags)
    if problem:
        raise ValueError(problem)


def _start(engine: str, n: int, args: list, timeout: float, cluster=None):
    """Launch ``n`` ranks of the trainer on ``engine``: MPI's :mod:`~distlib.train.worker`, or gloo's
    :mod:`~distlib.train.gloo` (the same program over torch.distributed); with ``cluster``, ``n / nodes``
    consecutive ranks on each of its nodes."""
    from ..engines.launch import run_mpi, run_torch

    if engine == "gloo":
        return run_torch("distlib.train.gloo:main", n, args=args, timeout=timeout, cluster=cluster)
    return run_mpi("distlib.train.worker", n, args=args, timeout=timeout, cluster=cluster)


def train(*, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0, steps: int = 10, seed: int = 0,
          engine: str = "mpi", timeout: float = 300.0, schedule: str = "1f1b", chunks: int = 1,
          microbatches: int = 1, ranks: int | None = None, nodes: int | None = None,
          link_gbit: float | None = None, sp: bool = False) -> TrainResult:  # fmt: skip
    """Train the book's model with a layout on ``dp * tp * pp`` ranks of ``engine``; the run's :class:`TrainResult`.

    Parameters
    ----------
    dp, tp : int
        Data-parallel and tensor-parallel ranks.
    pp : int
        Pipeline stages; above 1 (or with ``microbatches`` above 1) the run
        is :func:`distlib.train.pipeline_launch.train_pipeline`'s, on
        ``dp * pp * tp`` ranks, and returns a
        :class:`~distlib.train.pipeline_results.PipelineResult`, on either engine.
    zero : int
        ZeRO stage, 0 (DDP) to 3 (:mod:`distlib.train.layout`).
    steps, seed : int
        Training steps; the seed of the parameters and of the data.
    engine : {"mpi", "gloo"}
        MPI ranks, or torch.distributed ranks over gloo; both run the same NumPy program and the book's own
        collectives (:mod:`distlib.train.gloo`), pipeline stages included, so they give the same losses and
        send the same bytes.
    timeout : float
        Seconds before the run is declared hung and every rank stopped.
    schedule : {"gpipe", "1f1b", "interleaved"}
        The pipeline's schedule (:func:`distlib.pipeline_schedule`).
    chunks, microbatches : int
        Model chunks per stage (``"interleaved"`` only) and microbatches per
        data-parallel replica and step.
    ranks : int, optional
        The number of ranks, a check: it must equal ``dp * tp * pp``.
    nodes, link_gbit : optional
        Run across a fresh mini cluster (:func:`distlib.minicluster.mini_cluster`, root only) of ``nodes``
        nodes (default 2 when only ``link_gbit`` is given) whose links carry ``link_gbit`` Gbit/s per
        direction (``None``: unthrottled). Ranks are placed ``n / nodes`` per node in rank order, and the
        rank order puts tensor-parallel ranks next to each other (rank = (d * pp + s) * tp + t), so a TP
        group stays inside a node whenever ``tp`` divides the ranks per node, as on a real cluster; with
        ``tp`` equal to the ranks per node times ``nodes`` it spans the nodes. The result's ``nodes``,
        ``link_gbit`` and ``link_bytes`` say where it ran and what crossed the links.
    sp : bool
        Sequence parallelism (Megatron-LM's ``--sequence-parallel``) over the tensor-parallel ranks: ``tp``
        above 1 dividing the sequence (:mod:`distlib.train.model`), in pipeline stages too.

    Raises
    ------
    ValueError
        A flag out of range, or naming a part not built yet, before any process starts.
    distlib.engines.RunError
        A rank failed, stalled or the run timed out (the message names the rank).
    """
    check_layout(dp=dp, tp=tp, pp=pp, zero=zero, steps=steps, seed=seed, engine=engine, timeout=timeout,
                 schedule=schedule, chunks=chunks, microbatches=microbatches, ranks=ranks, nodes=nodes,
                 link_gbit=link_gbit, sp=sp)  # fmt: skip
    flags = dict(dp=dp, tp=tp, pp=pp, zero=zero, steps=steps, seed=seed, engine=engine, timeout=timeout,
                 schedule=schedule, chunks=chunks, microbatches=microbatches, sp=sp)  # fmt: skip
    nodes = cluster_nodes(nodes, link_gbit)
    if nodes is None:
        return _train_here(**flags)
    import dataclasses

    from ..minicluster import mini_cluster

    with mini_cluster(nodes, link_gbit=link_gbit) as cluster:
        result = _train_here(**flags, cluster=cluster)
        links = {node.hostname: cluster.link_bytes(node).total for node in cluster.nodes}
    return dataclasses.replace(result, nodes=nodes, link_gbit=link_gbit, link_bytes=links)


def _train_here(*, dp, tp, pp, zero, steps, seed, engine, timeout, schedule, chunks, microbatches, sp=False,
                cluster=None) -> TrainResult:  # fmt: skip
    """One run, checked already: on this machine, or across ``cluster``."""
    if is_pipeline(pp=pp, microbatches=microbatches):
        from .pipeline_launch import train_pipeline

        return train_pipeline(dp=dp, tp=tp, pp=pp, zero=zero, steps=steps, seed=seed, timeout=timeout,
                              schedule=schedule, chunks=chunks, microbatches=microbatches, cluster=cluster,
                              sp=sp, engine=engine)  # fmt: skip
    from ..engines.report import read_all

    args = ["--dp", dp, "--tp", tp, "--zero", zero, "--steps", steps, "--seed", seed, "--sp", int(sp)]
    result = _start(engine, dp * tp, [str(a) for a in args], timeout, cluster)
    reports = read_all(result, RankReport)
    return TrainResult.from_ranks(reports, dp=dp, tp=tp, zero=zero, seed=seed, log=result.stderr[0],
                                  run_id=result.run_id)
