"""Ablation design: full and two-level fractional factorial designs, what each can and
cannot separate, what it costs, and the effects read back from the filled table.

Factors and levels
  A factor has a name and 2 to MAX_LEVELS levels, typed as text ("1e-4", "web"); the
  factors get the letters A, B, C, ... in the order given, skipping I as the NIST/SEMATECH
  e-Handbook and Box, Hunter and Hunter do (I is the identity of the defining relation):
  A B C D E F G H J K L M N O P.

Full factorial
  Every combination of levels: runs = L_1 x L_2 x ... x L_k (at most MAX_RUNS), in
  standard (Yates) order, the first factor changing fastest. A two-level factor is coded
  -1 for its first level and +1 for its second; a factor of L >= 3 levels is coded
  0, 1, ..., L - 1 in the order its levels are given.

Two-level fractional factorial 2^(k-p)
  The first k - p factors form a full factorial in 2^(k-p) runs (the base design); each
  of the p others is set to the product of base columns its generator names (E=ABCD: the
  coded E of a run is A x B x C x D). Each generator gives a word of the defining
  relation (E=ABCD gives I = ABCDE); the defining relation is every product of these
  words (a product of words drops the letters they share: ABCDE x ABF = CDEF), 2^p - 1
  words in all. Effects whose letters differ by a word are aliased (estimated by the same
  column): the aliases of X are X x W for every word W. The resolution is the length of
  the shortest word: III aliases main effects with two-factor interactions, IV two-factor
  interactions with each other, V keeps main effects and two-factor interactions apart
  from each other. The generators are the minimum-aberration ones of the published
  tables (PUBLISHED); only those fractions are offered, all of resolution III or more.

Fold-over
  Flipping every sign of a resolution III design and running both halves gives a
  design whose defining relation keeps only the even-length words of the original
  (an odd word changes sign between the halves and cancels), so main effects are freed
  from two-factor interactions: resolution IV or more (Box, Hunter and Hunter, 2nd ed.,
  chapter 6, "fold-over"; NIST/SEMATECH e-Handbook 5.3.3.4.6, "Improving fractional
  factorial design resolution: foldover designs").

Cost
  Each run is repeated with `seeds` seeds: total runs = runs x seeds,
  GPU-hours = total runs x GPU-hours per run, cost = GPU-hours x price per GPU-hour,
  days = GPU-hours / gpus / 24. The runs are assumed to go one after the other, each on
  all `gpus` cards together with perfect scaling (a run of H GPU-hours takes H / gpus
  hours of wall clock); runs that need fewer cards, or scale worse, change the days and
  not the GPU-hours.

Analysis (`effects`)
  From the filled table (run, seed, metric), with ybar_r the mean metric of run r over
  its n_r seeds and x_r = +/-1 the effect's column (a main effect's coded level, a
  two-factor interaction's product of two), over the R runs of a two-level column
  (balanced: R/2 at each sign):
      effect = mean of ybar_r where x_r = +1  -  mean of ybar_r where x_r = -1
  Seed-to-seed noise is the pooled within-run variance
      s^2 = sum_r sum_i (y_ri - ybar_r)^2 / (N - R),   N = sum_r n_r observations,
  and the standard error of an effect is
      SE = s (2 / R) sqrt(sum_r 1 / n_r),
  which is the familiar SE = 2 s / sqrt(N) when every run has the same number of seeds
  (Box, Hunter and Hunter, Statistics for Experimenters, 2nd ed., 2005, chapter 5:
  the variance of an effect from replicated runs, V(effect) = 4 sigma^2 / N, sigma^2
  estimated by the pooled variance of the replicates). With one seed per run N = R:
  there is no within-run variance and
  no standard error is given (no noise is invented from the effects themselves).
  Each effect carries its aliases up to two-factor interactions: it estimates their sum.

Unreplicated screens (`effects`, one seed per run)
  Every one of the R - 1 columns of a two-level design is a contrast (the products of
  the base factors' columns, each named by the shortest effect of its alias set); with
  R >= 8 runs Lenth's pseudo standard error, margin of error and simultaneous margin of
  error are computed from them (`calculators.statistics.screening.lenth`; Lenth,
  Technometrics 31:469-473, 1989) in place of the missing seed-to-seed standard error.

Centre points
  n_C runs with every factor at the middle of its two levels (each factor numeric): the
  curvature ybar_F - ybar_C, with ybar_F the mean of every factorial result, is tested
  against the pure error (`calculators.statistics.screening.curvature`; Montgomery,
  Design and Analysis of Experiments, 8th ed., section 6.8). The pure error pools the
  seeds of each run and the centre points:
      s^2 = (sum_r sum_i (y_ri - ybar_r)^2 + sum_c (y_c - ybar_C)^2) / (N - R + n_C - 1),
  and the same s gives the effects' standard error: centre points measure the noise of
  a screen that has one seed per run. They do not enter the effects themselves.

Nuisance factors: the best trial of each run
  With nuisance factors (the learning rate), each run of the design is trained once per
  nuisance setting ("trial"), and the run's result is its best trial: the trial whose
  mean over its seeds is lowest (goal "lower", a loss) or highest (goal "higher", an
  accuracy); that trial's seeds are the run's results. This is the Deep Learning Tuning
  Playbook's comparison (Godbole et al., Google Research 2023, "Identifying scientific,
  nuisance, and fixed hyperparameters": nuisance hyperparameters are optimized for each
  setting of the scientific ones). Averaging over the nuisance settings instead would
  mix each run's tuned trial with its untuned ones: a scientific factor that moves the
  best learning rate would show an effect that is the optimum moving, not the factor.
  The best of several noisy trials is biased towards a good result; a confirmation on
  new seeds measures the winner fairly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import NamedTuple

from calculators.checks import positive_int, positive_number
from calculators.errors import InputError, shown
from calculators.limits import MAX_GPU_HOURS_PER_RUN, MAX_GPUS, MAX_PRICE_PER_GPU_HOUR
from calculators.parsing import parse_float, parse_int
from calculators.statistics.screening import MIN_CONTRASTS, Curvature, Lenth, curvature, lenth

# Factor letters: the alphabet without I, as the published tables write them.
LETTERS = "ABCDEFGHJKLMNOP"
MAX_FACTORS = len(LETTERS)  # 15
MAX_LEVELS = 8
# Runs of one design: a full factorial past this is refused (a fraction is the way).
MAX_RUNS = 4_096
# Seeds per run.
MAX_SEEDS = 1_000
# A factor's name and a level's text, in characters.
MAX_NAME = 40
# Lines of results read back, and a metric's magnitude (its squares stay finite).
MAX_RESULT_ROWS = 200_000
MAX_METRIC = 1e15
# Column names the run table uses itself.
RESERVED_NAMES = ("run", "seed", "metric", "trial")
# Characters a name or a level may not hold: the ':' and ',' of NAME:LEVEL,LEVEL, and a
# quote or a line break, which the CSV of the run table would have to quote.
_FORBIDDEN = frozenset(':,"\r\n')


@dataclass(frozen=True)
class Published:
    """One published design: its generators and the resolution the table lists."""

    generators: tuple[str, ...]
    resolution: int


# Minimum-aberration generators of 2^(k-p) designs, by (k, p), with the resolution each
# is listed at, from the NIST/SEMATECH e-Handbook of Statistical Methods, section
# 5.3.3.4.7, "Summary tables of useful fractional factorial designs"
# (https://www.itl.nist.gov/div898/handbook/pri/section3/pri3347.htm), and Box, Hunter
# and Hunter, Statistics for Experimenters, 2nd ed. (2005), Table 6.22 (designs of 4 to
# 128 runs for 3 to 11 factors). Each entry was checked against
# published transcriptions: Minitab 19, "Design generators for 2-level designs" (k = 3
# to 8, generators and resolutions), the R package qualityTools' `fracChoose` (Table 6.22
# with its resolutions, k = 3 to 11; its 2^(11-6) prints K=AEF, L=ADEF, which names the
# generated factor F: a slip, the other sources agree on K=ADE, L=BDE) and Montgomery,
# Design and Analysis of Experiments, 8th ed., Table 8.14. Not in Table 6.22, so left
# out rather than guessed: half fractions of 9 to 11 factors and the 256-run and larger
# fractions ((9, 1), (10, 1), (10, 2), (11, 1), (11, 2), (11, 3)), and designs of 12 or
# more factors. tests/test_design.py recomputes every resolution from the defining
# relation and holds it to the listed one.
PUBLISHED: dict[tuple[int, int], Published] = {
    (3, 1): Published(("C=AB",), 3),
    (4, 1): Published(("D=ABC",), 4),
    (5, 1): Published(("E=ABCD",), 5),
    (5, 2): Published(("D=AB", "E=AC"), 3),
    (6, 1): Published(("F=ABCDE",), 6),
    (6, 2): Published(("E=ABC", "F=BCD"), 4),
    (6, 3): Published(("D=AB", "E=AC", "F=BC"), 3),
    (7, 1): Published(("G=ABCDEF",), 7),
    (7, 2): Published(("F=ABCD", "G=ABDE"), 4),
    (7, 3): Published(("E=ABC", "F=BCD", "G=ACD"), 4),
    (7, 4): Published(("D=AB", "E=AC", "F=BC", "G=ABC"), 3),
    (8, 1): Published(("H=ABCDEFG",), 8),
    (8, 2): Published(("G=ABCD", "H=ABEF"), 5),
    (8, 3): Published(("F=ABC", "G=ABD", "H=BCDE"), 4),
    (8, 4): Published(("E=BCD", "F=ACD", "G=ABC", "H=ABD"), 4),
    (9, 2): Published(("H=ACDFG", "J=BCEFG"), 6),
    (9, 3): Published(("G=ABCD", "H=ACEF", "J=CDEF"), 4),
    (9, 4): Published(("F=BCDE", "G=ACDE", "H=ABDE", "J=ABCE"), 4),
    (9, 5): Published(("E=ABC", "F=BCD", "G=ACD", "H=ABD", "J=ABCD"), 3),
    (10, 3): Published(("H=ABCG", "J=BCDE", "K=ACDF"), 5),
    (10, 4): Published(("G=BCDF", "H=ACDF", "J=ABDE", "K=ABCE"), 4),
    (10, 5): Published(("F=ABCD", "G=ABCE", "H=ABDE", "J=ACDE", "K=BCDE"), 4),
    (10, 6): Published(("E=ABC", "F=BCD", "G=ACD", "H=ABD", "J=ABCD", "K=AB"), 3),
    (11, 4): Published(("H=ABCG", "J=BCDE", "K=ACDF", "L=ABCDEFG"), 5),
    (11, 5): Published(("G=CDE", "H=ABCD", "J=ABF", "K=BDEF", "L=ADEF"), 4),
    (11, 6): Published(("F=ABC", "G=BCD", "H=CDE", "J=ACD", "K=ADE", "L=BDE"), 4),
    (11, 7): Published(("E=ABC", "F=BCD", "G=ACD", "H=ABD", "J=ABCD", "K=AB", "L=AC"), 3),
}

ROMAN = {3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}


def roman(resolution: int) -> str:
    """A resolution as the tables write it: 4 is IV."""
    return ROMAN.get(resolution, str(resolution))


def fractions_for(k: int) -> tuple[int, ...]:
    """The fractions p tabulated for k two-level factors, smallest first."""
    return tuple(sorted(p for kk, p in PUBLISHED if kk == k))


# ---- words: sets of factor indices -------------------------------------------------------

Word = frozenset[int]


def word_text(word: Iterable[int]) -> str:
    """A word in letters, in factor order: {0, 2} is 'AC'."""
    return "".join(LETTERS[i] for i in sorted(word))


def _word(text: str) -> Word:
    return frozenset(LETTERS.index(c) for c in text)


def _order(word: Word) -> tuple[int, tuple[int, ...]]:
    """Shorter words first, then by their letters."""
    return len(word), tuple(sorted(word))


def generator_words(generators: Sequence[str]) -> list[Word]:
    """The words of the generators: E=ABCD is ABCDE. ValueError on a malformed one."""
    out = []
    for g in generators:
        target, sep, sources = g.partition("=")
        if not sep or len(target) != 1 or not sources or target in sources:
            raise ValueError(f"generator {g!r} is not of the form E=ABCD")
        if len(set(sources)) != len(sources) or not set(g) - {"="} <= set(LETTERS):
            raise ValueError(f"generator {g!r} names a letter twice or one not in {LETTERS}")
        out.append(_word(target + sources))
    return out


def defining_relation(generators: Sequence[str]) -> tuple[Word, ...]:
    """Every product of the generators' words (2^p - 1 of them), shortest first."""
    gens = generator_words(generators)
    words: set[Word] = set()
    for size in range(1, len(gens) + 1):
        for chosen in combinations(gens, size):
            w: Word = frozenset()
            for g in chosen:
                w = w ^ g
            words.add(w)
    return tuple(sorted(words, key=_order))


