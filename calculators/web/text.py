"""Escaping for HTML, data URLs, shell words and CSV.

Small on purpose: the stdlib's html, urllib.parse, shlex and csv modules cost about a
tenth of a second to import under Pyodide, on the path to the page's first recompute.
"""

from __future__ import annotations

import re

_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})
_SAFE_URL = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
_SAFE_SHELL = re.compile(r"[\w@%+=:,./-]+", re.ASCII)


def escape(text: str) -> str:
    """Text for HTML content and quoted attributes (as html.escape(text, quote=True))."""
    return str(text).translate(_HTML)


def percent_encode(text: str) -> str:
    """UTF-8 percent-encoding of everything but unreserved characters (RFC 3986, 2.3)."""
    return "".join(chr(b) if b in _SAFE_URL else f"%{b:02X}" for b in text.encode("utf-8"))


def shell_quote(word: str) -> str:
    """A word a POSIX shell reads back unchanged (as shlex.quote)."""
    if word and _SAFE_SHELL.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def csv_row(cells: list[object]) -> str:
    """One CSV line (RFC 4180): a cell with a comma, quote or line break is quoted."""
    out = []
    for cell in cells:
        text = "" if cell is None else str(cell)
        if any(c in text for c in ',"\r\n'):
            text = '"' + text.replace('"', '""') + '"'
        out.append(text)
    if out == [""]:
        out = ['""']  # a lone empty cell, or the line would read as no row at all
    return ",".join(out) + "\n"
