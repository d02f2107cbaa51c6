"""Input checks shared by the calculators: each error names the field, the bound and the value."""

from __future__ import annotations

from math import isfinite


def positive_int(name: str, value: object) -> None:
    """Raise ValueError unless `value` is an int > 0 (bool is not an int here)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def non_negative_int(name: str, value: object) -> None:
    """Raise ValueError unless `value` is an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def fraction(name: str, value: object, *, upper: float = 1.0) -> None:
    """Raise ValueError unless `value` is a real number in [0, upper)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < upper:
        raise ValueError(f"{name} must be a number in [0, {upper}), got {value!r}")


def one_of(name: str, value: object, choices: tuple[object, ...]) -> None:
    """Raise ValueError unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")


def positive_number(name: str, value: object) -> None:
    """Raise ValueError unless `value` is a finite real number > 0 (bool is not a number)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
