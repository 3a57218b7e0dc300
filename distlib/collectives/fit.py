"""Fitting the alpha-beta model to measured times: ``alpha`` and ``bandwidth`` with a held-out check.

:func:`fit_alpha_beta` solves a non-negative least-squares problem over
``T(n) = A alpha + B n beta`` (relative errors by default, since measured sizes
span many decades); :func:`fit_report` adds the residuals and a refit on every
other size to measure how well the model predicts the rest. Re-exported by
:mod:`distlib.collectives`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._check import check_array, check_choice, check_int
from .costs import collective_time, cost_coefficients

__all__ = ["fit_alpha_beta", "FitReport", "fit_report"]


def _fit_arrays(n_bytes, seconds):
    n = check_array("n_bytes", n_bytes, ndim=1, finite=True, minimum=0).astype(float)
    t = check_array("seconds", seconds, ndim=1, finite=True).astype(float)
    if n.shape != t.shape:
        raise ValueError(f"n_bytes and seconds must have the same length, got {n.size} and {t.size}")
    if t.size and np.any(t <= 0):
        raise ValueError("seconds must hold only positive times")
    if np.unique(n).size < 2:
        raise ValueError("n_bytes must hold at least two different sizes to separate alpha from beta")
    return n, t


def _solve(n, t, a, b, weighting):
    """Non-negative least squares for (alpha, beta) in t = a*alpha + b*n*beta."""
    X = np.stack([np.full_like(n, a, dtype=float), b * n], axis=1)
    w = 1.0 / t if weighting == "relative" else np.ones_like(t)
    Xw, yw = X * w[:, None], t * w

    def loss(x):
        return float(np.sum((Xw @ x - yw) ** 2))

    candidates = []
    sol, *_ = np.linalg.lstsq(Xw, yw, rcond=None)
    if np.all(sol >= 0):
        candidates.append(sol)
    for j in (0, 1):  # one coefficient pinned at zero
        col = Xw[:, j]
        denom = float(col @ col)
        x = np.zeros(2)
        if denom > 0:
            x[j] = max(float(col @ yw) / denom, 0.0)
        candidates.append(x)
    best = min(candidates, key=loss)
    return float(best[0]), float(best[1])


def fit_alpha_beta(n_bytes, seconds, *, collective="allreduce", p, algorithm="ring", weighting="relative"):
    """Fit ``alpha`` and ``bandwidth`` of a collective's model to measured times.

    Least squares over ``T(n) = A alpha + B n beta`` with ``alpha, beta >=
    0``. By default every point counts by its **relative** error (each
    residual divided by the measured time): measured sizes span many decades
    (8 B to GBs), and plain squared errors are dominated by the largest
    times, so the latency, which only shows at small sizes, would be fitted
    to noise. ``weighting="absolute"`` shows that failure.

    Parameters
    ----------
    n_bytes, seconds : array_like
        Sizes (bytes) and measured times (s), equal lengths, at least two
        different sizes.
    collective, algorithm : str
        Which model (see :func:`collective_time`).
    p : int
        Ranks (>= 2: with one rank nothing is sent).
    weighting : {"relative", "absolute"}

    Returns
    -------
    (alpha, bandwidth) : tuple of float
        Seconds and bytes/s (one direction). ``bandwidth`` is ``inf`` if the
        fit finds no per-byte cost.

    Examples
    --------
    Noiseless ring all-reduce times are recovered exactly:

    >>> sizes = np.logspace(3, 9, 13)
    >>> t = collective_time("allreduce", sizes, 8, alpha=4e-6, bandwidth=200e9)
    >>> a, bw = fit_alpha_beta(sizes, t, p=8)
    >>> round(a * 1e6, 6), round(bw / 1e9, 6)
    (4.0, 200.0)
    """
    n, t = _fit_arrays(n_bytes, seconds)
    p = check_int("p", p, minimum=2)
    weighting = check_choice("weighting", weighting, ["relative", "absolute"])
    a, b = cost_coefficients(collective, p, algorithm=algorithm)
    alpha_steps, beta = _solve(n, t, a, b, weighting)
    return alpha_steps, (1.0 / beta if beta > 0 else math.inf)


@dataclass
class FitReport:
    """A fit of the alpha-beta model and how well it holds.

    Attributes
    ----------
    alpha, bandwidth : float
        Fitted on all points (s, bytes/s).
    fitted : ndarray
        Model times at every size.
    residuals : ndarray
        Relative residuals ``(fitted - measured) / measured``.
    train : ndarray of bool
        The points of the held-out check's fit.
    alpha_train, bandwidth_train : float
        The fit on the ``train`` points only.
    heldout_residuals : ndarray
        Relative residuals of that fit on the other points.
    """

    n_bytes: np.ndarray
    seconds: np.ndarray
    collective: str
    p: int
    algorithm: str
    weighting: str
    alpha: float
    bandwidth: float
    fitted: np.ndarray
    residuals: np.ndarray
    train: np.ndarray
    alpha_train: float
    bandwidth_train: float
    heldout_residuals: np.ndarray = field(repr=False)

    @property
    def rms_relative_error(self) -> float:
        return float(np.sqrt(np.mean(self.residuals ** 2)))

    @property
    def max_relative_error(self) -> float:
        return float(np.max(np.abs(self.residuals)))

    @property
    def heldout_rms(self) -> float:
        r = self.heldout_residuals
        return float(np.sqrt(np.mean(r ** 2))) if r.size else math.nan

    @property
    def heldout_max(self) -> float:
        r = self.heldout_residuals
        return float(np.max(np.abs(r))) if r.size else math.nan

    @property
    def n_half(self) -> float | None:
        """Size where the fitted latency and bandwidth terms are equal (bytes)."""
        a, b = cost_coefficients(self.collective, self.p, algorithm=self.algorithm)
        if not (a and b and self.alpha) or not math.isfinite(self.bandwidth):
            return None
        return (a / b) * self.alpha * self.bandwidth


def fit_report(n_bytes, seconds, *, collective="allreduce", p, algorithm="ring", weighting="relative",
               train=None) -> FitReport:
    """:func:`fit_alpha_beta` plus residuals and a held-out check.

    The held-out check refits on the ``train`` points and measures the
    relative error on the others. By default ``train`` takes every other
    size in increasing order, so both the latency-bound small sizes and the
    bandwidth-bound large ones are in it and in the held-out set.

    Parameters
    ----------
    train : array_like of bool or int, optional
        A mask, or indices, of the points to fit in the held-out check.

    Examples
    --------
    >>> sizes = np.logspace(3, 9, 13)
    >>> t = collective_time("allreduce", sizes, 8, alpha=4e-6, bandwidth=200e9)
    >>> r = fit_report(sizes, t, p=8)
    >>> r.max_relative_error < 1e-9, r.heldout_max < 1e-9
    (True, True)
    """
    n, t = _fit_arrays(n_bytes, seconds)
    alpha, bandwidth = fit_alpha_beta(n, t, collective=collective, p=p, algorithm=algorithm, weighting=weighting)
    p = int(p)
    if train is None:
        order = np.argsort(n, kind="stable")
        mask = np.zeros(n.size, dtype=bool)
        mask[order[::2]] = True
    else:
        tr = np.asarray(train)
        if tr.dtype == bool:
            if tr.shape != n.shape:
                raise ValueError(f"train must be a mask of length {n.size}, got shape {tr.shape}")
            mask = tr.copy()
        else:
            idx = check_array("train", tr, ndim=1).astype(int)
            if idx.size and (idx.min() < 0 or idx.max() >= n.size):
                raise ValueError(f"train indices must be in [0, {n.size - 1}]")
            mask = np.zeros(n.size, dtype=bool)
            mask[idx] = True
    if np.unique(n[mask]).size < 2:
        raise ValueError("train must select at least two different sizes")
    a_tr, bw_tr = fit_alpha_beta(n[mask], t[mask], collective=collective, p=p, algorithm=algorithm,
                                 weighting=weighting)
    steps = cost_coefficients(collective, p, algorithm=algorithm)[0]
    if math.isfinite(bandwidth):
        fitted = collective_time(collective, n, p, alpha=alpha, bandwidth=bandwidth, algorithm=algorithm)
    else:  # no per-byte cost found
        fitted = np.full_like(n, steps * alpha)
    held = ~mask
    if math.isfinite(bw_tr):
        pred = collective_time(collective, n[held], p, alpha=a_tr, bandwidth=bw_tr, algorithm=algorithm)
    else:
        pred = np.full(int(held.sum()), steps * a_tr)
    return FitReport(
        n_bytes=n, seconds=t, collective=collective, p=p, algorithm=algorithm, weighting=weighting,
        alpha=alpha, bandwidth=bandwidth, fitted=np.asarray(fitted, dtype=float),
        residuals=(np.asarray(fitted) - t) / t, train=mask, alpha_train=a_tr, bandwidth_train=bw_tr,
        heldout_residuals=(pred - t[held]) / t[held],
    )
