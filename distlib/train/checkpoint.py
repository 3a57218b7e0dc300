"""Sharded checkpoints of the trainer: written by every rank, complete or absent, read back at any layout.

A checkpoint of step ``N`` is a folder ``step-0000N`` in the run's
checkpoint directory:

* one file per rank, ``rank-00003.bin``: the pieces of the model state the
  rank answers for (:meth:`distlib.train.data_parallel._Layout.state`: its
  chunk of the parameters and of Adam's two moments, where its ZeRO stage
  shards them; DDP's replicas each write a chunk of what they all hold),
  each range named by the whole model (the unit, the tensor-parallel rank
  and degree that cut it, the range in that cut: :func:`full_index` turns
  it into places in the whole unit), so that reading needs no layout. The
  file is the arrays' bytes end to end (``pieces`` as int64 rows of five,
  then ``w``, ``m`` and ``v`` as float64), hashed as they are written: a
  write the operating system does while Python's lock is free, which a
  background writer needs (:class:`AsyncSaver`);
* ``meta.json``: the format, the step, the seed, the layout that wrote it
  (its flags and words), the model's config, Adam's hyper-parameters, and
  each rank file's bytes, SHA-256 and counts (pieces and values).

Complete or absent: the ranks write into a folder of their own,
``.partial-step-0000N-<id>``, rank 0 writes ``meta.json`` there once every
rank has written and checksummed its file, then renames the folder to
``step-0000N`` in one ``rename`` (atomic on one file system). A run killed
halfway leaves only a ``.partial-`` folder, which is never read; a step
folder that already exists is never replaced.

Reading (:func:`read_checkpoint`) checks the meta file, the model's config
against the run's (a checkpoint of another model is refused, the differing
size named), and every rank file's size and checksum (a truncated or altered
shard is refused, the file named); then it lays every piece back into the
whole model's units, and checks that every element was written. A run at any
layout then cuts its part from those whole units as it would from freshly
drawn ones (:func:`distlib.train.model.shard_unit`, the layouts' own
ranges): *resharding on load*. The data's position is the step number itself
(:func:`distlib.train.data.global_batch` draws each step's batch from the
seed and the step), so a resumed run sees the batches the uninterrupted run
would have seen.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path

import numpy as np

from .model import Config, shard_unit, unit_specs

__all__ = ["FORMAT", "CheckpointError", "Checkpoint", "step_name", "list_checkpoints", "newest_checkpoint",
           "read_meta", "read_checkpoint", "save_checkpoint", "AsyncSaver", "full_index"]

FORMAT = "distlib.train.checkpoint/1"
_STEP = re.compile(r"^step-(\d{6,})$")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: the message names the file or the parameter, in one line."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint read back whole: its step, meta data, and the model's parameters and Adam moments, one flat
    vector per unit (as :func:`distlib.train.model.init_units` draws them)."""

    path: Path
    step: int
    meta: dict
    weights: list
    m: list
    v: list


def step_name(step: int) -> str:
    """The folder of step ``step``'s checkpoint.

    >>> step_name(4)
    'step-000004'
    """
    return f"step-{int(step):06d}"


