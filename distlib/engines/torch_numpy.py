"""NumPy buffers moved by torch.distributed: the gloo engine for code written over NumPy arrays.

:class:`~distlib.engines.torch_dist.TorchComm` takes ``torch.Tensor``
buffers. Code whose buffers are NumPy arrays (the book's trainer,
:mod:`distlib.train`, whose model and layouts are NumPy) runs on gloo
through :class:`NumpyTorchComm` instead: every message is the array's own
memory seen as a tensor (``torch.from_numpy``, no copy), sent and
received by ``torch.distributed``'s point-to-point calls; scratch space,
copies and reductions are NumPy's (the :class:`~distlib.engines.comm.Comm`
defaults). The book's collectives (:mod:`distlib.engines.algorithms`)
then run over gloo exactly as over MPI, and move the same bytes.

gloo only: NCCL moves CUDA tensors, which NumPy cannot hold.
"""

from __future__ import annotations

import numpy as np

from .comm import Comm, check_op
from .progress import in_comm
from .torch_dist import TorchComm, init, import_torch

__all__ = ["NumpyTorchComm", "numpy_world"]


class NumpyTorchComm(TorchComm):
    """A :class:`TorchComm` of the default (gloo) group whose buffers are 1-D contiguous NumPy arrays.

    Raises
    ------
    RuntimeError
        torch.distributed is not initialised, or its backend is not gloo.
    """

    def __init__(self):
        super().__init__()
        if self.engine != "gloo":
            raise RuntimeError(f"NumpyTorchComm needs the gloo backend (NumPy buffers live on the host), "
                               f"got {self.engine}")  # fmt: skip

    def _tensor(self, buf):
        return self.torch.from_numpy(Comm.flat(self, buf))  # the same memory: what arrives lands in buf

    def isend(self, buf, dest, *, tag=0):
        return super().isend(self._tensor(buf), dest, tag=tag)

    def irecv(self, buf, source, *, tag=0):
        return super().irecv(self._tensor(buf), source, tag=tag)

    @in_comm("allreduce")
    def allreduce(self, buf, *, op="sum"):
        x = self._tensor(buf)
        if x.numel():
            self.dist.all_reduce(x, op=self._ops[check_op(op)])
        return buf

    @in_comm("allgather")
    def builtin_allgather(self, buf, counts):
        x = self._tensor(buf)
        width = max(max(counts), 1)
        pieces = [self.torch.empty(width, dtype=x.dtype) for _ in range(self.size)]
        self.dist.all_gather(pieces, self._padded(x, width))
        return np.concatenate([piece[:c].numpy() for piece, c in zip(pieces, counts)])

    # Buffers, scratch, copies and reductions: NumPy's, as Comm has them.
    empty = Comm.empty
    copy = Comm.copy
    from_numpy = Comm.from_numpy
    to_numpy = Comm.to_numpy
    combine = Comm.combine
    flat = Comm.flat
    itemsize = Comm.itemsize

    def synchronize(self):
        return None


def numpy_world() -> NumpyTorchComm:
    """The default group as a :class:`NumpyTorchComm`, joining it first (gloo) if needed.

    Under :func:`distlib.engines.run_torch` the environment says where and
    how to meet (:func:`distlib.engines.torch_dist.init`).
    """
    _, dist = import_torch()
    if not dist.is_initialized():
        init("gloo")
    return NumpyTorchComm()
