"""Data-parallel training over MPI: a two-layer network in NumPy.

::

    mpiexec -n 4 python -m mpi4py -m distlib.examples.mpi_train --algorithm ring

The recipe every data-parallel framework follows, with nothing hidden:

1. rank 0 initialises the parameters and **broadcasts** them, so every
   replica starts identical;
2. each rank holds its own shard of the data (rows ``r, r + p, ...``);
3. every step, each rank computes the gradient of the loss on its own
   mini-batch, packed into **one flat buffer** (one "bucket");
4. one **all-reduce** (the book's ring by default) sums the buffers;
   dividing by ``p`` gives the gradient of the global batch of
   ``p * batch`` examples;
5. every rank applies the same update to the same parameters.

The model is a 2-layer perceptron (tanh hidden layer, logistic output)
learning a nonlinear rule on synthetic data. At the end every rank hashes
its parameters; an all-gather of the hashes shows they are bit-for-bit
identical, and rank 0 checks that the loss went down. Rank 0 prints the
story as it goes and hands the figures back typed, as one
:class:`TrainReport` line (:mod:`distlib.engines.report`).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass

import numpy as np

from distlib.collectives import ALLREDUCE_ALGORITHMS

__all__ = ["make_data", "MLP", "TrainReport", "ALGORITHM_CHOICES", "headline", "main"]

#: ``--algorithm``: the book's all-reduces, the engine's own, or the tuner's pick.
ALGORITHM_CHOICES = ALLREDUCE_ALGORITHMS + ("builtin", "auto")


@dataclass(frozen=True)
class TrainReport:
    """What rank 0 of :func:`main` hands back.

    ``steps``, ``losses`` and ``accuracies`` are the global loss and
    accuracy at the steps it measured them (step 0 first, the last step
    last); ``hashes`` every rank's parameter hash after training.
    """

    p: int
    params: int
    global_batch: int
    algorithm: str
    steps: list[int]
    losses: list[float]
    accuracies: list[float]
    hashes: list[str]

    @property
    def identical(self) -> bool:
        """Every rank ended with the same parameters, bit for bit."""
        return len(set(self.hashes)) == 1

    @property
    def loss_decreased(self) -> bool:
        return self.losses[-1] < self.losses[0]

    def headline(self) -> str:
        """The run's first line, as rank 0 prints it."""
        return headline(self.p, self.params, self.global_batch, self.algorithm)


def headline(p: int, params: int, global_batch: int, algorithm: str) -> str:
    """The first line rank 0 prints.

    >>> headline(4, 385, 128, "ring")
    '4 ranks, 385 parameters, global batch 128, all-reduce: ring'
    """
    return f"{p} ranks, {params} parameters, global batch {global_batch}, all-reduce: {algorithm}"


