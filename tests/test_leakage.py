"""The leakage audit: its checks on hand-made sets, its invariants on generated ones, and
the `leakage` command's JSON contract, page, CSV and one-line errors
(calculators.evaluation.leakage, calculators.commands.leakage)."""

import io
import json
import random
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calculators.evaluation.leakage as leakage_module
from calculators import progress
from calculators.cli import main
from calculators.commands.leakage import CALCULATOR, offending_csv
from calculators.errors import InputError
from calculators.evaluation.leakage import (
    AuditSettings,
    Item,
    audit,
)
from calculators.evaluation.text import jaccard, normalise, shingles, words
from calculators.web.forms import FILE_ROOT


def items(texts, prefix="", **extra):
    return [Item(id=f"{prefix}{i}", text=t, line=i + 1, **extra) for i, t in enumerate(texts)]


def exact_jaccard(a: str, b: str, k: int) -> float:
    """The similarity recomputed from the texts, apart from the audit's own path."""
    return jaccard(shingles(words(normalise(a)), k), shingles(words(normalise(b)), k))


# ---- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "words_in_message"),
    [
        ("threshold", 0, "above 0"),
        ("threshold", -0.2, "above 0"),
        ("threshold", 1.01, "at most 1"),
        ("threshold", float("nan"), "must be a number"),
        ("threshold", True, "must be a number"),
        ("shingle", 0, "from 1 to 50"),
        ("shingle", 51, "from 1 to 50"),
        ("shingle", 2.5, "from 1 to 50"),
        ("ngram", 0, "from 1 to 100"),
        ("ngram", 101, "from 1 to 100"),
    ],
)
def test_settings_refuse_values_out_of_bounds(field, value, words_in_message):
    with pytest.raises(InputError) as e:
        AuditSettings(**{field: value})
    assert e.value.field == field
    assert str(e.value).startswith(field)
    assert words_in_message in str(e.value)


def test_settings_accept_the_bounds():
    AuditSettings(threshold=1.0, shingle=1, ngram=1)
    AuditSettings(threshold=1e-9, shingle=50, ngram=100)


# ---- each check on a hand-made set ------------------------------------------------------------

TRAIN = [
    "The quick brown fox jumps over the lazy dog near the river bank today",  # t0
    "A completely different sentence about learning and data splits for evaluation",  # t1
    "the quick  brown fox jumps over the lazy dog near the river bank TODAY",  # t2 = t0
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen",  # t3
]
EVAL = [
    "THE QUICK BROWN FOX jumps over the lazy dog near the river bank today",  # e0 = t0, t2
    # e1: t1 with its last word changed; 11 words, 7 5-shingles, 6 shared: J = 6 / 8
    "A completely different sentence about learning and data splits for testing",
    "nothing in common here",  # e2
    # e3: shares the 13 words "two ... fourteen" with t3
    "zero two three four five six seven eight nine ten eleven twelve thirteen fourteen",
]


def test_exact_near_and_within_by_hand():
    r = audit(items(TRAIN, "t"), items(EVAL, "e"), AuditSettings(threshold=0.7))
    assert r.train_size == 4 and r.eval_size == 4
    assert r.exact.eval_ids == ("e0",)
    assert [(p.train, p.eval) for p in r.exact.pairs] == [("t0", "e0"), ("t2", "e0")]
    assert r.exact.pairs_total == 2
    near = {(p.train, p.eval): p.jaccard for p in r.near.pairs}
    # e3 against t3: 14 words each, 10 shingles each, all but the first shared: J = 9 / 11
    assert near == {("t0", "e0"): 1.0, ("t2", "e0"): 1.0, ("t1", "e1"): 6 / 8, ("t3", "e3"): 9 / 11}
    assert r.near.eval_ids == ("e0", "e1", "e3")
    assert r.within.train_groups == (("t0", "t2"),)
    assert r.within.eval_groups == ()
    assert r.groups is None and r.time is None


