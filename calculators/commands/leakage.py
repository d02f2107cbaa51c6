"""leakage: audit a train/eval split for leakage: exact and near duplicates across the
split, duplicates within each file, shared groups, temporal order and n-gram
contamination (`calculators.evaluation.leakage`)."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.errors import shown
from calculators.evaluation.leakage import (
    CLEAN,
    DUPLICATES,
    LEAK,
    MAX_NGRAM,
    MAX_SHINGLE,
    NOT_CHECKED,
    AuditSettings,
    Item,
    LeakageReport,
    PairCheck,
    audit,
)
from calculators.evaluation.minhash import candidate_probability
from calculators.evaluation.records import Row, read_rows, row_id
from calculators.render import table
from calculators.web.render import html_table, line_chart_svg, notes_html, summary
from calculators.web.text import csv_row

# Rows of each offending list shown in the page and the plain-text output; the JSON and
# the CSV download hold them all (the JSON's pair lists up to MAX_LISTED_PAIRS).
SHOWN_ROWS = 20
# Points of the candidate-probability curve: similarity 0 to 1 in steps of 1/CURVE_STEPS.
CURVE_STEPS = 50


# ---- reading the files -------------------------------------------------------------------


def _is_txt(path: str) -> bool:
    return path.lower().endswith(".txt")


def _id(row: Row, field: str, input_name: str) -> str:
    value = row.values[field]
    if isinstance(value, dict | list | bool):
        raise row.error(
            input_name, f"field {field!r} must be an id (text or a number), got {shown(value)}"
        )
    text = row_id(value)
    if not text.strip():
        raise row.error(input_name, f"field {field!r} is empty: every example needs an id")
    return text


def _group(row: Row, field: str, input_name: str) -> str | None:
    """The row's group; None (not compared) where the field is absent, null or empty."""
    if field not in row.values:
        return None
    value = row.values[field]
    if isinstance(value, dict | list | bool):
        raise row.error(
            input_name, f"field {field!r} must be a group (text or a number), got {shown(value)}"
        )
    text = row_id(value)
    return text if text.strip() else None


def _time(row: Row, field: str, input_name: str) -> datetime:
    """The row's time: an ISO 8601 date or date and time (`datetime.fromisoformat`, which
    from Python 3.11 reads the common forms: 2024-05-01, 2024-05-01T12:30:00Z, with an
    offset, with fractions of a second); a date alone is its midnight."""
    text = row.text(field, input_name).strip()
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise row.error(
            input_name,
            f"field {field!r} must be an ISO 8601 date or time (2024-05-01, "
            f"2024-05-01T12:30:00+02:00), got {shown(text)}",
        ) from None


def read_items(path: str, input_name: str, args: Args) -> list[Item]:
    """The items of one file. A .txt file's fields are always `text` and `id` (its line
    number); the group and time fields need a .jsonl or .csv file. Ids must be unique
    within a file: a repeated id is an error naming both lines (a pair reported by id
    would otherwise be ambiguous)."""
    text_field, id_field = ("text", "id") if _is_txt(path) else (args.text_field, args.id_field)
    fields = [text_field, id_field]
    optional = []
    if args.time_field:
        fields.append(args.time_field)
    if args.group_field:
        # a .txt file has no such field: asking for it there is an error, not "no groups"
        (fields if _is_txt(path) else optional).append(args.group_field)
    rows = read_rows(path, input_name=input_name, fields=fields, optional=optional)
    seen: dict[str, int] = {}
    items = []
    for row in rows:
        item_id = _id(row, id_field, input_name)
        if item_id in seen:
            raise row.error(
                input_name,
                f"field {id_field!r}: id {shown(item_id)} is also the id of line "
                f"{seen[item_id]}; ids must be unique within a file",
            )
        seen[item_id] = row.line
        items.append(
            Item(
                id=item_id,
                text=row.text(text_field, input_name),
                line=row.line,
                group=_group(row, args.group_field, input_name) if args.group_field else None,
                time=_time(row, args.time_field, input_name) if args.time_field else None,
            )
        )
    return items


# ---- the result as JSON --------------------------------------------------------------------


def _rate(count: int, size: int) -> float:
    return count / size


