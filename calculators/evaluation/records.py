"""The reader's data files, read row by row with every error located.

Three formats, chosen by the file's extension:

- `.txt`: one example per line. Its fields are `text` (the line, without its line break)
  and `id` (the line number, from 1, as a string). An empty line is an error: it is
  either a missing example or a stray break, and the line numbers would then lie.
- `.jsonl`: one JSON object per line; blank lines are skipped. Values keep their JSON
  type (a string, a number, an object...).
- `.csv`: a header row naming the columns, then one row per example (RFC 4180 quoting,
  as Python's csv module reads it). Values are strings.

Every problem is an `InputError` on the input that named the file, worded
"FILE line N: ..." with the field where one is to blame, so the reader can open the file
at that line. Files are bounded (`MAX_FILE_BYTES`, `MAX_ROWS`) before they are parsed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from calculators.errors import InputError, shown

# Far beyond an evaluation set a reader audits in a page, and small enough that Python's
# objects for the rows stay within a few GiB on the command line.
MAX_FILE_BYTES = 256 * 2**20
MAX_ROWS = 2_000_000

FORMATS = (".txt", ".jsonl", ".csv")

# Far deeper than any record a model or an annotator writes. The JSON parser recurses in C
# once per level: in the browser's Python (Pyodide) the stack overflows near a few
# thousand levels and takes the worker down instead of raising RecursionError.
MAX_JSON_DEPTH = 100
_JSON_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[\[\]{}]')
TXT_FIELDS = ("text", "id")


@dataclass(frozen=True, slots=True)
class Row:
    """One example: the file's name, the line it starts on (from 1) and its fields."""

    file: str
    line: int
    values: dict[str, Any]

    def error(self, input_name: str, message: str) -> InputError:
        """An error located at this row: "FILE line N: MESSAGE"."""
        return InputError(input_name, f"{self.file} line {self.line}: {message}", subject="")

    def text(self, field: str, input_name: str) -> str:
        """The field as a string; an error naming the line and field if it holds another
        JSON type (a number or an object where text is expected)."""
        value = self.values[field]
        if not isinstance(value, str):
            raise self.error(input_name, f"field {shown(field)} must be text, got {shown(value)}")
        return value


def row_id(value: Any) -> str:
    """An example's id as a string: text unchanged, a JSON number as its text (17 -> "17",
    so the ids of a .jsonl and a .csv of the same data agree)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)


def _fail(input_name: str, message: str) -> InputError:
    return InputError(input_name, message, subject="")


def _short(path: str) -> str:
    """A long path cut from the left: the file's own name is the part a reader checks."""
    return path if len(path) <= 50 else "..." + path[-47:]


