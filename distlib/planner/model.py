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

**Mixture of experts** (chapter 15). With ``experts`` above 0 the last
``moe_layers`` layers replace the MLP by ``experts`` routed experts (each an
MLP of inner width ``expert_ffn_hidden``), ``shared_experts`` experts every
token passes through, and a router (an ``h x experts`` matrix); each token
goes to ``top_k`` of the routed experts. ``.params`` counts every expert;
the FLOPs count what a token runs, the *active* parameters
(``.active_params``: ``top_k`` routed experts and the shared ones, the
router, and everything outside the MLPs), as DeepSeek-V3's "37B activated
for each token" does. ``.routed_expert_params`` is what expert parallelism
splits over its ranks. Multi-head latent attention's low-rank projections
are counted as ordinary attention's ``4 h^2`` (for DeepSeek-V3: 205M a layer
against MLA's 187M, 0.2 % of the model). DeepSeek-V3 (arXiv:2412.19437,
section 4.2: 61 layers, the first 3 dense, 1 shared and 256 routed experts of
width 2048, 8 routed a token; "671B total parameters, of which 37B are
activated for each token"):

>>> v3 = transformer(61, 7168, 128, seq=4096, vocab=129280, ffn_hidden=18432, gated_ffn=True, biases=False,
...                  tied_embeddings=False, learned_positions=False, experts=256, top_k=8,
...                  expert_ffn_hidden=2048, shared_experts=1, moe_layers=58)
>>> round(v3.params / 1e9), round(v3.active_params / 1e9, 1)    # MLA counted as 4 h^2 attention
(672, 38.7)

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
    experts: int = 0
    top_k: int = 0
    expert_ffn_hidden: int = 0
    shared_experts: int = 0
    moe_layers: int = 0

    @property
    def is_moe(self) -> bool:
        """Whether some layers are mixtures of experts."""
        return self.experts > 0 and self.moe_layers > 0

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
    def expert_params(self) -> int:
        """Weights of one expert: an MLP of inner width ``expert_ffn_hidden`` (gated or not, biased or not)."""
        h, f = self.hidden, self.expert_ffn_hidden
        mlp_matrices = 3 if self.gated_ffn else 2
        return mlp_matrices * h * f + (((mlp_matrices - 1) * f + h) if self.biases else 0)

    def _moe_layer_params(self, experts: int) -> int:
        """One mixture-of-experts layer holding ``experts`` experts: the dense layer less its MLP, the router."""
        dense_mlp = (3 if self.gated_ffn else 2) * self.hidden * self.ffn_hidden
        dense_mlp += (((3 if self.gated_ffn else 2) - 1) * self.ffn_hidden + self.hidden) if self.biases else 0
        return self.params_per_layer - dense_mlp + self.hidden * self.experts + experts * self.expert_params

    def _all_layers(self, experts: int) -> int:
        moe = self.moe_layers if self.is_moe else 0
        mixed = moe * self._moe_layer_params(experts) if moe else 0
        return (self.layers - moe) * self.params_per_layer + mixed

    @property
    def non_layer_params(self) -> int:
        """Weights outside the layers: the embeddings (and output layer), positions, the final norm."""
        return self._outside_layers()

    def _outside_layers(self) -> int:
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        positions = self.seq * self.hidden if self.learned_positions else 0
        return embeddings + positions + 2 * self.hidden

    @property
    def params(self) -> int:
        """Every weight, embeddings and every expert included."""
        return self._all_layers(self.experts + self.shared_experts) + self._outside_layers()

    @property
    def active_params(self) -> int:
        """The weights one token runs through: ``top_k`` routed and the shared experts (``params`` when dense)."""
        return self._all_layers(self.top_k + self.shared_experts) + self._outside_layers()

    @property
    def active_params_per_layer(self) -> float:
        """A layer's active weights, the mean over the layers (``params_per_layer`` when dense)."""
        if not self.is_moe:
            return self.params_per_layer
        return self._all_layers(self.top_k + self.shared_experts) / self.layers

    @property
    def routed_expert_params(self) -> int:
        """Weights of every routed expert of every layer: what expert parallelism splits (0 when dense)."""
        return self.moe_layers * self.experts * self.expert_params if self.is_moe else 0

    @property
    def active_ffn_hidden(self) -> int:
        """The MLP width a token's activations have: ``(top_k + shared) x expert_ffn_hidden`` with experts."""
        return (self.top_k + self.shared_experts) * self.expert_ffn_hidden if self.is_moe else self.ffn_hidden

    @property
    def attention_flops_per_token(self) -> float:
        """Forward FLOPs of the score and value products, all layers: ``4 s h l``."""
        return 4.0 * self.seq * self.hidden * self.layers

    @property
    def forward_flops_per_token(self) -> float:
        """Forward FLOPs per token: ``2 params + 4 s h l`` (the active parameters with experts)."""
        return training_flops(self.active_params, 1.0) / 3 + self.attention_flops_per_token

    @property
    def training_flops_per_token(self) -> float:
        """Model FLOPs per token of one training step, forward and backward: ``6 params + 12 s h l`` (active)."""
        return training_flops(self.active_params, 1.0) + 3 * self.attention_flops_per_token

    def recompute_flops_per_token(self, recompute) -> float:
        """FLOPs per token the hardware spends again under ``recompute`` (``"none"``, ``"selective"``, ``"full"``)."""
        mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
        if mode == "none":
            return 0.0
        if mode == "selective":
            return self.attention_flops_per_token
        layer_params = self._all_layers(self.top_k + self.shared_experts)
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
                biases=True, tied_embeddings=True, learned_positions=True, experts=0, top_k=None,
                expert_ffn_hidden=None, shared_experts=0, moe_layers=None) -> Transformer:
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
    experts, top_k, expert_ffn_hidden, shared_experts, moe_layers : int
        A mixture of experts (module docstring): ``experts`` routed (0: dense), ``top_k`` of them a token (1 to
        ``experts``), ``expert_ffn_hidden`` wide (default ``ffn_hidden``), plus ``shared_experts``, in the last
        ``moe_layers`` layers (1 to ``layers``, default all).

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
    moe = _moe_shape(layers, ffn, experts, top_k, expert_ffn_hidden, shared_experts, moe_layers)
    return Transformer(layers=layers, hidden=hidden, heads=heads, seq=seq, vocab=vocab, ffn_hidden=ffn,
                       kv_heads=kv, **flags, **moe)


def _moe_shape(layers, ffn, experts, top_k, expert_ffn_hidden, shared_experts, moe_layers) -> dict:
    """The mixture-of-experts fields, checked (all 0 for a dense model)."""
    experts = check_int("experts", experts, minimum=0)
    if experts == 0:
        given = [n for n, v in (("top_k", top_k), ("expert_ffn_hidden", expert_ffn_hidden), ("moe_layers", moe_layers))
                 if v is not None] + (["shared_experts"] if shared_experts else [])
        if given:
            raise ValueError(f"{given[0]} needs experts >= 1 (a mixture of experts), got experts = 0")
        return {}
    if top_k is None:
        raise ValueError(f"top_k must be given with experts: an integer from 1 to experts ({experts})")
    return {"experts": experts, "top_k": check_int("top_k", top_k, minimum=1, maximum=experts),
            "expert_ffn_hidden": ffn if expert_ffn_hidden is None else check_int("expert_ffn_hidden", expert_ffn_hidden,
                                                                                minimum=1),
            "shared_experts": check_int("shared_experts", shared_experts, minimum=0),
            "moe_layers": layers if moe_layers is None else check_int("moe_layers", moe_layers, minimum=1,
                                                                      maximum=layers)}
