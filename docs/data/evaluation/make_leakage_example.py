"""A train/eval split with known leaks, for the leakage audit's worked example.

    python docs/data/evaluation/make_leakage_example.py [--out DIR]   # default: next to it

Writes, into DIR/leakage/: `train.jsonl` and `eval.jsonl` (one JSON object a line with the
fields id, text, user, date) and `planted.json` (every leak planted, by kind, and what an
audit at the default settings should find).

The text is real: the prose of the project's frozen time-to-quality corpus
(`probes/data/corpus/train.txt` and `eval.txt`, the Markdown of seven of the site's
guides), cut into items of 25 to 50 words at sentence ends. Code, tables, formulas and
headings are left out; Markdown marks are removed and the site's computed references
(`[[...]]`) become "N". The split is by guide: the items of two memory guides are the train
split, those of the five others the eval split. Then, with a fixed seed, base items that
already leak (a shared 10-word run, or a Jaccard similarity of 0.3 or more with an item of
the other split; duplicates within a split) are dropped, so that every leak in the files is
one planted here:

- exact duplicates: a train item copied into eval, some with their case or spacing changed
  (capitals, doubled spaces, no-break spaces, an "fi" ligature), which Unicode NFKC, case
  folding and whitespace collapsing undo;
- near duplicates: a train item copied into eval with a few words substituted, deleted or
  inserted, at three levels of Jaccard similarity of the word 5-shingles: at least 0.9,
  0.82 to 0.88, and 0.5 to 0.7 (below the audit's default threshold of 0.8, so not
  reported as near duplicates, though they share long runs of words);
- duplicates within a split: a train item copied within train, an eval item within eval;
- contamination: an eval item into which a run of 15 to 18 consecutive words of a train
  item is inserted (a shared 13-gram, the GPT-3 paper's check);
- shared users: eval items whose user also wrote train items;
- time order: eval items dated before the newest train item (every other eval item is
  dated after it).

The users and the dates are generated (train in January to June 2024, eval in July to
September 2024). Everything is drawn from one seeded generator of its own (SplitMix64), not
Python's `random`, whose methods other than `random()` may change between versions, so the
files are the same bytes on any Python 3.11+. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CORPUS = ROOT / "probes" / "data" / "corpus"
SEED = 13
# The split by guide: these guides' items are the train split, every other guide's the eval.
TRAIN_GUIDES = (
    "Sizing GPU memory: computation, reservations and validation",
    "GPU memory: explaining the gap between estimate and peak",
)
MIN_WORDS, MAX_WORDS = 25, 50
# How many of each leak are planted.
EXACT_CHANGES = ("as is", "as is", "lower case", "upper case", "spacing", "no-break spaces")
NEAR_LEVELS = {"high": (0.9, 0.99), "mid": (0.82, 0.88), "low": (0.5, 0.7)}
NEAR_PER_LEVEL = 4
WITHIN_TRAIN = 3
WITHIN_EVAL = 3
CONTAMINATED = 5
SPAN_WORDS = (15, 18)
SHARED_USERS = 4  # train users who also appear in eval...
SHARED_USER_ITEMS = 6  # ...on this many eval items
OLD_DATES = 6
# The audit's defaults, for the expected findings (calculators' `leakage`).
THRESHOLD, SHINGLE, NGRAM = 0.8, 5, 13
TRAIN_USERS, EVAL_USERS = 40, 30
TRAIN_DAYS = (datetime.date(2024, 1, 1), datetime.date(2024, 6, 30))
EVAL_DAYS = (datetime.date(2024, 7, 1), datetime.date(2024, 9, 30))

T = TypeVar("T")


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64 (OOPSLA 2014): a 64-bit generator whose stream
    depends on the seed alone, the same in every Python version."""

    def __init__(self, seed: int) -> None:
        self.state = seed & (2**64 - 1)

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform in 0 .. n - 1 (rejection sampling, no modulo bias)."""
        limit = (2**64 // n) * n
        while True:
            x = self.next64()
            if x < limit:
                return x % n

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def shuffled(self, items: Iterable[T]) -> list[T]:
        out = list(items)
        for i in range(len(out) - 1, 0, -1):  # Fisher-Yates
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * (self.next64() >> 11) / 2**53


# --- Text: the corpus' prose, cut into items.


def _guides(text: str) -> list[tuple[str, str]]:
    """(title, body) of each guide of a corpus file (each starts with a '# ' line)."""
    parts = re.split(r"(?m)^# ", text)
    return [(p.splitlines()[0].strip(), p) for p in parts if p.strip()]


def _plain(paragraph: str) -> str:
    """A Markdown paragraph as plain words: marks removed, references as N."""
    text = re.sub(r"\[\[[^\]]*\]\]", "N", paragraph)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"\\\(|\\\)", "", text)  # inline formula delimiters
    text = re.sub(r"(?m)^\s*(?:[-*]|\d+\.)\s+", "", text)  # list marks
    text = text.replace("**", "").replace("`", "")
    return " ".join(text.split())


def _paragraphs(body: str) -> list[str]:
    """The prose paragraphs of a guide: no code, tables, display formulas or headings."""
    out, fenced = [], False
    for block in re.split(r"\n\s*\n", body):
        s = block.strip()
        if fenced or s.startswith("```"):
            if s.count("```") % 2 == 1:
                fenced = not fenced
            continue
        if not s or s.startswith(("#", "|", "\\[", "[[", "<", ">", "!")):
            continue
        out.append(_plain(s))
    return out


def _sentences(paragraph: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?:;])\s+(?=[A-Z(\"'])", paragraph) if s]


def _items(paragraph: str) -> list[str]:
    """Consecutive sentences packed into items of MIN_WORDS to MAX_WORDS words; a sentence
    longer than MAX_WORDS is cut; a short rest is dropped."""
    items: list[list[str]] = []
    current: list[str] = []
    for sentence in _sentences(paragraph):
        words = sentence.split()
        while len(words) > MAX_WORDS:
            items.append(words[:MAX_WORDS])
            words = words[MAX_WORDS:]
        if current and len(current) + len(words) > MAX_WORDS:
            items.append(current)
            current = []
        current += words
        if len(current) >= MIN_WORDS:
            items.append(current)
            current = []
    if current and items and len(items[-1]) + len(current) <= MAX_WORDS:
        items[-1] += current
    return [" ".join(words) for words in items if len(words) >= MIN_WORDS]


def base_items() -> tuple[list[str], list[str]]:
    """The train and eval texts of the split by guide, in corpus order."""
    train, evaluation = [], []
    for name in ("train.txt", "eval.txt"):
        text = (CORPUS / name).read_text(encoding="utf-8")
        for title, body in _guides(text):
            items = [i for p in _paragraphs(body) for i in _items(p)]
            (train if title in TRAIN_GUIDES else evaluation).extend(items)
    return train, evaluation


# --- The audit's view of a text, for the checks of this script and the expected findings.


def normalised(text: str) -> str:
    """Unicode NFKC, case folded, whitespace collapsed: the audit's normalisation."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def words(text: str, tokens: str) -> list[str]:
    """The normalised text's words: split at whitespace ('space') or runs of word
    characters ('word'); the expected findings must hold for either reading."""
    n = normalised(text)
    return n.split() if tokens == "space" else re.findall(r"\w+", n)