def test_threshold_is_inclusive():
    # J(t1, e1) = 6/8 = 0.75 exactly: reported at 0.75, not at 0.76
    pair = (items([TRAIN[1]], "t"), items([EVAL[1]], "e"))
    assert audit(*pair, AuditSettings(threshold=0.75)).near.pairs_total == 1
    assert audit(*pair, AuditSettings(threshold=0.76)).near.pairs_total == 0


def test_ngram_check_by_hand():
    r = audit(items(TRAIN, "t"), items(EVAL, "e"), AuditSettings())
    matches = {m.eval: (m.train, m.ngram) for m in r.ngram.matches}
    # e0 (14 words) shares both its 13-grams with t0 and t2 (same text): the witness is the
    # smaller id, "t0", and of the two 13-grams the first in sort order ("quick" < "the")
    assert matches["e0"] == (
        "t0",
        "quick brown fox jumps over the lazy dog near the river bank today",
    )
    assert matches["e3"] == (
        "t3",
        "two three four five six seven eight nine ten eleven twelve thirteen fourteen",
    )
    assert set(matches) == {"e0", "e3"}
    # e1 (11 words) and e2 (4 words) are shorter than 13 words: not tested
    assert r.ngram.short_eval_ids == ("e1", "e2")


def test_ngram_ignores_punctuation_like_gpt3():
    # GPT-3's words drop punctuation: "fox," and "fox" are the same word there
    train = items(["a b c, d e; f g."], "t")
    evals = items(["A B C D E F G"], "e")
    r = audit(train, evals, AuditSettings(ngram=7))
    assert [(m.train, m.eval, m.ngram) for m in r.ngram.matches] == [("t0", "e0", "a b c d e f g")]
    # ...while the shingles keep it: "c," is not "c", so the texts are not near duplicates
    assert r.near.pairs_total == 0


def test_group_check_by_hand():
    train = [Item(id="t0", text="x", group="alice"), Item(id="t1", text="y", group=None)]
    evals = [
        Item(id="e0", text="z", group="bob"),
        Item(id="e1", text="w", group="alice"),
        Item(id="e2", text="v", group=None),
    ]
    r = audit(train, evals, AuditSettings(check_groups=True))
    assert r.groups is not None
    assert r.groups.shared == ("alice",)
    assert r.groups.eval_ids == ("e1",)
    assert r.groups.eval_groups == ("alice",)
    assert (r.groups.train_without_group, r.groups.eval_without_group) == (1, 1)


def test_time_check_by_hand():
    d = datetime
    train = [
        Item(id="t0", text="a", time=d(2024, 1, 1)),
        Item(id="t1", text="b", time=d(2024, 3, 1)),
        Item(id="t2", text="c", time=d(2024, 3, 1)),
    ]
    evals = [
        Item(id="e0", text="x", time=d(2024, 3, 1)),  # equal to the newest: not older
        Item(id="e1", text="y", time=d(2024, 2, 29, 23, 59)),
        Item(id="e2", text="z", time=d(2024, 4, 1)),
    ]
    r = audit(train, evals, AuditSettings(check_time=True))
    assert r.time is not None
    assert r.time.train_end == d(2024, 3, 1)
    assert r.time.train_end_id == "t1"  # the first train item with the newest time
    assert r.time.eval_ids == ("e1",)
    assert r.time.eval_start == d(2024, 2, 29, 23, 59)


def test_time_check_compares_instants_across_offsets():
    # 10:00+02:00 is 08:00 UTC: before 09:00 UTC
    utc, plus2 = UTC, timezone(timedelta(hours=2))
    train = [Item(id="t0", text="a", time=datetime(2024, 1, 1, 9, tzinfo=utc))]
    evals = [Item(id="e0", text="b", time=datetime(2024, 1, 1, 10, tzinfo=plus2))]
    r = audit(train, evals, AuditSettings(check_time=True))
    assert r.time is not None and r.time.eval_ids == ("e0",)


