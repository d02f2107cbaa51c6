"""The leakage audit of a train/eval split, as pure functions over in-memory items.

Six checks (issue 13, section 1), each giving the eval items it flags, their count, their
rate over the eval set and a verdict:

- exact duplicates: a train item and an eval item with the same normalised text
  (`calculators.evaluation.text.normalise`: NFKC, case folding, whitespace collapsed);
- near duplicates: pairs whose sets of word k-shingles have a Jaccard similarity at or
  above the threshold. Candidates come from MinHash LSH (`calculators.evaluation.minhash`);
  each is then confirmed with the exact Jaccard of its two shingle sets, so every reported
  pair is right and carries its exact similarity; a pair the LSH does not propose is
  missed with the probability that `minhash.candidate_probability` gives. Equal texts have
  equal signatures, so every exact pair is also reported here, at Jaccard 1;
- duplicates within each split: items with the same normalised text in one file;
- group overlap: a group (user, patient, document, session) with items on both sides;
- temporal order: eval items strictly older than the newest train item;
- n-gram contamination: eval items sharing at least one word n-gram with a train item
  (GPT-3's check, Brown et al. 2020, appendix C, whose words are lower-cased, split at
  whitespace, punctuation dropped: `text.plain_words`).

Work is done once per distinct normalised text, so a file full of copies costs what its
distinct texts cost; the eval side is indexed (LSH tables, n-gram set) and the train side
streamed past it, so memory grows with the eval set, not with train x eval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from calculators.errors import InputError, shown
from calculators.evaluation.minhash import band_keys, bands_and_rows, signature
from calculators.evaluation.text import (
    WordHashes,
    jaccard,
    ngrams,
    normalise,
    plain_words,
    shingle_hashes,
    shingles,
    words,
)
from calculators.progress import report

# Bounds on the settings a reader types.
THRESHOLD_RANGE = (0.0, 1.0)  # (exclusive, inclusive)
MAX_SHINGLE = 50
MAX_NGRAM = 100
# Pairs listed per check. Past this the list stops (the counts stay exact and say how many
# there are): 100,000 pairs is about 5 MB of JSON, and the quadratic case (every eval item
# a copy of every train item) would otherwise list train x eval pairs.
MAX_LISTED_PAIRS = 100_000
# Candidate pairs of distinct texts confirmed by an exact Jaccard. Each costs a few
# microseconds; past this many the audit stops and says why, instead of running for hours
# (a threshold far below the data's similarity, or thousands of near-identical texts).
MAX_CONFIRMATIONS = 2_000_000
# How often (in items) a long step reports its progress.
PROGRESS_EVERY = 256

CLEAN = "clean"
LEAK = "leak"
DUPLICATES = "duplicates"
NOT_CHECKED = "not checked"


@dataclass(frozen=True, kw_only=True)
class Item:
    """One example: its id (unique within its file), its text, the line of its file it
    starts on, and, when the audit checks them, its group and its time."""

    id: str
    text: str
    line: int = 0
    group: str | None = None
    time: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    """threshold: the Jaccard similarity from which two texts are near duplicates, in
    (0, 1]. shingle: words per shingle, 1 to 50. ngram: words per n-gram of the
    contamination check, 1 to 100. check_groups, check_time: run those checks (every item
    then needs a time; items without a group are not compared)."""

    threshold: float = 0.8
    shingle: int = 5
    ngram: int = 13
    check_groups: bool = False
    check_time: bool = False

    def __post_init__(self) -> None:
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
            raise InputError("threshold", f"threshold must be a number, got {shown(t)}")
        if not THRESHOLD_RANGE[0] < t <= THRESHOLD_RANGE[1]:
            raise InputError(
                "threshold",
                f"threshold must be above 0 and at most 1 (a Jaccard similarity), got {t!r}",
            )
        for name, top in (("shingle", MAX_SHINGLE), ("ngram", MAX_NGRAM)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise InputError(
                    name,
                    f"{name} must be a whole number of words from 1 to {top}, got {shown(value)}",
                )


@dataclass(frozen=True)
class Pair:
    """A train item and an eval item; `jaccard`: their exact shingle similarity."""

    train: str
    eval: str
    jaccard: float


@dataclass(frozen=True, kw_only=True)
class PairCheck:
    """Train-eval pairs. eval_ids: the eval items in at least one pair, in file order;
    pairs: in eval then train file order, at most MAX_LISTED_PAIRS of them; pairs_total:
    how many there are in all."""

    eval_ids: tuple[str, ...]
    pairs: tuple[Pair, ...]
    pairs_total: int

    @property
    def truncated(self) -> bool:
        return len(self.pairs) < self.pairs_total


@dataclass(frozen=True, kw_only=True)
class WithinCheck:
    """Groups of two or more items with the same normalised text, per split, each in file
    order, groups ordered by their first item."""

    train_groups: tuple[tuple[str, ...], ...]
    eval_groups: tuple[tuple[str, ...], ...]

    @staticmethod
    def extra(groups: tuple[tuple[str, ...], ...]) -> int:
        """Items that repeat an earlier item: what deduplication would remove."""
        return sum(len(g) - 1 for g in groups)


@dataclass(frozen=True, kw_only=True)
class GroupCheck:
    """shared: group values with items on both sides, sorted; eval_ids: the eval items in
    them, in file order, and eval_groups their groups; eval_without_group,
    train_without_group: items not compared."""

    shared: tuple[str, ...]
    eval_ids: tuple[str, ...]
    eval_groups: tuple[str, ...]
    train_without_group: int
    eval_without_group: int


@dataclass(frozen=True, kw_only=True)
class TimeCheck:
    """train_end: the newest train time (train_end_id: the first train item that has it);
    eval_ids: eval items strictly older, in file order, and eval_times their times;
    eval_start: the oldest eval time."""

    train_end: datetime
    train_end_id: str
    eval_start: datetime
    eval_ids: tuple[str, ...]
    eval_times: tuple[datetime, ...]


@dataclass(frozen=True)
class NgramMatch:
    """An eval item, a train item it shares an n-gram with, and that n-gram (of all its
    shared n-grams, the one with the smallest (train id, n-gram), so that the witness does
    not depend on the order of the files)."""

    eval: str
    train: str
    ngram: str


@dataclass(frozen=True, kw_only=True)
class NgramCheck:
    """matches: one per flagged eval item, in file order; short_eval_ids: eval items with
    fewer than n words (punctuation dropped), which this check does not test."""

    n: int
    matches: tuple[NgramMatch, ...]
    short_eval_ids: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class LeakageReport:
    """The audit. bands x rows: the LSH banding; confirmations: candidate pairs of
    distinct texts whose exact Jaccard was computed."""

    settings: AuditSettings
    train_size: int
    eval_size: int
    bands: int
    rows: int
    confirmations: int
    exact: PairCheck
    near: PairCheck
    within: WithinCheck
    groups: GroupCheck | None
    time: TimeCheck | None
    ngram: NgramCheck


def audit(
    train: Sequence[Item],
    eval_items: Sequence[Item],
    settings: AuditSettings,
    *,
    labels: tuple[str, str] = ("train", "eval"),
) -> LeakageReport:
    """Run every check on a train and an eval set (see the module). Both must hold at
    least one item. `labels`: how errors name the two files (their file names). Reports
    progress to `calculators.progress` as it goes."""
    if not train or not eval_items:
        split = "train" if not train else "eval"
        raise InputError(split, f"{split}: no items to audit")
    if settings.check_time:
        _check_times(train, eval_items, labels)
    train_texts, train_members = _distinct(train, "train")
    eval_texts, eval_members = _distinct(eval_items, "eval")
    # the witness of a shared n-gram is the smallest train id among the items that hold it
    smallest_id = [min(train[i].id for i in m) for m in train_members]
    bands, rows = bands_and_rows(settings.threshold)
    scan = _scan(train_texts, eval_texts, smallest_id, settings, bands, rows)

    exact_index = {text: d for d, text in enumerate(eval_texts)}
    exact_matches: dict[int, list[int]] = {}
    for t, text in enumerate(train_texts):
        d = exact_index.get(text)
        if d is not None:
            exact_matches.setdefault(d, []).append(t)
    exact_similar = {d: [(t, 1.0) for t in ts] for d, ts in exact_matches.items()}
    return LeakageReport(
        settings=settings,
        train_size=len(train),
        eval_size=len(eval_items),
        bands=bands,
        rows=rows,
        confirmations=scan.confirmations,
        exact=_pair_check(exact_similar, train, eval_items, train_members, eval_members),
        near=_pair_check(scan.similar, train, eval_items, train_members, eval_members),
        within=WithinCheck(
            train_groups=_groups(train, train_members),
            eval_groups=_groups(eval_items, eval_members),
        ),
        groups=_group_check(train, eval_items) if settings.check_groups else None,
        time=_time_check(train, eval_items) if settings.check_time else None,
        ngram=_ngram_check(scan, eval_items, eval_members, settings.ngram),
    )


def _distinct(items: Sequence[Item], split: str) -> tuple[list[str], list[list[int]]]:
    """The distinct normalised texts in order of first appearance, and for each the
    indices of the items that have it."""
    members: dict[str, list[int]] = {}
    total = len(items)
    for i, item in enumerate(items):
        members.setdefault(normalise(item.text), []).append(i)
        if i % PROGRESS_EVERY == 0:
            report(i, total, f"normalising {split}")
    return list(members), list(members.values())


@dataclass
class _Scan:
    """What one pass over the train texts finds. similar: eval text -> [(train text,
    Jaccard)] at or above the threshold, in train order; ngram_hits: each eval n-gram that
    a train text holds -> the smallest train id among the items holding it."""

    similar: dict[int, list[tuple[int, float]]]
    ngram_hits: dict[str, str]
    eval_plain: list[list[str]]
    confirmations: int


def _scan(
    train_texts: Sequence[str],
    eval_texts: Sequence[str],
    smallest_id: Sequence[str],
    settings: AuditSettings,
    bands: int,
    rows: int,
) -> _Scan:
    """Index the eval texts (LSH tables, the set of their n-grams), then stream the train
    texts past them: candidates confirmed by exact Jaccard, n-grams looked up."""
    k, n, threshold = settings.shingle, settings.ngram, settings.threshold
    bins = bands * rows
    hashes = WordHashes()
    lookup = hashes.__getitem__
    tables: list[dict[tuple[int, ...], list[int]]] = [{} for _ in range(bands)]
    eval_words: list[list[str]] = []
    eval_plain: list[list[str]] = []
    eval_ngrams: set[str] = set()
    total = len(eval_texts)
    for d, text in enumerate(eval_texts):
        tokens = words(text)
        eval_words.append(tokens)
        sig = signature(shingle_hashes(list(map(lookup, tokens)), k), bins)
        for table, key in zip(tables, band_keys(sig, bands, rows), strict=True):
            table.setdefault(key, []).append(d)
        plain = plain_words(text)
        eval_plain.append(plain)
        eval_ngrams.update(ngrams(plain, n))
        if d % PROGRESS_EVERY == 0:
            report(d, total, "indexing eval")

    eval_sets: dict[int, frozenset[str]] = {}
    similar: dict[int, list[tuple[int, float]]] = {}
    ngram_hits: dict[str, str] = {}
    confirmations = 0
    total = len(train_texts)
    for t, text in enumerate(train_texts):
        tokens = words(text)
        sig = signature(shingle_hashes(list(map(lookup, tokens)), k), bins)
        candidates: set[int] = set()
        for table, key in zip(tables, band_keys(sig, bands, rows), strict=True):
            found = table.get(key)
            if found is not None:
                candidates.update(found)
        if candidates:
            confirmations += len(candidates)
            if confirmations > MAX_CONFIRMATIONS:
                raise InputError(
                    "threshold",
                    f"threshold {threshold!r}: more than {MAX_CONFIRMATIONS:,} candidate "
                    "pairs of distinct texts to confirm (many texts resemble each other "
                    "at this threshold); raise the threshold, or deduplicate each file "
                    "first",
                )
            own = shingles(tokens, k)
            for d in candidates:
                other = eval_sets.get(d)
                if other is None:
                    other = eval_sets[d] = shingles(eval_words[d], k)
                j = jaccard(own, other)
                if j >= threshold:
                    similar.setdefault(d, []).append((t, j))
        if eval_ngrams:
            key = smallest_id[t]
            for gram in ngrams(plain_words(text), n):
                if gram in eval_ngrams:
                    old = ngram_hits.get(gram)
                    if old is None or key < old:
                        ngram_hits[gram] = key
        if t % PROGRESS_EVERY == 0:
            report(t, total, "comparing train with eval")
    report(total, total, "comparing train with eval")
    for found in similar.values():
        found.sort()
    return _Scan(
        similar=similar,
        ngram_hits=ngram_hits,
        eval_plain=eval_plain,
        confirmations=confirmations,
    )


def _pair_check(
    similar: dict[int, list[tuple[int, float]]],
    train: Sequence[Item],
    eval_items: Sequence[Item],
    train_members: Sequence[Sequence[int]],
    eval_members: Sequence[Sequence[int]],
) -> PairCheck:
    """Pairs of distinct texts expanded to pairs of items: every eval item of an eval
    text against every train item of a matched train text."""
    eval_of = _text_of(eval_members, len(eval_items))
    flagged = [e for e in range(len(eval_items)) if eval_of[e] in similar]
    total = sum(
        len(eval_members[d]) * sum(len(train_members[t]) for t, _ in found)
        for d, found in similar.items()
    )
    pairs: list[Pair] = []
    for e in flagged:
        if len(pairs) >= MAX_LISTED_PAIRS:
            break
        by_train = sorted((i, j) for t, j in similar[eval_of[e]] for i in train_members[t])
        for i, j in by_train[: MAX_LISTED_PAIRS - len(pairs)]:
            pairs.append(Pair(train[i].id, eval_items[e].id, j))
    return PairCheck(
        eval_ids=tuple(eval_items[e].id for e in flagged), pairs=tuple(pairs), pairs_total=total
    )


def _text_of(members: Sequence[Sequence[int]], size: int) -> list[int]:
    """Item index -> the index of its distinct text."""
    out = [0] * size
    for d, indices in enumerate(members):
        for i in indices:
            out[i] = d
    return out


def _groups(items: Sequence[Item], members: Sequence[Sequence[int]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(items[i].id for i in m) for m in members if len(m) > 1)


def _group_check(train: Sequence[Item], eval_items: Sequence[Item]) -> GroupCheck:
    """Groups with items on both sides. An item whose group is None (absent or empty in
    its file) belongs to no group and is not compared."""
    train_groups = {i.group for i in train if i.group is not None}
    shared = {i.group for i in eval_items if i.group is not None and i.group in train_groups}
    flagged = [i for i in eval_items if i.group in shared]
    return GroupCheck(
        shared=tuple(sorted(shared)),
        eval_ids=tuple(i.id for i in flagged),
        eval_groups=tuple(i.group for i in flagged),  # type: ignore[misc]
        train_without_group=sum(i.group is None for i in train),
        eval_without_group=sum(i.group is None for i in eval_items),
    )


def _check_times(
    train: Sequence[Item], eval_items: Sequence[Item], labels: tuple[str, str]
) -> None:
    """Every item has a time, and either every time carries a UTC offset or none does:
    Python cannot order a naive time against an aware one (which instant a naive time
    means is unknown). The error names the file and line of the first that differs."""
    first = train[0]
    for split, label, items in (("train", labels[0], train), ("eval", labels[1], eval_items)):
        for item in items:
            if item.time is None:
                raise InputError(split, f"{label} line {item.line}: no time", subject="")
    aware = first.time.utcoffset() is not None  # type: ignore[union-attr]
    for split, label, items in (("train", labels[0], train), ("eval", labels[1], eval_items)):
        for item in items:
            if (item.time.utcoffset() is not None) != aware:  # type: ignore[union-attr]
                raise InputError(
                    split,
                    f"{label} line {item.line}: time {item.time.isoformat()} "  # type: ignore[union-attr]
                    f"{'has no' if aware else 'has a'} UTC offset, unlike {labels[0]} line "
                    f"{first.line} ({first.time.isoformat()}); give every time with an "  # type: ignore[union-attr]
                    "offset, or none",
                    subject="",
                )


def _time_check(train: Sequence[Item], eval_items: Sequence[Item]) -> TimeCheck:
    """Eval items strictly older than the newest train item (times checked by
    `_check_times`)."""
    newest = max(range(len(train)), key=lambda i: (train[i].time, -i))
    end = train[newest].time
    assert end is not None
    older = [i for i in eval_items if i.time < end]  # type: ignore[operator]
    return TimeCheck(
        train_end=end,
        train_end_id=train[newest].id,
        eval_start=min(i.time for i in eval_items),  # type: ignore[type-var]
        eval_ids=tuple(i.id for i in older),
        eval_times=tuple(i.time for i in older),  # type: ignore[misc]
    )


def _ngram_check(
    scan: _Scan, eval_items: Sequence[Item], eval_members: Sequence[Sequence[int]], n: int
) -> NgramCheck:
    """For each eval text with at least n plain words, its witness: over its n-grams that
    some train text holds, the smallest (train id, n-gram)."""
    hits = scan.ngram_hits
    witness: dict[int, tuple[str, str]] = {}
    if hits:
        for d, plain in enumerate(scan.eval_plain):
            best: tuple[str, str] | None = None
            for gram in ngrams(plain, n):
                train_id = hits.get(gram)
                if train_id is not None and (best is None or (train_id, gram) < best):
                    best = (train_id, gram)
            if best is not None:
                witness[d] = best
    eval_of = _text_of(eval_members, len(eval_items))
    matches = []
    short = []
    for e, item in enumerate(eval_items):
        d = eval_of[e]
        if d in witness:
            train_id, gram = witness[d]
            matches.append(NgramMatch(item.id, train_id, gram))
        elif len(scan.eval_plain[d]) < n:
            short.append(item.id)
    return NgramCheck(n=n, matches=tuple(matches), short_eval_ids=tuple(short))
