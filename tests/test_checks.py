"""Shared input checks name the field, the bound and the value."""

import pytest

from calculators.checks import fraction, non_negative_int, one_of, positive_int, positive_number


@pytest.mark.parametrize("value", [0, -4, 1.5, True, "8", None])
def test_positive_int_rejects(value):
    with pytest.raises(ValueError, match=rf"context must be a positive integer, got {value!r}"):
        positive_int("context", value)


def test_positive_int_accepts():
    positive_int("context", 1)


@pytest.mark.parametrize("value", [-1, 2.0, False])
def test_non_negative_int_rejects(value):
    with pytest.raises(ValueError, match="free_bytes must be a non-negative integer"):
        non_negative_int("free_bytes", value)


def test_non_negative_int_accepts_zero():
    non_negative_int("free_bytes", 0)


@pytest.mark.parametrize("value", [-0.1, 1.0, 2, "0.5"])
def test_fraction_rejects(value):
    with pytest.raises(ValueError, match=r"margin must be a number in \[0, 1.0\)"):
        fraction("margin", value)


@pytest.mark.parametrize("value", [0, -1.5, float("inf"), float("nan"), True, "2"])
def test_positive_number_rejects(value):
    with pytest.raises(ValueError, match=r"price must be a positive number, got "):
        positive_number("price", value)


def test_positive_number_accepts():
    positive_number("price", 0.01)
    positive_number("price", 3)


def test_one_of_names_the_choices():
    one_of("norm", "rmsnorm", ("rmsnorm", "layernorm"))
    with pytest.raises(ValueError, match="norm must be one of 'rmsnorm', 'layernorm'; got 'x'"):
        one_of("norm", "x", ("rmsnorm", "layernorm"))