def shingles(ws: Sequence[str], k: int) -> set[tuple[str, ...]]:
    """The set of k-word shingles; a text shorter than k is one shingle."""
    if len(ws) < k:
        return {tuple(ws)}
    return {tuple(ws[i : i + k]) for i in range(len(ws) - k + 1)}


def jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def grams(ws: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}


def _leaks_into(candidates: Sequence[str], others: Sequence[str]) -> set[int]:
    """Indices of `candidates` that share a 10-word run with `others` or reach a 5-shingle
    Jaccard of 0.3 with one of them, in either reading of words."""
    bad = set()
    for tokens in ("space", "word"):
        runs: set[tuple[str, ...]] = set()
        index: dict[tuple[str, ...], list[int]] = {}
        other_sh = [shingles(words(o, tokens), SHINGLE) for o in others]
        for j, o in enumerate(others):
            runs |= grams(words(o, tokens), 10)
            for s in other_sh[j]:
                index.setdefault(s, []).append(j)
        for i, c in enumerate(candidates):
            ws = words(c, tokens)
            if grams(ws, 10) & runs:
                bad.add(i)
                continue
            mine = shingles(ws, SHINGLE)
            for j in {j for s in mine for j in index.get(s, ())}:
                if jaccard(mine, other_sh[j]) >= 0.3:
                    bad.add(i)
                    break
    return bad


def _distinct(items: Sequence[str]) -> list[str]:
    """`items` without any that repeats or nearly repeats an earlier one."""
    kept: list[str] = []
    for item in items:
        if not _leaks_into([item], kept):
            kept.append(item)
    return kept