def list_checkpoints(directory) -> list:
    """``[(step, path)]`` of the complete checkpoints in ``directory`` (a ``meta.json`` in a ``step-`` folder),
    oldest first; ``.partial-`` folders are never listed."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _STEP.match(entry.name)
        if match and (entry / "meta.json").is_file():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def newest_checkpoint(directory):
    """The path of the newest complete checkpoint in ``directory``, or ``None``."""
    found = list_checkpoints(directory)
    return found[-1][1] if found else None


def full_index(config: Config, unit: int, tp_rank: int, tp: int) -> np.ndarray:
    """Where each element of tensor-parallel rank ``tp_rank``'s part of unit ``unit`` sits in the whole unit.

    >>> c = Config(layers=1)
    >>> idx = full_index(c, 1, 1, 2)
    >>> len(idx) == unit_specs(c, 2)[1].size, len(set(idx.tolist())) == len(idx)
    (True, True)
    """
    spec = unit_specs(config)[unit]
    return shard_unit(spec, np.arange(spec.size, dtype=np.float64), tp_rank, tp).astype(np.int64)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pieces(layout, units: list, config: Config, tp_rank: int, tp: int) -> dict:
    """This rank's state, each range named by the whole model: ``pieces`` (one row per range: the model's
    unit, the tensor-parallel rank and degree that cut it, the range's start and stop in that cut) and ``w``,
    ``m``, ``v`` (the values of every range, end to end). A layout of parts (expert parallelism's
    :class:`~distlib.train.expert_parallel.ExpertLayout`) says where each part sits in the units
    (``saved_parts``)."""
    parts = layout.saved_parts() if hasattr(layout, "saved_parts") else [(layout, range(len(units)), None)]
    rows, values = [], {"w": [], "m": [], "v": []}
    for part, which, shifts in parts:  # with experts split (ep > 1): the non-expert units, then the experts
        ranges, w, m, v = part.state()
        offsets = part.offsets
        for a, b in ranges:
            k = 0
            while a < b:  # a range may span units (ZeRO-1's flat chunk)
                while offsets[k + 1] <= a:
                    k += 1
                stop, shift = min(b, offsets[k + 1]), 0 if shifts is None else shifts[k]
                rows.append((units[which[k]], tp_rank, tp, a - offsets[k] + shift, stop - offsets[k] + shift))
                a = stop
        for name, arr in zip(("w", "m", "v"), (w, m, v)):
            values[name].append(np.asarray(arr))
    pieces = np.array(rows, dtype=np.int64).reshape(-1, 5)
    return {"pieces": pieces, **{name: np.concatenate(arrs) for name, arrs in values.items()}}


def _meta(step, seed, ranks, run_layout, config, adam, files) -> dict:
    return {"format": FORMAT, "step": int(step), "seed": int(seed), "ranks": int(ranks),
            "layout": {"argv": run_layout.argv(), "words": run_layout.words()},
            "config": dataclasses.asdict(config), "adam": dataclasses.asdict(adam), "files": files}  # fmt: skip


def _commit(partial: Path, final: Path, meta: dict) -> None:
    """Write ``meta.json`` into the finished ``partial`` folder and rename it ``final`` (an existing ``final``
    is kept, and the partial folder removed)."""
    with open(partial / "meta.json", "w") as f:
        json.dump(meta, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    if final.exists():  # the same step written before (a resumed run passes it again): keep the first
        shutil.rmtree(partial)
    else:
        os.rename(partial, final)


def _write_shard(partial: Path, rank: int, pieces: dict) -> dict:
    """This rank's file in the partial folder, hashed as written; ``{"file", "bytes", "sha256", "pieces",
    "values"}``."""
    partial.mkdir(parents=True, exist_ok=True)
    name, digest, size = f"rank-{rank:05d}.bin", hashlib.sha256(), 0
    with open(partial / name, "wb") as f:
        for key, dtype in _ARRAYS:
            data = memoryview(np.ascontiguousarray(pieces[key], dtype=dtype)).cast("B")
            f.write(data)  # large writes and hash updates run without Python's lock
            digest.update(data)
            size += len(data)
    return {"file": name, "bytes": size, "sha256": digest.hexdigest(), "pieces": len(pieces["pieces"]),
            "values": len(pieces["w"])}


_ARRAYS = (("pieces", np.int64), ("w", np.float64), ("m", np.float64), ("v", np.float64))
"""A rank file's arrays, in their order in the file."""


def _read_shard(file: Path, entry: dict) -> dict:
    """The arrays of a rank file whose size and checksum were checked (:func:`check_files`)."""
    n, k = int(entry["values"]), int(entry["pieces"])
    flat = np.fromfile(file, dtype=np.uint8)
    pieces = flat[: 40 * k].view(np.int64).reshape(k, 5)
    values = flat[40 * k :].view(np.float64)
    return {"pieces": pieces, "w": values[:n], "m": values[n : 2 * n], "v": values[2 * n :]}


def save_checkpoint(comm, directory, step: int, *, layout, units: list, config: Config, seed: int, adam,
                    run_layout, tp_rank: int, after_write=None) -> Path:  # fmt: skip
    """Every rank of ``comm`` writes its shard of step ``step``; rank 0 commits the folder. Collective.

    Parameters
    ----------
    comm : Comm
        Every rank of the run (each writes a file).
    directory : path
        The run's checkpoint directory (made if missing).
    layout
        This rank's data-parallel layout (:mod:`distlib.train.data_parallel`).
    units : list of int
        The model's units this rank holds, in the layout's order.
    config, seed, adam
        What the run trains; written to ``meta.json``.
    run_layout : distlib.layout.Layout
        The parallel layout, written to ``meta.json``.
    tp_rank : int
        This rank's place in its tensor-parallel group.
    after_write : callable, optional
        Called once this rank's shard is written, before the commit (the trainer's ``--kill-during save``
        kills the rank there: a torn save).

    Returns
    -------
    Path
        The committed folder (an existing one of the same step is kept, not replaced).
    """
    directory = Path(directory)
    tag = comm.bcast_object(uuid.uuid4().hex[:12] if comm.rank == 0 else None)
    partial = directory / f".partial-{step_name(step)}-{tag}"
    mine = _write_shard(partial, comm.rank, _pieces(layout, units, config, tp_rank, run_layout.tp))
    if after_write is not None:
        after_write()
    files = comm.allgather_object(mine)
    final = directory / step_name(step)
    if comm.rank == 0:
        _commit(partial, final, _meta(step, seed, comm.size, run_layout, config, adam, files))
    comm.barrier()
    return final


