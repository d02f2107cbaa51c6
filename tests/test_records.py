"""The reader's files: each format read with its line numbers, and every error located
(file, line, field) and blamed on the input that named the file."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.evaluation import records
from calculators.evaluation.records import MAX_JSON_DEPTH, parse_json, read_rows, row_id


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(path)


def error(path, **kw):
    kw.setdefault("input_name", "train")
    kw.setdefault("fields", ("text",))
    with pytest.raises(InputError) as e:
        read_rows(path, **kw)
    assert e.value.field == kw["input_name"]
    return str(e.value)


def test_txt_rows_are_lines_numbered_from_one(tmp_path):
    path = write(tmp_path, "a.txt", "first example\r\nsecond one\n")
    rows = read_rows(path, input_name="train", fields=("text", "id"))
    assert [(r.line, r.values) for r in rows] == [
        (1, {"text": "first example", "id": "1"}),
        (2, {"text": "second one", "id": "2"}),
    ]


def test_jsonl_keeps_json_types_skips_blank_lines_and_optional_fields(tmp_path):
    lines = ['{"id": 7, "text": "x", "user": "u1"}', "", '{"id": "b", "text": "y"}']
    path = write(tmp_path, "a.jsonl", "\n".join(lines) + "\n")
    rows = read_rows(path, input_name="eval", fields=("id", "text"), optional=("user",))
    assert [(r.line, r.values) for r in rows] == [
        (1, {"id": 7, "text": "x", "user": "u1"}),
        (3, {"id": "b", "text": "y"}),
    ]


def test_csv_row_lines_count_quoted_line_breaks(tmp_path):
    content = 'id,text,extra\n1,"two\nlines",z\n2,plain,z\n'
    rows = read_rows(write(tmp_path, "a.csv", content), input_name="train", fields=("id", "text"))
    assert [(r.line, r.values) for r in rows] == [
        (2, {"id": "1", "text": "two\nlines"}),
        (4, {"id": "2", "text": "plain"}),
    ]


def test_byte_order_mark_is_dropped(tmp_path):
    path = write(tmp_path, "a.csv", "\ufeffid,text\n1,a\n")
    rows = read_rows(path, input_name="t", fields=("id",))
    assert rows[0].values == {"id": "1"}


@pytest.mark.parametrize(
    ("name", "content", "fields", "expected"),
    [
        ("a.txt", "one\n\nthree\n", ("text",), "a.txt line 2: empty line"),
        ("a.txt", "one\n", ("text", "user"), "field 'user' needs a .jsonl or .csv file"),
        ("a.txt", "  \n\n", ("text",), "a.txt is empty"),
        ("a.jsonl", '{"text": "a"}\n{"text": \n', ("text",), "a.jsonl line 2: not valid JSON"),
        ("a.jsonl", '{"text": NaN}\n', ("text",), "a.jsonl line 1: not valid JSON (NaN"),
        ("a.jsonl", '["text"]\n', ("text",), "a.jsonl line 1: each line must be a JSON object"),
        ("a.jsonl", '{"txt": "a"}\n', ("text",), "a.jsonl line 1: field 'text' is missing"),
        ("a.jsonl", '{"text": null}\n', ("text",), "a.jsonl line 1: field 'text' is null"),
        ("a.csv", "id,txt\n1,a\n", ("text",), "a.csv line 1: no column 'text' (columns: id, txt)"),
        ("a.csv", "text,text\n1,a\n", ("text",), "a.csv line 1: column 'text' appears twice"),
        ("a.csv", "id,text\n1,a\n2,b,c\n", ("text",), "a.csv line 3: 3 columns, the header has 2"),
        ("a.csv", 'id,text\n1,"a\n', ("text",), "a.csv line 2:"),
        ("a.csv", "id,text\n", ("text",), "a.csv has a header and no rows"),
        ("a.json", "{}", ("text",), "must end in .txt, .jsonl, .csv"),
    ],
)
def test_each_file_error_names_file_line_and_field(tmp_path, name, content, fields, expected):
    assert expected in error(write(tmp_path, name, content), fields=fields)


def test_bytes_that_are_not_utf8_are_located(tmp_path):
    path = write(tmp_path, "a.txt", b"fine\nbad \xff here\n")
    assert "a.txt line 2: not UTF-8 text (byte 0xff at column 5)" in error(path)


def test_missing_file_and_folder(tmp_path):
    assert "train: no file" in error(str(tmp_path / "none.txt"))
    (tmp_path / "d.txt").mkdir()
    assert "is a folder" in error(str(tmp_path / "d.txt"))


def test_bounds_refuse_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_FILE_BYTES", 10)
    assert "at most 10 bytes are read" in error(write(tmp_path, "a.txt", "x" * 11))
    monkeypatch.setattr(records, "MAX_FILE_BYTES", 2**20)
    monkeypatch.setattr(records, "MAX_ROWS", 2)
    assert "more than 2 rows" in error(write(tmp_path, "b.txt", "a\nb\nc\n"))
    assert "more than 2 rows" in error(write(tmp_path, "c.csv", "text\na\nb\nc\n"))


def test_row_text_refuses_other_json_types(tmp_path):
    path = write(tmp_path, "a.jsonl", '{"text": 3}\n')
    (row,) = read_rows(path, input_name="e", fields=("text",))
    with pytest.raises(InputError, match=r"a.jsonl line 1: field 'text' must be text, got 3"):
        row.text("text", "e")


@pytest.mark.parametrize(
    ("value", "expected"), [("a", "a"), (17, "17"), (17.0, "17"), (1.5, "1.5"), (True, "true")]
)
def test_row_id_matches_the_csv_text_of_the_same_id(value, expected):
    assert row_id(value) == expected


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), min_size=1, max_size=20)
)
def test_jsonl_round_trips_any_text(tmp_path_factory, texts):
    path = tmp_path_factory.mktemp("r") / "a.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    rows = read_rows(str(path), input_name="t", fields=("text",))
    assert [r.values["text"] for r in rows] == texts


def test_a_huge_header_or_field_name_is_not_echoed_whole(tmp_path):
    header = ",".join(f"column{i}" for i in range(2_000))
    message = error(write(tmp_path, "wide.csv", header + "\n" + "x," * 1_999 + "x\n"))
    assert "(2,000 in all)" in message and len(message) < 300
    message = error(write(tmp_path, "a.csv", "text\na\n"), fields=("9" * 5_000,))
    assert "characters)" in message and len(message) < 300


def test_json_nested_past_the_bound_is_refused_before_parsing(tmp_path):
    # the browser's Python overflows its stack on a few thousand levels (no RecursionError)
    deep = '{"text": "x", "n": ' + "[" * 100_000 + "}\n"
    message = error(write(tmp_path, "deep.jsonl", deep))
    assert f"line 1: not valid JSON (nested deeper than {MAX_JSON_DEPTH} levels)" in message
    # brackets inside a string are text, not nesting
    fine = json.dumps({"text": "[" * 5_000}) + "\n"
    assert read_rows(write(tmp_path, "fine.jsonl", fine), input_name="t", fields=("text",))
    assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(ValueError, match="nested deeper"):
        parse_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
