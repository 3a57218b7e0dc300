"""Activation memory per transformer layer: Korthikanti et al. 2022, Table 2 (16-bit activations)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl

# GPT-3 175B as the paper's Table 3 gives it: 5as/h = 80
S, B, H, A = 2048, 1, 12288, 96
SBH = S * B * H

size = st.integers(1, 4096)
FAST = settings(max_examples=60, deadline=None)


def act(**kw):
    return dl.activation_bytes_per_layer(S, B, H, A, **kw)


@pytest.mark.parametrize("t, sp, recompute, per_sbh", [
    (1, False, "none", 34 + 80),
    (8, False, "none", 10 + 24 / 8 + 80 / 8),
    (8, True, "none", (34 + 80) / 8),
    (8, False, "selective", 10 + 24 / 8),
    (8, True, "selective", 34 / 8),
    (1, False, "full", 2),
    (8, False, "full", 2),
    (8, True, "full", 2 / 8),
])
def test_the_papers_table_for_gpt3(t, sp, recompute, per_sbh):
    assert act(tp=t, sequence_parallel=sp, recompute=recompute) == pytest.approx(SBH * per_sbh, rel=1e-12)


def test_selective_recomputation_saves_the_papers_70_percent_for_gpt3():
    saved = 1 - act(recompute="selective") / act()
    assert saved == pytest.approx(80 / 114) and round(saved, 2) == 0.70


@FAST
@given(size, st.integers(1, 16), size, st.integers(1, 128), st.integers(1, 64))
def test_closed_forms(s, b, h, a, t):
    sbh = s * b * h
    f = dl.activation_bytes_per_layer
    assert f(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h), rel=1e-12)
    assert f(s, b, h, a, tp=t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)), rel=1e-12)
    assert f(s, b, h, a, tp=t, sequence_parallel=True) == pytest.approx(
        sbh / t * (34 + 5 * a * s / h), rel=1e-12)
    assert f(s, b, h, a, tp=t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t), rel=1e-12)
    assert f(s, b, h, a, tp=t, sequence_parallel=True, recompute="selective") == pytest.approx(
        sbh * 34 / t, rel=1e-12)
    assert f(s, b, h, a, tp=t, recompute="full") == pytest.approx(2 * sbh, rel=1e-12)
    assert f(s, b, h, a, tp=t, sequence_parallel=True, recompute="full") == pytest.approx(2 * sbh / t, rel=1e-12)


@FAST
@given(size, st.integers(1, 16), size, st.integers(1, 128), st.sampled_from(dl.RECOMPUTE_MODES))
def test_one_gpu_is_the_plain_formula_with_or_without_sequence_parallelism(s, b, h, a, recompute):
    f = dl.activation_bytes_per_layer
    plain = f(s, b, h, a, recompute=recompute)
    assert f(s, b, h, a, tp=1, sequence_parallel=True, recompute=recompute) == pytest.approx(plain, rel=1e-12)
    assert plain == pytest.approx(s * b * h * {"none": 34 + 5 * a * s / h, "selective": 34, "full": 2}[recompute],
                                  rel=1e-12)


@FAST
@given(size, st.integers(1, 16), size, st.integers(1, 128), st.integers(2, 64))
def test_each_option_keeps_less(s, b, h, a, t):
    f = dl.activation_bytes_per_layer
    keep = [f(s, b, h, a), f(s, b, h, a, tp=t), f(s, b, h, a, tp=t, sequence_parallel=True),
            f(s, b, h, a, tp=t, sequence_parallel=True, recompute="selective"),
            f(s, b, h, a, tp=t, sequence_parallel=True, recompute="full")]
    assert all(x > y for x, y in zip(keep, keep[1:]))
    # sequence parallelism divides the whole layer by t, nothing is left whole
    assert keep[2] == pytest.approx(keep[0] / t, rel=1e-12)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((0, 1, 1024, 16), {}, ValueError, "seq must be an integer >= 1, got 0"),
    ((2048, 0, 1024, 16), {}, ValueError, "micro_batch must be an integer >= 1, got 0"),
    ((2048, 1, 10.5, 16), {}, TypeError, "hidden must be an integer >= 1, got 10.5"),
    ((2048, 1, 1024, -2), {}, ValueError, "heads must be an integer >= 1, got -2"),
    ((2048, 1, 1024, 16), {"tp": 0}, ValueError, "tp must be an integer >= 1, got 0"),
    ((2048, 1, 1024, 16), {"sequence_parallel": "yes"}, TypeError, "sequence_parallel must be True or False"),
    ((2048, 1, 1024, 16), {"recompute": "partial"}, ValueError,
     "recompute must be one of 'none', 'selective', 'full'; got 'partial'"),
    ((2048, 1, 1024, 16), {"ffn_hidden": 0}, ValueError, "ffn_hidden must be an integer >= 1, got 0"),
    ((2048, 1, 1024, 16), {"kv_heads": 32}, ValueError, r"kv_heads must be an integer in \[1, 16\], got 32"),
    ((2048, 1, 1024, 16), {"kv_heads": 3}, ValueError, r"kv_heads must divide heads \(16\), got 3"),
    ((2048, 1, 1024, 16), {"gated_ffn": 1}, TypeError, "gated_ffn must be True or False"),
])
def test_bad_input_names_the_parameter_and_its_range(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        dl.activation_bytes_per_layer(*args, **kwargs)


@pytest.mark.parametrize("t, sp", [(1, False), (8, False), (8, True)])
def test_grouped_query_attention_and_a_gated_mlp_change_only_the_cut_matrices_share(t, sp):
    """Counted by hand: inside the cut matrices a token keeps 2h each for q and the output projection's input,
    2kv each for k and v, and 2f twice for a plain MLP or three times for a gated one; the rest is unchanged."""
    s, b, h, a = 4096, 2, 8192, 64
    kv_heads, f = 8, 28672
    kv = h * kv_heads // a
    for gated, mlp in ((False, 4 * f), (True, 6 * f)):
        got = dl.activation_bytes_per_layer(s, b, h, a, tp=t, sequence_parallel=sp, ffn_hidden=f, kv_heads=kv_heads,
                                            gated_ffn=gated)
        whole = 10 * s * b * h / (t if sp else 1)
        want = whole + s * b * (4 * h + 4 * kv + mlp) / t + 5 * a * s * s * b / t
        assert got == pytest.approx(want, rel=1e-12)
    plain = dl.activation_bytes_per_layer(s, b, h, a, tp=t, sequence_parallel=sp)
    assert dl.activation_bytes_per_layer(s, b, h, a, tp=t, sequence_parallel=sp, ffn_hidden=4 * h, kv_heads=a) == plain
    full = dict(tp=t, sequence_parallel=sp, recompute="full")
    assert dl.activation_bytes_per_layer(s, b, h, a, ffn_hidden=f, kv_heads=kv_heads, gated_ffn=True, **full) == \
        dl.activation_bytes_per_layer(s, b, h, a, **full)  # full recomputation keeps only the layer's input


def test_logits_are_four_bytes_a_token_and_vocabulary_entry_split_by_the_vocabulary_parallel_ranks():
    assert dl.logits_bytes(2048, 2, 51200) == 4 * 2048 * 2 * 51200
    for t in (1, 2, 8):
        assert dl.logits_bytes(8192, 1, 128256, tp=t) * t == pytest.approx(dl.logits_bytes(8192, 1, 128256))
        assert dl.logits_bytes(8192, 1, 128256, tp=t, vocab_parallel=False) == dl.logits_bytes(8192, 1, 128256)
    # Llama 3's vocabulary: one sequence's fp32 logits weigh about one layer's activations (selective, TP 8 + SP),
    # and eight layers' without the vocabulary split
    layer = dl.activation_bytes_per_layer(8192, 1, 16384, 128, tp=8, sequence_parallel=True, recompute="selective",
                                          ffn_hidden=53248, kv_heads=8, gated_ffn=True)
    assert 0.8 < dl.logits_bytes(8192, 1, 128256, tp=8) / layer < 1.0
    assert dl.logits_bytes(8192, 1, 128256, tp=8, vocab_parallel=False) > 7 * layer
    with pytest.raises(ValueError, match="bytes_per_value must be"):
        dl.logits_bytes(8, 1, 10, bytes_per_value=0)
