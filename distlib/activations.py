"""Activation memory of one transformer layer, per Korthikanti et al. 2022.

Korthikanti, Casper, Lym, McAfee, Andersch, Shoeybi and Catanzaro, "Reducing
Activation Recomputation in Large Transformer Models" (MLSys 2023,
arXiv:2205.05198), count the bytes one layer keeps from its forward pass for
its backward pass, with 16-bit activations (2 bytes an element, 1 byte a
dropout-mask element). With ``s`` the sequence length, ``b`` the
microbatch, ``h`` the hidden size, ``a`` the attention heads and ``t`` the
tensor-parallel degree, their Table 2 reads, in bytes per layer per GPU:

====================================================  ==========================
no parallelism                                        ``sbh (34 + 5as/h)``
tensor parallel                                       ``sbh (10 + 24/t + 5as/(ht))``
tensor + sequence parallel                            ``sbh (34/t + 5as/(ht))``
tensor parallel, selective recomputation              ``sbh (10 + 24/t)``
tensor + sequence parallel, selective recomputation   ``sbh 34/t``
full recomputation                                    ``2 sbh``
====================================================  ==========================

Where the numbers come from: ``10 sbh`` are the two layer norms' inputs, the
two dropout masks and the inputs of the attention block and of the MLP, which
tensor parallelism leaves whole on every GPU and sequence parallelism splits
``t`` ways; ``24 sbh`` are the parts inside the tensor-parallel matrix
multiplies; ``5 a s^2 b`` are the softmax's output (``2 a s^2 b``), its dropout
mask (``a s^2 b``) and the dropout's output (``2 a s^2 b``), which selective
recomputation recomputes instead of keeping (Korthikanti et al. 2022, section
4.1: the raw scores ``QK^T`` are not kept for the backward pass).
Full recomputation keeps only the layer's input, ``2 sbh``; with sequence
parallelism that input is held split along the sequence, so ``2 sbh / t``
(Table 2 lists the unsplit ``2 sbh``).

The ``24 sbh`` inside the cut matrices are ``8 sbh`` of attention (``2h``
each for the query, the key, the value and the output projection's input)
and ``16 sbh`` of MLP (``2f`` each for the activation's input and the second
matrix's input, ``f = 4h``). With grouped-query attention's thinner keys and
values (``kv = h * kv_heads / a`` wide) and an MLP of any width ``f``, that
is ``sb (4h + 4kv + 4f)``; a gated MLP (SwiGLU) keeps ``6f``, the gate's and
the up projection's outputs and their product. Llama 3 405B's layer
(``h = 16384``, 8 key/value heads of 128, ``f = 53248``, gated) keeps
``23.75 sbh`` there: the two nearly cancel.
"""

from __future__ import annotations

from ._check import check_bool, check_choice, check_int, check_real

__all__ = ["RECOMPUTE_MODES", "activation_bytes_per_layer", "logits_bytes"]

#: What a layer recomputes in its backward pass instead of keeping: nothing, the attention core, all of it.
RECOMPUTE_MODES = ("none", "selective", "full")


def _layer_shape(h: int, a: int, ffn_hidden, kv_heads, gated_ffn) -> tuple:
    """The MLP's width, the key/value heads and the gating, checked (defaults: ``4h``, ``a``, not gated)."""
    f = 4 * h if ffn_hidden is None else check_int("ffn_hidden", ffn_hidden, minimum=1)
    kv_a = a if kv_heads is None else check_int("kv_heads", kv_heads, minimum=1, maximum=a)
    if a % kv_a:
        raise ValueError(f"kv_heads must divide heads ({a}), got {kv_a}")
    return f, kv_a, check_bool("gated_ffn", gated_ffn)


