"""Structured extraction scores: per-field exact-match precision, recall and F1 (the
CoNLL-2003 counting applied to fields: a wrong value is one FP and one FN), the rates of
invalid JSON and of outputs missing a reference field, and value equality. Every value
is counted by hand in its test."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.evaluation.extraction import (
    MAX_FIELDS,
    ExtractionOutputs,
    extraction_scores,
    parse_output,
    parse_reference,
    same_value,
)
from calculators.evaluation.records import MAX_JSON_DEPTH


def scores(reference, predicted, **kwargs):
    return extraction_scores(
        ExtractionOutputs(reference=tuple(reference), predicted=tuple(predicted), **kwargs)
    )


REFERENCE = (
    {"name": "Ada", "year": 1843},
    {"name": "Alan", "year": 1936},
    {"name": "Grace", "year": 1952, "lang": "COBOL"},
    {"name": "Edsger"},
)
OUTPUTS = (
    '{"name": "Ada", "year": 1843}',  # both right: the whole object right
    '{"name": "Alan", "year": 1937}',  # year wrong: FP and FN of year
    '{"name": "Grace", "year": 1952.0}',  # lang missing; 1952.0 is 1952
    "Sure! Here is the JSON:",  # invalid: every reference field a FN
)


def test_fields_counted_by_hand():
    s = scores(REFERENCE, OUTPUTS)
    name, year, lang = s.fields["name"], s.fields["year"], s.fields["lang"]
    # name: right on rows 0, 1, 2; row 3 invalid -> FN
    assert (name.tp, name.fp, name.fn, name.support) == (3, 0, 1, 4)
    assert name.precision == 1.0 and name.recall == 0.75
    assert name.f1 == pytest.approx(6 / 7)  # 2*3 / (2*3 + 0 + 1)
    # year: right on rows 0, 2; wrong on row 1 (FP + FN)
    assert (year.tp, year.fp, year.fn, year.support) == (2, 1, 1, 3)
    assert year.precision == pytest.approx(2 / 3) and year.recall == pytest.approx(2 / 3)
    # lang: in the reference of row 2 only, missing from the output: FN
    assert (lang.tp, lang.fp, lang.fn, lang.support) == (0, 0, 1, 1)
    assert (lang.precision, lang.recall, lang.f1) == (0.0, 0.0, 0.0)
    assert s.correct == (True, False, False, False)
    assert s.exact_match == 0.25
    assert s.invalid == 1 and s.invalid_rate == 0.25
    # missing a reference field among valid outputs: row 2 (lang)
    assert s.missing == 1 and s.missing_field_rate == 0.25
    # micro: TP 5, FP 1, FN 3 -> P 5/6, R 5/8, F1 10/14
    assert s.micro_precision == pytest.approx(5 / 6)
    assert s.micro_recall == pytest.approx(5 / 8)
    assert s.micro_f1 == pytest.approx(10 / 14)
    assert s.macro_f1 == pytest.approx((6 / 7 + 2 / 3 + 0) / 3)


def test_extra_fields_are_false_positives_outside_the_field_table():
    s = scores([{"a": 1}], ['{"a": 1, "b": 2}'])
    assert list(s.fields) == ["a"]
    assert s.extra_field_values == 1
    assert s.correct == (False,)  # not the same object
    assert s.micro_precision == 0.5 and s.micro_recall == 1.0


def test_null_counts_as_absent_on_both_sides():
    s = scores([{"a": 1, "b": None}], ['{"a": 1, "c": null}'])
    assert list(s.fields) == ["a"]
    assert s.correct == (True,)
    s = scores([{"a": 1}], ['{"a": null}'])
    assert s.fields["a"].fn == 1 and s.fields["a"].fp == 0
    assert s.missing == 1


@pytest.mark.parametrize(
    "output",
    [
        "not json",
        "[1, 2]",
        "17",
        "null",
        '"a string"',
        '{"a": NaN}',
        "[" * 100_000,
        '{"a": ' + "[" * 5_000,
        3,
        None,
    ],
)
def test_invalid_outputs(output):
    assert parse_output(output) is None
    s = scores([{"a": 1}], [output])
    assert s.invalid == 1 and s.fields["a"].fn == 1 and s.missing == 0


def test_an_object_in_a_jsonl_file_is_taken_as_it_is():
    assert parse_output({"a": 1}) == {"a": 1}
    assert scores([{"a": 1}], [{"a": 1}]).correct == (True,)


@pytest.mark.parametrize(
    ("x", "y", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        ("a", "A", False),
        ([1, 2], [2, 1], False),
        ([1, [2, {"k": "v"}]], [1.0, [2, {"k": "v"}]], True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": None}, {}, False),  # nested objects compare strictly
        ("1", 1, False),
    ],
)
def test_same_value(x, y, equal):
    assert same_value(x, y) is equal
    assert same_value(y, x) is equal


def test_normalized_strings():
    assert not same_value("Ada  Lovelace", "ada lovelace")
    assert same_value("Ada  Lovelace ", "ada lovelace", normalize=True)
    assert same_value("\uff21da", "ada", normalize=True)  # fullwidth A, NFKC
    s = scores([{"n": "Ada Lovelace"}], ['{"n": "ADA  LOVELACE"}'], normalize=True)
    assert s.correct == (True,)


def test_the_deepest_json_read_compares_without_recursion():
    # records.parse_json reads at most MAX_JSON_DEPTH levels (deeper overflows the stack of
    # the browser's Python); same_value walks them with its own stack
    deep = parse_output('{"a": ' + "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1) + "}")
    assert deep is not None and same_value(deep, deep)
    assert parse_output('{"a": ' + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH + "}") is None


def test_parse_reference():
    assert parse_reference('{"a": 1}') == {"a": 1}
    assert parse_reference({"a": 1}) == {"a": 1}
    for bad, words in [
        ("[1]", "is a JSON list, not an object"),
        ("{", "is not valid JSON"),
        (3, "is int, not a JSON object"),
        ('{"a": Infinity}', "is not valid JSON"),
    ]:
        with pytest.raises(ValueError, match=words):
            parse_reference(bad)


def test_bad_inputs():
    with pytest.raises(InputError, match="as many"):
        ExtractionOutputs(reference=({},), predicted=())
    with pytest.raises(InputError, match="no examples"):
        ExtractionOutputs(reference=(), predicted=())
    with pytest.raises(InputError, match="must be an object"):
        ExtractionOutputs(reference=("{}",), predicted=("{}",))
    many = {f"f{i}": 1 for i in range(MAX_FIELDS + 1)}
    with pytest.raises(InputError, match="distinct fields"):
        ExtractionOutputs(reference=(many,), predicted=("{}",))


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=6,
)
OBJECTS = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), VALUES, max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(OBJECTS, min_size=1, max_size=20))
def test_outputs_equal_to_the_reference_score_one(refs):
    s = scores(refs, [json.dumps(r) for r in refs])
    assert all(s.correct) and s.exact_match == 1
    assert s.invalid == s.missing == 0
    for f in s.fields.values():
        assert f.fp == f.fn == 0 and f.precision == f.recall == f.f1 == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(OBJECTS, OBJECTS | st.text(max_size=5)), min_size=1, max_size=20))
def test_counts_and_rates_stay_in_range(pairs):
    refs = [r for r, _ in pairs]
    outs = [json.dumps(o) if isinstance(o, dict) else o for _, o in pairs]
    s = scores(refs, outs)
    for f in s.fields.values():
        assert f.tp + f.fn == f.support
        for v in (f.precision, f.recall, f.f1):
            assert 0 <= v <= 1
    assert 0 <= s.invalid_rate + s.missing_field_rate <= 1
    assert 0 <= s.micro_f1 <= 1 and 0 <= s.macro_f1 <= 1
    assert s.exact_match == sum(s.correct) / len(pairs)
