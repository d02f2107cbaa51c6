"""Plain-text tables for the CLI. Calculators return data; only this module draws it."""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns separated by two spaces; numeric columns right-aligned, text left-aligned.

    A column is numeric when every non-empty body cell starts with a digit or a sign.
    """
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [
        i > 0 and all(not r[i] or r[i][0] in "0123456789-+" for r in cells[1:])
        for i in range(len(headers))
    ]

    def line(row: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(row, widths, numeric, strict=True)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])
