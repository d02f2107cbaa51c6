"""How large an evaluation set must be: the uncertainty of an accuracy, of a paired
difference of two accuracies, and the power of McNemar's test.

Two models are scored on the same n examples. Each example falls in one cell of the
paired table (the notation of `calculators.evaluation.paired`):

                  b right          b wrong
    a right       both right       q_a  (only a right)
    a wrong       q_b (only b)     both wrong

In proportions of the examples, the **discordance** is psi = q_a + q_b (the share of
examples on which the two models disagree about being right) and the **gain** is
delta = q_b - q_a = acc(b) - acc(a). Only the discordant examples carry information on
the gain; psi >= |delta| always, since q_a, q_b >= 0.

Sources: E. B. Wilson, "Probable inference, the law of succession, and statistical
inference", JASA 22 (1927) 209-212 (the score interval); R. J. Connor, "Sample size for
testing differences in proportions for the paired-sample design", Biometrics 43 (1987)
207-211 (the normal approximation of McNemar's power and its sample size); M. W.
Fagerland, S. Lydersen and P. Laake, "The McNemar test for binary matched-pairs data:
mid-p and asymptotic are better than exact conditional", BMC Medical Research
Methodology 13 (2013) 91 (the exact conditional test, its conservatism, and the power as
a weighted sum over the number of discordant pairs); J. L. Fleiss, B. Levin and M. C.
Paik, *Statistical Methods for Rates and Proportions*, 3rd ed. (2003), section 4.2, as
R's `power.prop.test` computes it (two independent sets).

Everything is pure standard-library Python (it runs in Pyodide). Pure functions, one per
quantity; bad input raises `InputError` naming the field, its bound and the value.
"""

from __future__ import annotations

from math import ceil, exp, isfinite, lgamma, log, log1p, pi, sqrt
from statistics import NormalDist

from calculators.checks import is_real
from calculators.errors import InputError, shown
from calculators.evaluation.paired import normal_cdf

# the bounds on a test's level, an interval's and a power, with their reasons: one set
# for every calculator that tests or sizes
from calculators.statistics.seeds import ALPHA_RANGE, CONFIDENCE_RANGE, POWER_MAX

__all__ = [
    "ALPHA_RANGE",
    "CONFIDENCE_RANGE",
    "EXACT_MAX_EXAMPLES",
    "MAX_EXAMPLES",
    "POWER_MAX",
    "accuracy_examples_for_half_width",
    "accuracy_standard_error",
    "check_paired_table",
    "connor_examples",
    "examples_for_power",
    "mcnemar_power",
    "mcnemar_power_exact",
    "mcnemar_power_normal",
    "paired_difference_examples_for_half_width",
    "paired_difference_standard_error",
    "unpaired_examples",
    "wilson_interval",
]

# The largest evaluation set any function here takes or returns: a billion examples. A
# gain too small to detect within it is refused, with Connor's estimate of what it needs.
MAX_EXAMPLES = 10**9
# Up to this many examples the exact conditional power is summed over every likely
# number of discordant pairs (a window of 16 sd of it, O(1) each: ~0.04 s at this
# maximum in CPython, a search ~20 times that, so that the page answers within its time
# limit in the browser, where Python runs a few times slower); above it Connor's normal
# approximation is used, and the result says so. At these sizes the discordant count is
# large unless the discordance is tiny, and the two agree closely (the tests hold them
# together).
EXACT_MAX_EXAMPLES = 100_000

_NORMAL = NormalDist()
# Binomial terms below this share of a tail's running sum are past a double's last bit;
# the mass of the number of discordant pairs beyond +-_SPREAD sd is about 1e-15.
_NEGLIGIBLE = 2.0**-60
_SPREAD = 8.0


# --- Checks: each names the field, its bound and the value.