# --- The leaks.


def _exact_copy(text: str, change: str) -> str:
    if change == "lower case":
        return text.lower()
    if change == "upper case":
        return text.upper()
    if change == "spacing":
        # doubled spaces, a line break and stray spaces and a tab at the ends
        return "  " + text.replace(", ", ",  ").replace(". ", ".\n", 1) + " \t"
    if change == "no-break spaces":
        # no-break spaces between words, and the "fi" ligature where the text has "fi"
        return text.replace(" ", "\u00a0").replace("fi", "\ufb01")
    return text


def _near_copy(rng: SplitMix64, text: str, band: tuple[float, float], vocabulary: list[str]) -> str:
    """`text` with words substituted, deleted or inserted until the 5-shingle Jaccard
    similarity to `text` lies in `band` in both readings of words (restarting on overshoot)."""
    original = {t: shingles(words(text, t), SHINGLE) for t in ("space", "word")}
    for _ in range(200):
        ws = text.split()
        for _ in range(40):
            op, i = rng.below(3), rng.below(len(ws))
            if op == 0:
                ws[i] = rng.choice([v for v in vocabulary[:64] if v != ws[i].lower()])
            elif op == 1 and len(ws) > MIN_WORDS:
                del ws[i]
            else:
                ws.insert(i, rng.choice(vocabulary))
            candidate = " ".join(ws)
            js = [jaccard(shingles(words(candidate, t), SHINGLE), original[t]) for t in original]
            if all(band[0] <= j <= band[1] for j in js):
                return candidate
            if max(js) < band[0]:
                break  # overshot: start again from the original
        vocabulary = vocabulary[7:] + vocabulary[:7]  # another draw order
    raise RuntimeError(f"no near copy in {band} for {text[:40]!r}")


def _with_span(rng: SplitMix64, text: str, source: str) -> tuple[str, int]:
    """`text` with a run of SPAN_WORDS consecutive words of `source` inserted at a
    sentence end (or at its start): (the new text, the run's length)."""
    src = source.split()
    length = min(SPAN_WORDS[0] + rng.below(SPAN_WORDS[1] - SPAN_WORDS[0] + 1), len(src))
    start = rng.below(len(src) - length + 1)
    span = " ".join(src[start : start + length])
    sentences = _sentences(text)
    at = rng.below(len(sentences) + 1)
    return " ".join([*sentences[:at], span, *sentences[at:]]), length


def _day(rng: SplitMix64, first: datetime.date, last: datetime.date) -> datetime.date:
    return first + datetime.timedelta(days=rng.below((last - first).days + 1))