def resolution_of(words: Iterable[Word]) -> int | None:
    """The length of the shortest word; None for no words (a full factorial)."""
    return min((len(w) for w in words), default=None)


# ---- factors ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Factor:
    """A factor: its name and its levels as typed (2 to MAX_LEVELS, distinct).

    Errors are blamed on the input `factor`.
    """

    name: str
    levels: tuple[str, ...]

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not name.strip():
            raise InputError("factor", f"factor name must not be empty, got {shown(name)}")
        if len(name) > MAX_NAME or _FORBIDDEN & set(name):
            raise InputError(
                "factor",
                f"factor name {shown(name)} must be at most {MAX_NAME} characters, "
                "without : , or quotes",
            )
        if name.lower() in RESERVED_NAMES:
            raise InputError(
                "factor",
                f"factor name {shown(name)} is taken by the run table's own columns "
                f"({', '.join(RESERVED_NAMES)}): rename it",
            )
        levels = self.levels
        if not 2 <= len(levels) <= MAX_LEVELS:
            raise InputError(
                "factor",
                f"factor {name} must have 2 to {MAX_LEVELS} levels, got {len(levels):,}",
            )
        for level in levels:
            if not level or len(level) > MAX_NAME or _FORBIDDEN & set(level):
                raise InputError(
                    "factor",
                    f"factor {name}: level {shown(level)} must be 1 to {MAX_NAME} "
                    "characters, without : , or quotes",
                )
        if len(set(levels)) != len(levels):
            twice = next(v for v in levels if levels.count(v) > 1)
            raise InputError("factor", f"factor {name} names level {shown(twice)} twice")


