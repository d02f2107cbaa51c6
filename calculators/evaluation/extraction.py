"""Structured extraction: a model's JSON objects against reference objects, field by field.

Each example has a reference object ({"name": "Ada", "year": 1843}) and a model's output,
which should be a JSON object with the same fields. The output is the model's raw text
(parsed here) or, in a .jsonl file, an object already. Text that is not valid JSON, or
JSON that is not an object, is an invalid output: it predicts no field.

A field whose value is null counts as absent, on both sides: a model that writes
{"year": null} for a year the reference lacks makes no error, and one that writes it for
a year the reference holds has missed that field.

Scores per field f, over the examples (the CoNLL-2003 convention applied to fields:
E. F. Tjong Kim Sang and F. De Meulder, "Introduction to the CoNLL-2003 Shared Task",
2003, its evaluation method: precision is the share of predicted items that are
correct, recall the share of reference items found, an item counting only on an exact
match):

    TP: the output has f and its value equals the reference's;
    FP: the output has f and the reference lacks f, or holds another value;
    FN: the reference has f and the output lacks it, or holds another value.

A wrong value is thus one FP and one FN, as a mislabelled entity is in CoNLL scoring.
precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = 2 TP / (2 TP + FP + FN), each
0 where its denominator is 0.

Equality (`same_value`) is of the parsed JSON values: numbers by value (1 equals 1.0:
the JSON text differs, the number does not), true and false only equal themselves (never
1 and 0), strings exactly, arrays element by element in order, objects key by key. With
`normalize`, strings are compared after Unicode NFKC, case folding and whitespace
collapsed, so that "Ada  Lovelace" equals "ada lovelace".
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from math import fsum
from typing import Any

from calculators.errors import InputError
from calculators.evaluation.records import parse_json
from calculators.progress import report

__all__ = [
    "MAX_FIELDS",
    "ExtractionOutputs",
    "ExtractionScores",
    "FieldScores",
    "extraction_scores",
    "parse_output",
    "parse_reference",
    "same_value",
]

# Distinct fields the references may hold: one table row each.
MAX_FIELDS = 1_000

_SPACES = re.compile(r"\s+")


def _loads(text: str) -> Any:
    """Strict JSON (no NaN or Infinity); ValueError on bad text or nesting deeper than
    records.MAX_JSON_DEPTH (which the browser's Python could not parse)."""
    try:
        return parse_json(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def parse_output(value: Any) -> dict[str, Any] | None:
    """A model's output as an object, or None when it is not a valid one: a dict is
    taken as it is; a string is parsed as JSON and must give an object; anything else
    (a number, a list, null) is not an object."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return None
    try:
        parsed = _loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def parse_reference(value: Any) -> dict[str, Any]:
    """A reference object: a dict as it is, or a string holding a JSON object.
    ValueError saying what is wrong otherwise (the command adds the file and line)."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise ValueError(f"is {type(value).__name__}, not a JSON object")
    try:
        parsed = _loads(value)
    except ValueError as e:
        raise ValueError(f"is not valid JSON ({e})") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"is a JSON {type(parsed).__name__}, not an object")
    return parsed


def _normalized(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def same_value(x: Any, y: Any, *, normalize: bool = False) -> bool:
    """Whether two parsed JSON values are equal (module docstring). Iterative, so that
    no nesting depth the JSON parser accepted can exhaust the stack here."""
    stack = [(x, y)]
    while stack:
        u, v = stack.pop()
        if _is_number(u) and _is_number(v):
            if u != v:
                return False
        elif isinstance(u, str) and isinstance(v, str):
            if (_normalized(u) != _normalized(v)) if normalize else (u != v):
                return False
        elif isinstance(u, list) and isinstance(v, list):
            if len(u) != len(v):
                return False
            stack.extend(zip(u, v, strict=True))
        elif isinstance(u, dict) and isinstance(v, dict):
            if u.keys() != v.keys():
                return False
            stack.extend((u[k], v[k]) for k in u)
        elif not (u is None and v is None) and not (
            isinstance(u, bool) and isinstance(v, bool) and u == v
        ):
            return False
    return True


@dataclass(frozen=True, kw_only=True)
class ExtractionOutputs:
    """References (objects) and one model's raw outputs, row by row.

    reference: the reference objects (parsed: `parse_reference`).
    predicted: the outputs: objects, or text to parse (`parse_output`).
    normalize: compare strings after NFKC, case folding and whitespace collapsing.
    """

    reference: tuple[dict[str, Any], ...]
    predicted: tuple[Any, ...]
    normalize: bool = False

    def __post_init__(self) -> None:
        if len(self.reference) != len(self.predicted):
            raise InputError(
                "predicted",
                f"predicted has {len(self.predicted):,} outputs for {len(self.reference):,} "
                "references: they must be as many",
            )
        if not self.reference:
            raise InputError("reference", "reference has no examples: at least 1 is needed")
        if any(not isinstance(r, dict) for r in self.reference):
            raise InputError("reference", "reference: every reference must be an object")
        fields = {k for r in self.reference for k, v in r.items() if v is not None}
        if len(fields) > MAX_FIELDS:
            raise InputError(
                "reference",
                f"reference has {len(fields):,} distinct fields, above the limit of {MAX_FIELDS:,}",
            )


@dataclass(frozen=True)
class FieldScores:
    """One field: its counts (module docstring), the scores, and its support (examples
    whose reference holds it)."""

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class ExtractionScores:
    """Scores of one model's outputs.

    correct:       per example, whether the output is valid and equals the reference
                   as a whole (the same non-null fields, every value equal).
    exact_match:   the share of such examples.
    fields:        per field present in some reference, sorted by name.
    micro_*:       from the counts summed over every field, including the FPs of
                   fields no reference holds (`extra_field_values` of them).
    macro_f1:      the mean F1 over the reference fields.
    invalid:       outputs that are not a JSON object; `invalid_rate` = invalid / n.
    missing:       valid outputs lacking a field their reference holds;
                   `missing_field_rate` = missing / n.
    """

    n: int
    correct: tuple[bool, ...]
    exact_match: float
    fields: dict[str, FieldScores]
    micro_precision: float
    micro_recall: float
    micro_f1: float
    macro_f1: float
    extra_field_values: int
    invalid: int
    invalid_rate: float
    missing: int
    missing_field_rate: float


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _present(obj: dict[str, Any]) -> dict[str, Any]:
    """The fields of an object that are not null."""
    return {k: v for k, v in obj.items() if v is not None}


def extraction_scores(o: ExtractionOutputs) -> ExtractionScores:
    """Per-field exact-match precision, recall and F1, micro and macro F1, whole-object
    exact match, and the rates of invalid outputs and of outputs missing a reference
    field (module docstring for every definition)."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    support: Counter[str] = Counter()
    extra = invalid = missing = 0
    correct: list[bool] = []
    n = len(o.reference)
    for i, (ref_raw, out_raw) in enumerate(zip(o.reference, o.predicted, strict=True)):
        ref = _present(ref_raw)
        support.update(ref.keys())
        parsed = parse_output(out_raw)
        if parsed is None:
            invalid += 1
            fn.update(ref.keys())
            correct.append(False)
            continue
        out = _present(parsed)
        right = out.keys() == ref.keys()
        if ref.keys() - out.keys():
            missing += 1
        for field, value in ref.items():
            if field in out and same_value(value, out[field], normalize=o.normalize):
                tp[field] += 1
            else:
                fn[field] += 1
                right = False
                if field in out:
                    fp[field] += 1
        for field in out.keys() - ref.keys():
            fp[field] += 1
        correct.append(right)
        if i % 5_000 == 4_999:
            report(i + 1, n, "extraction outputs")
    names = sorted(support)
    fields = {
        f: FieldScores(
            tp=tp[f],
            fp=fp[f],
            fn=fn[f],
            precision=_ratio(tp[f], tp[f] + fp[f]),
            recall=_ratio(tp[f], tp[f] + fn[f]),
            f1=_ratio(2 * tp[f], 2 * tp[f] + fp[f] + fn[f]),
            support=support[f],
        )
        for f in names
    }
    extra = sum(count for f, count in fp.items() if f not in support)
    all_tp, all_fp, all_fn = sum(tp.values()), sum(fp.values()), sum(fn.values())
    return ExtractionScores(
        n=n,
        correct=tuple(correct),
        exact_match=sum(correct) / n,
        fields=fields,
        micro_precision=_ratio(all_tp, all_tp + all_fp),
        micro_recall=_ratio(all_tp, all_tp + all_fn),
        micro_f1=_ratio(2 * all_tp, 2 * all_tp + all_fp + all_fn),
        # fsum: correctly rounded, so every Python version (the page's too) agrees
        macro_f1=fsum(s.f1 for s in fields.values()) / len(fields) if fields else 0.0,
        extra_field_values=extra,
        invalid=invalid,
        invalid_rate=invalid / n,
        missing=missing,
        missing_field_rate=missing / n,
    )
