"""A dense decoder-only transformer: its shape, its parameters and its FLOPs per token.

Part IV's planner (:mod:`distlib.planner.step`) asks this module how big a model is
and how much arithmetic one token costs it. Counting conventions, and where
they come from:

* **Parameters** (``.params``): every weight, embeddings included. A layer
  holds the query and output projections (``h x h`` each), the key and value
  projections (``h x kv_dim`` each, ``kv_dim = kv_heads * h / heads``, so
  grouped-query attention has smaller ones), the MLP (two ``h x f`` matrices,
  three with a gated MLP such as SwiGLU), two layer norms (gain and bias,
  ``4 h``) and, when ``biases``, one bias per matrix output. Then the token
  embedding ``V h`` (once if the output layer reuses it, twice if not),
  learned position embeddings ``s h`` if the model has them, and the final
  layer norm ``2 h``. For GPT-3's shape this is Narayanan et al. 2021's
  equation (2), ``P = 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h))``, plus
  the final ``2 h``.
* **Forward FLOPs per token** (``.forward_flops_per_token``): ``2`` per
  parameter (one multiply-add each, as :func:`distlib.walls.training_flops`
  counts), plus attention's own matrix products: the scores ``Q K^T`` and
  the weighted values, ``2 s h`` FLOPs each per token per layer, ``4 s h l``
  in all. The causal mask is not exploited (every token is charged the whole
  sequence), as PaLM's model-FLOPs count does (Chowdhery et al. 2022,
  appendix B: ``6 N + 12 l h s`` per token for training). Counting the
  embedding lookup as a product overstates by ``2 V h`` per token, under 1 %
  for the models of the book; the contract asks for ``6 * params``.
* **Training FLOPs per token** (``.training_flops_per_token``): three
  forwards (the backward pass costs two). With activation recomputation the
  hardware does more (``.recompute_flops_per_token``): ``"full"`` runs every
  layer's forward again, ``"selective"`` the attention core's two products
  (``4 s h`` per layer). Korthikanti et al. 2022 charge more: their
  hardware-to-model ratio, "approximately 1 + s/6h" (section 6.3), is
  ``12 s h`` per layer per token, so their printed HFU sits 1.5 points above
  ours for the 22B model at the same MFU.

Narayanan et al. 2021's equation (3) counts one iteration of ``B`` sequences
with full recomputation as ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))``;
:meth:`Transformer.hardware_flops_per_token` with ``"full"`` gives the same
up to the bias, norm and embedding terms (see its example).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._check import check_bool, check_choice, check_int
from ..activations import RECOMPUTE_MODES
from ..walls import training_flops

__all__ = ["Transformer", "transformer"]


@dataclass(frozen=True)
class Transformer:
    """A dense decoder-only transformer's shape (build one with :func:`transformer`)."""

    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn_hidden: int
    kv_heads: int
    gated_ffn: bool = False
    biases: bool = True
    tied_embeddings: bool = True
    learned_positions: bool = True

    @property
    def kv_dim(self) -> int:
        """Width of the key (and of the value) projection: ``kv_heads * hidden / heads``."""
        return self.kv_heads * (self.hidden // self.heads)

    @property
    def params_per_layer(self) -> int:
        """Weights of one layer: attention, MLP, two layer norms and the biases."""
        h, f, kv = self.hidden, self.ffn_hidden, self.kv_dim
        mlp_matrices = 3 if self.gated_ffn else 2
        weights = 2 * h * h + 2 * h * kv + mlp_matrices * h * f
        bias = (2 * h + 2 * kv + (mlp_matrices - 1) * f + h) if self.biases else 0
        return weights + bias + 4 * h

    @property
    def params(self) -> int:
        """Every weight, embeddings included."""
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        positions = self.seq * self.hidden if self.learned_positions else 0
        return self.layers * self.params_per_layer + embeddings + positions + 2 * self.hidden

    @property
    def attention_flops_per_token(self) -> float:
        """Forward FLOPs of the score and value products, all layers: ``4 s h l``."""
        return 4.0 * self.seq * self.hidden * self.layers

    @property
    def forward_flops_per_token(self) -> float:
        """Forward FLOPs per token: ``2 params + 4 s h l``."""
        return training_flops(self.params, 1.0) / 3 + self.attention_flops_per_token

    @property
    def training_flops_per_token(self) -> float:
        """Model FLOPs per token of one training step, forward and backward: ``6 params + 12 s h l``."""
        return training_flops(self.params, 1.0) + 3 * self.attention_flops_per_token

    def recompute_flops_per_token(self, recompute) -> float:
        """FLOPs per token the hardware spends again under ``recompute`` (``"none"``, ``"selective"``, ``"full"``)."""
        mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
        if mode == "none":
            return 0.0
        if mode == "selective":
            return self.attention_flops_per_token
        layer_params = self.layers * self.params_per_layer
        return training_flops(layer_params, 1.0) / 3 + self.attention_flops_per_token

    def hardware_flops_per_token(self, recompute) -> float:
        """FLOPs per token the hardware runs: the model's, plus what ``recompute`` repeats.

        Examples
        --------
        GPT-3 175B as Narayanan et al. 2021 train it (full recomputation):
        their equation (3) per token, ``96 l h^2 (1 + s/(6h) + V/(16 l h))``,
        is ours within 0.1 % (the biases, norms and embeddings it leaves out):

        >>> m = transformer(96, 12288, 96, seq=2048, vocab=51200)
        >>> l, h, s, V = 96, 12288, 2048, 51200
        >>> narayanan = 96 * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
        >>> round(m.hardware_flops_per_token("full") / narayanan, 4)
        1.0002
        """
        return self.training_flops_per_token + self.recompute_flops_per_token(recompute)


def transformer(layers, hidden, heads, *, seq, vocab, ffn_hidden=None, kv_heads=None, gated_ffn=False,
                biases=True, tied_embeddings=True, learned_positions=True) -> Transformer:
    """A dense decoder-only transformer (chapter "Choosing a layout").

    Parameters
    ----------
    layers, hidden, heads : int
        ``l`` layers, ``h`` the hidden size and ``a`` attention heads (each
        >= 1; ``hidden`` a multiple of ``heads``).
    seq, vocab : int
        ``s`` tokens per training sequence and ``V`` the vocabulary (>= 1).
    ffn_hidden : int, optional
        The MLP's inner width ``f`` (default ``4 * hidden``).
    kv_heads : int, optional
        Key/value heads (default ``heads``; fewer is grouped-query
        attention; must divide ``heads``).
    gated_ffn : bool
        A gated MLP (SwiGLU, as Llama's): three ``h x f`` matrices, not two.
    biases : bool
        Every matrix has a bias (GPT-3, BLOOM); Llama has none.
    tied_embeddings : bool
        The output layer reuses the token embedding (GPT-3, BLOOM); Llama's does not.
    learned_positions : bool
        Learned position embeddings (GPT-3); ALiBi (BLOOM) and RoPE (Llama) have no weights.

    Returns
    -------
    Transformer
        With ``.params``, ``.forward_flops_per_token``,
        ``.training_flops_per_token`` and ``.hardware_flops_per_token(recompute)``.

    Raises
    ------
    ValueError, TypeError
        A bad argument, named with its range.

    Examples
    --------
    GPT-3 175B (Brown et al. 2020, with Megatron's vocabulary of 51,200):
    174.6 billion, the figure of Narayanan et al. 2021's Table 2:

    >>> gpt3 = transformer(96, 12288, 96, seq=2048, vocab=51200)
    >>> round(gpt3.params / 1e9, 1)
    174.6
    >>> l, h, s, V = 96, 12288, 2048, 51200       # their equation (2), plus the final layer norm
    >>> gpt3.params == round(12 * l * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))) + 2 * h
    True

    Llama 3 405B (grouped-query attention, SwiGLU, no biases, untied embeddings):

    >>> llama = transformer(126, 16384, 128, seq=8192, vocab=128256, ffn_hidden=53248, kv_heads=8,
    ...                     gated_ffn=True, biases=False, tied_embeddings=False, learned_positions=False)
    >>> round(llama.params / 1e9, 1)
    405.9
    """
    layers = check_int("layers", layers, minimum=1)
    hidden = check_int("hidden", hidden, minimum=1)
    heads = check_int("heads", heads, minimum=1)
    if hidden % heads:
        raise ValueError(f"hidden must be a multiple of heads ({heads}), got {hidden}")
    seq = check_int("seq", seq, minimum=1)
    vocab = check_int("vocab", vocab, minimum=1)
    ffn = 4 * hidden if ffn_hidden is None else check_int("ffn_hidden", ffn_hidden, minimum=1)
    kv = heads if kv_heads is None else check_int("kv_heads", kv_heads, minimum=1, maximum=heads)
    if heads % kv:
        raise ValueError(f"kv_heads must divide heads ({heads}), got {kv}")
    flags = {name: check_bool(name, value) for name, value in (
        ("gated_ffn", gated_ffn), ("biases", biases), ("tied_embeddings", tied_embeddings),
        ("learned_positions", learned_positions))}
    return Transformer(layers=layers, hidden=hidden, heads=heads, seq=seq, vocab=vocab, ffn_hidden=ffn,
                       kv_heads=kv, **flags)