class AsyncSaver:
    """Checkpoints written while the next steps run: each rank copies its state (the snapshot, the only part
    the step waits for) and a thread of its own writes the file; rank 0's thread commits the folder once every
    rank's file is there (each rank leaves a small ``rank-N.json`` with its file's size and checksum beside it,
    so the commit needs no message between the ranks' threads). One save at a time: a save waits for the one
    before it to be written. Call :meth:`close` at the end of the run, so that the last one is committed.

    Parameters
    ----------
    comm : Comm
        Every rank of the run (collective once, here, to agree on a name for the run's partial folders).
    directory : path
    wait : float
        Seconds rank 0's thread waits for the other ranks' files before it gives the save up (the folder then
        stays partial, as after a crash).
    """

    def __init__(self, comm, directory, *, wait: float = 300.0):
        from ..engines.tagged import Background

        self.rank, self.size, self.directory, self.wait = comm.rank, comm.size, Path(directory), wait
        self.tag = comm.bcast_object(uuid.uuid4().hex[:12] if comm.rank == 0 else None)
        self._thread, self._last = Background("distlib-checkpoint"), None

    def save(self, step: int, *, layout, units: list, config: Config, seed: int, adam, run_layout, tp_rank: int):
        """Snapshot this rank's state now; write and commit it in the background. Not collective."""
        if self._last is not None:
            self._last.wait()  # one save in flight: its memory is the snapshot's
        pieces = _pieces(layout, units, config, tp_rank, run_layout.tp)  # copies: the snapshot
        meta = _meta(step, seed, self.size, run_layout, config, adam, files=None)
        self._last = self._thread.start(self._write, step, pieces, meta, what=f"checkpoint {step}")

    def _write(self, step: int, pieces: dict, meta: dict) -> None:
        partial = self.directory / f".partial-{step_name(step)}-{self.tag}"
        mine = _write_shard(partial, self.rank, pieces)
        note = partial / f"rank-{self.rank:05d}.json"
        note.with_suffix(".tmp").write_text(json.dumps(mine))
        os.replace(note.with_suffix(".tmp"), note)  # whole or absent
        if self.rank != 0:
            return
        import time

        notes = [partial / f"rank-{r:05d}.json" for r in range(self.size)]
        deadline = time.monotonic() + self.wait
        while not all(n.is_file() for n in notes):
            if time.monotonic() > deadline:
                return  # a rank never wrote: the folder stays partial, never read
            time.sleep(0.01)
        meta["files"] = [json.loads(n.read_text()) for n in notes]
        for n in notes:
            n.unlink()
        _commit(partial, self.directory / step_name(step), meta)

    def close(self) -> None:
        """Wait for the last save to be written (and, on rank 0, committed)."""
        if self._last is not None:
            self._last.wait()
        self._thread.close()


def read_meta(path) -> dict:
    """``meta.json`` of the checkpoint folder ``path``, checked for its format; ``CheckpointError`` naming it."""
    path = Path(path)
    try:
        meta = json.loads((path / "meta.json").read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path / 'meta.json'}: not a readable checkpoint meta file ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path / 'meta.json'}: not a {FORMAT} checkpoint")
    return meta


def check_config(meta: dict, config: Config, path) -> None:
    """``CheckpointError`` naming the first model size in which the checkpoint differs from ``config``."""
    for name, value in dataclasses.asdict(config).items():
        if meta["config"].get(name) != value:
            raise CheckpointError(f"{path}: the checkpoint is of a model with --{name} {meta['config'].get(name)}, "
                                  f"this run's has --{name} {value}")  # fmt: skip


def check_files(meta: dict, path) -> None:
    """``CheckpointError`` naming the first rank file that is missing, truncated or altered."""
    path = Path(path)
    for entry in meta["files"]:
        file = path / entry["file"]
        if not file.is_file():
            raise CheckpointError(f"{file}: missing from the checkpoint")
        size = file.stat().st_size
        if size != entry["bytes"]:
            raise CheckpointError(f"{file}: {size} bytes, the checkpoint wrote {entry['bytes']} (truncated?)")
        if _sha256(file) != entry["sha256"]:
            raise CheckpointError(f"{file}: its SHA-256 is not the one the checkpoint wrote (altered)")


def read_checkpoint(path, config: Config) -> Checkpoint:
    """The checkpoint in folder ``path``, whole, after every check (module docstring).

    Raises
    ------
    CheckpointError
        One line naming the file or the model size that does not fit.
    """
    path = Path(path)
    meta = read_meta(path)
    check_config(meta, config, path)
    check_files(meta, path)
    specs = unit_specs(config)
    whole = {name: [np.full(spec.size, np.nan) for spec in specs] for name in ("w", "m", "v")}
    maps = {}
    for entry in meta["files"]:
        data, at = _read_shard(path / entry["file"], entry), 0
        for unit, tp_rank, tp, start, stop in data["pieces"].tolist():
            key = (unit, tp_rank, tp)
            if key not in maps:
                maps[key] = full_index(config, unit, tp_rank, tp)
            index = maps[key][start:stop]
            for name in ("w", "m", "v"):
                whole[name][unit][index] = data[name][at : at + stop - start]
            at += stop - start
    for name, units in whole.items():
        for u, arr in enumerate(units):
            if np.isnan(arr).any():
                raise CheckpointError(f"{path}: {int(np.isnan(arr).sum())} values of unit {specs[u].name} "
                                      "were written by no rank")  # fmt: skip
    return Checkpoint(path=path, step=int(meta["step"]), meta=meta, weights=whole["w"], m=whole["m"], v=whole["v"])