def test_time_check_refuses_naive_and_aware_together():
    train = [Item(id="t0", text="a", time=datetime(2024, 1, 1), line=3)]
    evals = [Item(id="e0", text="b", time=datetime(2024, 1, 1, tzinfo=UTC), line=7)]
    with pytest.raises(InputError) as e:
        audit(train, evals, AuditSettings(check_time=True), labels=("tr.jsonl", "ev.jsonl"))
    assert e.value.field == "eval"
    assert str(e.value).startswith("ev.jsonl line 7: ")
    assert "tr.jsonl line 3" in str(e.value)


def test_an_empty_set_is_refused():
    with pytest.raises(InputError) as e:
        audit([], items(["a"]), AuditSettings())
    assert e.value.field == "train"


def test_listed_pairs_stop_at_the_cap_and_counts_stay_exact(monkeypatch):
    monkeypatch.setattr(leakage_module, "MAX_LISTED_PAIRS", 5)
    r = audit(items(["same text"] * 4, "t"), items(["same text"] * 3, "e"), AuditSettings())
    assert r.exact.pairs_total == 12  # 4 x 3
    assert len(r.exact.pairs) == 5 and r.exact.truncated
    assert [(p.train, p.eval) for p in r.exact.pairs] == [
        ("t0", "e0"), ("t1", "e0"), ("t2", "e0"), ("t3", "e0"), ("t0", "e1")
    ]  # fmt: skip
    assert r.exact.eval_ids == ("e0", "e1", "e2")
    assert r.confirmations == 1  # one distinct text on each side: one comparison


def test_too_many_candidates_stop_with_a_message(monkeypatch):
    monkeypatch.setattr(leakage_module, "MAX_CONFIRMATIONS", 3)
    texts = [f"shared words in every text number {i}" for i in range(4)]
    with pytest.raises(InputError) as e:
        audit(items(texts, "t"), items(texts, "e"), AuditSettings(threshold=0.1, shingle=1))
    assert e.value.field == "threshold"
    assert "more than 3 candidate pairs" in str(e.value)


def test_progress_is_reported():
    seen = []
    progress.listen(lambda done, total, what: seen.append((done, total, what)))
    try:
        audit(items(["a b c"] * 300, "t"), items(["a b c d"] * 3, "e"), AuditSettings())
    finally:
        progress.listen(None)
    steps = {what for _, _, what in seen}
    assert {"normalising train", "normalising eval", "comparing train with eval"} <= steps
    assert all(0 <= done <= total for done, total, _ in seen)


# ---- invariants on generated sets -----------------------------------------------------------

# A tiny vocabulary makes copies and near copies common in small generated sets.
WORD = st.sampled_from(["a", "b", "c", "d", "e", "A", "b.", "c,"])
TEXT = st.lists(WORD, min_size=0, max_size=12).map(" ".join)
TEXTS = st.lists(TEXT, min_size=1, max_size=12)
SETTINGS = st.builds(
    AuditSettings,
    threshold=st.sampled_from([0.3, 0.5, 0.8, 1.0]),
    shingle=st.integers(min_value=1, max_value=4),
    ngram=st.integers(min_value=1, max_value=5),
)


@settings(max_examples=150, deadline=None)
@given(TEXTS, TEXTS, SETTINGS)
def test_near_pairs_hold_the_exact_ones_with_their_true_jaccard(train, evals, s):
    r = audit(items(train, "t"), items(evals, "e"), s)
    text = {f"t{i}": t for i, t in enumerate(train)} | {f"e{i}": t for i, t in enumerate(evals)}
    near = {(p.train, p.eval): p.jaccard for p in r.near.pairs}
    for p in r.exact.pairs:
        assert near[(p.train, p.eval)] == 1.0
    for (t, e), j in near.items():
        assert j >= s.threshold
        assert j == exact_jaccard(text[t], text[e], s.shingle)
    # pairs with equal shingle sets have equal signatures: the LSH never misses them
    for t in range(len(train)):
        for e in range(len(evals)):
            if exact_jaccard(train[t], evals[e], s.shingle) == 1.0:
                assert (f"t{t}", f"e{e}") in near
    assert set(r.exact.eval_ids) <= set(r.near.eval_ids)
    assert r.near.pairs_total == len(near)  # below the cap, every pair is listed