def parse_factor(text: str) -> Factor:
    """NAME:LEVEL,LEVEL[,...] (spaces around the parts are dropped)."""
    name, sep, rest = str(text).partition(":")
    if not sep:
        raise InputError("factor", f"factor must be NAME:LEVEL,LEVEL[,...], got {shown(str(text))}")
    levels = tuple(v.strip() for v in rest.split(","))
    if len(levels) > MAX_LEVELS:  # before checking each: a long list is refused at once
        raise InputError(
            "factor",
            f"factor {name.strip()[:MAX_NAME]} must have 2 to {MAX_LEVELS} levels, "
            f"got {len(levels):,}",
        )
    return Factor(name=name.strip(), levels=levels)


def check_factors(factors: Sequence[Factor]) -> None:
    """At least one factor, at most MAX_FACTORS, names distinct (case-insensitive)."""
    if not factors:
        raise InputError("factor", "factor: give at least one, as NAME:LEVEL,LEVEL")
    if len(factors) > MAX_FACTORS:
        raise InputError("factor", f"factor: at most {MAX_FACTORS} factors, got {len(factors):,}")
    seen: set[str] = set()
    for f in factors:
        if f.name.lower() in seen:
            raise InputError("factor", f"factor {f.name} is given twice")
        seen.add(f.name.lower())


# ---- designs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alias:
    """An effect (a main effect or a two-factor interaction, in letters) and the effects
    up to two-factor interactions it is aliased with."""

    effect: str
    aliased_with: tuple[str, ...]


