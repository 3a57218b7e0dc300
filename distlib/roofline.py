"""The roofline model: is an operation limited by compute or by memory?

Chapter "Accelerators and the roofline" uses this module. A chip with peak
``peak_flops`` (FLOP/s) and memory bandwidth ``bandwidth`` (bytes/s) can run
an operation that does ``flops`` FLOP while moving ``n_bytes`` bytes to and
from HBM no faster than

    time = max(flops / peak_flops, n_bytes / bandwidth),

so its attainable rate is ``min(peak_flops, intensity * bandwidth)`` where
``intensity = flops / n_bytes`` (FLOP per byte). The **ridge point**
``peak_flops / bandwidth`` is the intensity at which the two limits meet:
below it an operation is memory-bound, above it compute-bound.

The byte counts here are ideal: every input is read from HBM once and every
output written once, caches are perfect inside one operation and empty
between operations. Real kernels move more, so these intensities are upper
bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import check_array, check_choice, check_int, check_real
from .hardware import Accelerator
from .hardware import accelerator as _accelerator

__all__ = [
    "Roof",
    "roof",
    "ridge_point",
    "attainable_flops",
    "Operation",
    "matmul",
    "elementwise",
    "add",
    "gelu",
    "layernorm",
    "attention",
    "attention_intensity_limit",
    "tiled_attention_ridge_seq",
    "OPERATION_KINDS",
    "operation",
    "example_operations",
    "Placement",
    "place",
]


@dataclass(frozen=True)
class Roof:
    """A roofline: a name, a peak (FLOP/s) and a memory bandwidth (bytes/s).

    Accelerators from :func:`distlib.accelerator` convert with :func:`roof`;
    a measured machine is ``Roof("my laptop", flops, bandwidth)``.
    """

    name: str
    peak_flops: float
    bandwidth: float

    def __post_init__(self):
        check_real("peak_flops", self.peak_flops, minimum=0, strict_min=True)
        check_real("bandwidth", self.bandwidth, minimum=0, strict_min=True)

    @property
    def ridge_point(self) -> float:
        """FLOP per byte where the memory slope meets the compute roof."""
        return self.peak_flops / self.bandwidth


def roof(spec) -> Roof:
    """A :class:`Roof` from an accelerator name, an :class:`~distlib.hardware.Accelerator` or a Roof.

    >>> roof("A100")
    Roof(name='A100', peak_flops=312000000000000.0, bandwidth=2039000000000.0)
    """
    if isinstance(spec, Roof):
        return spec
    if isinstance(spec, (str, Accelerator)):
        a = _accelerator(spec)
        return Roof(a.name, a.bf16_flops, a.hbm_bandwidth)
    if isinstance(spec, tuple) and len(spec) == 3:
        return Roof(str(spec[0]), float(spec[1]), float(spec[2]))
    raise TypeError(f"spec must be an accelerator name, an Accelerator, a Roof or (name, peak_flops, bandwidth); "
                    f"got {spec!r}")


def ridge_point(spec_or_peak, bandwidth=None) -> float:
    """Arithmetic intensity (FLOP/byte) at the ridge: ``peak_flops / bandwidth``.

    Parameters
    ----------
    spec_or_peak : float, str, Accelerator or Roof
        A peak in FLOP/s (then give ``bandwidth``), or a chip.
    bandwidth : float, optional
        Memory bandwidth in bytes/s, when ``spec_or_peak`` is a number.

    Examples
    --------
    >>> round(ridge_point("H100"))          # 989.5e12 / 3.35e12
    295
    >>> ridge_point(100e12, 1e12)
    100.0
    """
    if bandwidth is None:
        if isinstance(spec_or_peak, (int, float)) and not isinstance(spec_or_peak, bool):
            raise ValueError("bandwidth is required when spec_or_peak is a number (FLOP/s)")
        return roof(spec_or_peak).ridge_point
    peak = check_real("spec_or_peak", spec_or_peak, minimum=0, strict_min=True)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    return peak / bandwidth


def attainable_flops(intensity, *, peak_flops, bandwidth):
    """The roofline: ``min(peak_flops, intensity * bandwidth)``, vectorised.

    Parameters
    ----------
    intensity : float or array_like
        Arithmetic intensity, FLOP per byte (>= 0).
    peak_flops : float
        FLOP/s (> 0).
    bandwidth : float
        Bytes/s (> 0).

    Returns
    -------
    float or ndarray
        Attainable FLOP/s, same shape as ``intensity``.

    Examples
    --------
    >>> attainable_flops([1.0, 100.0, 1000.0], peak_flops=100e12, bandwidth=1e12).tolist()
    [1000000000000.0, 100000000000000.0, 100000000000000.0]
    """
    peak_flops = check_real("peak_flops", peak_flops, minimum=0, strict_min=True)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    if np.isscalar(intensity) and not isinstance(intensity, (bool, np.bool_)):
        i = check_real("intensity", intensity, minimum=0)
        return min(peak_flops, i * bandwidth)
    arr = check_array("intensity", intensity, minimum=0)
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError("intensity must hold only finite numbers (no NaN or inf)")
    return np.minimum(peak_flops, arr.astype(float) * bandwidth)


@dataclass(frozen=True)
class Operation:
    """An operation's work (``flops``, FLOP) and HBM traffic (``n_bytes``, bytes)."""

    name: str
    flops: float
    n_bytes: float

    def __post_init__(self):
        check_real("flops", self.flops, minimum=0)
        check_real("n_bytes", self.n_bytes, minimum=0, strict_min=True)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte of HBM traffic."""
        return self.flops / self.n_bytes


def _bpe(bytes_per_element) -> float:
    return check_real("bytes_per_element", bytes_per_element, minimum=0, strict_min=True)


def matmul(m, n, k, *, bytes_per_element=2, name=None) -> Operation:
    """``C[m, n] = A[m, k] @ B[k, n]``: ``2 m n k`` FLOP, ``(m k + k n + m n)`` elements moved.

    For a square matrix ``n x n x n`` in bf16 the intensity is
    ``2 n^3 / (3 n^2 * 2) = n / 3``: it grows with size, which is why large
    matrix products are compute-bound. A matrix-vector product (``m = 1``)
    moves the whole matrix to do 2 FLOP per element: intensity about 1.

    Examples
    --------
    >>> matmul(3000, 3000, 3000).intensity
    1000.0
    >>> round(matmul(1, 8192, 8192).intensity, 3)
    1.0
    """
    m = check_int("m", m, minimum=1)
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=1)
    b = _bpe(bytes_per_element)
    flops = 2.0 * m * n * k
    n_bytes = b * (float(m) * k + float(k) * n + float(m) * n)
    return Operation(name or f"matmul {m}x{n}x{k}", flops, n_bytes)


def elementwise(n_elements, *, flops_per_element=1.0, inputs=1, outputs=1, bytes_per_element=2,
                name=None) -> Operation:
    """An element-wise map over ``n_elements``: reads ``inputs`` tensors, writes ``outputs``.

    Intensity ``flops_per_element / ((inputs + outputs) * bytes_per_element)``,
    independent of size: element-wise operations are memory-bound on every
    accelerator in the table.

    >>> elementwise(10**6, flops_per_element=1, inputs=2, outputs=1, bytes_per_element=2).intensity
    0.16666666666666666
    """
    n_elements = check_int("n_elements", n_elements, minimum=1)
    fpe = check_real("flops_per_element", flops_per_element, minimum=0)
    inputs = check_int("inputs", inputs, minimum=0)
    outputs = check_int("outputs", outputs, minimum=0)
    if inputs + outputs == 0:
        raise ValueError("inputs + outputs must be >= 1 (an operation must move some data)")
    b = _bpe(bytes_per_element)
    return Operation(name or f"elementwise ({n_elements:,} elements)", fpe * n_elements,
                     (inputs + outputs) * b * n_elements)


def add(n_elements, *, bytes_per_element=2) -> Operation:
    """``z = x + y``: 1 FLOP per element, two tensors read, one written.

    >>> round(add(1000).intensity, 4)       # 1 FLOP / 6 bytes in bf16
    0.1667
    """
    return elementwise(n_elements, flops_per_element=1, inputs=2, outputs=1, bytes_per_element=bytes_per_element,
                       name=f"add ({n_elements:,} elements)")


#: FLOP per element of GELU's tanh approximation
#: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, counting tanh as one.
GELU_FLOPS_PER_ELEMENT = 8


def gelu(n_elements, *, bytes_per_element=2) -> Operation:
    """GELU (tanh approximation) on ``n_elements``: about 8 FLOP per element, one read and one write.

    >>> gelu(1000).intensity                # 8 FLOP / 4 bytes in bf16
    2.0
    """
    return elementwise(n_elements, flops_per_element=GELU_FLOPS_PER_ELEMENT, inputs=1, outputs=1,
                       bytes_per_element=bytes_per_element, name=f"GELU ({n_elements:,} elements)")


#: FLOP per element of layer normalisation: mean (1), variance (3: subtract,
#: square, add), normalise (2: subtract, multiply by 1/std), scale and shift (2).
LAYERNORM_FLOPS_PER_ELEMENT = 8


def layernorm(tokens, hidden, *, bytes_per_element=2) -> Operation:
    """Layer normalisation of a ``tokens x hidden`` activation.

    About 8 FLOP per element; reads the input and writes the output, plus the
    ``hidden``-long scale and shift vectors once.

    >>> round(layernorm(4096, 4096).intensity, 3)   # ~ 8 / (2 * 2)
    2.0
    """
    tokens = check_int("tokens", tokens, minimum=1)
    hidden = check_int("hidden", hidden, minimum=1)
    b = _bpe(bytes_per_element)
    n = float(tokens) * hidden
    return Operation(f"layernorm {tokens}x{hidden}", LAYERNORM_FLOPS_PER_ELEMENT * n, b * (2 * n + 2 * hidden))


#: FLOP per score of softmax: max, subtract, exp, sum, divide.
SOFTMAX_FLOPS_PER_ELEMENT = 5


def attention(seq, *, heads=32, head_dim=128, batch=1, tiled=False, bytes_per_element=2, name=None) -> Operation:
    """Self-attention ``softmax(Q K^T / sqrt(d)) V`` for ``batch`` sequences of ``seq`` tokens.

    FLOP (both variants): ``2 s^2 d`` for ``Q K^T``, ``5 s^2`` for the
    softmax and ``2 s^2 d`` for ``P V``, per head and sequence.

    Bytes, per head and sequence, with ``e`` bytes per element:

    * untiled (``tiled=False``): the ``s x s`` score matrix goes through HBM.
      Read Q and K, write S; read S, write P (softmax); read P and V, write O:
      ``(4 s d + 4 s^2) e``. For ``s >> d`` the intensity tends to
      ``(4 d + 5) / (4 e)``, about ``d / e`` (64.6 FLOP/byte in bf16 with
      d = 128) however long the sequence: memory-bound on a GPU.
    * tiled (``tiled=True``, FlashAttention-style): scores stay in on-chip
      SRAM; Q, K, V are read once and O written once: ``4 s d e``. The
      intensity, ``s (4 d + 5) / (4 d e)``, about ``s / e``, grows with the
      sequence: compute-bound for long sequences. (Real kernels re-read K
      and V tiles, mostly from L2, so this is an upper bound.)

    Examples
    --------
    >>> round(attention(4096, tiled=False).intensity, 1)
    62.7
    >>> round(attention(4096, tiled=True).intensity)
    2068
    """
    seq = check_int("seq", seq, minimum=1)
    heads = check_int("heads", heads, minimum=1)
    head_dim = check_int("head_dim", head_dim, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    if not isinstance(tiled, (bool, np.bool_)):
        raise TypeError(f"tiled must be True or False, got {tiled!r}")
    e = _bpe(bytes_per_element)
    bh = float(batch) * heads
    s = float(seq)
    d = float(head_dim)
    flops = bh * (4.0 * s * s * d + SOFTMAX_FLOPS_PER_ELEMENT * s * s)
    if tiled:
        n_bytes = bh * 4.0 * s * d * e
    else:
        n_bytes = bh * (4.0 * s * d + 4.0 * s * s) * e
    label = "tiled" if tiled else "untiled"
    return Operation(name or f"attention {label} (seq {seq}, {heads}x{head_dim})", flops, n_bytes)


def attention_intensity_limit(*, head_dim=128, bytes_per_element=2) -> float:
    """The intensity untiled attention approaches as the sequence grows: ``(4 d + 5) / (4 e)``.

    Both the FLOP and the bytes of :func:`attention` (``tiled=False``) grow
    as ``s^2``, so their ratio tends to this limit: untiled attention is
    memory-bound at any length on a chip whose ridge point is higher.

    Examples
    --------
    >>> attention_intensity_limit()            # d = 128, bf16
    64.625
    >>> attention(10**6).intensity < attention_intensity_limit()
    True
    """
    d = check_int("head_dim", head_dim, minimum=1)
    e = _bpe(bytes_per_element)
    return (4.0 * d + SOFTMAX_FLOPS_PER_ELEMENT) / (4.0 * e)


def tiled_attention_ridge_seq(spec, *, head_dim=128, bytes_per_element=2) -> float:
    """Sequence length at which tiled attention reaches chip ``spec``'s ridge point.

    Tiled attention's intensity is ``s (4 d + 5) / (4 d e)``, linear in the
    sequence length ``s``; it equals the ridge ``F / B`` at
    ``s = 4 d e F / ((4 d + 5) B)``. Longer sequences are compute-bound.

    Examples
    --------
    >>> round(tiled_attention_ridge_seq("H100"))
    585
    >>> s = tiled_attention_ridge_seq("H100")
    >>> place(attention(int(s) + 1, tiled=True), "H100").bound, place(attention(int(s), tiled=True), "H100").bound
    ('compute', 'memory')
    """
    d = check_int("head_dim", head_dim, minimum=1)
    e = _bpe(bytes_per_element)
    return ridge_point(spec) * 4.0 * d * e / (4.0 * d + SOFTMAX_FLOPS_PER_ELEMENT)


#: What :func:`operation` builds from one size ``n``; the roofline widget's menu.
OPERATION_KINDS = {
    "matmul (n x n x n)": lambda n: matmul(n, n, n, name=f"matmul {n}x{n}x{n}"),
    "matrix-vector (1 x n x n)": lambda n: matmul(1, n, n, name=f"matrix-vector 1x{n}x{n}"),
    "add (n x n elements)": lambda n: add(n * n),
    "GELU (n x n elements)": lambda n: gelu(n * n),
    "layernorm (n tokens x 4096)": lambda n: layernorm(n, 4096),
    "attention, untiled (seq n)": lambda n: attention(n, tiled=False, name=f"attention untiled, seq {n}"),
    "attention, tiled (seq n)": lambda n: attention(n, tiled=True, name=f"attention tiled, seq {n}"),
}


def operation(kind, n) -> Operation:
    """One operation from :data:`OPERATION_KINDS`, of size ``n``.

    >>> operation("matmul (n x n x n)", 3000).intensity
    1000.0
    """
    kind = check_choice("kind", kind, list(OPERATION_KINDS))
    n = check_int("n", n, minimum=1)
    return OPERATION_KINDS[kind](n)


def example_operations() -> list[Operation]:
    """A spread of transformer operations for a roofline figure.

    Square matrix products of three sizes, a matrix-vector product (one
    token of decoding), element-wise add and GELU, layer normalisation, and
    attention at sequence length 4096 with and without tiling.
    """
    return [
        matmul(256, 256, 256, name="matmul 256^3"),
        matmul(1024, 1024, 1024, name="matmul 1024^3"),
        matmul(8192, 8192, 8192, name="matmul 8192^3"),
        matmul(1, 8192, 8192, name="matrix-vector 8192^2"),
        add(4096 * 4096),
        gelu(4096 * 4096),
        layernorm(4096, 4096),
        attention(4096, tiled=False),
        attention(4096, tiled=True),
    ]


@dataclass(frozen=True)
class Placement:
    """An operation placed under a roofline."""

    operation: Operation
    roof: Roof
    compute_time: float  # s, flops / peak
    memory_time: float  # s, n_bytes / bandwidth

    @property
    def time(self) -> float:
        """Roofline time: the larger of compute and memory time (perfect overlap)."""
        return max(self.compute_time, self.memory_time)

    @property
    def bound(self) -> str:
        """``"compute"`` or ``"memory"``: which limit sets the time."""
        return "compute" if self.compute_time >= self.memory_time else "memory"

    @property
    def attainable_flops(self) -> float:
        """FLOP/s the operation can reach on this roof."""
        return self.operation.flops / self.time

    @property
    def intensity(self) -> float:
        return self.operation.intensity

    @property
    def fraction_of_peak(self) -> float:
        """Attainable over peak FLOP/s."""
        return self.attainable_flops / self.roof.peak_flops


def place(op, spec) -> Placement:
    """Put operation ``op`` on chip ``spec`` (name, Accelerator or Roof).

    Examples
    --------
    A 1024-cube matmul in bf16 has intensity 341 FLOP/byte, above the H100's
    ridge of 295: compute-bound. Its matrix-vector cousin is memory-bound.

    >>> place(matmul(1024, 1024, 1024), "H100").bound
    'compute'
    >>> pl = place(matmul(1, 8192, 8192), "H100")
    >>> pl.bound, round(pl.attainable_flops / 1e12, 2)
    ('memory', 3.35)
    """
    if not isinstance(op, Operation):
        raise TypeError(f"op must be an Operation, got {op!r}")
    r = roof(spec)
    return Placement(op, r, op.flops / r.peak_flops, op.n_bytes / r.bandwidth)