@settings(max_examples=100, deadline=None)
@given(TEXTS, TEXTS, SETTINGS, st.randoms(use_true_random=False))
def test_permuting_rows_changes_nothing_but_order(train, evals, s, rng):
    a_train, a_eval = items(train, "t"), items(evals, "e")
    b_train, b_eval = list(a_train), list(a_eval)
    rng.shuffle(b_train)
    rng.shuffle(b_eval)
    a, b = audit(a_train, a_eval, s), audit(b_train, b_eval, s)

    def view(r):
        return (
            set(r.exact.pairs),
            set(r.near.pairs),
            set(r.exact.eval_ids),
            set(r.near.eval_ids),
            {frozenset(g) for g in r.within.train_groups},
            {frozenset(g) for g in r.within.eval_groups},
            set(r.ngram.matches),
            set(r.ngram.short_eval_ids),
        )

    assert view(a) == view(b)


@settings(max_examples=60, deadline=None)
@given(TEXTS, SETTINGS)
def test_a_set_audited_against_itself_is_all_exact_duplicates(texts, s):
    r = audit(items(texts, "x"), items(texts, "x"), s)
    ids = tuple(f"x{i}" for i in range(len(texts)))
    assert r.exact.eval_ids == ids
    assert r.near.eval_ids == ids
    assert {(f"x{i}", f"x{i}") for i in range(len(texts))} <= {
        (p.train, p.eval) for p in r.exact.pairs
    }


# ---- the command: files in, JSON, text, page and CSV out ------------------------------------


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def run_json(*argv):
    status, out, err = run_cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


@pytest.fixture
def files(tmp_path):
    train = write_jsonl(
        tmp_path / "train.jsonl",
        [
            {"id": 1, "text": TRAIN[0], "user": "u1", "date": "2024-01-01"},
            {"id": 2, "text": TRAIN[1], "user": "u2", "date": "2024-02-01"},
            {"id": 3, "text": TRAIN[2], "user": "u3", "date": "2024-03-01T00:00:00"},
            {"id": 4, "text": TRAIN[3], "user": "u4", "date": "2024-01-05"},
        ],
    )
    evals = write_jsonl(
        tmp_path / "eval.jsonl",
        [
            {"id": "a", "text": EVAL[0], "user": "u9", "date": "2024-04-01"},
            {"id": "b", "text": EVAL[1], "user": 2, "date": "2024-01-15 12:30"},
            {"id": "c", "text": EVAL[2], "user": None, "date": "2024-05-01"},
            {"id": "d", "text": EVAL[3], "user": "", "date": "2024-05-02"},
        ],
    )
    return train, evals


