"""The torch.distributed engine: :class:`~distlib.engines.comm.Comm` over gloo or NCCL.

gloo runs on CPU tensors (and stages CUDA tensors through the host for
point-to-point messages); NCCL runs on CUDA tensors, one GPU per rank.
torch is imported only when this module's functions are first used; if it
is missing the error says what to install.

Processes are started by :func:`distlib.engines.run_torch` (or
``torchrun``); :func:`init` reads what they were given from the
environment: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and either
``DISTLIB_INIT_METHOD`` (``run_torch`` uses a ``file://`` rendezvous, so no
TCP port is opened for it) or ``MASTER_ADDR``/``MASTER_PORT``. A task that
Slurm's ``srun`` started (no ``RANK``, but ``SLURM_PROCID``) takes its rank,
the world's size and its local rank from ``SLURM_PROCID``, ``SLURM_NTASKS``
and ``SLURM_LOCALID``; the batch script exports ``MASTER_ADDR`` (the job's
first node, where task 0 runs) and ``MASTER_PORT``. Every
collective has a time limit (``timeout=``, default ``DISTLIB_TIMEOUT`` or
60 s): a rank that dies or hangs turns into an error on the others instead
of a silent wait.
"""

from __future__ import annotations

import datetime
import os

from .._check import check_choice, check_real
from .comm import Comm, Request, check_op
from .progress import in_comm

__all__ = ["TorchComm", "init", "world", "import_torch", "cuda_available", "BACKENDS"]

BACKENDS = ("gloo", "nccl")

_INSTALL = "the torch.distributed engine needs PyTorch: pip install torch"


