"""The exact paired permutation (sign-flip) test of a gap between two variants.

With n paired seeds and differences d_i = b_i - a_i, the hypothesis of no effect says
that b and a are exchangeable within each seed: swapping them, which flips the sign of
d_i, gives a result as likely as the one observed. Under it, every one of the 2^n sign
patterns (±d_1, ..., ±d_n) is equally likely, and the two-sided p-value is the share of
patterns whose sum is at least as far from 0 as the observed one:

  p = #{ s in {-1, +1}^n : |Σ s_i d_i| >= |Σ d_i| } / 2^n

It assumes only that exchangeability (no normal distribution, unlike the paired t test),
and it is exact. Its smallest possible p-value is 2 / 2^n (the observed pattern and its
mirror image): 1/16 = 0.0625 at 5 seeds, so that 5 seeds can never reach p < 0.05 with
this test, whatever the gap; 6 seeds can (1/32). Source: Fisher (1935), The Design of
Experiments, chapter III, section 21 (Darwin's 15 paired plants, all 2^15 sign patterns
counted).

Ties. A pattern whose |sum| equals the observed one counts as "at least as extreme" (the
observed pattern always counts, so p >= 1 / 2^(n-1) when Σ d_i != 0, and p = 1 when it is
0). Floating-point sums would decide such ties by rounding: with scores typed as
0.1, 0.2 and 0.3, two sums that are equal as typed can differ in their last bit, and a
tolerance (a relative epsilon) would instead merge sums that really differ by less than
it. Here the differences are the exact integers of the typed decimals over one common
denominator (`calculators.statistics.seeds.exact_differences`), so every comparison is
exact and no tolerance is needed.

Counting. All 2^n sums are counted without listing them one by one (meet in the middle):
the sums of each half of the differences are formed (2^⌈n/2⌉ and 2^⌊n/2⌋ of them), one
half is sorted, and for each sum x of the other half two binary searches count the y with
x + y >= T or x + y <= -T. At the bound n = 20 that is 1,024 sums a half and 2,048
searches: about a millisecond, where listing 2^20 patterns takes seconds in CPython and
more in Pyodide. The count is exact and equals that of the full enumeration (the tests
enumerate small cases pattern by pattern).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb, ldexp

from calculators.errors import InputError, shown
from calculators.statistics.seeds import PairedComparison, exact_differences

__all__ = [
    "MAX_EXACT_SEEDS",
    "SignFlipResult",
    "all_beat_probability",
    "all_pairs_beat_probability",
    "paired_sign_flip_test",
    "sign_flip_test",
]

# 2^20 patterns, the bound the project set (issue 13). Past it the result says to read the
# t test, whose p-value the permutation p-value approaches as seeds grow (the permutation
# distribution of the mean differences tends to a normal one); campaigns rarely have more
# than 20 seeds a variant anyway.
MAX_EXACT_SEEDS = 20


@dataclass(frozen=True, kw_only=True)
class SignFlipResult:
    """The exact sign-flip test of n paired differences.

    seeds:       n, the paired differences;
    patterns:    2^n, every sign pattern;
    extreme:     the patterns whose |sum| is at least the observed |sum| (the observed
                 pattern and its mirror image included);
    p_value:     extreme / patterns, two-sided, rounded once to a double.
    """

    seeds: int
    patterns: int
    extreme: int
    p_value: float


def _half_sums(values: Sequence[int]) -> list[int]:
    """Every signed sum Σ ±v_i of `values` (2^len of them, repeats kept)."""
    sums = [0]
    for v in values:
        sums = [s + v for s in sums] + [s - v for s in sums]
    return sums


def sign_flip_test(differences: Sequence[int]) -> SignFlipResult:
    """The exact two-sided sign-flip p-value of paired differences given as exact
    integers (scaled to one common denominator; the scale does not change p).

    p = #{s : |Σ s_i d_i| >= |Σ d_i|} / 2^n over all 2^n patterns s in {-1, +1}^n,
    counted by meet in the middle (see the module's docstring). InputError naming
    `differences` unless there are 1 to MAX_EXACT_SEEDS integers.
    """
    if not isinstance(differences, tuple | list):
        raise InputError(
            "differences", f"differences must be a list of integers, got {shown(differences)}"
        )
    n = len(differences)
    if not 1 <= n <= MAX_EXACT_SEEDS:
        raise InputError(
            "differences",
            f"differences must number 1 to {MAX_EXACT_SEEDS} for the exact test, got {n:,}",
        )
    for d in differences:
        if isinstance(d, bool) or not isinstance(d, int):
            raise InputError(
                "differences",
                f"differences must be exact integers (scaled to one denominator), got {shown(d)}",
            )
    patterns = 1 << n
    observed = abs(sum(differences))
    if observed == 0:  # every pattern's |sum| is >= 0
        return SignFlipResult(seeds=n, patterns=patterns, extreme=patterns, p_value=1.0)
    left = _half_sums(differences[: n // 2])
    right = sorted(_half_sums(differences[n // 2 :]))
    size = len(right)
    extreme = 0
    for x in left:
        # x + y >= T and x + y <= -T exclude each other when T > 0
        extreme += size - bisect_left(right, observed - x)
        extreme += bisect_right(right, -observed - x)
    return SignFlipResult(seeds=n, patterns=patterns, extreme=extreme, p_value=extreme / patterns)


def paired_sign_flip_test(q: PairedComparison) -> SignFlipResult | None:
    """The exact sign-flip test of b against a on their exact typed differences; None
    past MAX_EXACT_SEEDS seeds (the caller says so and points to the t test)."""
    if len(q.a) > MAX_EXACT_SEEDS:
        return None
    differences, _ = exact_differences(q)
    return sign_flip_test(differences)


# Past this k, 1 / C(2k, k) is below the smallest double (C(2k, k) >= 4^k / (2 sqrt(k)),
# above 2^1075 from k = 543), and C(2k, k) itself costs time to build (0.4 s at k = 10^5).
_ALL_BEAT_EXACT_MAX = 600


def _check_runs(k: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError("runs", f"runs must be a positive whole number, got {shown(k)}")


def all_beat_probability(k: int) -> float:
    """The probability that all k runs of a change score above all k runs of the
    baseline when the change has no effect: 1 / C(2k, k).

    With no effect and no ties, the 2k scores are exchangeable: every way of choosing
    which k of the 2k ranks the change holds is equally likely, and only one of the
    C(2k, k) puts it on the k highest. k = 2: 1/6, k = 3: 1/20, k = 4: 1/70, k = 5: 1/252.
    It is the one-sided p-value of the most extreme rank-sum (Mann-Whitney) outcome (Mann
    and Whitney 1947). It assumes the 2k runs are independent draws, as with a fresh seed
    per run; seeds shared between the two variants pair the runs, where
    `all_pairs_beat_probability` applies. 0.0 where the value is below the smallest double.
    """
    _check_runs(k)
    if k > _ALL_BEAT_EXACT_MAX:
        return 0.0
    return 1 / comb(2 * k, k)  # int / int: correctly rounded


def all_pairs_beat_probability(k: int) -> float:
    """The probability that the change beats the baseline on every one of k paired seeds
    when it has no effect: 1 / 2^k (each seed's sign is a fair coin under the sign-flip
    hypothesis above, with no zero difference). k = 3: 1/8, k = 5: 1/32. 0.0 where the
    value is below the smallest double."""
    _check_runs(k)
    return ldexp(1.0, -k)
