"""compare: two models' predictions on one file, against the reference: classification
scores, the confusion matrix, flips, McNemar's test and an interval on the accuracy
change, the error taxonomy, or field-level scores of structured extraction; or two
models' per-example scores of free-text outputs, with the paired bootstrap
(`calculators.evaluation`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from math import fsum
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import UsageError
from calculators.errors import InputError, shown
from calculators.evaluation.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MAX_RESAMPLES,
    MIN_RESAMPLES,
    PairedScores,
    paired_bootstrap,
)
from calculators.evaluation.classification import (
    MAX_LABELS,
    LabelledPredictions,
    classification_scores,
)
from calculators.evaluation.extraction import (
    MAX_FIELDS,
    ExtractionOutputs,
    extraction_scores,
    parse_reference,
)
from calculators.evaluation.paired import (
    PairedOutcomes,
    flips_by_class,
    mcnemar,
    negative_flip_rate,
    paired_difference,
    paired_table,
)
from calculators.evaluation.records import Row, read_rows, row_id
from calculators.evaluation.taxonomy import (
    MAX_EXPERIMENT_GPU_HOURS,
    ExperimentCosts,
    TaggedOutcomes,
    check_experiment_gpu_hours,
    error_taxonomy,
    experiment_ranking,
    split_tags,
)
from calculators.parsing import parse_float
from calculators.progress import report
from calculators.render import table
from calculators.web.render import (
    bar_chart_svg,
    confusion_matrix_svg,
    html_table,
    summary,
)
from calculators.web.text import csv_row

FILE = "predictions"
TASKS = ("classification", "extraction", "scores")
# Regressions and improvements listed in the page and the plain-text output; the JSON
# and the CSV download hold them all.
SHOWN_FLIPS = 50
# Rows of the per-class table drawn in the page (the CSV holds every class).
SHOWN_CLASSES = 200
# Rows between two progress reports while a column is read.
PROGRESS_EVERY = 20_000
_FIELD_INPUTS = ("id_field", "gold_field", "a_field", "b_field", "tag_field")
# The scores task reads no reference: below this many examples its percentile interval
# is too short (Efron and Tibshirani 1993, chapter 13: first-order accurate).
FEW_SCORED = 30


# ---- reading the file --------------------------------------------------------------------


def _label(row: Row, field: str, seen: set[str], *, reference: bool = False) -> str:
    """A label: text as it is, a JSON number as its text (`row_id`: 17 and 17.0 are
    "17"); an object, an array or a boolean is refused, and so is an empty reference
    (an empty prediction is an answer the model did not give: it counts as wrong).
    `seen` collects the distinct labels, bounded by MAX_LABELS."""
    value = row.values[field]
    if isinstance(value, dict | list | bool):
        raise row.error(
            FILE, f"field {field!r} must be a label (text or a number), got {shown(value)}"
        )
    label = row_id(value)
    if reference and not label.strip():
        raise row.error(FILE, f"field {field!r} is empty: every example needs its reference")
    if label not in seen:
        if len(seen) >= MAX_LABELS:
            raise row.error(
                FILE,
                f"field {field!r}: {shown(label)} would be distinct label number "
                f"{MAX_LABELS + 1:,}; at most {MAX_LABELS:,} labels (the confusion matrix "
                "holds the square of that many counts)",
            )
        seen.add(label)
    return label


def _score(row: Row, field: str) -> float:
    """A per-example score: a JSON number, or text holding a finite number."""
    value = row.values[field]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise row.error(FILE, f"field {field!r} must be a number (a score), got {shown(value)}")
    try:
        return parse_float(field, value) if isinstance(value, str) else float(value)
    except (InputError, OverflowError):
        raise row.error(
            FILE, f"field {field!r} must be a finite number (a score), got {shown(value)}"
        ) from None


def _column(rows: list[Row], read: Callable[[Row], Any], what: str) -> tuple[Any, ...]:
    """`read(row)` for every row, the progress reported every PROGRESS_EVERY rows (the
    page's watchdog then knows a long file is being worked through)."""
    out = []
    for i, row in enumerate(rows):
        out.append(read(row))
        if i % PROGRESS_EVERY == PROGRESS_EVERY - 1:
            report(i + 1, len(rows), what)
    return tuple(out)


def _references(rows: list[Row], field: str) -> tuple[dict[str, Any], ...]:
    """The reference objects of an extraction file, each a JSON object (or a string
    holding one); at most MAX_FIELDS distinct fields in all."""
    out = []
    fields: set[str] = set()
    for row in rows:
        try:
            ref = parse_reference(row.values[field])
        except ValueError as e:
            raise row.error(FILE, f"field {field!r} {e}") from None
        fields.update(k for k, v in ref.items() if v is not None)
        if len(fields) > MAX_FIELDS:
            raise row.error(
                FILE,
                f"field {field!r}: more than {MAX_FIELDS:,} distinct fields in the references "
                "up to this line (one table row each)",
            )
        out.append(ref)
    return tuple(out)


def _tags(row: Row, field: str) -> tuple[str, ...]:
    """A row's tags: text split at ';' (`split_tags`), or a JSON array of texts."""
    if field not in row.values:
        return ()
    value = row.values[field]
    if isinstance(value, str):
        return split_tags(value)
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return split_tags(";".join(value))
    raise row.error(
        FILE,
        f"field {field!r} must be text (tags separated by ';') or an array of texts, "
        f"got {shown(value)}",
    )


def _costs(lines: list[str] | tuple[str, ...]) -> ExperimentCosts | None:
    """The --cost lines, TAG=GPU_HOURS each, as ExperimentCosts; None when there are
    none. The tag is what precedes the last '=' (a tag may hold one), stripped."""
    if not lines:
        return None
    pairs = []
    for text in lines:
        tag, sep, hours = str(text).rpartition("=")
        tag = tag.strip()
        if not sep or not tag:
            raise InputError("cost", f"cost must be TAG=GPU_HOURS, got {shown(text)}")
        try:
            value = parse_float("cost", hours)
        except InputError:
            raise InputError(
                "cost",
                f"cost {shown(text)}: GPU_HOURS must be a finite number > 0 and at most "
                f"{MAX_EXPERIMENT_GPU_HOURS:,}, got {shown(hours.strip())}",
            ) from None
        check_experiment_gpu_hours(tag, value, typed=str(text).strip())  # the line as typed
        pairs.append((tag, value))
    return ExperimentCosts(gpu_hours=tuple(pairs))


def _check_field_names(args: Args) -> None:
    seen: dict[str, str] = {}
    for name in _FIELD_INPUTS:
        value = getattr(args, name)
        if not isinstance(value, str) or not value.strip():
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} must name a field, got {shown(value)}", name)
        if value in seen:
            flags = ("--" + seen[value].replace("_", "-"), "--" + name.replace("_", "-"))
            raise UsageError(
                f"{flags[1]} {shown(value)} is also {flags[0]}: each names its own field", name
            )
        seen[value] = name