def import_torch():
    """Return ``(torch, torch.distributed)``, or raise ImportError saying what to install."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"{_INSTALL} ({exc})") from exc
    if not dist.is_available():  # pragma: no cover
        raise ImportError(f"this PyTorch build has no torch.distributed; {_INSTALL}")
    return torch, dist


def cuda_available() -> bool:
    """True when torch can see at least one CUDA device."""
    torch, _ = import_torch()
    return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)


def init(backend: str | None = None, *, timeout: float | None = None) -> "TorchComm":
    """Join the process group described by the environment; return its :class:`TorchComm`.

    Parameters
    ----------
    backend : {"gloo", "nccl"}, optional
        Default: ``DISTLIB_BACKEND`` if set, else ``"gloo"``.
    timeout : float, optional
        Seconds any collective may wait before it fails (default:
        ``DISTLIB_TIMEOUT`` or 60).

    Raises
    ------
    RuntimeError
        If ``backend="nccl"`` and no CUDA device is visible.
    """
    torch, dist = import_torch()
    backend = check_choice("backend", backend or os.environ.get("DISTLIB_BACKEND", "gloo"), BACKENDS)
    if timeout is None:
        timeout = float(os.environ.get("DISTLIB_TIMEOUT", "60"))
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    if dist.is_initialized():
        return TorchComm()
    rank, world_size, local_rank = _place()
    from .progress import note, start

    start(rank)  # a heartbeat for the launcher's watchdog, if it asked for one
    note("init_process_group (joining the other ranks)")
    kwargs = {}
    if backend == "nccl":
        if not cuda_available():
            raise RuntimeError("backend='nccl' needs a CUDA GPU and none is visible; use backend='gloo'")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        kwargs["device_id"] = device
    init_method = os.environ.get("DISTLIB_INIT_METHOD", "env://")
    wait = datetime.timedelta(seconds=timeout)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if attempt is not None and init_method == "env://":
        # Under torchrun the store outlives a restart, and the ranks of the first attempt left their addresses
        # in it: a restarted rank could read its peer's old address before the peer writes its new one and fail
        # to connect ("connection refused"). Each attempt's keys get a prefix of their own.
        store, rank, world_size = next(dist.rendezvous(init_method, rank, world_size, timeout=wait))
        kwargs["store"] = dist.PrefixStore(f"/distlib/attempt_{attempt}", store)
        init_method = None
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=wait,
        **kwargs,
    )
    note("running (after init_process_group)")
    return TorchComm()


def _place(env=None) -> tuple:
    """``(rank, world_size, local_rank)`` from the environment: torch's names (``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``, as ``run_torch`` and ``torchrun`` set them), else Slurm's for a task ``srun`` started.

    >>> _place({"RANK": "1", "WORLD_SIZE": "4"})
    (1, 4, 1)
    >>> _place({"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1"})
    (3, 4, 1)
    >>> _place({})
    (0, 1, 0)
    """
    env = os.environ if env is None else env
    if "RANK" not in env and "SLURM_PROCID" in env:
        names = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")
    else:
        names = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
    rank = int(env.get(names[0], "0"))
    return rank, int(env.get(names[1], "1")), int(env.get(names[2], str(rank)))


def world() -> "TorchComm":
    """The :class:`TorchComm` of the default group, joining it first if needed."""
    _, dist = import_torch()
    return TorchComm() if dist.is_initialized() else init()


class _Work(Request):
    __slots__ = ("works", "after")

    def __init__(self, works, after=None):
        self.works = works
        self.after = after

    @in_comm("wait")
    def wait(self) -> None:
        for w in self.works:
            w.wait()
        if self.after is not None:
            self.after()


class TorchComm(Comm):
    """A :class:`Comm` over the default ``torch.distributed`` process group.

    ``engine`` is the backend's name (``"gloo"`` or ``"nccl"``). Buffers are
    1-D contiguous tensors; with NCCL they live on this rank's GPU.
    """

    def __init__(self):
        self.torch, self.dist = import_torch()
        if not self.dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised; call distlib.engines.torch_dist.init() first")
        self.rank = self.dist.get_rank()
        self.size = self.dist.get_world_size()
        self.engine = str(self.dist.get_backend()).lower()
        ReduceOp = self.dist.ReduceOp
        self._ops = {"sum": ReduceOp.SUM, "max": ReduceOp.MAX, "min": ReduceOp.MIN}
        if self.engine == "nccl":
            self.device = self.torch.device("cuda", self.torch.cuda.current_device())
        else:
            self.device = self.torch.device("cpu")

    # -- point to point (empty messages are skipped by both ends) -------------
    def _staged(self, buf) -> bool:
        # gloo moves CPU tensors only; CUDA tensors go through a host copy.
        return self.engine != "nccl" and buf.is_cuda

    @in_comm("send")
    def send(self, buf, dest, *, tag=0):
        self.isend(buf, dest, tag=tag).wait()

    @in_comm("recv")
    def recv(self, buf, source, *, tag=0):
        self.irecv(buf, source, tag=tag).wait()

    def isend(self, buf, dest, *, tag=0):
        if buf.numel() == 0:
            return _Work([])
        if self._staged(buf):
            buf = buf.cpu()
        return _Work([self.dist.isend(buf, dest, tag=tag)])

    def irecv(self, buf, source, *, tag=0):
        if buf.numel() == 0:
            return _Work([])
        if self._staged(buf):
            host = self.torch.empty(buf.shape, dtype=buf.dtype)
            return _Work([self.dist.irecv(host, source, tag=tag)], after=lambda: buf.copy_(host))
        return _Work([self.dist.irecv(buf, source, tag=tag)])

    @in_comm("sendrecv")
    def sendrecv(self, sendbuf, dest, recvbuf, source, *, tag=0):
        if self.engine != "nccl":
            return super().sendrecv(sendbuf, dest, recvbuf, source, tag=tag)
        # NCCL: post both halves as one group, so neither waits for the other.
        P2POp = self.dist.P2POp
        ops = []
        if recvbuf is not None and recvbuf.numel():
            ops.append(P2POp(self.dist.irecv, recvbuf, source))
        if sendbuf is not None and sendbuf.numel():
            ops.append(P2POp(self.dist.isend, sendbuf, dest))
        if ops:
            for w in self.dist.batch_isend_irecv(ops):
                w.wait()

    # -- built-ins --------------------------------------------------------------
    @in_comm("barrier")
    def barrier(self):
        if self.engine == "nccl":
            self.dist.barrier(device_ids=[self.device.index])
        else:
            self.dist.barrier()

    @in_comm("allreduce")
    def allreduce(self, buf, *, op="sum"):
        x = self.flat(buf)
        if x.numel():
            self.dist.all_reduce(x, op=self._ops[check_op(op)])
        return buf

    @in_comm("bcast_object")
    def bcast_object(self, obj, *, root=0):
        box = [obj]
        self.dist.broadcast_object_list(box, src=root)
        return box[0]

    @in_comm("allgather_object")
    def allgather_object(self, obj):
        out = [None] * self.size
        self.dist.all_gather_object(out, obj)
        return out

    def _padded(self, x, width):
        padded = self.torch.zeros(width, dtype=x.dtype, device=x.device)
        padded[: x.numel()] = x
        return padded

    @in_comm("allgather")
    def builtin_allgather(self, buf, counts):
        x = self.flat(buf)
        width = max(max(counts), 1)
        pieces = [self.torch.empty(width, dtype=x.dtype, device=x.device) for _ in range(self.size)]
        self.dist.all_gather(pieces, self._padded(x, width))
        return self.torch.cat([piece[:c] for piece, c in zip(pieces, counts)])

    @in_comm("reduce_scatter")
    def builtin_reduce_scatter(self, buf, counts, *, op="sum"):
        if self.engine != "nccl":
            raise NotImplementedError("gloo has no reduce-scatter in torch.distributed")
        x = self.flat(buf)
        width = max(max(counts), 1)
        starts = [sum(counts[:r]) for r in range(self.size)]
        inputs = [self._padded(x[s : s + c], width) for s, c in zip(starts, counts)]
        out = self.torch.empty(width, dtype=x.dtype, device=x.device)
        self.dist.reduce_scatter(out, inputs, op=self._ops[check_op(op)])
        return out[: counts[self.rank]].clone()

    # -- buffers ----------------------------------------------------------------
    def empty(self, n, like):
        return self.torch.empty(int(n), dtype=like.dtype, device=like.device)

    def copy(self, buf):
        return buf.clone()

    def from_numpy(self, array):
        import numpy as np

        return self.torch.from_numpy(np.array(array, copy=True)).to(self.device)

    def to_numpy(self, buf):
        return buf.detach().cpu().numpy()

    def combine(self, dst, src, op="sum"):
        if op == "sum":
            dst.add_(src)
        elif op == "max":
            self.torch.maximum(dst, src, out=dst)
        else:
            self.torch.minimum(dst, src, out=dst)

    def flat(self, buf):
        if not isinstance(buf, self.torch.Tensor):
            raise TypeError(f"buf must be a torch.Tensor for the {self.engine} engine, got {type(buf).__name__}")
        if not buf.is_contiguous():
            raise ValueError("buf must be contiguous (the collectives work in place on a 1-D view)")
        return buf.view(-1)

    def itemsize(self, buf) -> int:
        return int(buf.element_size())

    def synchronize(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)