def build() -> dict[str, str]:
    """The three files' text, by name."""
    rng = SplitMix64(SEED)
    train_text, eval_text = base_items()
    train_text = _distinct(train_text)
    eval_text = _distinct(eval_text)
    dropped = _leaks_into(eval_text, train_text)
    eval_text = [t for i, t in enumerate(eval_text) if i not in dropped]
    vocabulary = rng.shuffled(
        sorted({w.lower() for t in train_text + eval_text for w in t.split() if w.isalpha()})
    )

    # Sources of the leaks: distinct train items long enough for a near copy.
    order = rng.shuffled(range(len(train_text)))
    long_enough = [i for i in order if len(train_text[i].split()) >= 40]
    near_sources = long_enough[: NEAR_PER_LEVEL * len(NEAR_LEVELS)]
    rest = [i for i in order if i not in near_sources]
    exact_sources = rest[: len(EXACT_CHANGES)]
    rest = rest[len(EXACT_CHANGES) :]
    span_sources = rest[:CONTAMINATED]
    within_train_sources = rest[CONTAMINATED : CONTAMINATED + WITHIN_TRAIN]

    eval_order = rng.shuffled(range(len(eval_text)))
    span_targets = eval_order[:CONTAMINATED]
    within_eval_sources = eval_order[CONTAMINATED : CONTAMINATED + WITHIN_EVAL]
    free = eval_order[CONTAMINATED + WITHIN_EVAL :]
    group_targets = free[:SHARED_USER_ITEMS]
    time_targets = free[SHARED_USER_ITEMS : SHARED_USER_ITEMS + OLD_DATES]

    # Train items: base items and the within-train copies, in a shuffled order.
    train_rows = [{"text": t, "base": i} for i, t in enumerate(train_text)]
    train_rows += [{"text": train_text[i], "copy_of": i} for i in within_train_sources]
    train_rows = rng.shuffled(train_rows)
    train_users = [f"user-{i:03d}" for i in range(1, TRAIN_USERS + 1)]
    for n, row in enumerate(train_rows, start=1):
        row["id"] = f"t{n:04d}"
        row["user"] = rng.choice(train_users)
        row["date"] = _day(rng, *TRAIN_DAYS)
    train_id = {row["base"]: row["id"] for row in train_rows if "base" in row}
    newest_train = max(row["date"] for row in train_rows)

    # Eval items: base items (some contaminated), the planted copies.
    eval_rows: list[dict[str, Any]] = []
    for i, t in enumerate(eval_text):
        row: dict[str, Any] = {"text": t, "base": i}
        if i in span_targets:
            source = span_sources[span_targets.index(i)]
            row["text"], row["span_words"] = _with_span(rng, t, train_text[source])
            row["kind"], row["train"] = "ngram", source
        eval_rows.append(row)
    for change, source in zip(EXACT_CHANGES, exact_sources, strict=True):
        text = _exact_copy(train_text[source], change)
        eval_rows.append({"text": text, "kind": "exact", "train": source, "change": change})
    for n, (level, band) in enumerate(NEAR_LEVELS.items()):
        for source in near_sources[n * NEAR_PER_LEVEL : (n + 1) * NEAR_PER_LEVEL]:
            text = _near_copy(rng, train_text[source], band, vocabulary)
            eval_rows.append({"text": text, "kind": "near", "train": source, "level": level})
    for i in within_eval_sources:
        eval_rows.append({"text": eval_text[i], "kind": "within_eval", "copy_of": i})
    eval_rows = rng.shuffled(eval_rows)
    eval_users = [f"user-{i:03d}" for i in range(101, 101 + EVAL_USERS)]
    shared = rng.shuffled(train_users)[:SHARED_USERS]
    for n, row in enumerate(eval_rows, start=1):
        row["id"] = f"e{n:04d}"
        row["user"] = rng.choice(eval_users)
        row["date"] = _day(rng, *EVAL_DAYS)
        if row.get("base") in group_targets:
            row["user"] = shared[group_targets.index(row["base"]) % SHARED_USERS]
        if row.get("base") in time_targets:
            row["date"] = _day(rng, TRAIN_DAYS[0], newest_train - datetime.timedelta(days=1))
    eval_id = {row["base"]: row["id"] for row in eval_rows if "base" in row}

    planted = _planted(train_rows, eval_rows, train_id, eval_id, newest_train)
    planted["expected"] = expected_findings(train_rows, eval_rows, newest_train)
    planted["sizes"] = {"train": len(train_rows), "eval": len(eval_rows)}
    return {
        "train.jsonl": _jsonl(train_rows),
        "eval.jsonl": _jsonl(eval_rows),
        "planted.json": json.dumps(planted, indent=1, ensure_ascii=False) + "\n",
    }


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(
        json.dumps(
            {"id": r["id"], "text": r["text"], "user": r["user"], "date": r["date"].isoformat()},
            ensure_ascii=False,
        )
        + "\n"
        for r in rows
    )