def test_json_contract(files):
    train, evals = files
    data = run_json(
        "leakage", "--train", train, "--eval", evals, "--group-field", "user",
        "--time-field", "date", "--threshold", "0.7",
    )  # fmt: skip
    assert data["train_size"] == 4 and data["eval_size"] == 4
    assert data["exact"]["pairs"] == [{"train": "1", "eval": "a"}, {"train": "3", "eval": "a"}]
    assert data["exact"]["eval_items"] == ["a"] and data["exact"]["count"] == 1
    assert data["near"]["pairs"] == [
        {"train": "1", "eval": "a", "jaccard": 1.0},
        {"train": "3", "eval": "a", "jaccard": 1.0},
        {"train": "2", "eval": "b", "jaccard": 0.75},
        {"train": "4", "eval": "d", "jaccard": 9 / 11},
    ]
    assert data["near"]["eval_items"] == ["a", "b", "d"] and data["near"]["count"] == 3
    assert data["within"]["train_duplicates"] == [["1", "3"]]  # id 3 repeats id 1
    assert data["within"]["train_duplicate_count"] == 1
    assert data["within"]["eval_duplicates"] == []
    assert data["within"]["eval_duplicate_count"] == 0
    # the JSON number 2 is the group "2"; null and "" belong to no group
    assert data["groups"]["shared"] == []
    assert data["groups"]["eval_items"] == [] and data["groups"]["count"] == 0
    assert data["groups"]["eval_without_group"] == 2
    # newest train time: 2024-03-01 (id 3); "2024-01-15 12:30" is older
    assert data["time"]["eval_items_before_train_end"] == ["b"]
    assert data["time"]["count"] == 1
    assert data["time"]["train_end"] == "2024-03-01T00:00:00"
    assert len(data["ngram"]["eval_items"]) == data["ngram"]["count"] == 2
    assert data["lsh"]["bands"] * data["lsh"]["rows"] <= 128
    assert data["flagged_eval_items"] == 3  # a, b, d
    assert data["verdict"] == "leak"
    ids = [p[k] for c in ("exact", "near") for p in data[c]["pairs"] for k in ("train", "eval")]
    ids += [i for c in ("exact", "near", "groups", "ngram") for i in data[c]["eval_items"]]
    ids += data["time"]["eval_items_before_train_end"]
    assert all(isinstance(i, str) for i in ids)


def test_shared_group_and_unchecked_fields(tmp_path):
    train = write_jsonl(tmp_path / "a.jsonl", [{"id": 1, "text": "x y", "user": 7}])
    evals = write_jsonl(tmp_path / "b.jsonl", [{"id": 1, "text": "p q", "user": "7"}])
    data = run_json("leakage", "--train", train, "--eval", evals, "--group-field", "user")
    assert data["groups"]["shared"] == ["7"]  # 7 in one file, "7" in the other: one user
    assert data["groups"]["eval_items"] == ["1"]
    assert data["time"]["checked"] is False
    assert data["time"]["eval_items_before_train_end"] == [] and data["time"]["count"] is None
    assert data["time"]["verdict"] == "not checked"


def test_txt_files_use_line_numbers_as_ids(tmp_path):
    (tmp_path / "train.txt").write_text("alpha beta gamma\nsame line\n", encoding="utf-8")
    (tmp_path / "eval.txt").write_text("other\nSAME   line\n", encoding="utf-8")
    data = run_json(
        "leakage", "--train", str(tmp_path / "train.txt"), "--eval", str(tmp_path / "eval.txt")
    )
    assert data["exact"]["pairs"] == [{"train": "2", "eval": "2"}]


def test_csv_files_and_named_fields(tmp_path):
    (tmp_path / "train.csv").write_text(
        'key,body\nk1,"hello, world, again"\nk2,nothing\n', encoding="utf-8"
    )
    (tmp_path / "eval.csv").write_text("key,body\nz,Hello  World Again\n", encoding="utf-8")
    data = run_json(
        "leakage", "--train", str(tmp_path / "train.csv"), "--eval", str(tmp_path / "eval.csv"),
        "--text-field", "body", "--id-field", "key", "--ngram", "3",
    )  # fmt: skip
    # punctuation keeps the texts apart for shingles, not for GPT-3's n-grams
    assert data["exact"]["eval_items"] == []
    assert data["ngram"]["matches"] == [{"eval": "z", "train": "k1", "ngram": "hello world again"}]


def test_text_output_names_every_check(files):
    train, evals = files
    status, out, _ = run_cli("leakage", "--train", train, "--eval", evals)
    assert status == 0
    for words_ in ("exact duplicates", "near duplicates", "within train", "group overlap",
                   "temporal order", "13-gram overlap", "bands x"):  # fmt: skip
        assert words_ in out


