"""Error taxonomy: what share of the baseline's errors each reviewer's tag covers, the
ceiling that puts on the gain from fixing it, and what a fix did, tag by tag.

A tag is what a reviewer wrote about an example the baseline (a) gets wrong: "blurry",
"label noise", "date format". One example may carry several tags, separated by ";"
("blurry; dog"): the shares then add up to more than 100%, as in Ng's error-analysis
spreadsheet (A. Ng, Machine Learning Yearning, draft 2018, chapter 15, where one image
is both "great cat" and "blurry").

Tags describe a's errors. After a fix (b given) each tag's errors of a are split into
fixed (b right) and remaining (b wrong). b's new errors, examples a got right and b
gets wrong, lie outside every tag of a's errors: they are counted apart, grouped by the
tag of their row where the reviewer gave one (a tag on a row a gets right can only be
about b's error there), else as untagged. A tag on a row that both get right is not
counted anywhere.

Ranking the next experiment: given the reader's estimate of the GPU-hours an experiment
aimed at a tag costs, each tag's ceiling per GPU-hour orders the experiments
(`experiment_ranking`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import isfinite

from calculators.errors import InputError, shown
from calculators.limits import MAX_GPU_HOURS_PER_RUN

__all__ = [
    "MAX_EXPERIMENT_GPU_HOURS",
    "MAX_TAGS",
    "TAG_SEPARATOR",
    "UNTAGGED",
    "ExperimentCosts",
    "RankedExperiment",
    "Tag",
    "TaggedOutcomes",
    "Taxonomy",
    "ceiling_per_gpu_hour",
    "check_experiment_gpu_hours",
    "error_taxonomy",
    "experiment_ranking",
    "split_tags",
]

TAG_SEPARATOR = ";"
# The name under which errors without any tag are counted; a reviewer's own tag of that
# spelling is counted with them.
UNTAGGED = "(untagged)"
# Distinct tags a file may hold: a taxonomy is read by a person, tens of tags at most.
MAX_TAGS = 1_000
# GPU-hours of the experiment aimed at one tag. An experiment is a few runs; the bound on
# one run's GPU-hours (thirty times Llama 3.1 405B's pre-training) is beyond any of them.
MAX_EXPERIMENT_GPU_HOURS = MAX_GPU_HOURS_PER_RUN
# Known tags an error message lists before it says how many more there are.
_LISTED_TAGS = 10


def split_tags(text: str) -> tuple[str, ...]:
    """The tags of one cell: split at ';', stripped, empty ones dropped, each once, in
    the order written ('blurry; dog;blurry' is ('blurry', 'dog'))."""
    out: dict[str, None] = {}
    for part in text.split(TAG_SEPARATOR):
        tag = part.strip()
        if tag:
            out[tag] = None
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class TaggedOutcomes:
    """Per example: whether a is right, its tags (possibly none), and, after a fix,
    whether b is right (None: no b). Equal lengths, at least one example."""

    a_correct: tuple[bool, ...]
    tags: tuple[tuple[str, ...], ...]
    b_correct: tuple[bool, ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.a_correct)
        if n == 0:
            raise InputError("a_correct", "a_correct has no examples: at least 1 is needed")
        if len(self.tags) != n:
            raise InputError("tags", f"tags has {len(self.tags):,} rows for {n:,} examples")
        if self.b_correct is not None and len(self.b_correct) != n:
            raise InputError(
                "b_correct", f"b_correct has {len(self.b_correct):,} rows for {n:,} examples"
            )
        distinct = {t for row in self.tags for t in row}
        if len(distinct) > MAX_TAGS:
            raise InputError(
                "tags",
                f"tags has {len(distinct):,} distinct tags, above the limit of {MAX_TAGS:,}",
            )
        bad = next((t for t in distinct if not isinstance(t, str) or not t.strip()), None)
        if bad is not None:
            raise InputError("tags", f"tags: {shown(bad)} is not a tag (a non-empty string)")


@dataclass(frozen=True)
class Tag:
    """One tag among a's errors.

    errors:   a's errors that carry it.
    share:    errors / a's errors: the most of a's errors a fix aimed at it removes.
    ceiling:  errors / n: the most a's accuracy can gain (and its error rate lose) by
              fixing every one of them (Ng, Machine Learning Yearning, chapter 14).
    fixed, remaining: after a fix, those of its errors b gets right, and wrong (None
              without b).
    """

    tag: str
    errors: int
    share: float
    ceiling: float
    fixed: int | None
    remaining: int | None


@dataclass(frozen=True)
class Taxonomy:
    """The taxonomy of a's errors, and after a fix its balance.

    tags:          per tag, most errors first (ties by name); errors without a tag are
                   the tag UNTAGGED.
    new_errors:    examples a gets right and b wrong (None without b).
    new_errors_by_tag: those by their row's tag, UNTAGGED where the row has none.
    """

    n: int
    a_errors: int
    tagged_errors: int
    tags: tuple[Tag, ...]
    new_errors: int | None
    new_errors_by_tag: dict[str, int] | None


def error_taxonomy(o: TaggedOutcomes) -> Taxonomy:
    """Per tag of a's errors: count, share of a's errors, ceiling on the gain
    (count / n), and with b the fixed and remaining ones; b's new errors apart.

    Ceiling: if a fraction s of a's errors carries a tag and a's error rate is e,
    fixing all of them lowers the error rate to e (1 - s) at best, a gain of s e =
    count / n in accuracy (Ng, Machine Learning Yearning, chapter 14: 5% of errors
    being dogs caps a 90%-accurate system at 90.5%).
    """
    n = len(o.a_correct)
    errors: Counter[str] = Counter()
    fixed: Counter[str] = Counter()
    new: Counter[str] = Counter()
    a_errors = tagged = 0
    for i, a_right in enumerate(o.a_correct):
        tags = o.tags[i] or (UNTAGGED,)
        b_right = None if o.b_correct is None else o.b_correct[i]
        if not a_right:
            a_errors += 1
            tagged += bool(o.tags[i])
            for tag in tags:
                errors[tag] += 1
                if b_right:
                    fixed[tag] += 1
        elif b_right is False:
            for tag in tags:
                new[tag] += 1
    with_b = o.b_correct is not None
    rows = tuple(
        Tag(
            tag=tag,
            errors=count,
            share=count / a_errors,
            ceiling=count / n,
            fixed=fixed[tag] if with_b else None,
            remaining=count - fixed[tag] if with_b else None,
        )
        for tag, count in sorted(errors.items(), key=lambda item: (-item[1], item[0]))
    )
    new_errors = None
    if with_b:
        b_correct = o.b_correct or ()
        new_errors = sum(1 for a, b in zip(o.a_correct, b_correct, strict=True) if a and not b)
    return Taxonomy(
        n=n,
        a_errors=a_errors,
        tagged_errors=tagged,
        tags=rows,
        new_errors=new_errors,
        new_errors_by_tag=dict(sorted(new.items())) if with_b else None,
    )


# ---- ranking the next experiment ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ExperimentCosts:
    """The reader's estimate of what the experiment aimed at each tag costs: (tag,
    GPU-hours) pairs, each tag once, each cost a finite number in (0,
    MAX_EXPERIMENT_GPU_HOURS]. Errors blame the input `cost`."""

    gpu_hours: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for tag, hours in self.gpu_hours:
            if not isinstance(tag, str) or not tag.strip():
                raise InputError("cost", f"cost: {shown(tag)} is not a tag (a non-empty text)")
            if tag in seen:
                raise InputError("cost", f"cost gives tag {shown(tag)} twice: one cost per tag")
            seen.add(tag)
            check_experiment_gpu_hours(tag, hours)


def check_experiment_gpu_hours(tag: str, hours: object, *, typed: str | None = None) -> None:
    """InputError (input `cost`) unless `hours` is a finite number in (0,
    MAX_EXPERIMENT_GPU_HOURS]; the message quotes `typed`, the text the reader wrote,
    where there is one, else the value."""
    valid = (
        isinstance(hours, int | float)
        and not isinstance(hours, bool)
        and isfinite(hours)
        and 0 < hours <= MAX_EXPERIMENT_GPU_HOURS
    )
    if not valid:
        raise InputError(
            "cost",
            f"cost of tag {shown(tag)} must be a number of GPU-hours > 0 and at most "
            f"{MAX_EXPERIMENT_GPU_HOURS:,}, got {shown(hours if typed is None else typed)}",
        )


@dataclass(frozen=True)
class RankedExperiment:
    """The experiment aimed at one tag, in the ranking.

    ceiling:   the tag's ceiling on the accuracy gain (`Tag.ceiling`).
    gpu_hours: the reader's estimate of the experiment's cost.
    ceiling_per_gpu_hour: ceiling / gpu_hours (`ceiling_per_gpu_hour`).
    rank:      its place, from 1, by ceiling per GPU-hour, most first.
    """

    tag: str
    ceiling: float
    gpu_hours: float
    ceiling_per_gpu_hour: float
    rank: int


def ceiling_per_gpu_hour(ceiling: float, gpu_hours: float) -> float:
    """The most accuracy one GPU-hour of an experiment could buy: ceiling / gpu_hours.

    Assumptions: the ceiling is an upper bound (an experiment aimed at a category fixes
    at most that category's errors, and may fix fewer and break others: Ng, Machine
    Learning Yearning, chapter 14), and gpu_hours is the reader's estimate of the
    experiment's cost, reruns included if they plan any. The ratio ranks experiments by
    their best case per GPU-hour; it is not an expected gain, and the reader's judgement
    of how likely each fix is to work still discounts it.
    """
    return ceiling / gpu_hours


def _known(taxonomy: Taxonomy) -> str:
    names = [t.tag for t in taxonomy.tags]
    if not names:
        return "the baseline's errors carry no tag"
    listed = ", ".join(shown(n) for n in names[:_LISTED_TAGS])
    more = len(names) - _LISTED_TAGS
    return "known tags: " + listed + (f" and {more:,} more" if more > 0 else "")


def experiment_ranking(taxonomy: Taxonomy, costs: ExperimentCosts) -> tuple[RankedExperiment, ...]:
    """The experiments aimed at the tags with a cost, ranked by ceiling per GPU-hour.

    For tag c with E_c of the baseline's errors among n examples and an experiment of
    h_c GPU-hours: ceiling_c = E_c / n, and ceiling per GPU-hour = ceiling_c / h_c.
    Sorted by ceiling per GPU-hour, most first; ties by ceiling, most first, then by
    tag; rank is the place from 1 (tied experiments get consecutive ranks in that
    order). A cheap fix of a small category can thus come before an expensive fix of a
    large one, as the error-analysis guide explains. Every tag of `costs` must be a tag
    of the taxonomy (InputError naming `cost`, the tag and the known ones).
    """
    by_tag = {t.tag: t for t in taxonomy.tags}
    rows = []
    for tag, hours in costs.gpu_hours:
        if tag not in by_tag:
            raise InputError(
                "cost",
                f"cost names tag {shown(tag)}, which no error of the baseline carries; "
                + _known(taxonomy),
            )
        ceiling = by_tag[tag].ceiling
        rows.append((tag, ceiling, float(hours), ceiling_per_gpu_hour(ceiling, hours)))
    rows.sort(key=lambda r: (-r[3], -r[1], r[0]))
    return tuple(
        RankedExperiment(
            tag=tag, ceiling=ceiling, gpu_hours=hours, ceiling_per_gpu_hour=per_hour, rank=i
        )
        for i, (tag, ceiling, hours, per_hour) in enumerate(rows, start=1)
    )