def _pairs_json(check: PairCheck, eval_size: int, with_jaccard: bool) -> dict[str, Any]:
    return {
        "verdict": LEAK if check.eval_ids else CLEAN,
        "eval_items": list(check.eval_ids),
        "count": len(check.eval_ids),
        "rate": _rate(len(check.eval_ids), eval_size),
        "pairs": [
            {"train": p.train, "eval": p.eval, "jaccard": p.jaccard}
            if with_jaccard
            else {"train": p.train, "eval": p.eval}
            for p in check.pairs
        ],
        "pairs_total": check.pairs_total,
        "pairs_truncated": check.truncated,
    }


def report_json(r: LeakageReport, args: Args) -> dict[str, Any]:
    """The audit as JSON (the contract of issue 13, plus rates, verdicts, offending ids
    and the LSH banding)."""
    s = r.settings
    size = r.eval_size
    within = r.within
    train_dupes = within.extra(within.train_groups)
    eval_dupes = within.extra(within.eval_groups)
    groups: dict[str, Any] = {"checked": r.groups is not None, "field": args.group_field}
    if r.groups is None:
        groups |= {"verdict": NOT_CHECKED, "shared": [], "eval_items": [], "count": None}
        groups |= {"rate": None, "items": []}
        groups |= {"train_without_group": None, "eval_without_group": None}
    else:
        g = r.groups
        groups |= {
            "verdict": LEAK if g.eval_ids else CLEAN,
            "shared": list(g.shared),
            "eval_items": list(g.eval_ids),
            "count": len(g.eval_ids),
            "rate": _rate(len(g.eval_ids), size),
            "items": [
                {"eval": e, "group": v} for e, v in zip(g.eval_ids, g.eval_groups, strict=True)
            ],
            "train_without_group": g.train_without_group,
            "eval_without_group": g.eval_without_group,
        }
    time: dict[str, Any] = {"checked": r.time is not None, "field": args.time_field}
    if r.time is None:
        time |= {"verdict": NOT_CHECKED, "eval_items_before_train_end": [], "count": None}
        time |= {"rate": None, "train_end": None, "train_end_id": None, "eval_start": None}
        time |= {"items": []}
    else:
        t = r.time
        time |= {
            "verdict": LEAK if t.eval_ids else CLEAN,
            "eval_items_before_train_end": list(t.eval_ids),
            "count": len(t.eval_ids),
            "rate": _rate(len(t.eval_ids), size),
            "train_end": t.train_end.isoformat(),
            "train_end_id": t.train_end_id,
            "eval_start": t.eval_start.isoformat(),
            "items": [
                {"eval": e, "time": v.isoformat()}
                for e, v in zip(t.eval_ids, t.eval_times, strict=True)
            ],
        }
    ngram = r.ngram
    flagged = (
        set(r.near.eval_ids)  # near pairs include the exact ones
        | set(groups["eval_items"])
        | set(time["eval_items_before_train_end"])
        | {m.eval for m in ngram.matches}
    )
    return {
        "train_size": r.train_size,
        "eval_size": size,
        "verdict": LEAK if flagged else CLEAN,
        "flagged_eval_items": len(flagged),
        "flagged_rate": _rate(len(flagged), size),
        "settings": {
            "threshold": s.threshold,
            "shingle": s.shingle,
            "ngram": s.ngram,
            "text_field": args.text_field,
            "id_field": args.id_field,
            "group_field": args.group_field,
            "time_field": args.time_field,
        },
        "lsh": {
            "hashes": r.bands * r.rows,
            "bands": r.bands,
            "rows": r.rows,
            "probability_at_threshold": candidate_probability(s.threshold, r.bands, r.rows),
            "confirmations": r.confirmations,
        },
        "exact": _pairs_json(r.exact, size, with_jaccard=False),
        "near": _pairs_json(r.near, size, with_jaccard=True),
        "within": {
            "verdict": DUPLICATES if train_dupes or eval_dupes else CLEAN,
            # each list: the ids of one text that repeats, in file order
            "train_duplicates": [list(g) for g in within.train_groups],
            "eval_duplicates": [list(g) for g in within.eval_groups],
            # the repeats beyond the first of each text
            "train_duplicate_count": train_dupes,
            "eval_duplicate_count": eval_dupes,
        },
        "groups": groups,
        "time": time,
        "ngram": {
            "n": ngram.n,
            "verdict": LEAK if ngram.matches else CLEAN,
            "eval_items": [m.eval for m in ngram.matches],
            "count": len(ngram.matches),
            "rate": _rate(len(ngram.matches), size),
            "matches": [
                {"eval": m.eval, "train": m.train, "ngram": m.ngram} for m in ngram.matches
            ],
            "short_eval_items": list(ngram.short_eval_ids),
        },
    }