@dataclass(frozen=True)
class Design:
    """A design: its runs (factor name -> level, in run order, run ids 1..run_count), the
    coded matrix (one row per run, one column per factor: -1/+1 for two levels,
    0..L-1 for more), and for a fraction its generators, defining relation (words),
    resolution and alias structure (None / empty for a full factorial)."""

    factors: tuple[Factor, ...]
    letters: dict[str, str]
    runs: tuple[dict[str, str], ...]
    coded: tuple[tuple[int, ...], ...]
    run_ids: tuple[int, ...]
    run_count: int
    fraction: int | None
    resolution: int | None
    generators: tuple[str, ...]
    defining_relation: tuple[str, ...]
    aliases: tuple[Alias, ...]

    @property
    def two_level(self) -> bool:
        """Every factor has two levels."""
        return all(len(f.levels) == 2 for f in self.factors)


def _level(f: Factor, code: int) -> str:
    """The level a code stands for: -1/+1 for two levels, 0..L-1 for more."""
    if len(f.levels) == 2:
        return f.levels[0] if code < 0 else f.levels[1]
    return f.levels[code]


def _alias_structure(k: int, words: Sequence[Word]) -> tuple[Alias, ...]:
    """Each main effect and two-factor interaction with its aliases up to two factors."""
    effects = [frozenset({i}) for i in range(k)] + [
        frozenset(pair) for pair in combinations(range(k), 2)
    ]
    out = []
    for e in effects:
        aliased = sorted({e ^ w for w in words if len(e ^ w) <= 2}, key=_order)
        out.append(Alias(effect=word_text(e), aliased_with=tuple(map(word_text, aliased))))
    return tuple(out)


def _full_factorial(factors: Sequence[Factor]) -> list[tuple[int, ...]]:
    """Coded rows in Yates order: the first factor changes fastest."""
    radices = [len(f.levels) for f in factors]
    rows = []
    for i in range(math.prod(radices)):
        row = []
        for L in radices:
            i, digit = divmod(i, L)
            row.append((1 if digit else -1) if L == 2 else digit)
        rows.append(tuple(row))
    return rows


def design(factors: Sequence[Factor], fraction: int | None = None) -> Design:
    """The full factorial of `factors`, or the published 2^(k-p) fraction with p =
    `fraction` (every factor at two levels). InputError at `factor` or `fraction`."""
    factors = tuple(factors)
    check_factors(factors)
    k = len(factors)
    if fraction is None:
        count = math.prod(len(f.levels) for f in factors)
        if count > MAX_RUNS:
            raise InputError(
                "factor",
                f"factor: the full factorial of these {k} factors has {count:,} runs, "
                f"above the {MAX_RUNS:,} a design may have: drop factors or levels",
            )
        coded = _full_factorial(factors)
        generators: tuple[str, ...] = ()
        words: tuple[Word, ...] = ()
    else:
        positive_int("fraction", fraction)
        wide = next((f for f in factors if len(f.levels) != 2), None)
        if wide is not None:
            raise InputError(
                "fraction",
                f"fraction needs every factor at two levels; {wide.name} has "
                f"{len(wide.levels)}: leave fraction empty for the full factorial",
            )
        if (k, fraction) not in PUBLISHED:
            offered = fractions_for(k)
            if not offered:
                raise InputError(
                    "fraction",
                    f"fraction: none is tabulated for {k} two-level factors (the table "
                    f"covers 3 to 11); leave it empty for the full factorial",
                )
            listed = ", ".join(
                f"{p} (resolution {roman(PUBLISHED[k, p].resolution)}, {2 ** (k - p):,} runs)"
                for p in offered
            )
            raise InputError(
                "fraction",
                f"fraction must be one of {listed} for {k} two-level factors; got {fraction}",
            )
        generators = PUBLISHED[k, fraction].generators
        words = defining_relation(generators)
        base = k - fraction
        sources = [_word(g.partition("=")[2]) for g in generators]
        coded = []
        for i in range(2**base):
            row = [1 if (i >> j) & 1 else -1 for j in range(base)]
            row += [math.prod(row[j] for j in s) for s in sources]
            coded.append(tuple(row))
    runs = tuple({f.name: _level(f, c) for f, c in zip(factors, row, strict=True)} for row in coded)
    return Design(
        factors=factors,
        letters={f.name: LETTERS[i] for i, f in enumerate(factors)},
        runs=runs,
        coded=tuple(coded),
        run_ids=tuple(range(1, len(coded) + 1)),
        run_count=len(coded),
        fraction=fraction,
        resolution=resolution_of(words),
        generators=generators,
        defining_relation=tuple(map(word_text, words)),
        aliases=_alias_structure(k, words) if words else (),
    )


# ---- fold-over ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FoldOver:
    """The fold-over of a fraction (every sign flipped) and the design both make.

    runs, coded: the fold-over's runs, ids run_count + 1 .. 2 x run_count.
    combined_defining_relation: the even-length words of the original's (the odd ones
    change sign between the halves and cancel); combined_resolution: its shortest word,
    None when no word is left (the two halves are the full factorial).
    """

    runs: tuple[dict[str, str], ...]
    coded: tuple[tuple[int, ...], ...]
    run_ids: tuple[int, ...]
    combined_run_count: int
    combined_defining_relation: tuple[str, ...]
    combined_resolution: int | None


