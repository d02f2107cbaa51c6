"""Units for display. Bytes stay integers everywhere else; capacity is shown in GiB (2^30)."""

from __future__ import annotations

from calculators.errors import InputError, shown
from calculators.limits import MAX_MEMORY_GIB

GIB = 2**30  # gibibyte, IEC 80000-13
MIB = 2**20  # mebibyte


def gib(n_bytes: int) -> float:
    """Bytes in GiB."""
    return n_bytes / GIB


def format_gib(n_bytes: int, digits: int = 2) -> str:
    """'14.96 GiB': the label always matches the 2^30 divisor."""
    return f"{gib(n_bytes):,.{digits}f} GiB"


# Headroom is visible memory minus an estimate, and the visible memory itself moves by
# tens to a few hundred MiB between cards and driver versions (calculators.memory.gpus):
# a hundredth of a GiB would claim a precision the card-to-card spread does not have.
HEADROOM_DIGITS = 1


def format_headroom(n_bytes: int) -> str:
    """'12.6 GiB': headroom to a tenth of a GiB (HEADROOM_DIGITS says why)."""
    return format_gib(n_bytes, HEADROOM_DIGITS)


def format_count(n: int) -> str:
    """Counts with K/M/B (decimal) suffixes, the only place these suffixes are used."""
    for div, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(n) >= div:
            return f"{n / div:,.2f}{suffix}"
    return str(n)


def gib_to_bytes(field: str, value: float, *, allow_zero: bool = False) -> int:
    """GiB as whole bytes (truncated): InputError naming `field` unless `value` is a finite
    number in (0, MAX_MEMORY_GIB], or [0, MAX_MEMORY_GIB] with `allow_zero`."""
    real = isinstance(value, int | float) and not isinstance(value, bool)
    low_ok = real and (value >= 0 if allow_zero else value > 0)
    if not low_ok:
        kind = "a non-negative" if allow_zero else "a positive"
        raise InputError(field, f"{field} must be {kind} number of GiB, got {shown(value)}")
    if not value <= MAX_MEMORY_GIB:  # also refuses inf and nan
        raise InputError(
            field, f"{field} must be at most {MAX_MEMORY_GIB:,} GiB (one PiB), got {shown(value)}"
        )
    return int(value * GIB)
