"""Numbers from the text a reader typed, read the same way by the CLI and the pages.

A whole number may be written 4096, 4_096, 1e9 or 2.5e3: whatever its notation, it is
accepted when its value is an exact integer ("1e9" in a budget phase is a billion
tokens, not an error). Every error is an InputError naming the field, with the text
quoted short.
"""

from __future__ import annotations

import re
from math import isfinite

from calculators.errors import InputError, shown

# Whole numbers past this are refused before they are built: 10^18 is beyond every bound
# in calculators.limits, and "1e300" would otherwise become a 300-digit integer.
_MAX_WHOLE = 10**18


# A decimal or scientific literal: sign, digits, optional fraction, optional exponent.
_LITERAL = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")


def parse_int(field: str, text: str) -> int:
    """A whole number from `text`: digits (with optional _ separators), or a decimal or
    scientific literal whose value is an exact integer, at most 10^18 in magnitude.

    The literal is read as digits and a power of ten, so its size is known before any
    integer is built ("1e999999999" would otherwise take the machine's memory).
    """
    cleaned = str(text).strip().replace("_", "")
    m = _LITERAL.fullmatch(cleaned)
    if m is None or not (m.group(2) or m.group(3)):
        raise InputError(field, f"{field} must be a whole number, got {shown(text)}")
    sign, whole, fraction, exponent = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return 0
    if exponent is not None and len(exponent.lstrip("+-")) > 6:  # beyond any bound here
        power = -(10**7) if exponent.startswith("-") else 10**7
    else:
        power = int(exponent or 0) - len(fraction)
    stripped = digits.rstrip("0")
    power += len(digits) - len(stripped)  # 1200e-2 is 12: trailing zeros raise the power
    if power < 0:
        raise InputError(field, f"{field} must be a whole number, got {shown(text)}")
    if len(stripped) + power > 19 or int(stripped) * 10**power > _MAX_WHOLE:
        raise InputError(field, f"{field} must be at most 10^18 in magnitude, got {shown(text)}")
    value = int(stripped) * 10**power
    return -value if sign == "-" else value


def parse_float(field: str, text: str) -> float:
    """A finite number from `text` (underscores allowed between digits)."""
    try:
        value = float(str(text).strip().replace("_", ""))
    except ValueError:
        raise InputError(field, f"{field} must be a number, got {shown(text)}") from None
    if not isfinite(value):
        raise InputError(field, f"{field} must be a finite number, got {shown(text)}")
    return value


def parse_number(field: str, text: str) -> int | float:
    """A whole number where `text` has an integer value (1e9), otherwise a float (0.05)."""
    try:
        return parse_int(field, text)
    except InputError:
        return parse_float(field, text)


def parse_numbers(field: str, text: str) -> tuple[float, ...]:
    """Comma-separated finite numbers (empty items skipped): '0.81, -0.8,0.79'."""
    out = []
    for item in str(text).split(","):
        if item.strip():
            try:
                out.append(parse_float(field, item))
            except InputError:
                raise InputError(
                    field, f"{field} must be comma-separated numbers, got {shown(text)}"
                ) from None
    return tuple(out)