def make_data(n: int, d: int, seed: int = 0):
    """Synthetic binary classification: the label is the sign of a random 2-layer teacher."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    teacher_w1 = rng.standard_normal((d, 8))
    teacher_w2 = rng.standard_normal(8)
    score = np.tanh(X @ teacher_w1) @ teacher_w2
    y = (score > np.median(score)).astype(np.float64)  # balanced classes
    return X, y


class MLP:
    """Parameters of a d -> h -> 1 network, stored in one flat vector ``theta``."""

    def __init__(self, d: int, h: int):
        self.shapes = {"W1": (d, h), "b1": (h,), "W2": (h,), "b2": (1,)}
        self.size = sum(int(np.prod(s)) for s in self.shapes.values())
        self.theta = np.zeros(self.size)
        self.grad = np.zeros(self.size)

    def views(self, flat):
        out, start = {}, 0
        for name, shape in self.shapes.items():
            k = int(np.prod(shape))
            out[name] = flat[start : start + k].reshape(shape)
            start += k
        return out

    def init(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        p = self.views(self.theta)
        d, h = self.shapes["W1"]
        p["W1"][...] = rng.standard_normal((d, h)) / np.sqrt(d)
        p["W2"][...] = rng.standard_normal(h) / np.sqrt(h)

    def loss_and_grad(self, X, y):
        """Mean binary cross-entropy on (X, y); the gradient goes into ``self.grad``."""
        p, g = self.views(self.theta), self.views(self.grad)
        hidden = np.tanh(X @ p["W1"] + p["b1"])
        logits = hidden @ p["W2"] + p["b2"][0]
        prob = 1.0 / (1.0 + np.exp(-logits))
        eps = 1e-12
        loss = -np.mean(y * np.log(prob + eps) + (1 - y) * np.log(1 - prob + eps))
        dlogits = (prob - y) / len(y)
        g["W2"][...] = hidden.T @ dlogits
        g["b2"][...] = dlogits.sum()
        dhidden = np.outer(dlogits, p["W2"]) * (1 - hidden**2)
        g["W1"][...] = X.T @ dhidden
        g["b1"][...] = dhidden.sum(axis=0)
        return loss

    def loss(self, X, y) -> tuple:
        p = self.views(self.theta)
        prob = 1.0 / (1.0 + np.exp(-(np.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"][0])))
        eps = 1e-12
        losses = -(y * np.log(prob + eps) + (1 - y) * np.log(1 - prob + eps))
        return float(losses.sum()), int(np.sum((prob > 0.5) == (y > 0.5)))


def main(argv=None) -> None:
    from distlib.engines import algorithms
    from distlib.engines.mpi import world

    parser = argparse.ArgumentParser(prog="python -m distlib.examples.mpi_train")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32, help="examples per rank per step")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--algorithm", default="ring", choices=ALGORITHM_CHOICES)
    parser.add_argument("--examples", type=int, default=4096)
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)

    comm = world()
    rank, p = comm.rank, comm.size
    say = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)

    X, y = make_data(ns.examples, 10)
    X_mine, y_mine = X[rank::p], y[rank::p]  # this rank's shard
    model = MLP(X.shape[1], ns.hidden)
    if rank == 0:
        model.init(seed=1)
    algorithms.broadcast(comm, model.theta, root=0)  # 1. identical start
    log = {"steps": [], "losses": [], "accuracies": []}

    def record(step, loss, acc):
        log["steps"].append(step)
        log["losses"].append(float(loss))
        log["accuracies"].append(float(acc))
        say(f"step {step:4d}  loss {loss:.4f}  accuracy {acc:.3f}")

    say(headline(p, model.size, p * ns.batch, ns.algorithm))

    def global_loss():
        stats = np.array([*model.loss(X_mine, y_mine), len(y_mine)], dtype=np.float64)
        comm.allreduce(stats)  # built-in sum of (loss, correct, count)
        return stats[0] / stats[2], stats[1] / stats[2]

    first, acc0 = global_loss()
    record(0, first, acc0)
    rng = np.random.default_rng(100 + rank)
    for step in range(1, ns.steps + 1):
        idx = rng.integers(0, len(y_mine), ns.batch)
        model.loss_and_grad(X_mine[idx], y_mine[idx])  # 3. local gradient, one bucket
        algorithms.allreduce(comm, model.grad, algorithm=ns.algorithm)  # 4. sum over ranks
        model.grad /= p
        model.theta -= ns.lr * model.grad  # 5. the same update everywhere
        if step % max(1, ns.steps // 6) == 0 or step == ns.steps:
            record(step, *global_loss())
    last, acc = global_loss()

    digest = hashlib.sha256(model.theta.tobytes()).hexdigest()[:16]
    digests = comm.allgather_object(digest)
    identical = len(set(digests)) == 1
    say(f"parameter hashes by rank: {digests}")
    say(f"parameters identical on all ranks: {identical}")
    say(f"loss decreased: {first:.4f} -> {last:.4f}: {last < first}")
    if rank == 0:
        from distlib.engines.report import emit

        emit(TrainReport(p, model.size, p * ns.batch, ns.algorithm, log["steps"], log["losses"], log["accuracies"],
                         list(digests)))  # fmt: skip
    if not identical or not last < first:
        sys.exit(1)


if __name__ == "__main__":
    main()
