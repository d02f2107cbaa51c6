"""Input checks shared by the calculators: each error names the field, the bound and the value.

Every check raises `InputError` (a ValueError) with the field as data, so a page shows
the message at the right input without reading the message text.
"""

from __future__ import annotations

from math import isfinite

from calculators.errors import InputError, shown


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    """An int or a float (bool is not a number here); NaN and infinities included."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def positive_int(name: str, value: object, *, maximum: int | None = None) -> None:
    """Raise InputError unless `value` is an int > 0 (and <= maximum); bool is not an int."""
    if not _is_int(value) or value <= 0:  # type: ignore[operator]
        raise InputError(name, f"{name} must be a positive integer, got {shown(value)}")
    if maximum is not None and value > maximum:  # type: ignore[operator]
        raise InputError(name, f"{name} must be at most {maximum:,}, got {value:,}")


def non_negative_int(name: str, value: object, *, maximum: int | None = None) -> None:
    """Raise InputError unless `value` is an int >= 0 (and <= maximum)."""
    if not _is_int(value) or value < 0:  # type: ignore[operator]
        raise InputError(name, f"{name} must be a non-negative integer, got {shown(value)}")
    if maximum is not None and value > maximum:  # type: ignore[operator]
        raise InputError(name, f"{name} must be at most {maximum:,}, got {value:,}")


def fraction(name: str, value: object, *, upper: float = 1.0) -> None:
    """Raise InputError unless `value` is a real number in [0, upper)."""
    if not is_real(value) or not 0 <= value < upper:  # type: ignore[operator]
        raise InputError(name, f"{name} must be a number in [0, {upper}), got {shown(value)}")


def one_of(name: str, value: object, choices: tuple[object, ...]) -> None:
    """Raise InputError unless `value` is one of `choices`."""
    if value not in choices:
        raise InputError(
            name, f"{name} must be one of {', '.join(map(repr, choices))}; got {shown(value)}"
        )


def positive_number(name: str, value: object, *, maximum: float | None = None) -> None:
    """Raise InputError unless `value` is a finite real number > 0 (and <= maximum)."""
    if not is_real(value) or not isfinite(value) or value <= 0:  # type: ignore[arg-type,operator]
        raise InputError(name, f"{name} must be a positive number, got {shown(value)}")
    if maximum is not None and value > maximum:  # type: ignore[operator]
        raise InputError(name, f"{name} must be at most {maximum:g}, got {value:g}")