def _read(args: Args) -> tuple[list[Row], bool, bool]:
    """The rows, whether they have b, and whether they have tags. Duplicate ids and a b
    given on some rows only are errors naming both lines."""
    _check_field_names(args)
    scores = args.task == "scores"  # no reference: the scores are the judgement
    required = (args.id_field, args.a_field)
    rows = read_rows(
        args.predictions,
        input_name=FILE,
        fields=required if scores else (args.id_field, args.gold_field, args.a_field),
        optional=(args.b_field,) if scores else (args.b_field, args.tag_field),
    )
    first: dict[str, int] = {}
    for row in rows:
        key = row_id(row.values[args.id_field])
        if key in first:
            raise row.error(
                FILE, f"field {args.id_field!r}: id {shown(key)} repeats line {first[key]}"
            )
        first[key] = row.line
    with_b = [row for row in rows if args.b_field in row.values]
    if with_b and len(with_b) != len(rows):
        lacking = next(row for row in rows if args.b_field not in row.values)
        raise lacking.error(
            FILE,
            f"field {args.b_field!r} is missing, and line {with_b[0].line} has it: give "
            "the candidate's prediction on every row or on none",
        )
    has_tags = not scores and any(args.tag_field in row.values for row in rows)
    return rows, bool(with_b), has_tags


# ---- the JSON result -----------------------------------------------------------------------


