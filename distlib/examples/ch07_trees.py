"""NCCL's double binary tree: built the way NCCL builds it, and priced with the alpha-beta model.

::

    python -m distlib.examples.ch07_trees -p 8

Since version 2.4, NCCL runs an all-reduce either around rings or along a
**double binary tree** (NVIDIA developer blog, S. Jeaugey, "Massively Scale
Your Deep Learning Training with NCCL 2.4", 2019). Two binary trees span the
same ranks; each carries half of the buffer. In a binary tree about half of
the ranks are leaves, so the second tree is built to make the first tree's
leaves its inner nodes: a mirror image of the first tree (ranks ``r`` and
``p - 1 - r`` swap) when ``p`` is even, the first tree shifted by one rank
when ``p`` is odd. :func:`btree` and :func:`double_binary_tree` follow
``ncclGetBtree`` and ``ncclGetDtree`` in NCCL's ``src/graph/trees.cc``.
(NCCL builds these trees over *nodes*; inside a node the GPUs form a chain.)

The all-reduce sends each half up its tree (reducing) and back down
(broadcasting), cut into many small pieces that follow each other like a
pipeline. In the limit of many pieces:

* **latency**: the first piece climbs the deeper tree and comes back down:
  ``A = 2 * depth`` message steps, ``depth = ceil(log2 p)``;
* **bandwidth**: a rank exchanges ``n / 2`` bytes with every neighbour it
  has in a tree (its parent and each child), once on the way up and once on
  the way down, in opposite directions. A rank with ``d`` tree links in all
  sends (and receives) ``d * n / 2`` bytes. An inner node has three links in
  its tree and one (to its parent) in the other: ``d = 4``, so
  ``B = max(d) / 2 = 2`` for ``p >= 4``.

So ``T = 2 depth alpha + 2 n / bandwidth``: the tree's logarithmic latency
with (almost) the ring's bandwidth term ``2 (p - 1) / p * n / bandwidth``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import deque
from dataclasses import dataclass

from distlib._check import check_int, check_real
from distlib.collectives import alpha_beta_time, cost_coefficients

__all__ = ["btree", "DoubleBinaryTree", "double_binary_tree", "double_binary_tree_time", "ring_crossover", "main"]


def btree(p: int, rank: int) -> tuple:
    """``(parent, children)`` of ``rank`` in NCCL's binary tree over ``p`` ranks.

    Rank 0 is the root and has one child; in general a rank's parent and
    children follow from its lowest set bit (``ncclGetBtree``). ``parent``
    is -1 for the root.

    Examples
    --------
    >>> [btree(8, r) for r in (0, 4, 2, 1)]
    [(-1, (4,)), (0, (2, 6)), (4, (1, 3)), (2, ())]
    """
    p = check_int("p", p, minimum=1)
    rank = check_int("rank", rank, minimum=0)
    if rank >= p:
        raise ValueError(f"rank must be in [0, {p - 1}], got {rank}")
    bit = 1
    while bit < p:
        if bit & rank:
            break
        bit <<= 1
    if rank == 0:
        return -1, ((bit >> 1,) if p > 1 else ())
    up = (rank ^ bit) | (bit << 1)
    if up >= p:
        up = rank ^ bit
    low = bit >> 1
    down0 = rank - low if low else -1
    down1 = rank + low if low else -1
    while down1 >= p:  # the right child may fall off the end: try smaller offsets
        down1 = rank + low if low else -1
        low >>= 1
    return up, tuple(c for c in (down0, down1) if c >= 0)


@dataclass(frozen=True)
class DoubleBinaryTree:
    """Two trees over ``p`` ranks.

    Attributes
    ----------
    p : int
    parents : tuple of two tuples
        ``parents[t][r]``: rank ``r``'s parent in tree ``t`` (-1 at the root).
    children : tuple of two tuples
        ``children[t][r]``: rank ``r``'s children in tree ``t``.
    """

    p: int
    parents: tuple
    children: tuple

    @property
    def roots(self) -> tuple:
        return tuple(par.index(-1) for par in self.parents)

    def depth(self, tree: int) -> int:
        """Hops from the root of ``tree`` to its deepest leaf."""
        kids = self.children[tree]
        level = {self.roots[tree]: 0}
        queue = deque([self.roots[tree]])
        while queue:
            r = queue.popleft()
            for c in kids[r]:
                level[c] = level[r] + 1
                queue.append(c)
        if len(level) != self.p:  # pragma: no cover - a construction bug
            raise RuntimeError(f"tree {tree} does not reach every rank")
        return max(level.values())

    def links(self, rank: int) -> int:
        """Tree links of ``rank`` in both trees together (parents and children)."""
        return sum((self.parents[t][rank] >= 0) + len(self.children[t][rank]) for t in (0, 1))

    def inner(self, tree: int) -> list:
        """Ranks with at least one child in ``tree``."""
        return [r for r in range(self.p) if self.children[tree][r]]

    def cost_coefficients(self) -> tuple:
        """``(A, B)``: ``T = A alpha + B n_bytes / bandwidth`` (many-piece pipeline limit).

        ``A = 2 * max depth`` steps; ``B = max links / 2``: the busiest rank
        sends ``n / 2`` bytes over each of its tree links.
        """
        if self.p == 1:
            return (0, 0.0)
        depth = max(self.depth(0), self.depth(1))
        return (2 * depth, max(self.links(r) for r in range(self.p)) / 2)

    def lines(self) -> list:
        """A text picture: per tree, each rank's parent and children."""
        out = []
        for t in (0, 1):
            out.append(f"tree {t} (root {self.roots[t]}, depth {self.depth(t)}):")
            for r in range(self.p):
                par = self.parents[t][r]
                kids = ", ".join(map(str, self.children[t][r])) or "-"
                out.append(f"  rank {r}: parent {'-' if par < 0 else par}, children {kids}")
        return out