def _planted(
    train_rows: list[dict[str, Any]],
    eval_rows: list[dict[str, Any]],
    train_id: dict[int, str],
    eval_id: dict[int, str],
    newest_train: datetime.date,
) -> dict[str, Any]:
    """What was planted, by kind, with the ids of both sides."""
    base_train = {row["id"]: row for row in train_rows}

    def sims(row: dict[str, Any]) -> float:
        source = base_train[train_id[row["train"]]]["text"]
        return round(
            jaccard(
                shingles(words(row["text"], "space"), SHINGLE),
                shingles(words(source, "space"), SHINGLE),
            ),
            4,
        )

    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in eval_rows:
        by_kind.setdefault(row.get("kind", "base"), []).append(row)
    near = [
        {"eval": r["id"], "train": train_id[r["train"]], "level": r["level"], "jaccard": sims(r)}
        for r in by_kind.get("near", [])
    ]
    train_users = {r["user"] for r in train_rows}
    return {
        "generated": "every leak below was planted by make_leakage_example.py with seed "
        f"{SEED}; the text is real (the project's corpus), the ids, users and dates are "
        "generated",
        "generated_by": "python docs/data/evaluation/make_leakage_example.py",
        "source": "probes/data/corpus/train.txt and eval.txt: the prose of seven of the "
        "site's guides; train split: " + "; ".join(TRAIN_GUIDES) + "; eval split: the others",
        "seed": SEED,
        "exact": sorted(
            (
                {"eval": r["id"], "train": train_id[r["train"]], "change": r["change"]}
                for r in by_kind.get("exact", [])
            ),
            key=lambda p: p["eval"],
        ),
        "near": sorted((p for p in near if p["level"] != "low"), key=lambda p: p["eval"]),
        "near_below_threshold": sorted(
            (p for p in near if p["level"] == "low"), key=lambda p: p["eval"]
        ),
        "near_levels": {k: list(v) for k, v in NEAR_LEVELS.items()},
        "within_train": sorted(
            sorted([r["id"], train_id[r["copy_of"]]]) for r in train_rows if "copy_of" in r
        ),
        "within_eval": sorted(
            sorted([r["id"], eval_id[r["copy_of"]]]) for r in by_kind.get("within_eval", [])
        ),
        "ngram": sorted(
            (
                {"eval": r["id"], "train": train_id[r["train"]], "span_words": r["span_words"]}
                for r in by_kind.get("ngram", [])
            ),
            key=lambda p: p["eval"],
        ),
        "groups": {
            "shared_users": sorted({r["user"] for r in eval_rows if r["user"] in train_users}),
            "eval_items": sorted(r["id"] for r in eval_rows if r["user"] in train_users),
        },
        "time": {
            "newest_train_date": newest_train.isoformat(),
            "eval_items_before_train_end": sorted(
                r["id"] for r in eval_rows if r["date"] < newest_train
            ),
        },
    }


def expected_findings(
    train_rows: list[dict[str, Any]], eval_rows: list[dict[str, Any]], newest: datetime.date
) -> dict[str, Any]:
    """What an audit at the defaults finds, by exact comparison of every pair: the eval ids
    per check. Checked to be the same whether words are split at whitespace or taken as
    runs of word characters (RuntimeError otherwise), so it does not hang on that choice."""
    found = {}
    for tokens in ("space", "word"):
        tr = [(r["id"], words(r["text"], tokens)) for r in train_rows]
        ev = [(r["id"], words(r["text"], tokens)) for r in eval_rows]
        train_norm = {normalised(r["text"]) for r in train_rows}
        train_grams: set[tuple[str, ...]] = set()
        for _, ws in tr:
            train_grams |= grams(ws, NGRAM)
        train_sh = [(i, shingles(ws, SHINGLE)) for i, ws in tr]
        near_pairs = []
        for eid, ws in ev:
            mine = shingles(ws, SHINGLE)
            for tid, theirs in train_sh:
                if mine & theirs and jaccard(mine, theirs) >= THRESHOLD:
                    near_pairs.append((tid, eid))

        def within(rows: list[dict[str, Any]]) -> list[list[str]]:
            seen: dict[str, str] = {}
            pairs = []
            for r in rows:
                key = normalised(r["text"])
                if key in seen:
                    pairs.append([seen[key], r["id"]])
                else:
                    seen[key] = r["id"]
            return pairs

        found[tokens] = {
            "exact.eval_items": sorted(
                r["id"] for r in eval_rows if normalised(r["text"]) in train_norm
            ),
            "near.eval_items": sorted({e for _, e in near_pairs}),
            "near.pairs": len(near_pairs),
            "within.train_duplicates": within(train_rows),
            "within.eval_duplicates": within(eval_rows),
            "ngram.eval_items": sorted(eid for eid, ws in ev if grams(ws, NGRAM) & train_grams),
        }
    if found["space"] != found["word"]:
        raise RuntimeError("the expected findings depend on how words are split")
    train_users = {r["user"] for r in train_rows}
    return {
        "settings": {
            "threshold": THRESHOLD,
            "shingle": SHINGLE,
            "ngram": NGRAM,
            "normalisation": "Unicode NFKC, case folding, whitespace collapsed",
            "words": "the same findings whether split at whitespace or as runs of word characters",
        },
        **found["space"],
        "groups.shared": sorted({r["user"] for r in eval_rows if r["user"] in train_users}),
        "groups.eval_items": sorted(r["id"] for r in eval_rows if r["user"] in train_users),
        "time.eval_items_before_train_end": sorted(
            r["id"] for r in eval_rows if r["date"] < newest
        ),
        "train_size": len(train_rows),
        "eval_size": len(eval_rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write leakage/ into")
    args = parser.parse_args(argv)
    folder = args.out / "leakage"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in build().items():
        (folder / name).write_bytes(text.encode("utf-8"))
        print(f"{folder / name}: {len(text.encode('utf-8')):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
