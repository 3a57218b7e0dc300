"""Pipeline stages of the trainer's model: which units each stage holds, and the order it runs its ops.

The model's units (:func:`distlib.train.model.unit_specs`: the embeddings,
``layers`` blocks, the head) are cut into ``pp * chunks`` contiguous model
chunks of ``layers / (pp * chunks)`` blocks each; the first chunk also
holds the embeddings and the last one the head. Chunk ``u`` (a *virtual
stage*) sits on stage ``u % pp``, so stage ``s`` holds chunks ``s``,
``s + pp``, ... round-robin, as Megatron-LM's interleaved schedule places
them (Narayanan et al. 2021, section 2.2.2); with one chunk per stage that
is the plain contiguous cut of GPipe and 1F1B. Like Megatron-LM, the
number of layers must divide evenly.

The order of a stage's ops is not written here: :func:`stage_ops` reads it
off :func:`distlib.pipeline_schedule`'s events, the one home of the
schedules, so the simulated pipeline and the real one run the same order.
"""

from __future__ import annotations

from .._check import check_choice, check_int
from ..pipeline_schedule import PIPELINE_SCHEDULES, pipeline_schedule

__all__ = ["pipeline_problem", "chunk_units", "stage_units", "stage_ops", "message_tag"]


def pipeline_problem(*, layers: int, pp: int, schedule: str, chunks: int, microbatches: int,
                     batch: int) -> str | None:  # fmt: skip
    """The first pipeline flag that does not fit, as one line naming it (``--pp``, ``--chunks``, ...); else ``None``.

    ``batch`` is one data-parallel rank's sequences per step, which the
    microbatches split.

    Examples
    --------
    >>> print(pipeline_problem(layers=8, pp=3, schedule="1f1b", chunks=1, microbatches=4, batch=12))
    --pp must divide the 8 layers (Megatron-LM's rule): one of 1, 2, 4, 8; got 3
    >>> print(pipeline_problem(layers=8, pp=2, schedule="gpipe", chunks=2, microbatches=4, batch=12))
    --chunks must be 1 with --schedule gpipe (model chunks are for --schedule interleaved), got 2
    >>> pipeline_problem(layers=8, pp=2, schedule="interleaved", chunks=2, microbatches=4, batch=12) is None
    True
    """
    if schedule not in PIPELINE_SCHEDULES:
        return f"--schedule must be one of {', '.join(PIPELINE_SCHEDULES)}; got {schedule!r}"
    for name, value in (("chunks", chunks), ("microbatches", microbatches)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"--{name} must be an integer >= 1, got {value!r}"
    if layers % pp:
        fits = ", ".join(str(d) for d in range(1, layers + 1) if layers % d == 0)
        return f"--pp must divide the {layers} layers (Megatron-LM's rule): one of {fits}; got {pp}"
    if schedule != "interleaved" and chunks != 1:
        return (f"--chunks must be 1 with --schedule {schedule} (model chunks are for --schedule interleaved), "
                f"got {chunks}")  # fmt: skip
    if schedule == "interleaved":
        if pp < 2:
            return f"--pp must be at least 2 with --schedule interleaved (its chunks go round the stages), got {pp}"
        if chunks < 2:
            return f"--chunks must be at least 2 with --schedule interleaved, got {chunks}"
        if (layers // pp) % chunks:
            return (f"--chunks must divide the {layers // pp} layers of each of the --pp {pp} stages "
                    f"(Megatron-LM's rule), got {chunks}")  # fmt: skip
        if microbatches % pp:
            return (f"--microbatches must be a multiple of --pp ({pp}) with --schedule interleaved "
                    f"(Megatron-LM's rule), got {microbatches}")  # fmt: skip
    if batch % microbatches:
        fits = ", ".join(str(d) for d in range(1, batch + 1) if batch % d == 0)
        return (f"--microbatches must divide the {batch} sequences of each data-parallel rank: "
                f"one of {fits}; got {microbatches}")  # fmt: skip
    return None


def chunk_units(layers: int, pp: int, chunks: int = 1) -> list:
    """Unit indices (0 the embeddings, ``1..layers`` the blocks, ``layers + 1`` the head) of each model chunk.

    Examples
    --------
    >>> chunk_units(4, 2)
    [[0, 1, 2], [3, 4, 5]]
    >>> chunk_units(4, 2, 2)
    [[0, 1], [2], [3], [4, 5]]
    """
    layers, pp, chunks = (check_int(n, v, minimum=1) for n, v in (("layers", layers), ("pp", pp), ("chunks", chunks)))
    if layers % (pp * chunks):
        raise ValueError(f"pp * chunks must divide layers ({layers}), got {pp} * {chunks}")
    per = layers // (pp * chunks)
    out = [list(range(1 + u * per, 1 + (u + 1) * per)) for u in range(pp * chunks)]
    out[0].insert(0, 0)
    out[-1].append(layers + 1)
    return out


def stage_units(stage: int, layers: int, pp: int, chunks: int = 1) -> list:
    """The chunks stage ``stage`` holds, in chunk order: a list of unit-index lists (chunks ``stage + c * pp``).

    >>> stage_units(0, 4, 2, 2)
    [[0, 1], [3]]
    """
    stage = check_int("stage", stage, minimum=0, maximum=pp - 1)
    every = chunk_units(layers, pp, chunks)
    return [every[c * pp + stage] for c in range(chunks)]


def stage_ops(schedule: str, pp: int, microbatches: int, stage: int, *, chunks: int = 1) -> list:
    """Stage ``stage``'s ops in the order it runs them: ``(kind, microbatch, chunk)``, ``kind`` ``"F"`` or ``"B"``.

    Read off :func:`distlib.pipeline_schedule`'s events (any positive
    times give the same order per stage).

    Examples
    --------
    >>> stage_ops("1f1b", 2, 3, 0)      # one warm-up forward, then one forward, one backward
    [('F', 0, 0), ('F', 1, 0), ('B', 0, 0), ('F', 2, 0), ('B', 1, 0), ('B', 2, 0)]
    """
    schedule = check_choice("schedule", schedule, PIPELINE_SCHEDULES)
    result = pipeline_schedule(schedule, pp, microbatches, forward_time=1.0, backward_time=2.0, chunks=chunks)
    return [(e.kind, e.microbatch, e.chunk) for e in result.stage_events(stage)]


def message_tag(kind: str, microbatch: int, virtual: int, microbatches: int) -> int:
    """The point-to-point tag of the message into virtual stage ``virtual``: activations ``"F"``, gradients ``"B"``.

    Unique per message of a step, and never 0 (the tag the book's collectives use).

    >>> message_tag("F", 0, 1, 4), message_tag("B", 0, 1, 4), message_tag("F", 3, 2, 4)
    (9, 10, 23)
    """
    kind = check_choice("kind", kind, ("F", "B"))
    return 1 + 2 * (virtual * microbatches + microbatch) + (kind == "B")
