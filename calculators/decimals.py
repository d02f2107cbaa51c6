"""Exact arithmetic on the numbers a reader typed.

A float read from "0.07" is not 0.07: it is the nearest binary fraction,
0.07000000000000000666..., and 100 x that, rounded up, is 8 reruns instead of 7. Python's
repr of a float is the shortest decimal string that reads back as the same float
(David Gay's algorithm, Python 3.1+), so for any value typed with at most 15 significant
digits (DBL_DIG, C11 5.2.4.2.2) it is the text that was typed, or the same number
written another way. Taking that decimal exactly, as a Fraction, makes equalities and
roundings the reader can check by hand come out as they expect.
"""

from __future__ import annotations

from fractions import Fraction
from math import isfinite


def typed_value(x: int | float) -> Fraction:
    """The exact rational of the shortest decimal that reads back as `x`.

    typed_value(0.07) == Fraction(7, 100), whereas Fraction(0.07) is
    Fraction(1261007895663739, 18014398509481984). Integers are returned exactly.
    """
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise TypeError(f"x must be an int or a float, got {type(x).__name__}")
    if isinstance(x, int):
        return Fraction(x)
    if not isfinite(x):
        raise ValueError(f"x must be finite, got {x!r}")
    return Fraction(repr(x))
