"""Argument checks name the argument and its range."""

import numpy as np
import pytest

from distlib._check import check_array, check_choice, check_int, check_real


def test_check_int():
    assert check_int("p", 3, minimum=1) == 3
    assert check_int("p", np.int64(3), minimum=1) == 3
    assert check_int("p", 4.0) == 4
    with pytest.raises(ValueError, match=r"p must be an integer in \[1, 8\], got 9"):
        check_int("p", 9, minimum=1, maximum=8)
    with pytest.raises(TypeError, match="p must be an integer"):
        check_int("p", True)
    with pytest.raises(TypeError):
        check_int("p", "3")


def test_check_real():
    assert check_real("x", 2) == 2.0
    with pytest.raises(ValueError, match="bandwidth must be a finite number > 0"):
        check_real("bandwidth", 0.0, minimum=0, strict_min=True)
    with pytest.raises(ValueError, match="inf"):
        check_real("x", float("inf"))
    with pytest.raises(TypeError, match="x must be a number"):
        check_real("x", None)


def test_check_choice_and_array():
    with pytest.raises(ValueError, match="'a', 'b'"):
        check_choice("kind", "c", ["a", "b"])
    with pytest.raises(ValueError, match="finite"):
        check_array("t", [1.0, float("nan")], finite=True)
    with pytest.raises(ValueError, match=">= 0"):
        check_array("t", [1.0, -1.0], minimum=0)
    with pytest.raises(ValueError, match="1-D"):
        check_array("t", [[1.0]], ndim=1)