def test_page_and_csv(files):
    from types import SimpleNamespace

    from calculators.commands import DEFAULTS

    train, evals = files
    args = SimpleNamespace(
        **{**DEFAULTS["leakage"], "train": train, "eval": evals, "group_field": "user"}
    )
    data, _ = CALCULATOR.run(args)
    json.dumps(data, allow_nan=False)  # strict JSON
    page = CALCULATOR.html(data)
    assert "<svg" in page and "LSH candidate probability" in page
    assert "threshold 0.8" in page
    assert "<table" in page
    csv_lines = offending_csv(data).splitlines()
    assert csv_lines[0] == "check,train,eval,jaccard,detail"
    kinds = [line.split(",")[0] for line in csv_lines[1:]]
    assert kinds.count("exact") == len(data["exact"]["pairs"])
    assert kinds.count("near") == len(data["near"]["pairs"])
    assert kinds.count("ngram") == data["ngram"]["count"]
    assert kinds.count("within-train") == data["within"]["train_duplicate_count"]


def test_page_caps_the_rows_it_shows(tmp_path):
    rows = [{"id": i, "text": f"row {i} is the same text"} for i in range(30)]
    train = write_jsonl(tmp_path / "t.jsonl", rows)
    evals = write_jsonl(tmp_path / "e.jsonl", rows)
    data = run_json("leakage", "--train", train, "--eval", evals)
    page = CALCULATOR.html(data)
    assert "the first 20 of 30 (the CSV lists them all)" in page


# ---- bad files: one line, exit 2, naming the file, the line and the field -----------------


def error_line(*argv):
    status, out, err = run_cli(*argv)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err.strip()


def good(tmp_path):
    return write_jsonl(tmp_path / "good.jsonl", [{"id": 1, "text": "fine"}])


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("e.jsonl", b'{"id": 1, "text": "ok"}\n{"id": 2, "text":\n', "line 2: not valid JSON"),
        ("e.jsonl", b'{"id": 1}\n', "e.jsonl line 1: field 'text' is missing"),
        ("e.jsonl", b'{"id": 1, "text": 5}\n', "e.jsonl line 1: field 'text' must be text"),
        ("e.jsonl", b'{"text": "x"}\n', "e.jsonl line 1: field 'id' is missing"),
        ("e.jsonl", b'{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n',
         "e.jsonl line 2: field 'id': id '1' is also the id of line 1"),
        ("e.jsonl", b'{"id": [1], "text": "a"}\n', "e.jsonl line 1: field 'id' must be an id"),
        ("e.jsonl", b'{"id": "", "text": "a"}\n', "e.jsonl line 1: field 'id' is empty"),
        ("e.jsonl", b'[1, 2]\n', "e.jsonl line 1: each line must be a JSON object"),
        ("e.jsonl", b"", "e.jsonl is empty"),
        ("e.jsonl", b'{"id": 1, "text": "caf\xe9"}\n', "e.jsonl line 1: not UTF-8"),
        ("e.csv", b"id,text\n1,a,extra\n", "e.csv line 2: 3 columns, the header has 2"),
        ("e.csv", b"id,body\n1,a\n", "e.csv line 1: no column 'text'"),
        ("e.txt", b"first\n\nthird\n", "e.txt line 2: empty line"),
        ("e.xml", b"<a/>", "must end in .txt, .jsonl, .csv"),
    ],
)  # fmt: skip
def test_bad_eval_files(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    line = error_line("leakage", "--train", good(tmp_path), "--eval", str(path))
    assert expected in line


def test_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short path: the message quotes it whole
    line = error_line("leakage", "--train", "nope.jsonl", "--eval", good(tmp_path))
    assert "train" in line and "nope.jsonl" in line


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("yesterday", "t.jsonl line 1: field 'date' must be an ISO 8601 date or time"),
        (20240101, "t.jsonl line 1: field 'date' must be text"),
        (None, "t.jsonl line 1: field 'date' is null"),
    ],
)
def test_bad_times(tmp_path, value, expected):
    train = write_jsonl(tmp_path / "t.jsonl", [{"id": 1, "text": "a", "date": value}])
    evals = write_jsonl(tmp_path / "e.jsonl", [{"id": 1, "text": "b", "date": "2024-01-01"}])
    line = error_line("leakage", "--train", train, "--eval", evals, "--time-field", "date")
    assert expected in line


