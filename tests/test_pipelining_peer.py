"""The book's pipeline stages beside ``torch.distributed.pipelining``: :func:`distlib.train.peers.pipelining_beside_book`.

Each launch runs the book's stages and then torch's ``PipelineStage`` s over
the twin cut the same way, on the same gloo ranks, with the same schedule,
microbatches and seed. Both must equal one process accumulating the same
microbatches (:func:`distlib.train.microbatches.accumulate_run`), and torch's
stages must send exactly the activations and gradients the book's send. The
launches are few (each rank imports torch) and shared by a module fixture.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from distlib.engines import stray_processes  # noqa: E402
from distlib.train.data import GLOBAL_BATCH  # noqa: E402
from distlib.train.microbatches import accumulate_run  # noqa: E402
from distlib.train.model import Config  # noqa: E402
from distlib.train.peers import PEER_CHUNKS, pipelining_beside_book  # noqa: E402

STEPS = 2
SEED = 7
M = 4
CONFIG = Config()
#: (stages, schedule): GPipe, 1F1B and interleaved 1F1B on 2 stages; 1F1B on 4.
LAYOUTS = [(2, "gpipe"), (2, "1f1b"), (2, "interleaved"), (4, "1f1b")]
UNCOUNTED = (2, "1f1b")  # run with count=False (as a benchmark would): nothing counted, the same training


def _rel(a, b) -> float:
    return abs(a - b) / abs(b)


@pytest.fixture(scope="module")
def comparisons():
    out = {}
    for stages, schedule in LAYOUTS:
        count = (stages, schedule) != UNCOUNTED
        c = pipelining_beside_book(stages, schedule, M, STEPS, SEED, timeout=150, count=count)
        assert stray_processes(c.run_id) == []
        out[stages, schedule] = c
    return out


def _sends(stages: int, schedule: str, rank: int) -> int:
    """Messages a stage sends per step: each microbatch's activation into every later chunk, its gradient into
    every earlier one."""
    chunks = PEER_CHUNKS if schedule == "interleaved" else 1
    virtual = [c * stages + rank for c in range(chunks)]
    return M * (sum(u < stages * chunks - 1 for u in virtual) + sum(u > 0 for u in virtual))


@pytest.mark.engines
@pytest.mark.slow
def test_torch_pipelining_trains_as_the_books_stages_and_as_one_process_accumulating(comparisons):
    ref, _ = accumulate_run(microbatches=M, steps=STEPS, seed=SEED)
    for (stages, schedule), c in comparisons.items():
        print(f"{c.peer} beside the book's {c.book} on {stages} stages: losses {c.max_loss_difference:.1e} "
              f"relative; book {sum(c.book_step_seconds) * 1e3:.0f} ms, torch {sum(c.peer_step_seconds) * 1e3:.0f} ms")
        assert c.ranks == stages and len(c.book_losses) == len(c.peer_losses) == STEPS
        assert c.book_losses[-1] < c.book_losses[0]
        assert max(_rel(a, b) for a, b in zip(c.book_losses, ref)) < 1e-9, (stages, schedule)
        assert max(_rel(a, b) for a, b in zip(c.peer_losses, ref)) < 1e-9, (stages, schedule)
        assert c.max_loss_difference < 1e-9, (stages, schedule)
        assert len(c.book_step_seconds) == len(c.peer_step_seconds) == STEPS and min(c.peer_step_seconds) > 0


@pytest.mark.engines
@pytest.mark.slow
def test_torch_stages_send_exactly_the_books_activations_and_gradients(comparisons):
    one = GLOBAL_BATCH // M * CONFIG.seq * CONFIG.hidden * 8  # one microbatch's activation (or its gradient)
    for (stages, schedule), c in comparisons.items():
        if (stages, schedule) == UNCOUNTED:
            assert c.peer_counts == [] and c.peer_comm_bytes == [] and len(c.book_counts) == STEPS
            continue
        assert c.peer_counts == [{"isend": _sends(stages, schedule, 0)}] * STEPS, (stages, schedule)
        # The book's step also all-reduces its loss over the stages (8 bytes a step on a ring of two).
        assert c.book_counts == [{"allreduce": 1}] * STEPS, (stages, schedule)
        for rank, (book, peer) in enumerate(zip(c.book_comm_bytes, c.peer_comm_bytes)):
            assert peer == STEPS * _sends(stages, schedule, rank) * one, (stages, schedule, rank)
            assert 0 < book - peer <= STEPS * 2 * 8, (stages, schedule, rank)


@pytest.mark.parametrize("kwargs, text", [
    (dict(stages=3), "stages must divide the 8 layers: one of 2, 4, 8; got 3"),
    (dict(stages=1), "stages must be an integer"),
    (dict(schedule="zigzag"), "schedule must be one of 'gpipe', '1f1b', 'interleaved'; got 'zigzag'"),
    (dict(stages=8, schedule="interleaved"), "stages must be one of 2, 4 with schedule 'interleaved'"),
    (dict(microbatches=5), "microbatches must divide the 12 sequences of a step: one of 1, 2, 3, 4, 6, 12; got 5"),
    (dict(stages=4, schedule="interleaved", microbatches=6),
     "microbatches must be a multiple of stages (4) with schedule 'interleaved', got 6"),
    (dict(steps=0), "steps must be an integer"),
    (dict(timeout=0), "timeout must be"),
    (dict(count=1), "count must be True or False, got 1"),
])  # fmt: skip
def test_bad_arguments_are_one_error_naming_the_parameter_before_anything_starts(kwargs, text, monkeypatch):
    import distlib.engines.launch as launch

    def refuse(*args, **kw):
        raise AssertionError("a process was started")

    monkeypatch.setattr(launch, "run_torch", refuse)
    with pytest.raises(ValueError) as info:
        pipelining_beside_book(**kwargs)
    assert text in str(info.value)
