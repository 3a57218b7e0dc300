"""Adam (Kingma and Ba 2015) with a fixed learning rate, on flat float64 vectors.

Element-wise, so a rank that holds a shard of the parameters, of their
gradient and of the moments updates that shard exactly as one process
would: this is what lets ZeRO shard the optimizer state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._check import check_int

__all__ = ["Adam"]


@dataclass(frozen=True)
class Adam:
    """Adam's hyper-parameters; :meth:`update` applies one step.

    Examples
    --------
    >>> p, m, v = np.array([1.0]), np.zeros(1), np.zeros(1)
    >>> Adam(lr=0.1).update(p, np.array([2.0]), m, v, step=1)   # the first step moves lr against the sign
    >>> p.round(6).tolist()
    [0.9]
    """

    lr: float = 3e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def update(self, param, grad, m, v, *, step: int) -> None:
        """Step ``step`` (from 1) in place on ``param`` and the moments ``m`` and ``v`` (all the same length)."""
        step = check_int("step", step, minimum=1)
        m *= self.beta1
        m += (1.0 - self.beta1) * grad
        v *= self.beta2
        v += (1.0 - self.beta2) * (grad * grad)
        m_hat = m / (1.0 - self.beta1**step)
        v_hat = v / (1.0 - self.beta2**step)
        param -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