def double_binary_tree(p: int) -> DoubleBinaryTree:
    """NCCL's two trees over ``p`` ranks (``ncclGetDtree``).

    Tree 0 is :func:`btree`. Tree 1 mirrors it (rank ``r`` plays
    ``p - 1 - r``) if ``p`` is even, or shifts it by one rank if ``p`` is odd.

    Examples
    --------
    >>> t = double_binary_tree(8)
    >>> t.roots, t.inner(0), t.inner(1)
    ((0, 7), [0, 2, 4, 6], [1, 3, 5, 7])
    >>> t.cost_coefficients()          # 2 * log2(8) steps; busiest rank: 4 links
    (6, 2.0)
    """
    p = check_int("p", p, minimum=1)
    par0, kid0, par1, kid1 = [], [], [], []
    for r in range(p):
        u, d = btree(p, r)
        par0.append(u)
        kid0.append(d)
        if p % 2:  # odd: shift by one rank
            u, d = btree(p, (r - 1) % p)
            par1.append(-1 if u < 0 else (u + 1) % p)
            kid1.append(tuple(sorted((c + 1) % p for c in d)))
        else:  # even: mirror
            u, d = btree(p, p - 1 - r)
            par1.append(-1 if u < 0 else p - 1 - u)
            kid1.append(tuple(sorted(p - 1 - c for c in d)))
    return DoubleBinaryTree(p, (tuple(par0), tuple(par1)), (tuple(kid0), tuple(kid1)))


def double_binary_tree_time(n_bytes, p: int, *, alpha, bandwidth):
    """Alpha-beta time (s) of a pipelined all-reduce over NCCL's double binary tree.

    ``A alpha + B n_bytes / bandwidth`` with ``(A, B)`` from
    :meth:`DoubleBinaryTree.cost_coefficients`; ``bandwidth`` is each rank's
    link, bytes/s, one direction.

    Examples
    --------
    8 ranks, 1 GB, 5 us, 100 GB/s: ``6 * 5e-6 + 2 * 1e9 / 100e9``:

    >>> round(double_binary_tree_time(1e9, 8, alpha=5e-6, bandwidth=100e9), 6)
    0.02003
    """
    a, b = double_binary_tree(p).cost_coefficients()
    return alpha_beta_time(a, b, n_bytes, alpha=alpha, bandwidth=bandwidth)


def ring_crossover(p: int, *, alpha, bandwidth):
    """Buffer size (bytes) above which the ring all-reduce beats the double binary tree, or None.

    The ring has more steps (``2 (p - 1)``) but a smaller bytes factor
    (``2 (p - 1) / p`` against the trees' ``B``); they tie at
    ``n = (A_ring - A_tree) / (B_tree - B_ring) * alpha * bandwidth``.

    Examples
    --------
    >>> round(ring_crossover(8, alpha=5e-6, bandwidth=100e9))   # (14 - 6) / (2 - 1.75) * 5e-6 * 1e11
    16000000
    >>> ring_crossover(2, alpha=5e-6, bandwidth=100e9) is None  # identical with two ranks
    True
    """
    p = check_int("p", p, minimum=1)
    alpha = check_real("alpha", alpha, minimum=0)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    a_tree, b_tree = double_binary_tree(p).cost_coefficients()
    a_ring, b_ring = cost_coefficients("allreduce", p, algorithm="ring")
    if b_tree <= b_ring or alpha == 0 or a_ring <= a_tree:
        return None
    return (a_ring - a_tree) / (b_tree - b_ring) * alpha * bandwidth


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m distlib.examples.ch07_trees", description=__doc__.splitlines()[0])
    parser.add_argument("-p", type=int, default=8, help="ranks (default 8)")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    tree = double_binary_tree(ns.p)
    print("\n".join(tree.lines()))
    a, b = tree.cost_coefficients()
    print(f"T = {a} alpha + {b:g} n / bandwidth  (ring: {2 * (ns.p - 1)} alpha + {2 * (ns.p - 1) / ns.p:.4g} n / bandwidth;"
          f" ceil(log2 p) = {math.ceil(math.log2(ns.p)) if ns.p > 1 else 0})")


if __name__ == "__main__":
    main()
