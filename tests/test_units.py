"""Gbit/s <-> bytes/s: the one conversion every link rate goes through."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distlib.units import bytes_per_s_to_gbit, gbit_to_bytes_per_s


def test_a_400_gbit_port_is_50_gb_per_s_and_8_of_them_are_400_gb_per_s():
    assert gbit_to_bytes_per_s(400) == 50e9
    assert 8 * gbit_to_bytes_per_s(400) == 400e9
    assert bytes_per_s_to_gbit(50e9) == 400.0


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_the_two_directions_undo_each_other(gbit):
    assert bytes_per_s_to_gbit(gbit_to_bytes_per_s(gbit)) == pytest.approx(gbit, rel=1e-15, abs=0)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (float("inf"), ValueError), ("400", TypeError)])
def test_bad_rates_are_refused_naming_the_argument(bad, error):
    with pytest.raises(error, match="^gbit must be"):
        gbit_to_bytes_per_s(bad)