def run(args: Args) -> tuple[dict[str, Any], str]:
    settings = AuditSettings(
        threshold=args.threshold,
        shingle=args.shingle,
        ngram=args.ngram,
        check_groups=bool(args.group_field),
        check_time=bool(args.time_field),
    )
    train = read_items(args.train, "train", args)
    eval_items = read_items(args.eval, "eval", args)
    labels = (_file_name(args.train), _file_name(args.eval))
    r = audit(train, eval_items, settings, labels=labels)
    data = report_json(r, args)
    return data, _text(data)


def _file_name(path: str) -> str:
    """The name errors give a file: as `records.read_rows` names it."""
    return os.path.basename(path) or path


# ---- reading the result: rows, text, HTML, CSV ----------------------------------------------


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def check_rows(r: dict[str, Any]) -> list[list[str]]:
    """One row per check: name, what it compares, eval items flagged, rate, verdict."""
    within = r["within"]
    g, t, n = r["groups"], r["time"], r["ngram"]
    threshold = r["settings"]["threshold"]

    def count(value: int | None) -> str:
        return "n/a" if value is None else f"{value:,}"

    return [
        ["exact duplicates", "same normalised text", count(r["exact"]["count"]),
         _pct(r["exact"]["rate"]), r["exact"]["verdict"]],
        ["near duplicates", f"shingle Jaccard >= {threshold:g}", count(r["near"]["count"]),
         _pct(r["near"]["rate"]), r["near"]["verdict"]],
        ["within train", "repeated texts", count(within["train_duplicate_count"]), "",
         DUPLICATES if within["train_duplicate_count"] else CLEAN],
        ["within eval", "repeated texts", count(within["eval_duplicate_count"]),
         _pct(within["eval_duplicate_count"] / r["eval_size"]),
         DUPLICATES if within["eval_duplicate_count"] else CLEAN],
        ["group overlap", f"field {g['field']}" if g["checked"] else "no group field",
         count(g["count"]), _pct(g["rate"]), g["verdict"]],
        ["temporal order", f"field {t['field']}" if t["checked"] else "no time field",
         count(t["count"]), _pct(t["rate"]), t["verdict"]],
        [f"{n['n']}-gram overlap", f"shares a {n['n']}-word span", count(n["count"]),
         _pct(n["rate"]), n["verdict"]],
    ]  # fmt: skip


def _headline(r: dict[str, Any]) -> str:
    size = r["eval_size"]
    head = f"Audit of {r['train_size']:,} train and {size:,} eval items: "
    if r["verdict"] == CLEAN:
        return head + "no eval item leaks through any check."
    return head + (
        f"{r['flagged_eval_items']:,} eval items ({r['flagged_rate']:.1%}) are flagged by at "
        "least one check."
    )


def _lsh_line(r: dict[str, Any]) -> str:
    lsh = r["lsh"]
    return (
        f"MinHash LSH: {lsh['bands']} bands x {lsh['rows']} rows; a pair at the threshold "
        f"{r['settings']['threshold']:g} becomes a candidate with probability "
        f"{lsh['probability_at_threshold']:.4f}; {lsh['confirmations']:,} candidates "
        "confirmed by exact Jaccard."
    )


def _notes(r: dict[str, Any]) -> list[str]:
    notes = []
    for name in ("exact", "near"):
        c = r[name]
        if c["pairs_truncated"]:
            notes.append(
                f"{name}: {c['pairs_total']:,} pairs; the first {len(c['pairs']):,} are listed "
                "(every count is exact)"
            )
    short = len(r["ngram"]["short_eval_items"])
    if short:
        n = r["ngram"]["n"]
        notes.append(
            f"{short:,} eval items have fewer than {n} words (punctuation dropped) and are "
            f"not tested for {n}-gram overlap; the duplicate checks cover them, and a "
            "smaller ngram tests them"
        )
    g = r["groups"]
    if g["checked"] and (g["train_without_group"] or g["eval_without_group"]):
        notes.append(
            f"items without a group (field absent, null or empty) are not compared: "
            f"{g['train_without_group']:,} train, {g['eval_without_group']:,} eval"
        )
    return notes