def _cell_text(value: Any) -> str:
    """A value as a CSV or table cell: text as it is, JSON otherwise."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _classification_json(
    field: str, reference: tuple[str, ...], predicted: tuple[str, ...]
) -> tuple[dict[str, Any], tuple[bool, ...]]:
    s = classification_scores(
        LabelledPredictions(reference=reference, predicted=predicted, field=FILE)
    )
    data = {
        "field": field,
        "n": s.n,
        "correct": s.correct,
        "errors": s.n - s.correct,
        "accuracy": s.accuracy,
        "macro_f1": s.macro_f1,
        "micro_f1": s.micro_f1,
        "confusion": {
            "labels": list(s.confusion.labels),
            "matrix": [list(row) for row in s.confusion.matrix],
        },
        "per_class": {label: vars(c) for label, c in s.per_class.items()},
    }
    correct = tuple(r == p for r, p in zip(reference, predicted, strict=True))
    return data, correct


def _extraction_json(
    field: str, outputs: ExtractionOutputs
) -> tuple[dict[str, Any], tuple[bool, ...]]:
    s = extraction_scores(outputs)
    data = {
        "field": field,
        "n": s.n,
        "correct": sum(s.correct),
        "errors": s.n - sum(s.correct),
        # the whole object right: the accuracy the paired analysis and the taxonomy use
        "accuracy": s.exact_match,
        "exact_match": s.exact_match,
        "macro_f1": s.macro_f1,
        "micro_f1": s.micro_f1,
        "micro_precision": s.micro_precision,
        "micro_recall": s.micro_recall,
        "fields": {name: vars(f) for name, f in s.fields.items()},
        "extra_field_values": s.extra_field_values,
        "invalid": s.invalid,
        "invalid_rate": s.invalid_rate,
        "missing": s.missing,
        "missing_field_rate": s.missing_field_rate,
    }
    return data, s.correct


def _difference_json(t: Any) -> dict[str, Any]:
    d = paired_difference(t)
    return {
        "estimate": d.estimate,
        "confidence": d.confidence,
        "wald": vars(d.wald),
        "bonett_price": vars(d.bonett_price),
        "newcombe": vars(d.newcombe),
    }


def _scores_json(args: Args, rows: list[Row], has_b: bool) -> dict[str, Any]:
    """The scores task: each model's mean score and, with b, the paired bootstrap of
    mean(b) - mean(a) and how many examples each model scores higher on."""
    a = _column(rows, lambda row: _score(row, args.a_field), "scores of a")
    data: dict[str, Any] = {"a": {"field": args.a_field, "n": len(a), "mean": fsum(a) / len(a)}}
    if not has_b:
        return data
    b = _column(rows, lambda row: _score(row, args.b_field), "scores of b")
    data["b"] = {"field": args.b_field, "n": len(b), "mean": fsum(b) / len(b)}
    boot = paired_bootstrap(
        PairedScores(a_scores=a, b_scores=b),
        resamples=DEFAULT_RESAMPLES if args.resamples is None else args.resamples,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
    )
    data["paired"] = {
        "n": len(a),
        "b_higher": sum(1 for x, y in zip(a, b, strict=True) if y > x),
        "a_higher": sum(1 for x, y in zip(a, b, strict=True) if x > y),
        "equal": sum(1 for x, y in zip(a, b, strict=True) if x == y),
        "mean_difference": boot.mean_difference,
        "bootstrap": {
            k: v
            for k, v in vars(boot).items()
            if k not in ("n", "mean_a", "mean_b", "mean_difference")
        },
    }
    return data


def _paired(
    args: Args,
    rows: list[Row],
    columns: tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]],
    correct: tuple[tuple[bool, ...], tuple[bool, ...]],
    tags: tuple[tuple[str, ...], ...] | None,
) -> dict[str, Any]:
    """The paired section: the 2x2 table, flip rates, McNemar, flips by class
    (classification), and every regression and improvement with its row."""
    gold, a, b = columns
    o = PairedOutcomes(a_correct=correct[0], b_correct=correct[1])
    t = paired_table(o)
    out: dict[str, Any] = {
        **vars(t),
        "negative_flip_rate": negative_flip_rate(t),
        "positive_flip_rate": t.positive_flips / t.n,
        "accuracy_change": (t.positive_flips - t.negative_flips) / t.n,
        "mcnemar": vars(mcnemar(t)),
        "difference": _difference_json(t),
    }
    if args.task == "classification":
        out["by_class"] = {k: vars(v) for k, v in flips_by_class(o, gold).items()}
    regressions, improvements = [], []
    for i, row in enumerate(rows):
        if correct[0][i] != correct[1][i]:
            flip = {
                "id": row_id(row.values[args.id_field]),
                "line": row.line,
                "gold": _cell_text(gold[i]),
                "a": _cell_text(a[i]),
                "b": _cell_text(b[i]),
                "tag": ";".join(tags[i]) if tags else "",
            }
            (regressions if correct[0][i] else improvements).append(flip)
    out["regressions"] = regressions
    out["improvements"] = improvements
    return out


def _taxonomy(
    tags: tuple[tuple[str, ...], ...],
    a_correct: tuple[bool, ...],
    b_correct: Any,
    costs: ExperimentCosts | None,
) -> dict[str, Any]:
    """The taxonomy section; with costs, each costed tag's GPU-hours, ceiling per
    GPU-hour and rank (None for the others), and the ranking of those tags."""
    tx = error_taxonomy(TaggedOutcomes(a_correct=a_correct, tags=tags, b_correct=b_correct))
    ranking = experiment_ranking(tx, costs) if costs is not None else ()
    ranked = {r.tag: r for r in ranking}
    per_tag = {}
    for t in tx.tags:
        r = ranked.get(t.tag)
        per_tag[t.tag] = {
            **{k: v for k, v in vars(t).items() if k != "tag"},
            "gpu_hours": r.gpu_hours if r else None,
            "ceiling_per_gpu_hour": r.ceiling_per_gpu_hour if r else None,
            "rank": r.rank if r else None,
        }
    return {
        "a_errors": tx.a_errors,
        "tagged_errors": tx.tagged_errors,
        "tags": per_tag,
        "new_errors": tx.new_errors,
        "new_errors_by_tag": tx.new_errors_by_tag,
        "ranking": [vars(r) for r in ranking],
    }


def run(args: Args) -> tuple[dict[str, Any], str]:
    """The comparison as JSON, and its plain-text report.

    JSON: `task`, `file`, `n`; per model under `a` (and `b` when the file has it):
    `field`, `n`, `correct`, `errors`, `accuracy`, `macro_f1`, `micro_f1`, then for
    classification `confusion.labels` and `confusion.matrix` (rows the reference) and
    `per_class.LABEL.precision|recall|f1|support`; for extraction `exact_match` (also
    its `accuracy`), `micro_precision`, `micro_recall`, `fields.NAME.tp|fp|fn|precision|
    recall|f1|support`, `extra_field_values`, `invalid`, `invalid_rate`, `missing`,
    `missing_field_rate`. With b, `paired`: `n`, `both_right`, `negative_flips`,
    `positive_flips`, `both_wrong`, `negative_flip_rate`, `positive_flip_rate`,
    `accuracy_change`, `mcnemar.statistic|p_value` (continuity-corrected, as statsmodels),
    `mcnemar.statistic_uncorrected|p_value_uncorrected|p_value_exact|log10_p_value_exact|
    p_value_mid|log10_p_value_mid|discordant`, `difference.estimate|confidence` and
    `difference.wald|bonett_price|newcombe.low|high` (intervals on accuracy b - a),
    `by_class.LABEL.support|negative|positive` (classification), and
    `regressions` / `improvements`: lists of {id, line, gold, a, b, tag}. With a tag
    field in the file, `taxonomy`: `a_errors`, `tagged_errors`,
    `tags.TAG.errors|share|ceiling|fixed|remaining`, `new_errors`, `new_errors_by_tag`,
    and with --cost TAG=GPU_HOURS lines `tags.TAG.gpu_hours|ceiling_per_gpu_hour|rank`
    (None for a tag without a cost) and `ranking`: a list of {tag, ceiling, gpu_hours,
    ceiling_per_gpu_hour, rank}, the costed tags by ceiling per GPU-hour, most first
    (`calculators.evaluation.taxonomy.experiment_ranking`; empty without --cost).
    Task `scores` (no reference read): `a` and `b` hold `field`, `n`, `mean`; with b,
    `paired`: `n`, `b_higher`, `a_higher`, `equal` (examples by which model scores
    higher), `mean_difference` (mean b - mean a) and `bootstrap.resamples|seed|
    confidence|low|high|p_value|b_better_share` (`calculators.evaluation.bootstrap`).
    `notes`: what to read with care.
    """
    if args.task not in TASKS:
        raise UsageError(
            f"--task must be one of {', '.join(TASKS)}, got {shown(args.task)}", "task"
        )
    costs = _costs(args.cost)
    if costs is not None and args.task == "scores":
        raise InputError("cost", "cost ranks error tags, and the scores task has no errors to tag")
    rows, has_b, has_tags = _read(args)
    if costs is not None and not has_tags:
        raise InputError(
            "cost",
            f"cost needs error tags to rank, and no row of the file has the tag field "
            f"{args.tag_field!r} (--tag-field)",
        )
    tags = None
    if has_tags:
        tags = _column(rows, lambda row: _tags(row, args.tag_field), "tags")
    data: dict[str, Any] = {"task": args.task, "file": rows[0].file, "n": len(rows)}
    if args.task == "scores":
        data.update(_scores_json(args, rows, has_b))
        data["notes"] = _notes(data)
        return data, _text(data)
    gold: tuple[Any, ...]
    a: tuple[Any, ...]
    b: tuple[Any, ...] = ()
    b_correct: tuple[bool, ...] | None = None
    if args.task == "classification":
        seen: set[str] = set()
        gold = _column(
            rows, lambda row: _label(row, args.gold_field, seen, reference=True), "references"
        )
        a = _column(rows, lambda row: _label(row, args.a_field, seen), "predictions of a")
        data["a"], a_correct = _classification_json(args.a_field, gold, a)
        if has_b:
            b = _column(rows, lambda row: _label(row, args.b_field, seen), "predictions of b")
            data["b"], b_correct = _classification_json(args.b_field, gold, b)
    else:
        gold = _references(rows, args.gold_field)
        a = tuple(row.values[args.a_field] for row in rows)
        data["a"], a_correct = _extraction_json(
            args.a_field, ExtractionOutputs(reference=gold, predicted=a, normalize=args.normalize)
        )
        if has_b:
            b = tuple(row.values[args.b_field] for row in rows)
            data["b"], b_correct = _extraction_json(
                args.b_field,
                ExtractionOutputs(reference=gold, predicted=b, normalize=args.normalize),
            )
    if b_correct is not None:
        data["paired"] = _paired(args, rows, (gold, a, b), (a_correct, b_correct), tags)
    if tags is not None:
        data["taxonomy"] = _taxonomy(tags, a_correct, b_correct, costs)
    data["notes"] = _notes(data)
    return data, _text(data)


def _notes(r: dict[str, Any]) -> list[str]:
    notes = []
    if r["task"] == "scores":
        if "paired" in r and r["n"] < FEW_SCORED:
            notes.append(
                f"only {r['n']} examples: the bootstrap's percentile interval is too short "
                f"below about {FEW_SCORED}"
            )
        return notes
    if "paired" in r and r["paired"]["mcnemar"]["discordant"] < 25:
        notes.append(
            f"only {r['paired']['mcnemar']['discordant']} examples differ between a and b: "
            "read the mid-p (or exact) p-value, the chi-square approximation is poor below "
            "about 25"
        )
    if "taxonomy" in r and r["taxonomy"]["a_errors"] == 0:
        notes.append("a makes no error: there is nothing for the tags to describe")
    return notes


# ---- how the result reads --------------------------------------------------------------------


def _shown_label(label: str) -> str:
    """A label as a table shows it: an empty prediction as '(empty)'."""
    return label if label.strip() else "(empty)"


def _f(value: float) -> str:
    return f"{value:.4f}"


def _p(value: float, log10: float) -> str:
    """A p-value: four significant digits, or 10^x where a double cannot hold it."""
    return f"{value:.4g}" if value > 1e-300 else f"10^{log10:.1f}"


def _models(r: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, r[name]) for name in ("a", "b") if name in r]


def _score_rows(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    if r["task"] == "scores":
        head = ["model", "field", "mean score", "examples"]
        rows = [[name, m["field"], f"{m['mean']:.4g}", f"{m['n']:,}"] for name, m in _models(r)]
        return head, rows
    if r["task"] == "classification":
        head = ["model", "field", "accuracy", "macro F1", "micro F1", "errors"]
        rows = [
            [
                name,
                m["field"],
                _f(m["accuracy"]),
                _f(m["macro_f1"]),
                _f(m["micro_f1"]),
                f"{m['errors']:,}",
            ]
            for name, m in _models(r)
        ]
    else:
        head = [
            "model",
            "field",
            "exact match",
            "micro F1",
            "macro F1",
            "invalid JSON",
            "missing a field",
        ]
        rows = [
            [
                name,
                m["field"],
                _f(m["exact_match"]),
                _f(m["micro_f1"]),
                _f(m["macro_f1"]),
                _f(m["invalid_rate"]),
                _f(m["missing_field_rate"]),
            ]
            for name, m in _models(r)
        ]
    return head, rows


def _class_rows(r: dict[str, Any], limit: int | None = None) -> tuple[list[str], list[list[str]]]:
    """Per class (classification) or per field (extraction): a's scores, then b's."""
    key = "per_class" if r["task"] == "classification" else "fields"
    names = list(r["a"][key])
    if "b" in r:
        names += [n for n in r["b"][key] if n not in r["a"][key]]
    names.sort()
    head = ["class" if key == "per_class" else "field", "support"]
    for name, _ in _models(r):
        head += [f"{name} precision", f"{name} recall", f"{name} F1"]
    rows = []
    for label in names[:limit]:
        support = next(m[key][label]["support"] for _, m in _models(r) if label in m[key])
        row = [_shown_label(label), f"{support:,}"]
        for _, m in _models(r):
            s = m[key].get(label)
            row += [_f(s["precision"]), _f(s["recall"]), _f(s["f1"])] if s else ["", "", ""]
        rows.append(row)
    return head, rows


def _paired_rows(p: dict[str, Any]) -> list[list[str]]:
    return [
        ["a right", f"{p['both_right']:,}", f"{p['negative_flips']:,}"],
        ["a wrong", f"{p['positive_flips']:,}", f"{p['both_wrong']:,}"],
    ]


def _mcnemar_line(p: dict[str, Any]) -> str:
    m = p["mcnemar"]
    return (
        f"McNemar: {m['discordant']:,} discordant examples; mid-p "
        f"{_p(m['p_value_mid'], m['log10_p_value_mid'])}; exact p "
        f"{_p(m['p_value_exact'], m['log10_p_value_exact'])}; chi-square "
        f"{m['statistic_uncorrected']:.4g}, p {m['p_value_uncorrected']:.4g}; "
        f"continuity-corrected {m['statistic']:.4g}, p {m['p_value']:.4g}"
    )


def _interval(i: dict[str, float]) -> str:
    return f"[{i['low']:+.4f}, {i['high']:+.4f}]"


def _difference_line(p: dict[str, Any]) -> str:
    d = p["difference"]
    return (
        f"Accuracy b - a: {d['estimate']:+.4f}, {d['confidence']:.0%} interval "
        f"{_interval(d['newcombe'])} (Newcombe), {_interval(d['bonett_price'])} "
        f"(Bonett-Price), {_interval(d['wald'])} (Wald)"
    )


def _bootstrap_line(p: dict[str, Any]) -> str:
    s = p["bootstrap"]
    return (
        f"Mean score b - a: {p['mean_difference']:+.4g}, {s['confidence']:.0%} percentile "
        f"interval [{s['low']:+.4g}, {s['high']:+.4g}], p {s['p_value']:.4g} (paired "
        f"bootstrap, {s['resamples']:,} resamples, seed {s['seed']}); b higher on "
        f"{p['b_higher']:,} examples, a on {p['a_higher']:,}, equal on {p['equal']:,}"
    )


def _scores_text(r: dict[str, Any]) -> str:
    out = [f"{r['file']}: {r['n']:,} examples, scores", "", table(*_score_rows(r))]
    if "paired" in r:
        out += ["", _bootstrap_line(r["paired"])]
    out += [f"Note: {n}" for n in r["notes"]]
    return "\n".join(out)


def _flip_rows(flips: list[dict[str, Any]], limit: int) -> list[list[str]]:
    return [
        [f["id"], str(f["line"]), f["gold"], _shown_label(f["a"]), _shown_label(f["b"]), f["tag"]]
        for f in flips[:limit]
    ]


def _taxonomy_rows(t: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    with_b = t["new_errors"] is not None
    head = ["tag", "errors of a", "share of a's errors", "ceiling on the gain"]
    head += ["fixed by b", "remaining"] if with_b else []
    rows = []
    for tag, v in t["tags"].items():
        row = [tag, f"{v['errors']:,}", f"{v['share']:.1%}", f"{v['ceiling']:.2%}"]
        row += [f"{v['fixed']:,}", f"{v['remaining']:,}"] if with_b else []
        rows.append(row)
    return head, rows


def _share(value: float) -> str:
    """A small share of the examples as a percentage, three significant digits (a
    ceiling per GPU-hour is often a few hundredths of a point)."""
    return f"{value * 100:.3g}%"


def _ranking_rows(t: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["rank", "tag", "ceiling on the gain", "GPU-hours", "ceiling per GPU-hour"]
    rows = [
        [
            str(x["rank"]),
            x["tag"],
            f"{x['ceiling']:.2%}",
            f"{x['gpu_hours']:,.10g}",
            _share(x["ceiling_per_gpu_hour"]),
        ]
        for x in t["ranking"]
    ]
    return head, rows


RANKING_NOTE = (
    "the GPU-hours are your estimates and each ceiling is a best case, so discount it by "
    "how likely its fix is to work"
)


def _text(r: dict[str, Any]) -> str:
    if r["task"] == "scores":
        return _scores_text(r)
    out = [f"{r['file']}: {r['n']:,} examples, {r['task']}", ""]
    out.append(table(*_score_rows(r)))
    if "paired" in r:
        p = r["paired"]
        out += [
            "",
            table(["", "b right", "b wrong"], _paired_rows(p)),
            f"Negative flips (a right, b wrong): {p['negative_flips']:,}, rate "
            f"{_f(p['negative_flip_rate'])}; positive flips: {p['positive_flips']:,}; "
            f"accuracy change b - a: {p['accuracy_change']:+.4f}",
            _difference_line(p),
            _mcnemar_line(p),
        ]
    out += ["", table(*_class_rows(r))]
    if r["task"] == "classification":
        for name, m in _models(r):
            labels = m["confusion"]["labels"]
            if len(labels) <= 20:  # wider matrices are in --json and the page's CSV
                out += [
                    "",
                    f"Confusion matrix of {name} (rows: reference, columns: prediction)",
                    table(
                        ["", *map(_shown_label, labels)],
                        [
                            [_shown_label(lab), *map(str, row)]
                            for lab, row in zip(labels, m["confusion"]["matrix"], strict=True)
                        ],
                    ),
                ]
    if "paired" in r and r["paired"]["regressions"]:
        flips = r["paired"]["regressions"]
        out += [
            "",
            f"Regressions (a right, b wrong): {min(len(flips), SHOWN_FLIPS)} of {len(flips):,}",
            table(["id", "line", "gold", "a", "b", "tag"], _flip_rows(flips, SHOWN_FLIPS)),
        ]
    if "taxonomy" in r:
        t = r["taxonomy"]
        out += ["", f"Error taxonomy: {t['a_errors']:,} errors of a, {t['tagged_errors']:,} tagged"]
        out.append(table(*_taxonomy_rows(t)))
        if t["new_errors"] is not None:
            out.append(f"New errors of b (a right, b wrong): {t['new_errors']:,}")
        if t["ranking"]:
            out += [
                "",
                f"Next experiment by ceiling per GPU-hour: {RANKING_NOTE}",
                table(*_ranking_rows(t)),
            ]
    out += [f"Note: {n}" for n in r["notes"]]
    return "\n".join(out)


def _head(r: dict[str, Any]) -> str:
    if r["task"] == "scores":
        parts = [f"{r['n']:,} examples; a: mean score {r['a']['mean']:.4g}"]
        if "b" in r:
            p, s = r["paired"], r["paired"]["bootstrap"]
            parts.append(
                f"b: {r['b']['mean']:.4g} ({p['mean_difference']:+.4g}, "
                f"{s['confidence']:.0%} interval [{s['low']:+.4g}, {s['high']:+.4g}]), "
                f"paired bootstrap p {s['p_value']:.4g}"
            )
        return "; ".join(parts) + "."
    what = "accuracy" if r["task"] == "classification" else "exact match"
    parts = [f"{r['n']:,} examples; a: {what} {r['a']['accuracy']:.4f}"]
    if "b" in r:
        p = r["paired"]
        m = p["mcnemar"]
        parts.append(
            f"b: {r['b']['accuracy']:.4f} ({p['accuracy_change']:+.4f}, "
            f"{p['difference']['confidence']:.0%} interval "
            f"{_interval(p['difference']['newcombe'])}), "
            f"{p['negative_flips']:,} negative and {p['positive_flips']:,} positive flips, "
            f"McNemar mid-p {_p(m['p_value_mid'], m['log10_p_value_mid'])}"
        )
    if "taxonomy" in r and r["taxonomy"]["ranking"]:
        first = r["taxonomy"]["ranking"][0]
        parts.append(
            f"next experiment by ceiling per GPU-hour: {first['tag']} "
            f"({_share(first['ceiling_per_gpu_hour'])} per GPU-hour at most)"
        )
    return "; ".join(parts) + "."


def _scores_html(r: dict[str, Any]) -> str:
    parts = [summary(_head(r)), html_table(*_score_rows(r), caption="Mean scores")]
    if "paired" in r:
        p, s = r["paired"], r["paired"]["bootstrap"]
        parts.append(
            bar_chart_svg(
                [
                    ("examples where a scores higher", p["a_higher"]),
                    ("examples where b scores higher", p["b_higher"]),
                    ("examples scored equal", p["equal"]),
                ],
                title="per-example comparison of a and b",
                value_format=lambda v: f"{v:,}",
                unit_label="examples",
            )
        )
        parts.append(
            html_table(
                ["quantity", "value"],
                [
                    ["mean score b - a", f"{p['mean_difference']:+.4g}"],
                    [
                        f"{s['confidence']:.0%} percentile interval",
                        f"[{s['low']:+.4g}, {s['high']:+.4g}]",
                    ],
                    ["two-sided p-value (shift method)", f"{s['p_value']:.4g}"],
                    ["resamples with b ahead", f"{s['b_better_share']:.1%}"],
                    ["resamples, seed", f"{s['resamples']:,}, {s['seed']}"],
                ],
                caption="Paired bootstrap of the mean difference",
            )
        )
    return "".join(parts)


def html(r: dict[str, Any]) -> str:
    if r["task"] == "scores":
        return _scores_html(r)
    parts = [summary(_head(r))]  # the page adds the notes under the result
    parts.append(html_table(*_score_rows(r), caption="Scores"))
    if "paired" in r:
        p = r["paired"]
        parts.append(
            bar_chart_svg(
                [
                    ("negative flips (a right, b wrong)", p["negative_flips"]),
                    ("positive flips (a wrong, b right)", p["positive_flips"]),
                ],
                title="flips between a and b",
                value_format=lambda v: f"{v:,}",
                unit_label="examples",
            )
        )
        parts.append(
            html_table(["", "b right", "b wrong"], _paired_rows(p), caption="Paired outcomes")
        )
        m, conf = p["mcnemar"], p["difference"]["confidence"]
        parts.append(
            html_table(
                ["quantity", "value"],
                [
                    ["negative flip rate", _f(p["negative_flip_rate"])],
                    ["accuracy change b - a", f"{p['accuracy_change']:+.4f}"],
                    [
                        f"{conf:.0%} interval, Newcombe square-and-add",
                        _interval(p["difference"]["newcombe"]),
                    ],
                    [
                        f"{conf:.0%} interval, Bonett-Price adjusted Wald",
                        _interval(p["difference"]["bonett_price"]),
                    ],
                    [f"{conf:.0%} interval, Wald", _interval(p["difference"]["wald"])],
                    ["discordant examples", f"{m['discordant']:,}"],
                    ["mid-p value", _p(m["p_value_mid"], m["log10_p_value_mid"])],
                    ["exact p-value", _p(m["p_value_exact"], m["log10_p_value_exact"])],
                    ["McNemar chi-square", f"{m['statistic_uncorrected']:.4g}"],
                    ["its p-value", f"{m['p_value_uncorrected']:.4g}"],
                    ["chi-square, continuity-corrected", f"{m['statistic']:.4g}"],
                    ["its p-value", f"{m['p_value']:.4g}"],
                ],
                caption="The accuracy change and McNemar's test",
            )
        )
    if r["task"] == "classification":
        for name, m in _models(r):
            c = m["confusion"]
            parts.append(
                confusion_matrix_svg(
                    [_shown_label(x) for x in c["labels"]],
                    c["matrix"],
                    title=f"confusion matrix of {name}: rows are the reference, columns "
                    "the prediction",
                    heading=f"Confusion matrix of {name} ({m['field']}): rows are the "
                    "reference, columns the prediction",
                )
            )
    head, rows = _class_rows(r, SHOWN_CLASSES)
    what = "class" if r["task"] == "classification" else "field"
    parts.append(html_table(head, rows, caption=f"Scores per {what}"))
    if "paired" in r and "by_class" in r["paired"]:
        flips = [
            [_shown_label(k), f"{v['support']:,}", f"{v['negative']:,}", f"{v['positive']:,}"]
            for k, v in r["paired"]["by_class"].items()
            if v["negative"] or v["positive"]
        ]
        if flips:
            parts.append(
                html_table(
                    ["reference class", "support", "negative flips", "positive flips"],
                    flips[:SHOWN_CLASSES],
                    caption="Flips per class",
                )
            )
    if "paired" in r and r["paired"]["regressions"]:
        flips = r["paired"]["regressions"]
        parts.append(
            html_table(
                ["id", "line", "gold", "a", "b", "tag"],
                _flip_rows(flips, SHOWN_FLIPS),
                caption=f"Regressions: {min(len(flips), SHOWN_FLIPS)} of {len(flips):,} "
                "(all in the CSV)",
            )
        )
    if "taxonomy" in r and r["taxonomy"]["tags"]:
        t = r["taxonomy"]
        parts.append(
            bar_chart_svg(
                [(tag, v["ceiling"]) for tag, v in t["tags"].items()][:SHOWN_CLASSES],
                title="ceiling on the accuracy gain per tag",
                value_format=lambda v: f"{v:.2%}",
                unit_label="accuracy gain if every error of the tag were fixed",
            )
        )
        caption = f"Error taxonomy: {t['a_errors']:,} errors of a"
        if t["new_errors"] is not None:
            caption += f"; {t['new_errors']:,} new errors of b"
        parts.append(html_table(*_taxonomy_rows(t), caption=caption))
        if t["ranking"]:
            shown_ranking = t["ranking"][:SHOWN_CLASSES]
            parts.append(
                bar_chart_svg(
                    [(x["tag"], x["ceiling_per_gpu_hour"]) for x in shown_ranking],
                    title="ceiling per GPU-hour of the experiment aimed at each tag, best first",
                    value_format=_share,
                    unit_label="accuracy gain per GPU-hour, at most",
                )
            )
            head, rows = _ranking_rows(t)
            parts.append(
                html_table(
                    head,
                    rows[:SHOWN_CLASSES],
                    caption=f"Next experiment by ceiling per GPU-hour: {RANKING_NOTE}",
                )
            )
    return "".join(parts)


# ---- downloads ---------------------------------------------------------------------------------


def _flips_csv(flips: list[dict[str, Any]]) -> str:
    keys = ["id", "line", "gold", "a", "b", "tag"]
    return csv_row(keys) + "".join(csv_row([f[k] for k in keys]) for f in flips)


def _confusion_csv(c: dict[str, Any]) -> str:
    lines = [csv_row(["reference \\ prediction", *c["labels"]])]
    lines += [csv_row([label, *row]) for label, row in zip(c["labels"], c["matrix"], strict=True)]
    return "".join(lines)


def scores_csv(r: dict[str, Any]) -> str:
    """Per class (or per field) and model: precision, recall, F1 and support; for the
    scores task, each model's mean score."""
    if r["task"] == "scores":
        return csv_row(["model", "field", "mean", "n"]) + "".join(
            csv_row([name, m["field"], m["mean"], m["n"]]) for name, m in _models(r)
        )
    key = "per_class" if r["task"] == "classification" else "fields"
    lines = [
        csv_row(
            [
                "model",
                "class" if key == "per_class" else "field",
                "precision",
                "recall",
                "f1",
                "support",
            ]
        )
    ]
    for name, m in _models(r):
        lines += [
            csv_row([name, label, s["precision"], s["recall"], s["f1"], s["support"]])
            for label, s in m[key].items()
        ]
    return "".join(lines)


