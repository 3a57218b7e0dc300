"""PyTorch's own sharded checkpoints beside the book's: ``torch.distributed.checkpoint`` (DCP) saving FSDP2 on one
number of ranks and loading it on another.

:func:`dcp_reshard` trains the book's model's PyTorch twin (:mod:`distlib.train.torch_model`) under FSDP2's
``fully_shard`` on ``save_ranks`` gloo ranks, saves the model and Adam's state with DCP after ``saved_after``
steps (``get_state_dict``, then ``dcp.save``: each rank writes its own shards and rank 0 the metadata that
names them) and trains on; then it starts ``load_ranks`` fresh ranks whose model is drawn from another seed,
loads the checkpoint into their FSDP2 shards (``dcp.load`` reshards on load: each rank reads the pieces of
the saved shards its new shard needs) and trains the remaining steps. The losses after the load equal the
uninterrupted run's; beside them, what DCP wrote and what the book's format
(:mod:`distlib.train.checkpoint`) writes for the same model at ZeRO-3 on the same ranks.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from .._check import check_int
from .model import Config

__all__ = ["DCPReshard", "dcp_reshard", "dcp_main"]


@dataclasses.dataclass(frozen=True)
class DCPReshard:
    """What :func:`dcp_reshard` saw.

    ``uninterrupted_losses``: every step of the run on ``save_ranks`` ranks; ``resumed_losses``: the steps
    after ``saved_after`` on ``load_ranks`` ranks, from the loaded checkpoint. ``dcp_files`` and
    ``dcp_bytes``: what ``dcp.save`` wrote; ``book_files`` and ``book_bytes``: the book's checkpoint of the
    same model at ZeRO-3 on ``save_ranks`` ranks.
    """

    save_ranks: int
    load_ranks: int
    steps: int
    saved_after: int
    uninterrupted_losses: list
    resumed_losses: list
    dcp_files: int
    dcp_bytes: int
    book_files: int
    book_bytes: int

    @property
    def max_loss_difference(self) -> float:
        """The largest relative difference between the resumed steps and the same steps uninterrupted."""
        after = self.uninterrupted_losses[self.saved_after :]
        return max(abs(a - b) / abs(b) for a, b in zip(self.resumed_losses, after))


@dataclasses.dataclass(frozen=True)
class _RankLosses:
    losses: list


def _train(model, optimizer, comm, *, steps, seed, config, first: int = 1) -> list:
    """Steps ``first``..``steps`` of FSDP2 on ``comm``'s ranks, each the global batch's mean loss."""
    import torch.distributed as dist

    from .data import global_batch, local_batch
    from .peers import _counted_step

    losses = []
    for step in range(first, steps + 1):
        tokens, targets = local_batch(*global_batch(seed, step - 1, batch=config.batch, seq=config.seq,
                                                    vocab=config.vocab), comm.rank, comm.size)  # fmt: skip
        loss, _, _ = _counted_step(model, optimizer, tokens, targets, count=False)
        dist.all_reduce(loss)
        losses.append(float(loss) / comm.size)
    return losses


def _sharded(seed: int):
    from torch.distributed.fsdp import fully_shard

    from .peers import _twin
    from .torch_model import adam_for

    model = _twin(seed)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return model, adam_for(model)


def dcp_main(argv=None) -> None:
    """One rank: ``save PATH STEPS SAVED_AFTER SEED`` (train, save, train on) or ``load ...`` (load, train on)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    from ..engines.report import emit
    from ..engines.torch_numpy import numpy_world

    mode, path, steps, saved_after, seed = (sys.argv[1:] if argv is None else argv)
    steps, saved_after, seed, comm, config = int(steps), int(saved_after), int(seed), numpy_world(), Config()
    if mode == "save":
        model, optimizer = _sharded(seed)
        losses = _train(model, optimizer, comm, steps=saved_after, seed=seed, config=config)
        msd, osd = get_state_dict(model, optimizer)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=path)
        losses += _train(model, optimizer, comm, steps=steps, seed=seed, config=config, first=saved_after + 1)
    else:
        model, optimizer = _sharded(seed + 1)  # other numbers: what follows comes from the checkpoint
        _train(model, optimizer, comm, steps=1, seed=seed + 1, config=config)  # Adam's state exists to load into
        msd, osd = get_state_dict(model, optimizer)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        losses = _train(model, optimizer, comm, steps=steps, seed=seed, config=config, first=saved_after + 1)
    emit(_RankLosses(losses))


def dcp_reshard(save_ranks: int = 4, load_ranks: int = 2, steps: int = 4, saved_after: int = 2, seed: int = 0, *,
                timeout: float = 180.0) -> DCPReshard:  # fmt: skip
    """DCP saves FSDP2 on ``save_ranks`` gloo ranks after ``saved_after`` of ``steps`` steps; FSDP2 on
    ``load_ranks`` ranks loads it and trains the rest (module docstring). Needs torch.

    Examples
    --------
    >>> dcp_reshard(save_ranks=4, load_ranks=5)
    Traceback (most recent call last):
    ...
    ValueError: load_ranks must divide the global batch of 12 sequences: one of 1, 2, 3, 4, 6, 12; got 5
    """
    import tempfile

    from ..engines.launch import run_torch
    from ..engines.report import read
    from ..engines.torch_dist import import_torch
    from ..layout import Layout
    from .checkpoint import save_checkpoint
    from .rank import train_rank

    batch = Config().batch
    fits = [d for d in range(1, batch + 1) if batch % d == 0]
    for name, value in (("save_ranks", save_ranks), ("load_ranks", load_ranks)):
        if check_int(name, value, minimum=1) not in fits:
            raise ValueError(f"{name} must divide the global batch of {batch} sequences: "
                             f"one of {', '.join(map(str, fits))}; got {value}")  # fmt: skip
    steps = check_int("steps", steps, minimum=2, maximum=50)
    saved_after = check_int("saved_after", saved_after, minimum=1, maximum=steps - 1)
    import_torch()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dcp"
        args = [str(path), str(steps), str(saved_after), str(seed)]
        saved = read(run_torch("distlib.train.dcp_peer:dcp_main", save_ranks, args=["save", *args], timeout=timeout),
                     _RankLosses)  # fmt: skip
        loaded = read(run_torch("distlib.train.dcp_peer:dcp_main", load_ranks, args=["load", *args],
                                timeout=timeout), _RankLosses)  # fmt: skip
        written = [f for f in path.rglob("*") if f.is_file()]
        from ..engines.comm import run_threads

        book = Path(tmp) / "book"
        lay = Layout(dp=save_ranks, zero=3)
        run_threads(lambda c: train_rank(c, lay, steps=saved_after, seed=seed, checkpoint_dir=book,
                                         checkpoint_every=saved_after), save_ranks, timeout=timeout)  # fmt: skip
        mine = [f for f in book.rglob("*") if f.is_file()]
        return DCPReshard(save_ranks=save_ranks, load_ranks=load_ranks, steps=steps, saved_after=saved_after,
                          uninterrupted_losses=saved.losses, resumed_losses=loaded.losses, dcp_files=len(written),
                          dcp_bytes=sum(f.stat().st_size for f in written), book_files=len(mine),
                          book_bytes=sum(f.stat().st_size for f in mine))  # fmt: skip
