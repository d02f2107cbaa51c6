"""Units for display. Bytes stay integers everywhere else; capacity is shown in GiB (2^30)."""

from __future__ import annotations

GIB = 2**30  # gibibyte, IEC 80000-13
MIB = 2**20  # mebibyte


def gib(n_bytes: int) -> float:
    """Bytes in GiB."""
    return n_bytes / GIB


def format_gib(n_bytes: int, digits: int = 2) -> str:
    """'14.96 GiB': the label always matches the 2^30 divisor."""
    return f"{gib(n_bytes):,.{digits}f} GiB"


def format_count(n: int) -> str:
    """Counts with K/M/B (decimal) suffixes, the only place these suffixes are used."""
    for div, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(n) >= div:
            return f"{n / div:,.2f}{suffix}"
    return str(n)
