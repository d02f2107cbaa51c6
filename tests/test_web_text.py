"""calculators.web.text agrees with the stdlib functions it stands in for."""

from __future__ import annotations

import csv
import html
import io
import shlex
from urllib.parse import quote, unquote

from hypothesis import given
from hypothesis import strategies as st

from calculators.web.text import csv_row, escape, percent_encode, shell_quote


@given(st.text())
def test_escape_is_html_escape(text: str) -> None:
    assert escape(text) == html.escape(text, quote=True)


@given(st.text())
def test_percent_encode_round_trips(text: str) -> None:
    encoded = percent_encode(text)
    assert unquote(encoded) == text
    assert encoded == quote(text, safe="-_.~")


@given(st.text(alphabet=st.characters(exclude_characters="\x00")))
def test_shell_quote_reads_back(word: str) -> None:
    assert shlex.split(shell_quote(word)) == [word]


def test_shell_quote_leaves_plain_words() -> None:
    assert shell_quote("--kv-format") == "--kv-format"
    assert shell_quote("a b") == "'a b'"
    assert shell_quote("") == "''"


@given(st.lists(st.text(alphabet=st.characters(exclude_characters="\x00")), min_size=1))
def test_csv_row_reads_back(cells: list[str]) -> None:
    rows = list(csv.reader(io.StringIO(csv_row(list(cells)), newline="")))
    assert rows == [cells]