def activation_bytes_per_layer(seq, micro_batch, hidden, heads, *, tp=1, sequence_parallel=False,
                               recompute="none", ffn_hidden=None, kv_heads=None, gated_ffn=False) -> float:
    """Bytes of activations one transformer layer keeps for its backward pass, on one GPU.

    Korthikanti et al. 2022, Table 2, 16-bit activations (see the module's
    docstring for each term).

    Parameters
    ----------
    seq, micro_batch, hidden, heads : int
        ``s`` tokens per sequence, ``b`` sequences per microbatch, ``h`` the
        hidden size and ``a`` the attention heads (each >= 1).
    tp : int
        ``t``, the tensor-parallel degree (>= 1).
    sequence_parallel : bool
        Split the layer norms and dropouts along the sequence too (Megatron's
        sequence parallelism), so nothing of the layer is held whole.
    recompute : {"none", "selective", "full"}
        ``"selective"`` recomputes the attention core (drops the ``5as/h``
        term); ``"full"`` keeps only the layer's input.
    ffn_hidden, kv_heads, gated_ffn : optional
        The MLP's width ``f`` (default ``4h``), grouped-query attention's
        key/value heads (default ``a``) and a gated MLP such as SwiGLU (see
        the module's docstring); the defaults give the paper's table.

    Returns
    -------
    float
        Bytes.

    Raises
    ------
    ValueError, TypeError
        A bad argument, named with its range.

    Examples
    --------
    GPT-3 175B (``s = 2048``, ``h = 12288``, ``a = 96``, the paper's Table 3):
    ``5as/h = 80``, so one layer keeps ``sbh (34 + 80)`` bytes, and selective
    recomputation saves ``80 / 114``, the paper's "70%":

    >>> s, b, h, a = 2048, 1, 12288, 96
    >>> activation_bytes_per_layer(s, b, h, a) == s * b * h * (34 + 80)
    True
    >>> selective = activation_bytes_per_layer(s, b, h, a, recompute="selective")
    >>> round(1 - selective / activation_bytes_per_layer(s, b, h, a), 2)
    0.7

    With the paper's ``t = 8``, sequence parallelism and selective
    recomputation, ``sbh 34 / t``:

    >>> activation_bytes_per_layer(s, b, h, a, tp=8, sequence_parallel=True, recompute="selective") / (s * b * h)
    4.25

    Llama 3 405B's layer: inside the cut matrices ``4 + 0.25 + 19.5``
    bytes a token and hidden unit, against the paper's 24:

    >>> llama = dict(ffn_hidden=53248, kv_heads=8, gated_ffn=True, recompute="selective")
    >>> activation_bytes_per_layer(8192, 1, 16384, 128, **llama) / (8192 * 16384) - 10
    23.75
    """
    s = check_int("seq", seq, minimum=1)
    b = check_int("micro_batch", micro_batch, minimum=1)
    h = check_int("hidden", hidden, minimum=1)
    a = check_int("heads", heads, minimum=1)
    t = check_int("tp", tp, minimum=1)
    sp = check_bool("sequence_parallel", sequence_parallel)
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    f, kv_a, gated = _layer_shape(h, a, ffn_hidden, kv_heads, gated_ffn)
    split = t if sp else 1  # what tensor parallelism leaves whole, sequence parallelism splits t ways
    if mode == "full":
        per_element = 2 / split
    else:
        attention = 0.0 if mode == "selective" else 5 * a * s / (h * t)
        cut = 4 + 4 * kv_a / a + (6 if gated else 4) * f / h  # 24 for the paper's layer (kv = h, f = 4h)
        per_element = 10 / split + cut / t + attention
    return float(s * b * h) * per_element


def logits_bytes(seq, micro_batch, vocab, *, tp=1, vocab_parallel=True, bytes_per_value=4) -> float:
    """Bytes of the output layer's logits one GPU holds for a microbatch's loss: ``4 s b V / t``.

    The logits, one value per token and vocabulary entry, are turned into the
    loss in fp32 (4 bytes a value). Megatron-LM's vocabulary-parallel output
    layer and parallel cross-entropy (Shoeybi et al. 2019, section 3) give each
    of the ``t`` tensor-parallel ranks ``V / t`` columns, and the ranks
    exchange only a maximum and a sum per token, so each keeps ``1/t`` of
    them; without it every rank of the group holds all ``V``. Korthikanti et
    al.'s per-layer count leaves them out: at Llama 3's vocabulary they weigh
    about one more layer on the last stage, ``t`` layers without the split.

    Parameters
    ----------
    seq, micro_batch, vocab : int
        ``s``, ``b`` and ``V`` (>= 1).
    tp : int
        ``t`` (>= 1).
    vocab_parallel : bool
        The vocabulary split over the ``t`` ranks.
    bytes_per_value : float
        4 for fp32 logits (> 0).

    Examples
    --------
    Llama 3's vocabulary of 128,256, one 8K sequence: 4.2 GB, 0.53 GB a GPU split over 8:

    >>> round(logits_bytes(8192, 1, 128256) / 1e9, 2), round(logits_bytes(8192, 1, 128256, tp=8) / 1e9, 2)
    (4.2, 0.53)
    >>> logits_bytes(8192, 1, 128256, tp=8, vocab_parallel=False) == logits_bytes(8192, 1, 128256)
    True
    """
    s = check_int("seq", seq, minimum=1)
    b = check_int("micro_batch", micro_batch, minimum=1)
    v = check_int("vocab", vocab, minimum=1)
    t = check_int("tp", tp, minimum=1)
    split = t if check_bool("vocab_parallel", vocab_parallel) else 1
    return float(s * b * v) * check_real("bytes_per_value", bytes_per_value, minimum=0, strict_min=True) / split