def _offending(r: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], int]]:
    """Per check with offenders: (title, header, rows shown, how many in all)."""
    out = []
    exact = r["exact"]
    if exact["pairs_total"]:
        rows = [[p["train"], p["eval"]] for p in exact["pairs"][:SHOWN_ROWS]]
        out.append(("Exact duplicates", ["train id", "eval id"], rows, exact["pairs_total"]))
    near = r["near"]
    if near["pairs_total"]:
        rows = [[p["train"], p["eval"], f"{p['jaccard']:.4f}"] for p in near["pairs"][:SHOWN_ROWS]]
        out.append(
            ("Near duplicates", ["train id", "eval id", "Jaccard"], rows, near["pairs_total"])
        )
    for split in ("train", "eval"):
        groups = r["within"][f"{split}_duplicates"]
        if groups:
            rows = [[str(len(g)), ", ".join(g[:8]) + (" ..." if len(g) > 8 else "")]
                    for g in groups[:SHOWN_ROWS]]  # fmt: skip
            out.append((f"Repeated texts within {split}", ["items", "ids"], rows, len(groups)))
    g = r["groups"]
    if g["shared"]:
        rows = [[value] for value in g["shared"][:SHOWN_ROWS]]
        out.append((f"Groups on both sides ({g['field']})", ["group"], rows, len(g["shared"])))
    t = r["time"]
    if t["items"]:
        rows = [[i["eval"], i["time"]] for i in t["items"][:SHOWN_ROWS]]
        title = (
            f"Eval items older than the newest train item ({t['train_end']}, "
            f"id {t['train_end_id']})"
        )
        out.append((title, ["eval id", "time"], rows, len(t["items"])))
    n = r["ngram"]
    if n["matches"]:
        rows = [[m["eval"], m["train"], m["ngram"]] for m in n["matches"][:SHOWN_ROWS]]
        out.append(
            (f"Shared {n['n']}-grams", ["eval id", "train id", f"a shared {n['n']}-gram"],
             rows, len(n["matches"]))
        )  # fmt: skip
    return out


def _text(r: dict[str, Any]) -> str:
    parts = [
        _headline(r),
        "",
        table(["check", "compares", "eval items", "rate", "verdict"], check_rows(r)),
        "",
        _lsh_line(r),
    ]
    for title, head, rows, total in _offending(r):
        parts += ["", f"{title}:", table(head, rows)]
        if total > len(rows):
            parts.append(f"... and {total - len(rows):,} more (--json lists them)")
    notes = _notes(r)
    if notes:
        parts += ["", *(f"Note: {n}" for n in notes)]
    return "\n".join(parts)


def curve_svg(r: dict[str, Any]) -> str:
    """The LSH candidate probability 1 - (1 - s^r)^b against similarity s, with the
    threshold marked (a vertical line) and the probability there (a dashed line)."""
    lsh = r["lsh"]
    b, rows, threshold = lsh["bands"], lsh["rows"], r["settings"]["threshold"]
    points = [
        (i / CURVE_STEPS, candidate_probability(i / CURVE_STEPS, b, rows))
        for i in range(CURVE_STEPS + 1)
    ]
    return line_chart_svg(
        [
            (f"1 - (1 - s^{rows})^{b}", points),
            (f"threshold {threshold:g}", [(threshold, 0.0), (threshold, 1.0)]),
        ],
        x_label="Jaccard similarity s of the two texts' shingle sets",
        y_label="Probability that a pair becomes a candidate",
        title=f"LSH candidate probability, {b} bands x {rows} rows",
        hlines=[(f"at the threshold {threshold:g}", lsh["probability_at_threshold"])],
        y_format=lambda y: f"{y:.4f}",
    )