def fold_over(d: Design) -> FoldOver:
    """The full fold-over of a two-level fraction, to run after it: it frees the main
    effects of a resolution III design from two-factor interactions (resolution IV or
    more). A design whose words all have even length (resolution IV, VI) folds onto
    itself: the fold-over only repeats its runs. ValueError for a full factorial."""
    if d.fraction is None:
        raise ValueError("a full factorial has nothing to fold over")
    coded = tuple(tuple(-c for c in row) for row in d.coded)
    kept = tuple(w for w in d.defining_relation if len(w) % 2 == 0)
    return FoldOver(
        runs=tuple(
            {f.name: _level(f, c) for f, c in zip(d.factors, row, strict=True)} for row in coded
        ),
        coded=coded,
        run_ids=tuple(range(d.run_count + 1, 2 * d.run_count + 1)),
        combined_run_count=2 * d.run_count,
        combined_defining_relation=kept,
        combined_resolution=min((len(w) for w in kept), default=None),
    )


# ---- cost ---------------------------------------------------------------------------------


# Nuisance factors (Godbole et al., "Deep Learning Tuning Playbook", Google Research 2023,
# section "Identifying scientific, nuisance, and fixed hyperparameters"): re-tuned for every
# setting of the scientific factors, so each run of the design becomes one run per setting
# tried. The bound keeps a plan's run count readable, not a statement about good practice.
MAX_NUISANCE_SETTINGS = 100
MAX_TUNED_SETTINGS = 10_000


def parse_nuisance(text: str) -> tuple[str, int]:
    """'lr:3' -> ('lr', 3): a nuisance factor and the settings tried for each run."""
    name, sep, count = str(text).partition(":")
    name = name.strip()
    if not sep or not name:
        raise InputError(
            "nuisance", f"nuisance must be NAME:SETTINGS (e.g. lr:3), got {shown(text)}"
        )
    settings = parse_int("nuisance", count.strip())
    positive_int("nuisance", settings, maximum=MAX_NUISANCE_SETTINGS)
    return name, settings


def tuned_settings(nuisance: Sequence[tuple[str, int]]) -> int:
    """The runs each design run becomes: the product of the nuisance factors' settings
    (every combination is tried, as a grid search does; 1 without nuisance factors)."""
    names = [n for n, _ in nuisance]
    if len(set(names)) != len(names):
        raise InputError("nuisance", f"nuisance names each factor once, got {', '.join(names)}")
    product = 1
    for _, settings in nuisance:
        product *= settings
        if product > MAX_TUNED_SETTINGS:
            raise InputError(
                "nuisance",
                f"nuisance settings multiply to more than {MAX_TUNED_SETTINGS:,} runs per "
                "design run; tune fewer nuisance factors, or with a quasi-random search",
            )
    return product


def parse_fixed(text: str) -> tuple[str, str]:
    """'base=llama-3.1-8b' -> ('base', 'llama-3.1-8b'): a factor held at one value."""
    name, sep, value = str(text).partition("=")
    if not sep or not name.strip() or not value.strip():
        raise InputError("fixed", f"fixed must be NAME=VALUE (e.g. steps=2000), got {shown(text)}")
    return name.strip(), value.strip()


# ---- centre points ------------------------------------------------------------------------

# Centre-point runs a plan may add; a handful (3 to 5) is what the textbooks use.
MAX_CENTRE_POINTS = 100
# What the run column of a centre-point row says.
CENTRE = "centre"
_CENTRE_WORDS = frozenset({"centre", "center", "c"})


def _centre_count(n: object) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_CENTRE_POINTS:
        raise InputError(
            "centre_points",
            f"centre_points must be a whole number from 0 to {MAX_CENTRE_POINTS}, got {shown(n)}",
        )


def centre_levels(d: Design) -> dict[str, str]:
    """The centre point: each factor at the middle of its two levels as typed,
    (low + high) / 2 (for a factor varied on a log scale, type its levels as logarithms
    so that the middle is the geometric mean). InputError at `centre_points` for a factor
    that is not numeric or has more than two levels: it has no middle."""
    out = {}
    for f in d.factors:
        try:
            low, high = (float(v) for v in f.levels)
        except ValueError:
            raise InputError(
                "centre_points",
                f"centre_points need every factor numeric with two levels; {f.name} has "
                f"{', '.join(f.levels)}: leave centre_points at 0, or run the centre "
                "points at each level of that factor in a design of their own",
            ) from None
        if not (math.isfinite(low) and math.isfinite(high)):
            raise InputError("centre_points", f"centre_points: {f.name} has no finite middle")
        out[f.name] = f"{(low + high) / 2:g}"
    return out


@dataclass(frozen=True)
class Cost:
    """total_runs = runs x seeds x tuned settings; gpu_hours, cost and days None where
    their inputs are."""

    total_runs: int
    gpu_hours: float | None
    cost: float | None
    days: float | None


