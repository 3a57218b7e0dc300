"""A parallel layout as one value: its degrees, its options, its rank grid and its flags.

The book's trainer, its planner and its table of published runs all speak of
the same thing: how many ways the work is cut along each axis, and how. Here
that is one frozen value, :class:`Layout`, built once (from keywords, or from
the flags a command line got, :meth:`Layout.from_argv`), checked once
(:meth:`Layout.problem`: one line naming the flag and what would fit), then
asked for what follows from it: the number of ranks, where a rank sits in the
grid (:meth:`Layout.coords`), the groups it belongs to (:meth:`Layout.groups`),
the flags that rebuild it (:meth:`Layout.argv`) and the words that describe it
(:meth:`Layout.words`). The anchors do the same: torchtitan's
``ParallelDims``, nanotron's ``ParallelismArgs``, picotron's
``ProcessGroupManager``.

The rank grid. Ranks are numbered along the grid ``(dp, pp, cp, tp)``,
tensor parallelism fastest (picotron's ``view(dp, pp, cp, tp)``; Megatron-LM
and Llama 3 order their groups the same way): rank
``((d * pp + s) * cp + c) * tp + t`` is tensor-parallel rank ``t`` of
context-parallel rank ``c`` of pipeline stage ``s`` of data-parallel replica
``d``. So a tensor-parallel group is ``tp`` neighbouring ranks, which a
launcher that fills nodes in rank order keeps inside a node.

The groups a rank needs (:class:`Groups`) are read off that grid: along one
axis with the others held (``dp``, ``pp``, ``cp``, ``tp``); the ``dp * cp``
ranks that hold the same parameters and reduce their gradients together
(``replicas``; ZeRO shards over them); and, with experts, the ``ep`` of
those that split the experts between them (``ep``) and the ranks holding
the same experts (``expert_replicas``).

Degrees that a run has not fixed yet (a published run's unprinted chunks,
the planner's choice of microbatches) may be ``None``; :meth:`Layout.filled`
says whether every field is set.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields, replace

from ._check import check_bool, check_choice, check_int

__all__ = ["GRID", "DEGREES", "SCHEDULES", "CP_KINDS", "Coords", "Groups", "Layout"]

GRID = ("dp", "pp", "cp", "tp")
"""The rank grid's axes, slowest first: rank ``((d * pp + s) * cp + c) * tp + t``."""
DEGREES = ("dp", "tp", "pp", "cp", "ep")
"""The degrees of a layout, in the order its words and flags give them."""
SCHEDULES = ("gpipe", "1f1b", "interleaved")
"""Pipeline schedules (:func:`distlib.pipeline_schedule`)."""
CP_KINDS = ("ring", "allgather", "ulysses")
"""How context parallelism brings each rank the keys and values it needs (chapter "Context parallelism")."""
_ZERO = (0, 1, 2, 3)
_FLAGS = {"dp": "--dp", "tp": "--tp", "pp": "--pp", "cp": "--cp", "ep": "--ep", "zero": "--zero",
          "sequence_parallel": "--sp", "schedule": "--schedule", "chunks": "--chunks",
          "microbatches": "--microbatches", "cp_kind": "--cp-kind"}
_HELP = {
    "dp": "data-parallel replicas (default 1)",
    "tp": "tensor-parallel ranks (default 1)",
    "pp": "pipeline stages (default 1)",
    "cp": "context-parallel ranks: the sequence split over them (default 1)",
    "ep": "expert-parallel ranks: the experts split over them, within the --dp x --cp ranks (default 1)",
    "zero": "ZeRO stage 0 (DDP), 1, 2 or 3 (default 0)",
    "sequence_parallel": "sequence parallelism over the --tp ranks (Megatron-LM's --sequence-parallel): the norms "
                         "and residuals cut along the sequence, all-gathers and reduce-scatters in place of tensor "
                         "parallelism's all-reduces; --tp above 1",
    "schedule": "pipeline schedule: gpipe, 1f1b or interleaved (default 1f1b)",
    "chunks": "model chunks per stage, interleaved only (default 1)",
    "microbatches": "microbatches per replica and step (default: --pp)",
    "cp_kind": "context parallelism's attention: ring, allgather or ulysses (default ring)",
}