def html(r: dict[str, Any]) -> str:
    parts = [summary(_headline(r))]
    parts.append(
        html_table(
            ["check", "compares", "eval items", "rate", "verdict"],
            check_rows(r),
            caption="Checks (rates over the eval set)",
        )
    )
    parts.append(summary(_lsh_line(r)))
    parts.append(curve_svg(r))
    for title, head, rows, total in _offending(r):
        caption = (
            title
            if total <= len(rows)
            else (f"{title}: the first {len(rows):,} of {total:,} (the CSV lists them all)")
        )
        parts.append(html_table(head, rows, caption=caption))
    parts.append(notes_html({"notes": _notes(r)}))
    return "".join(parts)


def offending_csv(r: dict[str, Any]) -> str:
    """Every offending item as one CSV row: check, train id, eval id, Jaccard (near
    pairs), detail (the shared n-gram, the group, the times, the first of a repeated
    text)."""
    lines = [csv_row(["check", "train", "eval", "jaccard", "detail"])]
    for p in r["exact"]["pairs"]:
        lines.append(csv_row(["exact", p["train"], p["eval"], "", ""]))
    for p in r["near"]["pairs"]:
        lines.append(csv_row(["near", p["train"], p["eval"], repr(p["jaccard"]), ""]))
    for split in ("train", "eval"):
        for group in r["within"][f"{split}_duplicates"]:
            for item in group[1:]:
                cells = [item, ""] if split == "train" else ["", item]
                lines.append(csv_row([f"within-{split}", *cells, "", f"same text as {group[0]}"]))
    for item in r["groups"]["items"]:
        lines.append(csv_row(["group", "", item["eval"], "", f"group {item['group']}"]))
    t = r["time"]
    for item in t["items"]:
        detail = f"{item['time']} is before the newest train time {t['train_end']}"
        lines.append(csv_row(["time", t["train_end_id"], item["eval"], "", detail]))
    for m in r["ngram"]["matches"]:
        lines.append(csv_row(["ngram", m["train"], m["eval"], "", m["ngram"]]))
    return "".join(lines)


# ---- the declaration -------------------------------------------------------------------------


def _field(name: str, label: str, help: str, **kwargs: Any) -> Input:
    return Input(name=name, label=label, kind="text", help=help, metavar="NAME", **kwargs)


CALCULATOR = Calculator(
    name="leakage",
    title="Leakage audit",
    summary="Exact and near duplicates, shared groups, time order and n-gram overlap "
    "between a train and an eval file.",
    help="audit a train/eval split for leakage",
    inputs=(
        Input(
            name="train",
            label="Train file",
            kind="file",
            example="data/evaluation/leakage/train.jsonl",
            required=True,
            metavar="FILE",
            help="The training set: .txt (one example per line), .jsonl or .csv (one "
            "example per line or row).",
        ),
        Input(
            name="eval",
            label="Eval file",
            kind="file",
            example="data/evaluation/leakage/eval.jsonl",
            required=True,
            metavar="FILE",
            help="The evaluation (or test) set, in the same formats as the train file.",
        ),
        _field(
            "text_field",
            "Text field",
            "Field (.jsonl) or column (.csv) with the text.",
            default="text",
        ),
        _field(
            "id_field",
            "Id field",
            "Field or column with each example's id, unique "
            "within its file (.txt: the line number).",
            default="id",
        ),
        _field(
            "group_field",
            "Group field",
            "Optional: the user, patient, document or "
            "session an example belongs to; a group on both sides leaks.",
            example="user",
            optional=True,
        ),
        _field(
            "time_field",
            "Time field",
            "Optional: an ISO 8601 date or time; eval "
            "examples older than the newest train example leak.",
            example="date",
            optional=True,
        ),
        Input(
            name="threshold",
            label="Near-duplicate threshold",
            kind="float",
            default=0.8,
            minimum=0,
            maximum=1,
            help="Jaccard similarity of word shingles from which two texts are near "
            "duplicates, above 0 and at most 1.",
        ),
        Input(
            name="shingle",
            label="Shingle length",
            kind="int",
            default=5,
            unit="words",
            minimum=1,
            maximum=MAX_SHINGLE,
            help="Words per shingle for the near-duplicate check.",
        ),
        Input(
            name="ngram",
            label="N-gram length",
            kind="int",
            default=13,
            unit="words",
            minimum=1,
            maximum=MAX_NGRAM,
            help="Words per n-gram for the contamination check (GPT-3 used 13).",
        ),
    ),
    run=run,
    html=html,
    csv=offending_csv,
    order=15,
)
