"""Typed results from ranks (distlib.engines.report): one marked line, read back as the dataclass it was."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distlib.engines.launch import RunResult
from distlib.engines.report import MARKER, ReportError, emit, encode, parse, read, read_all, strip
from conftest import needs_mpi


@dataclass(frozen=True)
class Leg:
    name: str
    seconds: float
    wrong: int | None = None


@dataclass(frozen=True)
class Trip:
    p: int
    legs: list[Leg]
    by_name: dict[str, Leg]
    shape: tuple[int, int]
    sizes: tuple[int, ...]
    best: Leg | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def _trip(**over):
    legs = [Leg("ring", 1.5e-3, 0), Leg("tree", float("inf")), Leg("hd", float("nan"), None)]
    kw = dict(p=4, legs=legs, by_name={leg.name: leg for leg in legs}, shape=(2, 3), sizes=(8, 16, 32),
              best=legs[0], note='quotes " and\nnewlines', extra={"a": [1, 2.5, None, True]})
    kw.update(over)
    return Trip(**kw)


def _result(*stdouts) -> RunResult:
    return RunResult(stdout=list(stdouts), stderr=[""] * len(stdouts), launcher="", returncodes=[0] * len(stdouts),
                     returncode=0, seconds=0.1, command=["test"], run_id="test-report")


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN (a report must carry NaN through, and NaN != NaN)."""
    return repr(a) == repr(b)


# --------------------------------------------------------------------------
# The round trip
# --------------------------------------------------------------------------


def test_a_report_is_one_line_starting_with_the_marker_and_naming_its_type():
    line = encode(_trip())
    assert line.startswith(MARKER + '{"type": "Trip", ')
    assert "\n" not in line


def test_nested_dataclasses_lists_dicts_tuples_and_optionals_come_back_as_they_were(capsys):
    trip = _trip()
    emit(trip)
    out = "some output\n" + capsys.readouterr().out + "more output\n"
    back = parse(out, Trip)
    assert _same(back, trip)
    assert isinstance(back.legs[0], Leg) and isinstance(back.by_name["tree"], Leg) and isinstance(back.best, Leg)
    assert back.shape == (2, 3) and isinstance(back.sizes, tuple) and math.isinf(back.legs[1].seconds)
    assert parse(encode(_trip(best=None)), Trip).best is None


def test_numpy_values_are_written_as_plain_numbers():
    back = parse(encode(_trip(p=np.int64(3), legs=[Leg("ring", np.float64(0.25))], extra={"x": np.arange(3)})), Trip)
    assert back.p == 3 and type(back.p) is int and back.legs[0].seconds == 0.25 and back.extra == {"x": [0, 1, 2]}


@settings(max_examples=150, deadline=None)
@given(p=st.integers(-2**62, 2**62), seconds=st.floats(allow_nan=True, allow_infinity=True), name=st.text(),
       wrong=st.none() | st.integers(0, 10**9))
def test_every_value_survives_exactly(p, seconds, name, wrong):
    leg = Leg(name, seconds, wrong)
    trip = _trip(p=p, legs=[leg], by_name={name: leg}, best=leg, note=name)
    assert _same(parse(encode(trip), Trip), trip)


def test_the_last_report_of_the_type_counts_and_others_are_skipped():
    text = "\n".join([encode(Leg("first", 1.0)), encode(_trip()), "prose", encode(Leg("last", 2.0))])
    assert parse(text, Leg).name == "last"
    assert parse(text, Trip).p == 4


# --------------------------------------------------------------------------
# Errors that name the rank and the type
# --------------------------------------------------------------------------


def test_a_missing_report_names_the_rank_and_the_type():
    result = _result(encode(Leg("ring", 1.0)) + "\n", "rank 1 says hello\nand goodbye\n")
    assert read(result, Leg).name == "ring"
    with pytest.raises(ReportError, match=r"^rank 1 printed no Leg report .*ended with:\nrank 1 says hello") as err:
        read(result, Leg, rank=1)
    assert err.value.source == "rank 1" and err.value.type == "Leg"
    with pytest.raises(ReportError, match=r"rank 0 printed no Trip report .*\(only reports of type Leg\)"):
        read(result, Trip)
    with pytest.raises(ReportError, match="rank 1 printed no Leg report"):
        read_all(result, Leg)