def _text(path: str, input_name: str) -> str:
    """The file's text: bounded, UTF-8 (a byte-order mark is dropped), not empty."""
    name = os.path.basename(path) or path
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise _fail(
                input_name,
                f"{name} is {size:,} bytes; at most {MAX_FILE_BYTES:,} bytes are read",
            )
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise _fail(input_name, f"{input_name}: no file {shown(_short(path))}") from None
    except IsADirectoryError:
        raise _fail(
            input_name, f"{input_name}: {shown(_short(path))} is a folder, not a file"
        ) from None
    except OSError as e:
        raise _fail(
            input_name, f"{input_name}: cannot read {shown(_short(path))} ({e.strerror})"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise _fail(
            input_name,
            f"{name} line {line}: not UTF-8 text (byte 0x{data[e.start]:02x} at column "
            f"{column}); save the file as UTF-8",
        ) from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise _fail(input_name, f"{name} is empty")
    return text


def _lines(text: str) -> list[str]:
    """The lines of `text`, without their breaks (\\n or \\r\\n); a final break ends the
    last line rather than starting an empty one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _listed(names: Sequence[str]) -> str:
    """Names for a message, cut short: a header of thousands of columns is not echoed."""
    text = ", ".join(names) or "none"
    return text if len(text) <= 160 else f"{text[:150]}... ({len(names):,} in all)"


def _check_count(name: str, count: int, input_name: str) -> None:
    if count > MAX_ROWS:
        raise _fail(input_name, f"{name} has more than {MAX_ROWS:,} rows; at most that are read")


def _missing(
    name: str, line: int, values: dict[str, Any], fields: Sequence[str], input_name: str
) -> None:
    for field in fields:
        if field not in values or values[field] is None:
            present = _listed(sorted(values))
            what = "is null" if field in values else "is missing"
            raise _fail(
                input_name,
                f"{name} line {line}: field {shown(field)} {what} (fields of this row: {present})",
            )


def _txt_rows(name: str, text: str, fields: Sequence[str], input_name: str) -> list[Row]:
    other = [f for f in fields if f not in TXT_FIELDS]
    if other:
        raise _fail(
            input_name,
            f"{name}: a .txt file has only the fields 'text' and 'id' (the line number); "
            f"field {shown(other[0])} needs a .jsonl or .csv file",
        )
    lines = _lines(text)
    _check_count(name, len(lines), input_name)
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise _fail(
                input_name,
                f"{name} line {number}: empty line; a .txt file holds one example per line",
            )
        rows.append(Row(name, number, {"text": line, "id": str(number)}))
    return rows


def _no_constants(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def _depth(text: str) -> int:
    """How deep the text's brackets nest, brackets inside strings left out."""
    depth = deepest = 0
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def parse_json(text: str) -> Any:
    """Strict JSON (no NaN or Infinity) nested at most MAX_JSON_DEPTH levels; ValueError
    otherwise. The depth is only counted when the text has that many opening brackets."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(text) > MAX_JSON_DEPTH:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    return json.loads(text, parse_constant=_no_constants)


def _jsonl_rows(
    name: str, text: str, fields: Sequence[str], optional: Sequence[str], input_name: str
) -> list[Row]:
    lines = _lines(text)
    _check_count(name, len(lines), input_name)
    wanted = (*fields, *optional)
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = parse_json(line)
        except (ValueError, RecursionError) as e:
            why = e.msg if isinstance(e, json.JSONDecodeError) else str(e) or "too deeply nested"
            raise _fail(input_name, f"{name} line {number}: not valid JSON ({why})") from None
        if not isinstance(value, dict):
            raise _fail(
                input_name,
                f"{name} line {number}: each line must be a JSON object, got "
                f"{type(value).__name__ if value is not None else 'null'}",
            )
        _missing(name, number, value, fields, input_name)
        rows.append(Row(name, number, {k: value[k] for k in wanted if value.get(k) is not None}))
    return rows


def _csv_rows(
    name: str, text: str, fields: Sequence[str], optional: Sequence[str], input_name: str
) -> list[Row]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    previous = csv.field_size_limit(MAX_FILE_BYTES)  # a long text is one field
    try:
        header: list[str] | None = None
        rows: list[Row] = []
        end = 0  # the last line of the previous record
        for record in _records(reader, name, input_name):
            start, end = end + 1, reader.line_num
            if not record or record == [""]:
                continue
            if header is None:
                header = [h.strip() for h in record]
                _check_header(name, header, fields, input_name)
                index = {h: i for i, h in enumerate(header)}
                wanted = [(f, index[f]) for f in (*fields, *optional) if f in index]
                continue
            if len(record) != len(header):
                raise _fail(
                    input_name,
                    f"{name} line {start}: {len(record)} columns, the header has {len(header)}",
                )
            _check_count(name, len(rows) + 1, input_name)
            rows.append(Row(name, start, {f: record[i] for f, i in wanted}))
    finally:
        csv.field_size_limit(previous)
    if not rows:
        raise _fail(input_name, f"{name} has a header and no rows")
    return rows


def _records(reader: Any, name: str, input_name: str) -> Any:
    """The reader's records, a csv.Error turned into a located InputError."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise _fail(input_name, f"{name} line {reader.line_num}: {e}") from None
        yield record


def _check_header(name: str, header: list[str], fields: Sequence[str], input_name: str) -> None:
    seen: set[str] = set()
    for h in header:
        if h in seen:
            raise _fail(input_name, f"{name} line 1: column {shown(h)} appears twice in the header")
        seen.add(h)
    for field in fields:
        if field not in seen:
            columns = _listed(header)
            raise _fail(input_name, f"{name} line 1: no column {shown(field)} (columns: {columns})")


def read_rows(
    path: str, *, input_name: str, fields: Sequence[str], optional: Sequence[str] = ()
) -> list[Row]:
    """The rows of the file at `path`, each with `fields` (required in every row) and those
    of `optional` it has. `input_name` is the input that named the file: every error is
    blamed on it and names the file, the line and the field."""
    name = os.path.basename(path) or path
    extension = os.path.splitext(name)[1].lower()
    if extension not in FORMATS:
        raise _fail(
            input_name,
            f"{input_name}: {shown(name)} must end in {', '.join(FORMATS)} "
            "(the extension says how the file is read)",
        )
    text = _text(path, input_name)
    if extension == ".txt":
        wanted = [*fields, *(f for f in optional if f in TXT_FIELDS)]
        return _txt_rows(name, text, wanted, input_name)
    if extension == ".jsonl":
        return _jsonl_rows(name, text, fields, optional, input_name)
    return _csv_rows(name, text, fields, optional, input_name)
