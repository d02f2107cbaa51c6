"""Numbers read from typed text: whole numbers in any notation, bounded; finite floats."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.errors import QUOTE_LIMIT, InputError
from calculators.parsing import parse_float, parse_int, parse_number, parse_numbers


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("4_096", 4096), (" 12 ", 12), ("1e9", 10**9), ("2.5e3", 2500)],
)
def test_whole_numbers_in_any_notation(text, value):
    assert parse_int("tokens", text) == value


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1.5", "whole number"),
        ("abc", "whole number"),
        ("1/2", "whole number"),
        ("inf", "whole number"),
        ("1e19", "at most 10^18"),
        # built as an integer, this would take the machine's memory
        ("1e999999999", "at most 10^18"),
    ],
)
def test_bad_whole_numbers_name_the_field(text, words):
    with pytest.raises(InputError) as e:
        parse_int("tokens", text)
    assert e.value.field == "tokens"
    assert str(e.value).startswith("tokens must be")
    assert words in str(e.value)


@given(st.integers(-(10**18), 10**18))
def test_every_integer_reads_back(n):
    assert parse_int("x", str(n)) == n
    assert parse_int("x", f"{n:_}") == n


@given(st.integers(0, 10**15), st.integers(0, 3))
def test_scientific_notation_of_an_integer_is_exact(mantissa, exponent):
    assert parse_int("x", f"{mantissa}e{exponent}") == mantissa * 10**exponent


def test_floats_must_be_finite():
    assert parse_float("price", "2.5") == 2.5
    for bad in ("inf", "-inf", "nan", "x"):
        with pytest.raises(InputError, match="price must be a"):
            parse_float("price", bad)


def test_number_is_whole_where_it_can_be():
    assert parse_number("reserve", "1e9") == 10**9 and isinstance(parse_number("r", "1e9"), int)
    assert parse_number("reserve", "0.05") == 0.05


def test_score_lists_take_negative_numbers_and_skip_empty_items():
    assert parse_numbers("a", "-1.2, 0.3,,4") == (-1.2, 0.3, 4.0)
    with pytest.raises(InputError, match="a must be comma-separated numbers, got '1,x'"):
        parse_numbers("a", "1,x")


def test_a_huge_input_is_quoted_short():
    text = "9" * 20_000 + "x"
    with pytest.raises(InputError) as e:
        parse_numbers("a", text)
    assert len(str(e.value)) < 2 * QUOTE_LIMIT + 40
    assert "20,003 characters" in str(e.value)  # the repr's quotes count


@given(st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False))
def test_typed_decimals_read_as_floats(d):
    assert Fraction(parse_float("x", str(d))) == Fraction(float(d))


@given(
    st.integers(0, 10**12), st.text("0123456789", max_size=4), st.integers(-30, 30), st.booleans()
)
def test_literals_read_as_their_exact_value(whole, fraction, exponent, negative):
    text = f"{'-' if negative else ''}{whole}{'.' + fraction if fraction else ''}e{exponent}"
    exact = Fraction(text)
    if exact.denominator != 1:
        with pytest.raises(InputError, match="whole number"):
            parse_int("x", text)
    elif abs(exact) > 10**18:
        with pytest.raises(InputError, match="at most 10"):
            parse_int("x", text)
    else:
        assert parse_int("x", text) == exact
