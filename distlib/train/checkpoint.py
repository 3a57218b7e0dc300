"""Sharded checkpoints of the trainer: written by every rank, complete or absent, read back at any layout.

A checkpoint of step ``N`` is a folder ``step-0000N`` in the run's
checkpoint directory:

* one file per rank, ``rank-00003.npz``: the pieces of the model state the
  rank answers for (:meth:`distlib.train.data_parallel._Layout.state`: its
  chunk of the parameters and of Adam's two moments, where its ZeRO stage
  shards them; DDP's replicas each write a chunk of what they all hold),
  each element named by its place in the *whole* model (``unit``: the
  model's unit, ``index``: the position in that unit's flat vector before
  tensor parallelism cut it), so that no layout is needed to read it;
* ``meta.json``: the format, the step, the seed, the layout that wrote it
  (its flags and words), the model's config, Adam's hyper-parameters, and
  each rank file's bytes and SHA-256.

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
           "read_meta", "read_checkpoint", "save_checkpoint", "full_index"]

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
    """This rank's state as arrays named by the whole model: ``unit``, ``index``, ``w``, ``m``, ``v``."""
    ranges, w, m, v = layout.state()
    maps = [full_index(config, u, tp_rank, tp) for u in units]
    unit_ids, index = [], []
    offsets = layout.offsets
    for a, b in ranges:
        k = 0
        while a < b:  # a range may span units (ZeRO-1's flat chunk)
            while offsets[k + 1] <= a:
                k += 1
            stop = min(b, offsets[k + 1])
            unit_ids.append(np.full(stop - a, units[k], dtype=np.int32))
            index.append(maps[k][a - offsets[k] : stop - offsets[k]])
            a = stop
    cat = lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype)  # noqa: E731
    return {"unit": cat(unit_ids, np.int32), "index": cat(index, np.int64), "w": w, "m": m, "v": v}


def save_checkpoint(comm, directory, step: int, *, layout, units: list, config: Config, seed: int, adam,
                    run_layout, tp_rank: int) -> Path:  # fmt: skip
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

    Returns
    -------
    Path
        The committed folder (an existing one of the same step is kept, not replaced).
    """
    directory = Path(directory)
    tag = comm.bcast_object(uuid.uuid4().hex[:12] if comm.rank == 0 else None)
    partial = directory / f".partial-{step_name(step)}-{tag}"
    partial.mkdir(parents=True, exist_ok=True)
    name = f"rank-{comm.rank:05d}.npz"
    np.savez(partial / name, **_pieces(layout, units, config, tp_rank, run_layout.tp))
    mine = {"file": name, "bytes": (partial / name).stat().st_size, "sha256": _sha256(partial / name)}
    files = comm.allgather_object(mine)
    final = directory / step_name(step)
    if comm.rank == 0:
        meta = {"format": FORMAT, "step": int(step), "seed": int(seed), "ranks": comm.size,
                "layout": {"argv": run_layout.argv(), "words": run_layout.words()},
                "config": dataclasses.asdict(config), "adam": dataclasses.asdict(adam), "files": files}  # fmt: skip
        with open(partial / "meta.json", "w") as f:
            json.dump(meta, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        if final.exists():  # the same step written before (a resumed run passes it again): keep the first
            shutil.rmtree(partial)
        else:
            os.rename(partial, final)
    comm.barrier()
    return final


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
    for entry in meta["files"]:
        with np.load(path / entry["file"]) as data:
            unit, index = data["unit"], data["index"]
            for name in ("w", "m", "v"):
                values = data[name]
                for u in np.unique(unit):
                    sel = unit == u
                    whole[name][u][index[sel]] = values[sel]
    for name, units in whole.items():
        for u, arr in enumerate(units):
            if np.isnan(arr).any():
                raise CheckpointError(f"{path}: {int(np.isnan(arr).sum())} values of unit {specs[u].name} "
                                      "were written by no rank")  # fmt: skip
    return Checkpoint(path=path, step=int(meta["step"]), meta=meta, weights=whole["w"], m=whole["m"], v=whole["v"])