def test_naive_and_aware_times_are_refused_naming_the_line(tmp_path):
    train = write_jsonl(tmp_path / "t.jsonl", [{"id": 1, "text": "a", "date": "2024-01-01"}])
    evals = write_jsonl(
        tmp_path / "e.jsonl",
        [
            {"id": 1, "text": "b", "date": "2024-01-02"},
            {"id": 2, "text": "c", "date": "2024-01-02T00:00:00Z"},
        ],
    )
    line = error_line("leakage", "--train", train, "--eval", evals, "--time-field", "date")
    assert "e.jsonl line 2: time 2024-01-02T00:00:00+00:00 has a UTC offset" in line
    assert "t.jsonl line 1" in line


def test_group_field_needs_fields(tmp_path):
    (tmp_path / "t.txt").write_text("a\n", encoding="utf-8")
    line = error_line(
        "leakage", "--train", str(tmp_path / "t.txt"), "--eval", good(tmp_path),
        "--group-field", "user",
    )  # fmt: skip
    assert "t.txt" in line and "'user'" in line and ".jsonl or .csv" in line


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--threshold", "0", "--threshold must be above 0"),
        ("--threshold", "1.5", "--threshold must be above 0 and at most 1"),
        ("--shingle", "0", "--shingle must be a whole number of words from 1 to 50"),
        ("--ngram", "101", "--ngram must be a whole number of words from 1 to 100"),
    ],
)
def test_bad_settings_name_the_flag(tmp_path, flag, value, expected):
    line = error_line("leakage", "--train", good(tmp_path), "--eval", good(tmp_path), flag, value)
    assert expected in line


def test_planted_near_copies_are_found_with_their_jaccard():
    # 200 random 40-word texts; each eval text is a train text with its last word changed:
    # of 36 5-shingles, 1 goes and 1 comes, so J = 35 / 37 = 0.946 for every planted pair.
    # At that similarity the banding (16 x 6) misses a pair with probability
    # (1 - 0.946^6)^16 < 1e-5, so all 200 are found (and the data are fixed by the seed).
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(5_000)]
    train = [[rng.choice(vocab) for _ in range(40)] for _ in range(200)]
    evals = [[*t[:-1], "changed"] for t in train]
    r = audit(
        items([" ".join(t) for t in train], "t"),
        items([" ".join(e) for e in evals], "e"),
        AuditSettings(),
    )
    assert {(p.train, p.eval) for p in r.near.pairs} == {(f"t{i}", f"e{i}") for i in range(200)}
    assert {p.jaccard for p in r.near.pairs} == {35 / 37}
    assert r.exact.pairs_total == 0


def test_the_example_files_give_what_their_generator_planted():
    """The leakage example's generator (docs/data/evaluation/make_leakage_example.py)
    lists under `expected` what an exact comparison of every pair finds; the audit, with
    its LSH candidates, finds the same items, which the evaluation-set guide states."""
    folder = Path(FILE_ROOT) / "data" / "evaluation" / "leakage"
    expected = json.loads((folder / "planted.json").read_text(encoding="utf-8"))["expected"]
    data = run_json(
        "leakage", "--train", str(folder / "train.jsonl"), "--eval", str(folder / "eval.jsonl"),
        "--group-field", "user", "--time-field", "date",
    )  # fmt: skip
    for key in ("exact.eval_items", "near.eval_items", "ngram.eval_items", "groups.shared",
                "groups.eval_items", "time.eval_items_before_train_end"):  # fmt: skip
        check, field = key.split(".")
        assert sorted(data[check][field]) == sorted(expected[key]), key
    for key in ("within.train_duplicates", "within.eval_duplicates"):
        assert sorted(data["within"][key.split(".")[1]]) == sorted(expected[key]), key
    assert len(data["near"]["pairs"]) == expected["near.pairs"]
    for key in ("train_size", "eval_size"):
        assert data[key] == expected[key]