def cost(
    run_count: int,
    seeds: int,
    gpu_hours_per_run: float | None,
    gpus: int,
    price: float | None,
    settings: int = 1,
    centre_points: int = 0,
) -> Cost:
    """total runs = (runs x seeds + centre_points) x settings (the nuisance factors'
    settings tried for each run, `tuned_settings`; a centre point is one run of one seed,
    re-tuned like the others); GPU-hours = total runs x gpu_hours_per_run; cost =
    GPU-hours x price; days = GPU-hours / gpus / 24 (runs one after the other, each on
    all `gpus` cards with perfect scaling)."""
    positive_int("seeds", seeds, maximum=MAX_SEEDS)
    positive_int("gpus", gpus, maximum=MAX_GPUS)
    positive_int("nuisance", settings, maximum=MAX_TUNED_SETTINGS)
    _centre_count(centre_points)
    total = (run_count * seeds + centre_points) * settings
    hours = None
    if gpu_hours_per_run is not None:
        positive_number("gpu_hours_per_run", gpu_hours_per_run, maximum=MAX_GPU_HOURS_PER_RUN)
        hours = total * gpu_hours_per_run
    if price is not None and (
        isinstance(price, bool)
        or not isinstance(price, int | float)
        or not 0 <= price <= MAX_PRICE_PER_GPU_HOUR
    ):
        raise InputError(
            "price",
            f"price must be a number from 0 to {MAX_PRICE_PER_GPU_HOUR:,}, got {shown(price)}",
        )
    return Cost(
        total_runs=total,
        gpu_hours=hours,
        cost=None if hours is None or price is None else hours * price,
        days=None if hours is None else hours / gpus / 24,
    )


# ---- the filled table ---------------------------------------------------------------------


class Result(NamedTuple):
    """One filled row: run id (0 for a centre point), seed (as typed), metric, the line it
    came from, and the nuisance trial (as typed; empty without nuisance factors)."""

    run: int
    seed: str
    metric: float
    line: int
    trial: str = ""


def run_table_header(d: Design, trials: str = "") -> list[str]:
    """The run table's columns: run, each factor, the trial (named for the nuisance
    factors, when there are any), seed, metric."""
    return ["run", *(f.name for f in d.factors), *([trials] if trials else []), "seed", "metric"]


def _bad(field: str, message: str) -> InputError:
    return InputError(field, message, subject=field)


def read_results(
    d: Design,
    lines: Iterable[tuple[int, str]],
    field: str,
    *,
    centre: bool = False,
    trials: bool = False,
) -> list[Result]:
    """Rows of the filled table: `run,seed,metric` (`run,trial,seed,metric` with
    `trials`), or the run table's own rows (run, each factor's level, [trial,] seed,
    metric; the levels must be the run's). With `centre`, a run cell `centre` is a centre
    point (run 0). Lines whose first cell is `run` (a header) are skipped. `lines` are
    (line number, text); an error names the line and is blamed on `field`. With
    `trials`, `run,seed,metric` (a run's best trial, chosen already) is read as well."""
    out: list[Result] = []
    k = len(d.factors)
    # shapes: (cells, has a trial, has the levels); run,trial,seed,metric wins over the
    # run table's 4 columns of a one-factor design
    shapes = {3: (False, False), k + 3: (False, True)}
    if trials:
        shapes |= {k + 4: (True, True), 4: (True, False)}
    middle = centre_levels(d) if centre else {}
    for number, text in lines:
        cells = [c.strip() for c in text.split(",")]
        if cells == [""] or cells[0].lower() == "run":
            continue
        if len(out) >= MAX_RESULT_ROWS:
            raise InputError(field, f"{field}: at most {MAX_RESULT_ROWS:,} rows")
        where = f"{field} line {number}"
        if len(cells) not in shapes:
            shape = "run,trial,seed,metric" if trials else "run,seed,metric"
            raise _bad(
                field,
                f"{where}: expected {shape} or the run table's {k + 3 + trials} columns, "
                f"got {len(cells):,} cells in {shown(text)}",
            )
        has_trial, has_levels = shapes[len(cells)]
        if cells[0].lower() in _CENTRE_WORDS:
            if not centre:
                raise _bad(
                    field,
                    f"{where}: a centre point, but the plan has none: set centre_points",
                )
            run = 0
            expected = [middle[f.name] for f in d.factors]
        else:
            try:
                run = parse_int(where, cells[0])
            except InputError as e:
                raise _bad(field, str(e)) from None
            if not 1 <= run <= d.run_count:
                raise _bad(
                    field,
                    f"{where}: run {run:,} is not in the design (runs 1 to {d.run_count:,})",
                )
            expected = [d.runs[run - 1][f.name] for f in d.factors]
        if has_levels:
            levels = cells[1 : 1 + k]
            if not _same_levels(levels, expected):
                name = "the centre point" if run == 0 else f"run {run}"
                raise _bad(
                    field,
                    f"{where}: {name} is {', '.join(expected)} in the design, the line "
                    f"says {shown(', '.join(levels))}",
                )
        trial = cells[-3] if has_trial else ""
        if has_trial and not trial:
            raise _bad(field, f"{where}: no trial: name the nuisance setting of this line")
        if not cells[-1]:
            raise _bad(field, f"{where}: run {cells[0]} has no metric: fill it or remove the line")
        try:
            metric = parse_float(where + " metric", cells[-1])
        except InputError as e:
            raise _bad(field, str(e)) from None
        out.append(Result(run=run, seed=cells[-2], metric=metric, line=number, trial=trial))
    return out


def _same_levels(typed: Sequence[str], expected: Sequence[str]) -> bool:
    """A line's levels against the design's: equal as text, or as numbers (a centre
    level typed 0.05 for the table's 0.05, or 2e-4 for 0.0002)."""
    for a, b in zip(typed, expected, strict=True):
        if a == b:
            continue
        try:
            if float(a) != float(b):
                return False
        except ValueError:
            return False
    return True