def _ranking_csv(ranking: list[dict[str, Any]]) -> str:
    keys = ["rank", "tag", "ceiling", "gpu_hours", "ceiling_per_gpu_hour"]
    return csv_row(keys) + "".join(csv_row([x[k] for k in keys]) for x in ranking)


def tables(r: dict[str, Any]) -> dict[str, str]:
    """The CSV downloads: the regressions and improvements (with b), each model's
    confusion matrix (classification), the ranking of the next experiment (with costs)."""
    out: dict[str, str] = {}
    if r["task"] == "scores":
        return out
    if "taxonomy" in r and r["taxonomy"]["ranking"]:
        out["ranking"] = _ranking_csv(r["taxonomy"]["ranking"])
    if "paired" in r:
        out["regressions"] = _flips_csv(r["paired"]["regressions"])
        out["improvements"] = _flips_csv(r["paired"]["improvements"])
    if r["task"] == "classification":
        for name, m in _models(r):
            out[f"confusion-{name}"] = _confusion_csv(m["confusion"])
    return out


def _field(name: str, default: str, label: str, help: str) -> Input:
    return Input(name=name, label=label, kind="text", default=default, help=help, metavar="NAME")


CALCULATOR = Calculator(
    name="compare",
    title="Prediction comparison",
    summary="Two models' predictions on one file: scores, confusion, flips, McNemar, "
    "error taxonomy; or per-example scores, with the paired bootstrap.",
    help="compare two models' predictions: scores, flips, McNemar, taxonomy",
    inputs=(
        Input(
            name="predictions",
            label="Predictions file",
            kind="file",
            example="data/evaluation/digits/predictions.csv",
            required=True,
            help="A .csv or .jsonl file, one row per example: its id, the reference, "
            "the baseline's prediction, optionally a candidate's and an error tag.",
            metavar="FILE",
        ),
        Input(
            name="task",
            label="Task",
            kind="choice",
            default="classification",
            choices=TASKS,
            help="classification: labels; extraction: JSON objects compared field by field; "
            "scores: a number per example for each model (a token F1, a ROUGE, a judge's "
            "grade), compared by the paired bootstrap; the reference field is not read.",
        ),
        _field("id_field", "id", "Id field", "The field (column) holding each example's id."),
        _field("gold_field", "gold", "Reference field", "The field holding the reference."),
        _field("a_field", "a", "Baseline field", "The field holding the baseline's prediction."),
        _field(
            "b_field",
            "b",
            "Candidate field",
            "The field holding the candidate's prediction; a file without it compares nothing.",
        ),
        _field(
            "tag_field",
            "tag",
            "Tag field",
            "The field holding a reviewer's error tags (';' between tags); may be absent.",
        ),
        Input(
            name="cost",
            label="Experiment costs",
            kind="lines",
            default=(),
            optional=True,
            unit="GPU-hours",
            help="One per line, TAG=GPU_HOURS: your estimate of the GPU-hours an experiment "
            "aimed at that tag's errors costs (its runs and reruns). Ranks the tags by "
            "ceiling per GPU-hour; needs the tag field.",
            metavar="TAG=GPU_HOURS",
        ),
        Input(
            name="normalize",
            label="Normalize strings",
            kind="bool",
            default=False,
            help="Extraction: compare strings after Unicode NFKC, case folding and "
            "whitespace collapsing.",
        ),
        Input(
            name="resamples",
            label="Bootstrap resamples",
            kind="int",
            optional=True,
            minimum=MIN_RESAMPLES,
            maximum=MAX_RESAMPLES,
            help=f"Scores: how many times the examples are drawn with replacement for the "
            f"paired bootstrap; empty: {DEFAULT_RESAMPLES:,} (examples x resamples is "
            "bounded).",
        ),
        Input(
            name="seed",
            label="Bootstrap seed",
            kind="int",
            optional=True,
            minimum=0,
            maximum=2**32 - 1,
            help=f"Scores: the seed of the bootstrap's draws; empty: {DEFAULT_SEED}. The same "
            "seed gives the same figures.",
        ),
    ),
    run=run,
    html=html,
    csv=scores_csv,
    tables=tables,
    renamed={
        "predicted": FILE,
        "reference": FILE,
        "tags": FILE,
        "a_correct": FILE,
        "b_correct": FILE,
        "a_scores": FILE,
        "b_scores": FILE,
    },
    order=16,
)