def test_a_malformed_line_names_the_rank_and_the_type():
    cut = encode(_trip())[:60]  # a rank killed in the middle of its line
    with pytest.raises(ReportError, match=r"rank 0 printed a malformed report line \(line 2.*its Trip report"):
        read(_result("ok\n" + cut + "\n"), Trip)
    with pytest.raises(ReportError, match=r"rank 0 printed a malformed report line"):
        read(_result(MARKER + '{"fields": {}}\n'), Trip)


@pytest.mark.parametrize("fields, message", [
    ({"name": "ring"}, "Leg lacks seconds"),
    ({"name": "ring", "seconds": 1.0, "colour": "red"}, "Leg has no field(s) colour"),
    ({"name": "ring", "seconds": "fast"}, "seconds: expected a number, got 'fast'"),
    ({"name": 7, "seconds": 1.0}, "name: expected str, got 7"),
    ({"name": "ring", "seconds": 1.0, "wrong": 1.5}, "wrong: expected int, got 1.5"),
    ({"name": "ring", "seconds": True}, "seconds: expected a number, got True"),
])
def test_fields_that_do_not_fit_are_named(fields, message):
    import json

    line = MARKER + json.dumps({"type": "Leg", "fields": fields})
    with pytest.raises(ReportError, match=r"^rank 2's Leg report is malformed: ") as err:
        read(_result("", "", line + "\n"), Leg, rank=2)
    assert message in str(err.value)


def test_nested_fields_are_named_by_their_path():
    import json

    body = json.loads(encode(_trip())[len(MARKER):])
    body["fields"]["legs"][1]["seconds"] = [1]
    with pytest.raises(ReportError, match=r"legs\[1\]\.seconds: expected a number"):
        parse(MARKER + json.dumps(body), Trip, source="rank 0")


def test_bad_arguments_are_refused_with_what_was_expected():
    with pytest.raises(TypeError, match="dataclass instance"):
        encode({"p": 4})
    with pytest.raises(TypeError, match="dict keys must be strings"):
        encode(_trip(extra={1: 2}))
    with pytest.raises(TypeError, match=r"legs\[0\]: cannot put a object in a report"):
        encode(_trip(legs=[object()]))
    with pytest.raises(TypeError, match="cls must be a dataclass"):
        parse("", dict)
    with pytest.raises(TypeError, match="RunResult"):
        read("text", Leg)
    with pytest.raises(ValueError, match="rank must be an integer from 0 to 1"):
        read(_result("", ""), Leg, rank=2)


def test_strip_leaves_what_a_reader_should_see():
    text = f"hello\n{encode(Leg('a', 1.0))}\nbye\n"
    assert strip(text) == "hello\nbye\n"
    shown = _result(text).text()  # as RunResult prints it: "[0] ..."
    assert strip(shown) == "[0] hello\n[0] bye"


# --------------------------------------------------------------------------
# A real MPI run
# --------------------------------------------------------------------------




@dataclass(frozen=True)
class RankNote:
    """What the script below emits on every rank (read here by its type's name)."""

    rank: int
    p: int
    total: float
    bytes_sent: int


SCRIPT = """
    from dataclasses import dataclass

    import numpy as np
    from mpi4py import MPI

    from distlib.engines.report import emit


    @dataclass(frozen=True)
    class RankNote:
        rank: int
        p: int
        total: float
        bytes_sent: int


    comm = MPI.COMM_WORLD
    mine = np.full(1000, comm.rank + 0.5)
    out = np.empty_like(mine)
    comm.Allreduce(mine, out)
    print(f"rank {comm.rank} says hello")
    emit(RankNote(comm.rank, comm.size, float(out[0]), mine.nbytes))
    print("and goodbye")
"""


@pytest.mark.engines
@needs_mpi
def test_two_mpi_ranks_hand_back_typed_results(tmp_path):
    from distlib.engines import run_mpi, stray_processes

    script = tmp_path / "rank_notes.py"
    script.write_text(textwrap.dedent(SCRIPT))
    result = run_mpi(str(script), 2, timeout=60)
    notes = read_all(result, RankNote)
    assert [n.rank for n in notes] == [0, 1] and all(n.p == 2 for n in notes)
    assert all(n.total == 0.5 + 1.5 for n in notes)  # the all-reduce's sum, on both ranks
    assert [n.bytes_sent for n in notes] == [8000, 8000]  # a per-rank counter, as a future bytes_sent would be
    assert read(result, RankNote, rank=1) == notes[1]
    assert strip(result.stdout[1]) == "rank 1 says hello\nand goodbye\n"
    with pytest.raises(ReportError, match="rank 0 printed no Leg report"):
        read(result, Leg)
    assert stray_processes(result.run_id) == []