@dataclass(frozen=True)
class Effect:
    """One column of a two-level design: a main effect or a two-factor interaction (in
    letters; for the higher-order columns of `Analysis.contrasts`, the shortest effect of
    the alias set), its estimate, its standard error (None without a noise estimate),
    the means at -1 and +1, and the effects up to two-factor interactions it is aliased
    with (the estimate is their sum)."""

    effect: str
    estimate: float
    standard_error: float | None
    low_mean: float
    high_mean: float
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class Analysis:
    """Effects of the filled table. observations N (factorial results), runs R;
    pooled_sd s and its degrees of freedom N - R (+ n_C - 1 with centre points; None and
    0 without replicates or centre points); the grand mean; each factor's mean metric at
    each of its levels (over run means); notes on what is not given.

    contrasts: every column of a two-level design (R - 1 of them), for the half-normal
    plot; lenth: Lenth's analysis of them, with one seed per run and no centre points
    (None otherwise, or under 8 runs); curvature: the centre-point test (None without
    centre points, or without a noise estimate); best_trials: run id (0: the centre
    point) -> the nuisance trial kept, empty without trials."""

    effects: tuple[Effect, ...]
    observations: int
    pooled_sd: float | None
    df: int
    grand_mean: float
    level_means: dict[str, dict[str, float]]
    seeds_per_run: tuple[int, int]
    notes: tuple[str, ...]
    contrasts: tuple[Effect, ...] = ()
    lenth: Lenth | None = None
    curvature: Curvature | None = None
    centre_points: int = 0
    best_trials: dict[int, str] | None = None


def _columns(d: Design) -> list[tuple[str, tuple[str, ...], list[int]]]:
    """The two-level columns an analysis estimates, each once: every main effect of a
    two-level factor, then each two-factor interaction of two-level factors not aliased
    with a main effect, one per alias set (named by its first member)."""
    two = [i for i, f in enumerate(d.factors) if len(f.levels) == 2]
    aliases = {a.effect: a.aliased_with for a in d.aliases}
    out = []
    for i in two:
        name = LETTERS[i]
        out.append((name, aliases.get(name, ()), [row[i] for row in d.coded]))
    covered: set[str] = set()
    for i, j in combinations(two, 2):
        name = LETTERS[i] + LETTERS[j]
        with_ = aliases.get(name, ())
        if name in covered or any(len(a) == 1 for a in with_):
            continue
        covered.update(with_)
        out.append((name, with_, [row[i] * row[j] for row in d.coded]))
    return out


def all_columns(d: Design) -> list[tuple[str, tuple[str, ...], list[int]]]:
    """Every column of a two-level design, R - 1 of them: each product of the base
    factors' columns (all k factors for a full factorial, the first k - p for a
    fraction), named by the shortest effect of its alias set (S and S x W for every word
    W), with its other aliases up to two-factor interactions; shortest names first.
    Empty when a factor has more than two levels."""
    if not d.two_level:
        return []
    base = len(d.factors) - (d.fraction or 0)
    words = [_word(w) for w in d.defining_relation]
    out = []
    for mask in range(1, 2**base):
        chosen = frozenset(j for j in range(base) if (mask >> j) & 1)
        members = sorted({chosen} | {chosen ^ w for w in words}, key=_order)
        column = [math.prod(row[j] for j in chosen) for row in d.coded]
        aliases = tuple(word_text(w) for w in members[1:] if len(w) <= 2)
        out.append((members[0], aliases, column))
    out.sort(key=lambda c: _order(c[0]))
    return [(word_text(w), aliases, column) for w, aliases, column in out]


def best_trials(rows: Sequence[Result], goal: str = "lower") -> tuple[list[Result], dict[int, str]]:
    """For each run (and the centre point, run 0), the rows of its best trial: the trial
    whose mean metric over its seeds is lowest (goal "lower") or highest ("higher"); a tie
    goes to the trial met first. Returns the kept rows and run -> trial kept."""
    if goal not in ("lower", "higher"):
        raise InputError("goal", f"goal must be lower or higher, got {shown(goal)}")
    by: dict[int, dict[str, list[Result]]] = {}
    for r in rows:
        by.setdefault(r.run, {}).setdefault(r.trial, []).append(r)
    sign = 1.0 if goal == "lower" else -1.0
    kept: list[Result] = []
    chosen: dict[int, str] = {}
    for run, trials in by.items():
        trial = min(
            trials, key=lambda t: sign * math.fsum(r.metric for r in trials[t]) / len(trials[t])
        )
        chosen[run] = trial
        kept += trials[trial]
    return kept, chosen


def _rows(rows: Iterable[Result | tuple], field: str) -> list[Result]:
    """Rows as Results: a tuple (run, seed, metric[, trial]) gets its position as line."""
    out = []
    for n, row in enumerate(rows, start=1):
        if isinstance(row, Result):
            out.append(row)
        else:
            trial = str(row[3]) if len(row) > 3 else ""
            out.append(Result(run=row[0], seed=str(row[1]), metric=row[2], line=n, trial=trial))
    return out


