"""typed_value: the decimal the reader typed, exactly."""

from fractions import Fraction
from math import ceil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.decimals import typed_value


def test_typed_value_is_the_decimal_typed():
    assert typed_value(0.07) == Fraction(7, 100)
    assert Fraction(0.07) != Fraction(7, 100)  # the binary float is not 0.07
    assert typed_value(0.3) - typed_value(0.2) == typed_value(0.2) - typed_value(0.1)
    assert typed_value(12) == 12


def test_rerun_rounding_that_floats_get_wrong():
    # 100 runs at a 7% margin: 7 reruns, not ceil(7.000000000000001) = 8
    assert ceil(100 * 0.07) == 8
    assert ceil(100 * typed_value(0.07)) == 7


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_typed_value_reads_back_as_the_same_float(x):
    assert float(typed_value(x)) == x


# 15 significant digits at most (DBL_DIG): 9 before the point, 6 after
@given(st.decimals(min_value=-(10**9) + 1, max_value=10**9 - 1, places=6, allow_nan=False))
def test_decimals_typed_with_15_digits_come_back_exactly(d):
    assert typed_value(float(str(d))) == Fraction(d)


@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_non_finite_is_refused(bad):
    with pytest.raises(ValueError, match="x must be finite"):
        typed_value(bad)


def test_bool_is_not_a_number():
    with pytest.raises(TypeError, match="x must be an int or a float, got bool"):
        typed_value(True)
