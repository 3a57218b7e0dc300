"""The layout value (distlib/layout.py): its flags rebuild it, its grid is a bijection, its groups partition."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distlib.layout import CP_KINDS, GRID, SCHEDULES, Layout
from distlib.train.model import Config

degree = st.integers(1, 4)
layouts = st.builds(Layout, dp=degree, tp=degree, pp=degree, cp=degree, ep=degree, zero=st.sampled_from((0, 1, 2, 3)),
                    sequence_parallel=st.booleans(), schedule=st.sampled_from(SCHEDULES), chunks=st.integers(1, 3),
                    microbatches=st.integers(1, 8), cp_kind=st.sampled_from(CP_KINDS))


@settings(max_examples=300, deadline=None)
@given(layouts)
def test_the_flags_rebuild_the_layout(lay):
    assert Layout.from_argv(lay.argv()) == lay
    assert Layout.from_argv([*lay.argv(), "--steps", "3"]) == lay  # other flags are left to their parser


@settings(max_examples=200, deadline=None)
@given(layouts)
def test_coords_are_a_bijection_onto_the_ranks(lay):
    coords = [lay.coords(r) for r in range(lay.ranks)]
    assert len(set(coords)) == lay.ranks
    assert [lay.rank(c) for c in coords] == list(range(lay.ranks))
    for c in coords:
        assert all(0 <= getattr(c, axis) < getattr(lay, axis) for axis in GRID)


@settings(max_examples=200, deadline=None)
@given(layouts)
def test_each_kind_of_group_partitions_the_ranks(lay):
    for kind in ("dp", "pp", "cp", "tp", "replicas"):
        seen = {}
        for r in range(lay.ranks):
            group = getattr(lay.groups(r), kind)
            assert r in group
            seen.setdefault(group, []).append(r)
        assert sorted(r for g in seen for r in g) == list(range(lay.ranks))  # disjoint and covering
        assert all(sorted(members) == sorted(g) for g, members in seen.items())  # each member names the same group
    sizes = {kind: len(lay.groups(0).__getattribute__(kind)) for kind in ("dp", "pp", "cp", "tp", "replicas")}
    assert sizes == {"dp": lay.dp, "pp": lay.pp, "cp": lay.cp, "tp": lay.tp, "replicas": lay.dp * lay.cp}


def test_tensor_parallel_groups_are_neighbours_and_data_parallel_groups_stride():
    lay = Layout(dp=2, pp=2, cp=2, tp=2)
    g = lay.groups(0)
    assert g.tp == (0, 1) and g.cp == (0, 2) and g.pp == (0, 4) and g.dp == (0, 8)
    assert g.replicas == (0, 2, 8, 10)


def test_expert_groups_split_the_replicas():
    lay = Layout(dp=4, ep=2)
    assert [lay.groups(r).ep for r in range(4)] == [(0, 1), (0, 1), (2, 3), (2, 3)]
    assert [lay.groups(r).expert_replicas for r in range(4)] == [(0, 2), (1, 3), (0, 2), (1, 3)]
    assert [lay.coords(r).ep for r in range(4)] == [0, 1, 0, 1]
    lay = Layout(dp=2, tp=2, ep=2)  # with tensor parallelism: among the ranks of one tensor-parallel index
    assert [lay.groups(r).ep for r in range(4)] == [(0, 2), (1, 3), (0, 2), (1, 3)]


@pytest.mark.parametrize("kwargs, message", [
    (dict(tp=3), "--tp must divide heads (4), hidden (32) and ffn (128): one of 1, 2, 4; got 3"),
    (dict(dp=5), "--dp must divide the global batch of 12 sequences: one of 1, 2, 3, 4, 6, 12; got 5"),
    (dict(pp=3, microbatches=3), "--pp must divide the 8 layers (Megatron-LM's rule): one of 1, 2, 4, 8; got 3"),
    (dict(pp=2, zero=2, microbatches=2), "--zero 2 with pipeline stages"),
    (dict(cp=3), "--cp must split the sequence of 16 tokens into 2 x cp equal chunks"),
    (dict(cp=16), "--cp must split the sequence of 16 tokens into 2 x cp equal chunks (the zig-zag balance): "
                  "one of 1, 2, 4, 8; got 16"),
    (dict(cp=8, cp_kind="ulysses"), "--cp with --cp-kind ulysses must divide the 4 heads"),
    (dict(tp=2, cp=4, cp_kind="ulysses"), "--cp with --cp-kind ulysses must divide the 2 heads"),
    (dict(dp=2, ep=2), "--ep 2 needs experts"),
])
def test_a_bad_layout_is_one_line_naming_its_flag(kwargs, message):
    problem = Layout(**kwargs).problem(Config())
    assert problem is not None and problem.startswith(message) and "\n" not in problem


def test_a_layout_that_fits_has_no_problem_and_checks_its_ranks():
    assert Layout(dp=2, tp=2, pp=2, microbatches=2).problem(Config()) is None
    assert Layout(cp=4, cp_kind="ulysses").problem(Config()) is None
    assert Layout(dp=2, tp=2).problem(Config(), ranks=2) == "--dp times --tp must equal the 2 ranks, got 4"
    with pytest.raises(ValueError, match="--tp must divide"):
        Layout(tp=3).check(Config())


@pytest.mark.parametrize("kwargs, message", [
    (dict(dp=0), "dp must be an integer >= 1, got 0"),
    (dict(zero=4), "zero must be one of"),
    (dict(schedule="zb"), "schedule must be one of"),
    (dict(sequence_parallel=1), "sequence_parallel must be"),
])
def test_bad_values_are_refused_when_built(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        Layout(**kwargs)