@dataclass(frozen=True)
class Coords:
    """Where a rank sits in the grid: its index along each axis (and, with experts, in its expert group)."""

    dp: int
    pp: int
    cp: int
    tp: int
    ep: int = 0


@dataclass(frozen=True)
class Groups:
    """The world ranks of each group a rank belongs to, each in the order of its own axis.

    ``dp``, ``pp``, ``cp``, ``tp``: along one axis of the grid, the others
    held; ``replicas``: the ``dp * cp`` ranks holding the same parameters
    (the data-parallel layout's group: their gradients are reduced together,
    ZeRO shards over them); ``ep``: the ``ep`` replicas that split the experts
    (consecutive replicas); ``expert_replicas``: the replicas holding the same
    experts as this rank (every ``ep``-th).
    """

    dp: tuple
    pp: tuple
    cp: tuple
    tp: tuple
    replicas: tuple
    ep: tuple
    expert_replicas: tuple


@dataclass(frozen=True)
class Layout:
    """A parallel layout: degrees (``dp``, ``tp``, ``pp``, ``cp``, ``ep``) and how each runs.

    Parameters
    ----------
    dp, tp, pp, cp : int
        Data-parallel replicas, tensor-parallel ranks, pipeline stages, context-parallel ranks (>= 1).
    ep : int
        Expert-parallel ranks (>= 1), within the ``dp * cp`` ranks that hold the same parameters.
    zero : {0, 1, 2, 3}
        ZeRO stage over those ``dp * cp`` ranks (0: DDP).
    sequence_parallel : bool
        Megatron's sequence parallelism over the ``tp`` ranks.
    schedule : {"gpipe", "1f1b", "interleaved"}
    chunks : int or None
        Model chunks per stage (``interleaved`` only above 1).
    microbatches : int or None
        Microbatches per replica and step.
    cp_kind : {"ring", "allgather", "ulysses"}

    Examples
    --------
    >>> lay = Layout(dp=2, tp=2, pp=2)
    >>> lay.ranks, lay.coords(5), lay.rank(lay.coords(5))
    (8, Coords(dp=1, pp=0, cp=0, tp=1, ep=0), 5)
    >>> lay.groups(5).tp, lay.groups(5).pp, lay.groups(5).dp
    ((4, 5), (5, 7), (1, 5))
    >>> lay.argv()
    ['--dp', '2', '--tp', '2', '--pp', '2', '--microbatches', '1']
    >>> Layout.from_argv(lay.argv()) == lay
    True
    >>> lay.words()
    'dp 2 x pp 2 x tp 2, zero 0, 1f1b, 1 microbatches'
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 0
    sequence_parallel: bool = False
    schedule: str = "1f1b"
    chunks: int | None = 1
    microbatches: int | None = 1
    cp_kind: str = "ring"

    def __post_init__(self):
        for name in DEGREES:
            check_int(name, getattr(self, name), minimum=1)
        check_choice("zero", self.zero, _ZERO)
        check_bool("sequence_parallel", self.sequence_parallel)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("cp_kind", self.cp_kind, CP_KINDS)
        for name in ("chunks", "microbatches"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), minimum=1)

    # ---- the grid -------------------------------------------------------------------------------------------

    @property
    def ranks(self) -> int:
        """The ranks the layout runs on: ``dp * pp * cp * tp``."""
        return self.dp * self.pp * self.cp * self.tp

    @property
    def replicas(self) -> int:
        """Ranks that hold the same parameters: ``dp * cp``."""
        return self.dp * self.cp

    @property
    def is_pipeline(self) -> bool:
        """Whether ranks run as pipeline stages: more than one stage, or more than one microbatch."""
        return self.pp > 1 or (self.microbatches or 1) != 1

    def coords(self, rank: int) -> Coords:
        """Where ``rank`` sits in the grid (:data:`GRID`); the inverse of :meth:`rank`."""
        rank = check_int("rank", rank, minimum=0, maximum=self.ranks - 1)
        rest, t = divmod(rank, self.tp)
        rest, c = divmod(rest, self.cp)
        d, s = divmod(rest, self.pp)
        return Coords(dp=d, pp=s, cp=c, tp=t, ep=(d * self.cp + c) % self.ep)

    def rank(self, coords: Coords) -> int:
        """The world rank at ``coords`` (their ``ep`` is implied by ``dp`` and ``cp``)."""
        return ((coords.dp * self.pp + coords.pp) * self.cp + coords.cp) * self.tp + coords.tp

    def groups(self, rank: int) -> Groups:
        """Every group ``rank`` belongs to (:class:`Groups`), read off the grid."""
        at = self.coords(rank)
        along = {axis: tuple(self.rank(replace(at, **{axis: i})) for i in range(getattr(self, axis))) for axis in GRID}
        replicas = tuple(self.rank(replace(at, dp=r // self.cp, cp=r % self.cp)) for r in range(self.replicas))
        mine = at.dp * self.cp + at.cp
        first = mine - mine % self.ep
        return Groups(dp=along["dp"], pp=along["pp"], cp=along["cp"], tp=along["tp"], replicas=replicas,
                      ep=replicas[first : first + self.ep], expert_replicas=replicas[mine % self.ep :: self.ep])

    # ---- checks ---------------------------------------------------------------------------------------------

    def filled(self) -> bool:
        """Whether every field is set (``chunks`` and ``microbatches`` are not ``None``)."""
        return self.chunks is not None and self.microbatches is not None

    def problem(self, config, *, batch: int | None = None, ranks: int | None = None) -> str | None:
        """The first flag that does not fit ``config`` (a model's shape), as one line naming it; ``None`` if all fit.

        Parameters
        ----------
        config
            The model: an object with ``layers``, ``hidden``, ``heads``, ``ffn`` and ``seq`` (the trainer's
            :class:`distlib.train.model.Config`); with experts also ``experts``.
        batch : int, optional
            Sequences per step (default ``config.batch``), which the replicas and microbatches split.
        ranks : int, optional
            Ranks the run has; the layout must use exactly these.

        Examples
        --------
        >>> from distlib.train.model import Config
        >>> print(Layout(tp=3).problem(Config()))
        --tp must divide heads (4), hidden (32) and ffn (128): one of 1, 2, 4; got 3
        >>> print(Layout(dp=5).problem(Config()))
        --dp must divide the global batch of 12 sequences: one of 1, 2, 3, 4, 6, 12; got 5
        >>> print(Layout(sequence_parallel=True).problem(Config()))
        --sp needs --tp above 1 (it cuts the sequence over the tensor-parallel ranks): one of 2, 4; got 1
        >>> print(Layout(dp=2, tp=2).problem(Config(), ranks=8))
        --dp times --tp must equal the 8 ranks, got 4
        """
        batch = config.batch if batch is None else batch
        for check in (_tp_problem, _batch_problem, _sp_problem, _pipeline_problem, _cp_problem,
                      _ep_problem):
            problem = check(self, config, batch)
            if problem:
                return problem
        if ranks is not None and ranks != self.ranks:
            return f"{self.degree_words()} must equal the {ranks} ranks, got {self.ranks}"
        return None

    def degree_words(self) -> str:
        """The flags whose product is the ranks, in words: ``--dp times --tp``, ``... times --pp``, ...

        >>> Layout(pp=2).degree_words(), Layout(cp=2).degree_words()
        ('--dp times --tp times --pp', '--dp times --tp times --cp')
        """
        names = ["--dp", "--tp"] + [f"--{d}" for d in ("pp", "cp") if getattr(self, d) > 1]
        return " times ".join(names)

    def check(self, config, **kw) -> "Layout":
        """``self``, after :meth:`problem` found nothing; else ``ValueError`` with its line."""
        problem = self.problem(config, **kw)
        if problem:
            raise ValueError(problem)
        return self

    # ---- flags ----------------------------------------------------------------------------------------------

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """The layout's flags, on ``parser`` (the one definition every command line and rank program uses)."""
        for f in fields(Layout):
            flag = _FLAGS[f.name]
            if f.type in ("bool", bool):
                parser.add_argument(flag, dest=f.name, action="store_true", help=_HELP[f.name])
            elif f.name in ("schedule", "cp_kind"):
                parser.add_argument(flag, dest=f.name, default=f.default, help=_HELP[f.name])
            else:
                parser.add_argument(flag, dest=f.name, type=int, default=None if f.name == "microbatches" else
                                    f.default, help=_HELP[f.name])

    @classmethod
    def from_namespace(cls, ns) -> "Layout":
        """The layout a parsed command line names (``--microbatches`` left out: ``--pp``)."""
        values = {f.name: getattr(ns, f.name) for f in fields(cls)}
        if values["microbatches"] is None:
            values["microbatches"] = values["pp"]
        return cls(**values)

    @classmethod
    def from_argv(cls, argv) -> "Layout":
        """The layout in ``argv``'s flags (other flags are ignored); ``from_argv(l.argv()) == l``."""
        parser = argparse.ArgumentParser(add_help=False)
        cls.add_arguments(parser)
        ns, _ = parser.parse_known_args([str(a) for a in argv])
        return cls.from_namespace(ns)

    def argv(self) -> list:
        """The flags that rebuild this layout, those that differ from their defaults only."""
        if not self.filled():
            raise ValueError(f"a layout with chunks or microbatches unset has no flags: {self}")
        out = []
        for f in fields(self):
            value, default = getattr(self, f.name), (self.pp if f.name == "microbatches" else f.default)
            if value == default:
                continue
            out += [_FLAGS[f.name]] if value is True else [_FLAGS[f.name], str(value)]
        return out

    def words(self) -> str:
        """The layout in words, as the trainer's starting line gives it.

        >>> Layout(tp=2, sequence_parallel=True).words()
        'dp 1 x tp 2 with sequence parallelism, zero 0'
        >>> Layout(pp=2, schedule="interleaved", chunks=2, microbatches=4).words()
        'dp 1 x pp 2 x tp 1, zero 0, interleaved, 4 microbatches, 2 chunks'
        """
        sp = " with sequence parallelism" if self.sequence_parallel else ""
        cp = f" x cp {self.cp} ({self.cp_kind})" if self.cp > 1 else ""
        ep = f", ep {self.ep}" if self.ep > 1 else ""
        if not self.is_pipeline:
            return f"dp {self.dp}{cp} x tp {self.tp}{sp}, zero {self.zero}{ep}"
        words = (f"dp {self.dp} x pp {self.pp}{cp} x tp {self.tp}{sp}, zero {self.zero}{ep}, {self.schedule}, "
                 f"{self.microbatches} microbatches")
        return words + (f", {self.chunks} chunks" if self.schedule == "interleaved" else "")


# ---- the trainer's rules, one line each (Layout.problem) -------------------------------------------------------


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def _join(values) -> str:
    return ", ".join(map(str, values))


def _tp_choices(config) -> list:
    return [t for t in _divisors(config.heads) if config.hidden % t == 0 and config.ffn % t == 0]


def _tp_problem(lay: Layout, config, batch) -> str | None:
    if lay.tp not in _tp_choices(config):
        return (f"--tp must divide heads ({config.heads}), hidden ({config.hidden}) and ffn ({config.ffn}): "
                f"one of {_join(_tp_choices(config))}; got {lay.tp}")
    return None


def _batch_problem(lay: Layout, config, batch) -> str | None:
    if batch % lay.dp:
        return f"--dp must divide the global batch of {batch} sequences: one of {_join(_divisors(batch))}; got {lay.dp}"
    return None


def _sp_problem(lay: Layout, config, batch) -> str | None:
    """``--sp``: a tensor-parallel group above one rank whose size divides the sequence (of each CP rank).

    ``--sp`` with ``--tp 1`` is refused, not ignored (Megatron-LM turns it off with a warning): there is no
    group to cut the sequence over, and a run that said ``sp`` in its starting line while doing nothing of
    it would mislead.
    """
    if not lay.sequence_parallel:
        return None
    choices = [t for t in _tp_choices(config) if t > 1 and config.seq % t == 0]
    if lay.tp == 1:
        return (f"--sp needs --tp above 1 (it cuts the sequence over the tensor-parallel ranks): one of "
                f"{_join(choices)}; got 1")
    if config.seq % lay.tp:
        return f"--sp needs --tp to divide the sequence of {config.seq} tokens: one of {_join(choices)}; got {lay.tp}"
    return None


def _pipeline_problem(lay: Layout, config, batch) -> str | None:
    """Megatron-LM's rules for stages, chunks and microbatches; ZeRO-2 and 3 refused with a pipeline."""
    layers, pp, chunks, m = config.layers, lay.pp, lay.chunks or 1, lay.microbatches or 1
    if layers % pp:
        return f"--pp must divide the {layers} layers (Megatron-LM's rule): one of {_join(_divisors(layers))}; got {pp}"
    if lay.schedule != "interleaved" and chunks != 1:
        return (f"--chunks must be 1 with --schedule {lay.schedule} (model chunks are for --schedule interleaved), "
                f"got {chunks}")
    if lay.schedule == "interleaved":
        if pp < 2:
            return f"--pp must be at least 2 with --schedule interleaved (its chunks go round the stages), got {pp}"
        if chunks < 2:
            return f"--chunks must be at least 2 with --schedule interleaved, got {chunks}"
        if (layers // pp) % chunks:
            return (f"--chunks must divide the {layers // pp} layers of each of the --pp {pp} stages "
                    f"(Megatron-LM's rule), got {chunks}")
        if m % pp:
            return (f"--microbatches must be a multiple of --pp ({pp}) with --schedule interleaved "
                    f"(Megatron-LM's rule), got {m}")
    per_replica = batch // lay.dp
    if per_replica % m:
        return (f"--microbatches must divide the {per_replica} sequences of each data-parallel rank: "
                f"one of {_join(_divisors(per_replica))}; got {m}")
    if lay.is_pipeline and lay.zero > 1:
        return (f"--zero {lay.zero} with pipeline stages: ZeRO-2 and 3 shard the gradient the microbatches add "
                "into, and Megatron-LM refuses them with pipelines too; use --zero 0 or 1")
    return None


def _cp_problem(lay: Layout, config, batch) -> str | None:
    """Context parallelism: the sequence in ``2 cp`` zig-zag chunks; Ulysses also cuts the heads ``cp`` ways."""
    if lay.cp == 1:
        return None
    fits = [c for c in _divisors(config.seq) if config.seq % (2 * c) == 0]
    if config.seq % (2 * lay.cp):
        return (f"--cp must split the sequence of {config.seq} tokens into 2 x cp equal chunks (the zig-zag "
                f"balance): one of {_join(fits)}; got {lay.cp}")
    if lay.cp_kind == "ulysses":
        heads = config.heads // lay.tp
        fits = [c for c in _divisors(heads)]
        if heads % lay.cp:
            return (f"--cp with --cp-kind ulysses must divide the {heads} head{'s' * (heads != 1)} of each "
                    f"tensor-parallel rank (its all-to-all hands each rank whole heads): one of {_join(fits)}; "
                    f"got {lay.cp}")
    if lay.sequence_parallel and (config.seq // lay.cp) % lay.tp:
        return (f"--sp with --cp {lay.cp} needs --tp to divide each context-parallel rank's "
                f"{config.seq // lay.cp} tokens, got {lay.tp}")
    return None


def _ep_problem(lay: Layout, config, batch) -> str | None:
    """Experts and expert parallelism: ``ep`` divides the ``dp * cp`` replicas and the experts; tensor
    parallelism cuts each expert as the dense MLP, but not under ``--sp`` (the mixture routes whole sequences'
    tokens), and with ``ep`` above 1 a step runs one microbatch (:mod:`distlib.train.expert_parallel`)."""
    experts = getattr(config, "experts", 0) or 0
    if experts and lay.sequence_parallel:
        return ("--sp with --experts: the mixture of experts is not sequence-parallel here (its router sees every "
                "token of the tensor-parallel ranks); drop --sp (--tp alone cuts each expert)")
    if lay.ep == 1:
        return None
    if not experts:
        return f"--ep {lay.ep} needs experts (--experts E): a dense model has none to split"
    if lay.replicas % lay.ep:
        return (f"--ep must divide the --dp times --cp ranks ({lay.replicas}) that hold the same parameters: "
                f"one of {_join(_divisors(lay.replicas))}; got {lay.ep}")
    if experts % lay.ep:
        return f"--ep must divide the {experts} experts: one of {_join(_divisors(experts))}; got {lay.ep}"
    if (lay.microbatches or 1) > 1:
        return (f"--microbatches must be 1 with --ep {lay.ep} (expert parallelism does not accumulate "
                f"microbatches yet), got {lay.microbatches}")
    return None