def effects(
    d: Design,
    rows: Iterable[Result | tuple[int, str, float]],
    field: str = "results",
    *,
    centre_points: int = 0,
    goal: str = "lower",
) -> Analysis:
    """Main effects and two-factor interactions of the filled table (see the module's
    docstring for the formulas). Every run needs at least one row; a (run, seed) pair
    may appear once (once per trial with nuisance trials); run ids must be the design's,
    or 0 for a centre point when `centre_points` > 0. Rows that carry a trial are
    reduced to each run's best trial first (`best_trials`, by `goal`). InputError at
    `results`, naming the line (or the row's position where rows carry no line); blamed
    on `field`."""
    _centre_count(centre_points)
    given = _rows(rows, field)
    seen: dict[tuple[int, str, str], int] = {}
    with_trial = sum(1 for r in given if r.trial)
    if with_trial and with_trial != len(given):
        raise InputError(field, f"{field}: give a trial on every line or on none")
    for r in given:
        run, metric, where = r.run, r.metric, f"{field} line {r.line}"
        low = 0 if centre_points else 1
        if isinstance(run, bool) or not isinstance(run, int) or not low <= run <= d.run_count:
            raise InputError(
                field,
                f"{where}: run {shown(run)} is not in the design (runs 1 to {d.run_count:,})",
            )
        if (
            isinstance(metric, bool)
            or not isinstance(metric, int | float)
            or not math.isfinite(metric)
        ):
            raise InputError(field, f"{where}: metric must be a number, got {shown(metric)}")
        if abs(metric) > MAX_METRIC:
            raise InputError(field, f"{where}: metric must be at most {MAX_METRIC:g} in magnitude")
        key = (run, r.trial, r.seed)
        if key in seen:
            name = "the centre point" if run == 0 else f"run {run}"
            trial = f" trial {shown(r.trial)}" if r.trial else ""
            raise InputError(
                field,
                f"{where}: {name}{trial} seed {shown(r.seed)} is already on line "
                f"{seen[key]}: give each seed its own value",
            )
        seen[key] = r.line
    chosen: dict[int, str] | None = None
    if with_trial:
        given, chosen = best_trials(given, goal)
    by_run: dict[int, list[float]] = {}
    for r in given:
        by_run.setdefault(r.run, []).append(float(r.metric))
    centre = by_run.pop(0, [])
    missing = [r for r in d.run_ids if r not in by_run]
    if missing:
        listed = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise InputError(
            field,
            f"{field}: {len(missing):,} of {d.run_count:,} runs have no metric (run "
            f"{listed}): every run of the design is needed",
        )
    means = [math.fsum(by_run[r]) / len(by_run[r]) for r in d.run_ids]
    sizes = [len(by_run[r]) for r in d.run_ids]
    count = sum(sizes)
    R = d.run_count
    notes = []
    # pure error: the seeds of each run around its mean, and the centre points around theirs
    ss = math.fsum((y - m) ** 2 for r, m in zip(d.run_ids, means, strict=True) for y in by_run[r])
    df = count - R
    if len(centre) > 1:
        centre_mean = math.fsum(centre) / len(centre)
        ss += math.fsum((y - centre_mean) ** 2 for y in centre)
        df += len(centre) - 1
    s: float | None = math.sqrt(ss / df) if df > 0 else None
    if s is None:
        notes.append(
            "one seed per run: there is no seed-to-seed variance to estimate, so no "
            "standard error is given; run 2 or more seeds per run (or add centre points) "
            "for one, or read the effects with Lenth's pseudo standard error"
        )
    scale = (2 / R) * math.sqrt(math.fsum(1 / n for n in sizes))

    def column_effect(name: str, aliased: tuple[str, ...], column: list[int]) -> Effect:
        high = [m for m, x in zip(means, column, strict=True) if x > 0]
        low = [m for m, x in zip(means, column, strict=True) if x < 0]
        hi, lo = math.fsum(high) / len(high), math.fsum(low) / len(low)
        return Effect(
            effect=name,
            estimate=hi - lo,
            standard_error=None if s is None else s * scale,
            low_mean=lo,
            high_mean=hi,
            aliases=aliased,
        )

    out = [column_effect(*c) for c in _columns(d)]
    contrasts = tuple(column_effect(*c) for c in all_columns(d))
    screen = None
    if s is None and len(contrasts) >= MIN_CONTRASTS:
        try:
            screen = lenth([c.estimate for c in contrasts])
        except InputError:
            notes.append("half the effects or more are exactly 0: Lenth's method has no noise")
    elif s is None and contrasts:
        notes.append(
            f"Lenth's pseudo standard error needs at least {MIN_CONTRASTS + 1} runs; this "
            f"design has {R}"
        )
    bend = None
    if centre and s is not None:
        factorial = [y for r in d.run_ids for y in by_run[r]]
        bend = curvature(factorial, centre, sd=s, df=df)
    elif centre:
        notes.append(
            "one centre point and one seed per run: no pure error to test the curvature "
            "against; run 2 or more centre points"
        )
    wide = [f.name for f in d.factors if len(f.levels) > 2]
    if wide:
        notes.append(
            f"{', '.join(wide)}: more than two levels, so no single +1/-1 effect; "
            "compare the means of its levels"
        )
    level_means = {}
    for f in d.factors:
        per: dict[str, list[float]] = {level: [] for level in f.levels}
        for run, m in zip(d.runs, means, strict=True):
            per[run[f.name]].append(m)
        level_means[f.name] = {lv: math.fsum(v) / len(v) for lv, v in per.items() if v}
    return Analysis(
        effects=tuple(out),
        observations=count,
        pooled_sd=s,
        df=max(df, 0),
        grand_mean=math.fsum(means) / R,
        level_means=level_means,
        seeds_per_run=(min(sizes), max(sizes)),
        notes=tuple(notes),
        contrasts=contrasts,
        lenth=screen,
        curvature=bend,
        centre_points=len(centre),
        best_trials=chosen,
    )
