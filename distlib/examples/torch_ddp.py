"""PyTorch DistributedDataParallel on gloo: data-parallel training on CPU processes.

From a notebook or a shell (the module launches itself when it is not a rank)::

    python -m distlib.examples.torch_ddp -n 2
    distlib.engines.run_torch("distlib.examples.torch_ddp:main", 2)
    sudo python -m distlib.examples.torch_ddp -n 4 --nodes 2 --link-gbit 1   # torchrun on a mini cluster

What happens on every rank:

1. Each rank builds the model with a *different* random seed; wrapping it
   in ``DistributedDataParallel`` broadcasts rank 0's parameters, so the
   replicas start identical anyway (the first check printed).
2. Each rank trains on its own shard of the data. During ``backward()``,
   DDP's hooks all-reduce the gradients in buckets (averaging them) while
   the rest of the backward pass is still running.
3. After training, a hash of every rank's parameters is all-gathered:
   identical hashes mean identical models. Rank 0 also checks the loss
   went down, and hands every figure back typed, as one
   :class:`DDPTraining` line (:mod:`distlib.engines.report`)::

       result = distlib.engines.run_torch("distlib.examples.torch_ddp:main", 2)
       training = distlib.engines.report.read(result, DDPTraining)

The data and the 2-layer network are those of
:mod:`distlib.examples.mpi_train`, so the two chapters train the same thing
with MPI by hand and with DDP.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from dataclasses import dataclass

import numpy as np

__all__ = ["DDPTraining", "train", "main"]


@dataclass(frozen=True)
class DDPTraining:
    """What rank 0 of :func:`train` hands back: every rank's parameter hash at three moments, and the loss.

    ``hashes_before``: each rank's own random initialisation (all differ);
    ``hashes_wrapped``: after ``DistributedDataParallel(model)`` broadcast
    rank 0's; ``hashes_after``: after training on different data.
    """

    p: int
    engine: str
    steps: int
    hashes_before: list[str]
    hashes_wrapped: list[str]
    hashes_after: list[str]
    first_loss: float
    last_loss: float

    @property
    def identical(self) -> bool:
        """Every rank ended with the same parameters."""
        return len(set(self.hashes_after)) == 1

    @property
    def loss_decreased(self) -> bool:
        return self.last_loss < self.first_loss


def _param_hash(model) -> str:
    flat = np.concatenate([p.detach().cpu().numpy().ravel() for p in model.parameters()])
    return hashlib.sha256(flat.tobytes()).hexdigest()[:16]


def train(steps: int = 150, batch: int = 32, lr: float = 0.5) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from distlib.engines.torch_dist import init
    from distlib.examples.mpi_train import make_data

    torch.set_num_threads(1)  # the ranks already fill the cores
    comm = init()
    rank, p = comm.rank, comm.size
    say = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)

    torch.manual_seed(rank)  # deliberately different on every rank...
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)).double()
    before = comm.allgather_object(_param_hash(model))
    ddp = DDP(model)  # ...DDP broadcasts rank 0's parameters at construction
    after = comm.allgather_object(_param_hash(model))
    say(f"{p} ranks ({comm.engine}); parameter hashes before DDP: {before}")
    say(f"after wrapping in DDP (rank 0's broadcast): {after}")

    X, y = make_data(4096, 10)
    X_mine = torch.from_numpy(X[rank::p])
    y_mine = torch.from_numpy(y[rank::p])
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()

    def global_loss() -> float:
        with torch.no_grad():
            total = torch.nn.functional.binary_cross_entropy_with_logits(
                model(X_mine).squeeze(-1), y_mine, reduction="sum"
            )
            stats = torch.stack([total, torch.tensor(float(len(y_mine)), dtype=torch.float64)])
            dist.all_reduce(stats)
            return float(stats[0] / stats[1])

    first = global_loss()
    say(f"step {0:4d}  loss {first:.4f}")
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(y_mine), (batch,), generator=g)
        opt.zero_grad()
        loss = loss_fn(ddp(X_mine[idx]).squeeze(-1), y_mine[idx])
        loss.backward()  # gradients are all-reduced (averaged) here, bucket by bucket
        opt.step()
        if step % max(1, steps // 5) == 0:
            say(f"step {step:4d}  loss {global_loss():.4f}")
    last = global_loss()
    hashes = comm.allgather_object(_param_hash(model))
    identical = len(set(hashes)) == 1
    say(f"parameter hashes by rank after training: {hashes}")
    say(f"parameters identical on all ranks: {identical}")
    say(f"loss decreased: {first:.4f} -> {last:.4f}: {last < first}")
    if rank == 0:
        from distlib.engines.report import emit

        emit(DDPTraining(p, comm.engine, steps, list(before), list(after), list(hashes), first, last))
    if not (identical and last < first and len(set(after)) == 1):
        sys.exit(1)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m distlib.examples.torch_ddp")
    parser.add_argument("-n", type=int, default=2, help="ranks, when launching (default 2)")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--nodes", type=int, default=None,
                        help="run under torchrun on a mini cluster of this many nodes (root; -n spread evenly)")
    parser.add_argument("--link-gbit", type=float, default=None, help="with --nodes: link rate, Gbit/s per direction")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if "RANK" in os.environ:  # started by run_torch / torchrun: be a rank
        train(steps=ns.steps)
        return
    from distlib.engines.launch import run_torch, run_torchrun

    args = ["--steps", str(ns.steps)]
    from distlib.engines.report import strip

    if ns.nodes is None:
        print(strip(str(run_torch("distlib.examples.torch_ddp:main", ns.n, args=args, timeout=ns.timeout))))
        return
    from distlib.minicluster import mini_cluster

    with mini_cluster(ns.nodes, link_gbit=ns.link_gbit) as cluster:
        result = run_torchrun("distlib.examples.torch_ddp", ns.n, args=args, timeout=ns.timeout, cluster=cluster)
        print(strip(str(result)))
        print(f"ranks ran on: {result.nodes}; bytes over node0's link: {cluster.link_bytes(0)}")


if __name__ == "__main__":
    main()