def _check_examples(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(
            name, f"{name} must be a whole number of examples >= 1, got {shown(value)}"
        )
    if value > MAX_EXAMPLES:
        raise InputError(name, f"{name} must be at most {MAX_EXAMPLES:,}, got {value:,}")


def _check_unit(name: str, value: object, what: str) -> None:
    if not is_real(value) or not isfinite(value) or not 0.0 <= value <= 1.0:  # type: ignore[arg-type,operator]
        raise InputError(name, f"{name} must be a number from 0 to 1 ({what}), got {shown(value)}")


def _check_paired(discordance: object, gain: object) -> None:
    _check_unit("discordance", discordance, "the share of examples where a and b disagree")
    if discordance == 0:
        raise InputError(
            "discordance",
            "discordance must be above 0 (the share of examples where exactly one model is "
            "right), got 0: two models that never disagree have no difference to measure",
        )
    if not is_real(gain) or not isfinite(gain) or not -1.0 <= gain <= 1.0:  # type: ignore[arg-type,operator]
        raise InputError(
            "gain", f"gain must be a number from -1 to 1 (acc(b) - acc(a)), got {shown(gain)}"
        )
    if abs(gain) > discordance:  # type: ignore[operator,arg-type]
        raise InputError(
            "gain",
            f"gain must be at most the discordance ({discordance!r}) in size: b can gain "
            f"only on examples where the two disagree, got {shown(gain)}",
        )


def _check_gain_nonzero(gain: float) -> None:
    if gain == 0:
        raise InputError(
            "gain",
            "gain must not be 0 for a power or a sample size: with no gain the test "
            "rejects with probability alpha at any n",
        )


def _check_level(name: str, value: object, low: float, high: float, what: str) -> None:
    if not is_real(value) or not isfinite(value) or not low <= value <= high:  # type: ignore[arg-type,operator]
        raise InputError(
            name, f"{name} must be a number from {low:g} to {high:g} ({what}), got {shown(value)}"
        )


def _check_alpha(alpha: object) -> None:
    _check_level("alpha", alpha, *ALPHA_RANGE, "the two-sided test level")


def _check_power(power: object, alpha: float) -> None:
    _check_level("power", power, 0.0, POWER_MAX, "the chance of detecting the gain")
    if power <= alpha:  # type: ignore[operator]
        raise InputError(
            "power",
            f"power must be above alpha ({alpha!r}), got {shown(power)}: a test at level "
            "alpha already 'detects' a zero gain with probability alpha",
        )


def _check_half_width(half_width: object) -> None:
    if not is_real(half_width) or not isfinite(half_width) or not 0.0 < half_width <= 1.0:  # type: ignore[arg-type,operator]
        raise InputError(
            "half_width",
            f"half_width must be a number above 0 and at most 1 (the interval's half-width, "
            f"in accuracy units), got {shown(half_width)}",
        )


def _z(confidence: float) -> float:
    """The two-sided normal quantile z_{1-(1-c)/2}."""
    return _NORMAL.inv_cdf(0.5 + confidence / 2.0)


def _too_many(field: str, needed: float, what: str) -> InputError:
    shown_n = f"{needed:,.0f}" if isfinite(needed) else "infinitely many"
    return InputError(
        field,
        f"{field}: {what} needs {shown_n} examples, more than the {MAX_EXAMPLES:,} this "
        "calculator sizes: a gain this small is beyond any evaluation set worth building",
        subject=field,
    )


def check_paired_table(accuracy: float, discordance: float, gain: float) -> None:
    """Raise InputError unless a paired table exists with the baseline's accuracy, the
    discordance psi and the gain delta: the examples only b gets right, q_b =
    (psi + delta) / 2, are among those a gets wrong (q_b <= 1 - accuracy), and those only
    a gets right, q_a = (psi - delta) / 2, among those a gets right (q_a <= accuracy)."""
    _check_unit("accuracy", accuracy, "the baseline's accuracy")
    _check_paired(discordance, gain)
    only_b, only_a = (discordance + gain) / 2.0, (discordance - gain) / 2.0
    tolerance = 1e-12  # the halves of typed decimals round
    if only_b > 1.0 - accuracy + tolerance:
        raise InputError(
            "discordance",
            f"discordance must be at most 2 (1 - accuracy) - gain = "
            f"{2.0 * (1.0 - accuracy) - gain:.6g}: b can be right alone only where the "
            f"baseline is wrong (accuracy {accuracy!r}), got {shown(discordance)}",
        )
    if only_a > accuracy + tolerance:
        raise InputError(
            "discordance",
            f"discordance must be at most 2 accuracy + gain = {2.0 * accuracy + gain:.6g}: "
            f"a can be right alone only where it is right (accuracy {accuracy!r}), "
            f"got {shown(discordance)}",
        )


# --- One accuracy.


def accuracy_standard_error(accuracy: float, examples: int) -> float:
    """Standard error of an accuracy p measured on n independent examples:
    SE = sqrt(p (1 - p) / n), which lies in [0, 0.5 / sqrt(n)] (largest at p = 0.5).

    Assumes the examples are independent draws from the population the claim is about
    (the binomial model); examples that share a source (one user, one document) are
    correlated and make the true SE larger.
    """
    _check_unit("accuracy", accuracy, "a share of the examples")
    _check_examples("examples", examples)
    return sqrt(accuracy * (1.0 - accuracy) / examples)


def wilson_interval(
    accuracy: float, examples: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Wilson's score interval (Wilson 1927) of an accuracy p on n examples:

        centre = (p + z^2 / 2n) / (1 + z^2 / n)
        half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)

    with z the two-sided normal quantile of `confidence`. Unlike the Wald interval
    p +- z SE, it stays inside [0, 1] and does not collapse to a point at p = 0 or 1.
    Same binomial assumption as `accuracy_standard_error`.
    """
    _check_unit("accuracy", accuracy, "a share of the examples")
    _check_examples("examples", examples)
    _check_level("confidence", confidence, *CONFIDENCE_RANGE, "the interval's level")
    z = _z(confidence)
    z2n = z * z / examples
    centre = (accuracy + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * sqrt(accuracy * (1.0 - accuracy) / examples + z2n / (4.0 * examples))
    return max(0.0, centre - half), min(1.0, centre + half)


def accuracy_examples_for_half_width(
    accuracy: float, half_width: float, confidence: float = 0.95
) -> int:
    """The smallest n whose normal-approximation interval of an accuracy p has half-width
    at most h: n = ceil(z^2 p (1 - p) / h^2), at least 1. A planning figure: the Wilson
    interval at that n is about as wide where n p (1 - p) is large (say above 10)."""
    _check_unit("accuracy", accuracy, "a share of the examples")
    _check_half_width(half_width)
    _check_level("confidence", confidence, *CONFIDENCE_RANGE, "the interval's level")
    z = _z(confidence)
    needed = z * z * accuracy * (1.0 - accuracy) / (half_width * half_width)
    if needed > MAX_EXAMPLES:
        raise _too_many("half_width", needed, "an interval this narrow")
    return max(1, ceil(needed))


# --- A paired difference of two accuracies.


def paired_difference_standard_error(discordance: float, gain: float, examples: int) -> float:
    """Standard error of the difference of two accuracies measured on the same n
    examples: d = (n_b - n_a) / n, with n_b, n_a the examples only b, only a gets right,

        SE(d) = sqrt((psi - delta^2) / n),

    psi the discordance and delta the gain (the multinomial variance of q_b - q_a; the
    estimate plugs in the observed (b + c) / n and d). Paired, it depends on the
    disagreement only: two models that err on the same examples have a small psi and a
    precise difference even when each accuracy alone is uncertain. Assumes independent
    examples (see `accuracy_standard_error`). Source: Connor (1987), eq. 1's variance.
    """
    _check_paired(discordance, gain)
    _check_examples("examples", examples)
    return sqrt(max(0.0, discordance - gain * gain) / examples)


def paired_difference_examples_for_half_width(
    discordance: float, gain: float, half_width: float, confidence: float = 0.95
) -> int:
    """The smallest n for which the normal-approximation interval of the paired
    difference, d +- z SE(d), has half-width at most h: n = ceil(z^2 (psi - delta^2) / h^2),
    at least 1. It falls as h grows, as 1 / h^2."""
    _check_paired(discordance, gain)
    _check_half_width(half_width)
    _check_level("confidence", confidence, *CONFIDENCE_RANGE, "the interval's level")
    z = _z(confidence)
    needed = z * z * (discordance - gain * gain) / (half_width * half_width)
    if needed > MAX_EXAMPLES:
        raise _too_many("half_width", needed, "an interval this narrow")
    return max(1, ceil(needed))


# --- McNemar's test: power and sample size.


# Stirling's series for log(n!) - log(sqrt(2 pi n) (n/e)^n) (Loader 2000, `stirlerr`).
_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
_HALF_LOG_2PI = 0.5 * log(2.0 * pi)


def _stirling_error(n: float) -> float:
    if n <= 15.0:  # lgamma is small here, so this difference keeps its digits
        return lgamma(n + 1.0) - (n + 0.5) * log(n) + n - _HALF_LOG_2PI
    nn = n * n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


def _deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x, summed as a series where x is near the mean (Loader's
    `bd0`), where the plain form would cancel."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total = (x - mean) * v
        term = 2.0 * x * v
        j = 1
        while True:
            term *= v * v
            step = total + term / (2 * j + 1)
            if step == total:
                return total
            total = step
            j += 1
    return x * log(x / mean) + mean - x


def _pmf(k: int, m: int, p: float) -> float:
    """P(X = k), X ~ Binomial(m, p), by Loader's saddle-point form (C. Loader, "Fast and
    accurate computation of binomial probabilities", 2000; R's dbinom): relative error
    near 1e-15 at any m, where exp(lgamma(...) - ...) loses about m * 1e-16 of it."""
    if k < 0 or k > m:
        return 0.0
    if p <= 0.0 or p >= 1.0:
        return 1.0 if k == (0 if p <= 0.0 else m) else 0.0
    q = 1.0 - p
    if k == 0:
        return exp(m * log1p(-p))
    if k == m:
        return exp(m * log(p))
    log_c = (
        _stirling_error(m)
        - _stirling_error(k)
        - _stirling_error(m - k)
        - _deviance(k, m * p)
        - _deviance(m - k, m * q)
    )
    log_f = 2.0 * _HALF_LOG_2PI + log(k) + log1p(-k / m)
    return exp(log_c - 0.5 * log_f)


def _lower_tail(k: int, m: int, p: float) -> float:
    """P(X <= k), X ~ Binomial(m, p), for k at or below the mean m p: summed downward from
    k, each term from the last by the pmf's ratio, until terms no longer change the sum."""
    if k < 0:
        return 0.0
    if k >= m or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    first = _pmf(k, m, p)
    total, term, ratio_qp = 0.0, first, (1.0 - p) / p
    j = k
    while j >= 0 and term > 0.0:
        total += term
        if term < _NEGLIGIBLE * total:
            break
        term *= j / (m - j + 1) * ratio_qp  # pmf(j - 1) / pmf(j)
        j -= 1
    return min(1.0, total)


def _cdf(k: int, m: int, p: float) -> float:
    """P(X <= k), summed on whichever side of the mean holds the smaller tail."""
    if k < 0:
        return 0.0
    if k >= m:
        return 1.0
    if k <= m * p:
        return _lower_tail(k, m, p)
    return max(0.0, 1.0 - _lower_tail(m - k - 1, m, 1.0 - p))  # 1 - P(m - X <= m - k - 1)


class _Tails:
    """P(X <= k) for X ~ Binomial(m, p), carried from m to m + 1 and from k to k + 1 in
    O(1) each (P(X_{m+1} <= k) = P(X_m <= k) - p P(X_m = k); adding P(X = k + 1)), so
    that a sum over every m in a window costs a few log-gammas per m. Each step adds
    about one rounding of a probability, so the absolute error stays near 1e-16 times
    the steps."""

    def __init__(self, k: int, m: int, p: float) -> None:
        self.p = p
        self.value = _cdf(k, m, p)

    def next_m(self, k: int, m: int) -> None:  # m -> m + 1, k fixed
        self.value = max(0.0, self.value - self.p * _pmf(k, m, self.p))

    def next_k(self, k: int, m: int) -> None:  # k -> k + 1, m fixed
        self.value = min(1.0, self.value + _pmf(k + 1, m, self.p))


def _critical(m: int, half_alpha: float) -> int:
    """The largest k with P(X <= k) <= alpha / 2 under X ~ Binomial(m, 1/2) (-1 if none):
    the exact conditional test rejects when min(x, m - x) <= k."""
    guess = int(m / 2.0 + _NORMAL.inv_cdf(half_alpha) * sqrt(m) / 2.0)
    k = max(-1, min(guess, (m - 1) // 2))
    while k >= 0 and _lower_tail(k, m, 0.5) > half_alpha:
        k -= 1
    while 2 * (k + 1) < m and _lower_tail(k + 1, m, 0.5) <= half_alpha:
        k += 1
    return k


def mcnemar_power_exact(
    examples: int, discordance: float, gain: float, alpha: float = 0.05
) -> float:
    """Power of the two-sided exact conditional McNemar test at level alpha, on n paired
    examples with discordance psi and gain delta (the unconditional power of the
    conditional test, as in Fagerland, Lydersen and Laake 2013 and SAS PROC POWER's
    DIST=EXACT_COND):

        power = sum_m P(M = m) P(reject | m),   M ~ Binomial(n, psi),
        P(reject | m) = P(X <= k_m) + P(X >= m - k_m),  X ~ Binomial(m, pi),
        pi = (psi + delta) / (2 psi)  (the chance a disagreement favours b),

    k_m the largest k with P(Binomial(m, 1/2) <= k) <= alpha / 2: the test rejects when
    the smaller discordant count is at most k_m (the two-sided exact binomial test of
    b against b + c at 1/2). Rejections in either direction count, as in R's and SAS's
    two-sided power. Only m within 8 sd of n psi are summed (the rest holds about
    1e-15 of the mass). Assumes independent examples. The exact test is conservative
    (its true level is below alpha), and its power is not monotone in n: it saw-tooths
    as k_m steps (Fagerland et al. 2013).

    Up to EXACT_MAX_EXAMPLES examples; `mcnemar_power` switches to the normal
    approximation above.
    """
    _check_examples("examples", examples)
    _check_paired(discordance, gain)
    _check_alpha(alpha)
    if examples > EXACT_MAX_EXAMPLES:
        raise InputError(
            "examples",
            f"examples must be at most {EXACT_MAX_EXAMPLES:,} for the exact power (above, "
            f"use the normal approximation), got {examples:,}",
        )
    favour_b = (discordance + gain) / (2.0 * discordance)
    mean = examples * discordance
    spread = _SPREAD * sqrt(examples * discordance * (1.0 - discordance)) + 1.0
    low, high = max(0, int(mean - spread)), min(examples, int(mean + spread) + 1)
    half_alpha = alpha / 2.0
    k = _critical(low, half_alpha)
    # P(X <= k) under 1/2 (the test's level), under pi (b's way) and 1 - pi (a's way).
    tails = [_Tails(k, low, p) for p in (0.5, favour_b, 1.0 - favour_b)]
    null, b_way, a_way = tails
    power = 0.0
    for m in range(low, high + 1):
        if m > low:
            for t in tails:
                t.next_m(k, m - 1)
            while 2 * (k + 1) < m and null.value + _pmf(k + 1, m, 0.5) <= half_alpha:
                for t in tails:
                    t.next_k(k, m)
                k += 1
        if k >= 0:
            power += _pmf(m, examples, discordance) * min(1.0, b_way.value + a_way.value)
    return min(1.0, power)


def mcnemar_power_normal(
    examples: int, discordance: float, gain: float, alpha: float = 0.05
) -> float:
    """Connor's (1987, p. 209) normal approximation of McNemar's two-sided power:

        power = Phi((|delta| sqrt(n) - z sqrt(psi)) / sqrt(psi - delta^2))
              + Phi((-|delta| sqrt(n) - z sqrt(psi)) / sqrt(psi - delta^2)),

    z = z_{1-alpha/2}; the second term (rejecting in the wrong direction) is tiny. It
    is the power of the uncorrected McNemar chi-square test, monotone in n; monotone in
    |delta| once n >= z^2 psi (its derivative in delta has the sign of sqrt(n) psi -
    z sqrt(psi) |delta|), so from 4 examples at alpha 0.05. Below that no test has power
    worth computing, and the approximation is not meant for it.
    """
    _check_examples("examples", examples)
    _check_paired(discordance, gain)
    _check_alpha(alpha)
    z = _NORMAL.inv_cdf(1.0 - alpha / 2.0)
    spread = sqrt(max(0.0, discordance - gain * gain))
    shift = abs(gain) * sqrt(examples)
    bar = z * sqrt(discordance)
    if spread == 0.0:  # psi = |delta| = 1: every example goes b's way (or a's)
        return 1.0 if shift > bar else 0.0
    # normal_cdf, not NormalDist.cdf: the C library's erf differs in the last digit
    # between CPython's glibc and the browser's Pyodide
    return normal_cdf((shift - bar) / spread) + normal_cdf((-shift - bar) / spread)


def mcnemar_power(
    examples: int, discordance: float, gain: float, alpha: float = 0.05, method: str = "exact"
) -> tuple[float, str]:
    """(power, method used): the exact conditional power up to EXACT_MAX_EXAMPLES
    examples when `method` is 'exact', else Connor's normal approximation."""
    if method not in ("exact", "normal"):
        raise InputError("method", f"method must be 'exact' or 'normal', got {shown(method)}")
    if method == "exact" and is_real(examples) and examples <= EXACT_MAX_EXAMPLES:  # type: ignore[operator]
        return mcnemar_power_exact(examples, discordance, gain, alpha), "exact"
    return mcnemar_power_normal(examples, discordance, gain, alpha), "normal"


def _connor_real(discordance: float, gain: float, alpha: float, power: float) -> float:
    z_a = _NORMAL.inv_cdf(1.0 - alpha / 2.0)
    z_b = _NORMAL.inv_cdf(power)
    root = z_a * sqrt(discordance) + z_b * sqrt(max(0.0, discordance - gain * gain))
    return (root / gain) ** 2


def connor_examples(
    discordance: float, gain: float, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Connor's (1987, p. 209) sample size for McNemar's two-sided test:

        n = ceil( (z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2 ).

    It leaves out the tiny chance of rejecting in the wrong direction, so its n reaches
    the target power by the normal approximation (`mcnemar_power_normal`)."""
    _check_paired(discordance, gain)
    _check_gain_nonzero(gain)
    _check_alpha(alpha)
    _check_power(power, alpha)
    needed = _connor_real(discordance, gain, alpha, power)
    if needed > MAX_EXAMPLES:
        raise _too_many("gain", needed, "a gain this small")
    return max(1, ceil(needed))


def examples_for_power(
    discordance: float, gain: float, alpha: float = 0.05, power: float = 0.8, method: str = "exact"
) -> tuple[int, str]:
    """(n, method used): the smallest n at which McNemar's test reaches the target power.

    'normal': Connor's n (`connor_examples`). 'exact': a search on the exact
    conditional power: a bracket [lo, hi] around Connor's n with power(lo) < target <=
    power(hi), narrowed by regula falsi steps alternating with bisections until
    hi = lo + 1; hi is returned, so power(n) >= target > power(n - 1). The exact power
    saw-tooths in n when nearly every example is discordant (see `mcnemar_power_exact`),
    so a smaller n may also reach the target there, and a slightly larger one dip a
    little below it: the returned n is a crossing of the target, not a promise for every
    larger n. Where the needed n passes EXACT_MAX_EXAMPLES, Connor's n is
    returned with method 'normal'. A gain needing more than MAX_EXAMPLES is refused.
    """
    if method not in ("exact", "normal"):
        raise InputError("method", f"method must be 'exact' or 'normal', got {shown(method)}")
    normal = connor_examples(discordance, gain, alpha, power)
    if method == "normal" or normal > EXACT_MAX_EXAMPLES:
        return normal, "normal"

    def power_at(n: int) -> float:
        return mcnemar_power_exact(n, discordance, gain, alpha)

    # Bracket the answer near Connor's n (the exact test is conservative, so its n is
    # usually a few percent above), widening by 5% steps, then doubling.
    lo, hi = 0, normal
    p_lo, p_hi = 0.0, power_at(hi)
    grow = 0.05
    while p_hi < power:
        if hi >= EXACT_MAX_EXAMPLES:
            return normal, "normal"
        lo, p_lo = hi, p_hi
        hi = min(EXACT_MAX_EXAMPLES, ceil(hi * (1.0 + grow)) + 8)
        p_hi = power_at(hi)
        grow = min(1.0, grow * 2.0)
    if lo == 0 and hi > 16:
        below = max(1, int(hi * 0.95) - 8)
        p_below = power_at(below)
        if p_below < power:
            lo, p_lo = below, p_below
        else:
            hi, p_hi = below, p_below  # rare: the bracket then stays [0, below]
    # Regula falsi on the power (smooth in n once a few dozen examples are discordant),
    # every other step a bisection, so the bracket shrinks at least by half every two.
    interpolate = True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if interpolate and p_hi > p_lo:
            guess = lo + (power - p_lo) * (hi - lo) / (p_hi - p_lo)
            mid = min(hi - 1, max(lo + 1, round(guess)))
        interpolate = not interpolate
        p_mid = power_at(mid)
        if p_mid >= power:
            hi, p_hi = mid, p_mid
        else:
            lo, p_lo = mid, p_mid
    return hi, "exact"


# --- Two independent sets, for contrast.


def unpaired_examples(accuracy: float, gain: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Examples per set to detect a gain between two accuracies measured on two
    different, independent sets (the two-sample test of proportions, without continuity
    correction; Fleiss, Levin and Paik 2003, section 4.2, as R's `power.prop.test`):

        n = ceil( (z_{1-alpha/2} sqrt(2 pbar (1 - pbar)) + z_{power} sqrt(p1 q1 + p2 q2))^2
                  / delta^2 ),

    p1 = accuracy, p2 = p1 + delta, pbar = (p1 + p2) / 2. Without pairing, every
    example's own difficulty adds to the noise: it is the n a paired design saves.
    """
    _check_unit("accuracy", accuracy, "the baseline's accuracy")
    if not is_real(gain) or not isfinite(gain) or gain == 0:  # type: ignore[arg-type]
        raise InputError("gain", f"gain must be a number other than 0, got {shown(gain)}")
    other = accuracy + gain
    if not 0.0 <= other <= 1.0:
        raise InputError(
            "gain",
            f"gain must keep accuracy + gain within [0, 1] (accuracy {accuracy!r}), "
            f"got {shown(gain)}",
        )
    _check_alpha(alpha)
    _check_power(power, alpha)
    z_a = _NORMAL.inv_cdf(1.0 - alpha / 2.0)
    z_b = _NORMAL.inv_cdf(power)
    mean = (accuracy + other) / 2.0
    root = z_a * sqrt(2.0 * mean * (1.0 - mean)) + z_b * sqrt(
        accuracy * (1.0 - accuracy) + other * (1.0 - other)
    )
    needed = (root / gain) ** 2
    if needed > MAX_EXAMPLES:
        raise _too_many("gain", needed, "a gain this small, unpaired,")
    return max(1, ceil(needed))
