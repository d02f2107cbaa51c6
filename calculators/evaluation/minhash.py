"""MinHash signatures by one-permutation hashing with optimal densification, LSH banding,
and the choice of bands and rows from a similarity threshold.

MinHash (Broder 1997, "On the resemblance and containment of documents"): for a random
hash function h, the element of a set with the smallest h is shared by two sets A and B
with probability J(A, B) = |A ∩ B| / |A ∪ B|, their Jaccard similarity.

One-permutation hashing (Li, Owen and Zhang, NeurIPS 2012, "One permutation hashing"):
instead of k hash functions, hash each element once and split the hash range into k bins
(bin = h mod k, value = h div k); the signature is the smallest value in each bin. It costs
one hash per element instead of k. A bin that holds no element of a set is empty; texts of
about 60 words have about 56 shingles, so with k = 128 most bins are empty.

Densification fills each empty bin from a non-empty one. `signature` uses the optimal
densification of Shrivastava (ICML 2017, "Optimal densification for fast and accurate
minwise hashing"): an empty bin j probes bins in a sequence drawn by a hash of
(j, attempt) until it meets a non-empty bin, and copies that bin's value. That paper shows
two sets then agree in bin j with probability exactly J, with a variance close to that of
k independent MinHashes, where the rotation of Shrivastava and Li (ICML 2014, "Densifying
one permutation hashing via rotation") is worse for sparse sets. The sequence here is, for
each bin, a fixed pseudo-random order of all k bins (`probe_order`): the order in which a
sequence drawn with replacement first visits the bins is a uniformly random permutation,
so the first non-empty bin of a random permutation is the same draw, and it is found
within k probes (k^2 steps at worst, for a one-element set; Mai et al., UAI 2019, PMLR 115,
"On densification for minwise hashing", discuss that worst case).

Why the agreement probability is J, in short: let U = A ∪ B. Bin j of A and of B agree
exactly when the bin that j ends up reading (j itself if U has an element there, else the
first bin of its order where U has one) has its smallest element in A ∩ B: a bin holding
elements of only one of the sets gives that set a value the other cannot match. Which bin
is read depends only on which bins are empty; given how many elements of U each bin holds,
which elements they are is a uniform draw, so the smallest is in A ∩ B with probability J.

LSH banding (Leskovec, Rajaraman and Ullman, "Mining of Massive Datasets", 3rd ed.,
section 3.4): cut the signature into b bands of r rows; two sets become a candidate pair
when they agree on every row of at least one band, which for independent rows happens with
probability 1 - (1 - s^r)^b at similarity s (`candidate_probability`), an S-curve in s.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from hashlib import blake2b

# Signature length: datasketch's default num_perm, and enough bands at every threshold.
HASHES = 128
# The recall the banding is chosen for at the threshold: a pair exactly at the threshold
# becomes a candidate with at least this probability (more similar pairs: more likely).
RECALL_TARGET = 0.99
# Simpson's rule intervals for the false-positive area (even).
_SIMPSON_STEPS = 256


def candidate_probability(s: float, bands: int, rows: int) -> float:
    """P(candidate) = 1 - (1 - s^rows)^bands: the probability that two sets of Jaccard
    similarity s agree on every row of at least one of `bands` bands of `rows` rows,
    rows independent (Leskovec, Rajaraman and Ullman, section 3.4.2)."""
    if not 0.0 <= s <= 1.0:
        raise ValueError(f"s must be in [0, 1], got {s!r}")
    if bands < 1 or rows < 1:
        raise ValueError(f"bands and rows must be at least 1, got {bands} and {rows}")
    return 1.0 - (1.0 - s**rows) ** bands


def false_positive_area(threshold: float, bands: int, rows: int) -> float:
    """The integral of P(candidate) over similarities 0 to `threshold` (Simpson's rule):
    datasketch's measure of the candidates below the threshold, which here only cost
    time (each is confirmed by its exact Jaccard and dropped)."""
    step = threshold / _SIMPSON_STEPS
    total = candidate_probability(0.0, bands, rows) + candidate_probability(threshold, bands, rows)
    for i in range(1, _SIMPSON_STEPS):
        total += (4 if i % 2 else 2) * candidate_probability(i * step, bands, rows)
    return total * step / 3


def bands_and_rows(
    threshold: float, hashes: int = HASHES, recall: float = RECALL_TARGET
) -> tuple[int, int]:
    """(bands, rows) with bands x rows <= `hashes` for a similarity threshold.

    The rule: a pair at the threshold must become a candidate with probability at least
    `recall` (pairs above it then do too: the curve rises with s); among the (b, r) that
    do, the one with the least false-positive area below the threshold (fewest wasted
    confirmations). For a given r both the probability and the area grow with b, so the
    smallest b that reaches `recall` is the only one to weigh. Where no (b, r) reaches
    `recall` (thresholds below about 0.035 with 128 hashes), the one with the highest
    probability at the threshold. Unlike datasketch's MinHashLSH, which weighs false
    positives and false negatives equally, this rule favours recall: every candidate is
    confirmed by its exact Jaccard, so a false positive costs time, never a wrong report.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    best: tuple[float, int, int] | None = None
    fallback: tuple[float, int, int] | None = None
    for rows in range(1, hashes + 1):
        most = hashes // rows
        p_most = candidate_probability(threshold, most, rows)
        if fallback is None or p_most > fallback[0]:
            fallback = (p_most, most, rows)
        if p_most < recall:
            continue
        bands = _fewest_bands(threshold, rows, most, recall)
        area = false_positive_area(threshold, bands, rows)
        if best is None or area < best[0]:
            best = (area, bands, rows)
    chosen = best if best is not None else fallback
    assert chosen is not None  # rows = 1 is always tried
    return chosen[1], chosen[2]


def _fewest_bands(threshold: float, rows: int, most: int, recall: float) -> int:
    """The smallest b <= most with candidate_probability(threshold, b, rows) >= recall
    (the probability grows with b, and b = most reaches it)."""
    lo, hi = 1, most
    while lo < hi:
        mid = (lo + hi) // 2
        if candidate_probability(threshold, mid, rows) >= recall:
            hi = mid
        else:
            lo = mid + 1
    return lo


@cache
def probe_order(bins: int) -> tuple[tuple[int, ...], ...]:
    """For each bin j, a fixed pseudo-random order of all `bins` bins: the bins an empty
    bin j probes, in turn, for a value to copy. Sorted by BLAKE2b of (j, i), so that it
    is the same in every process and platform."""

    def key(j: int, i: int) -> bytes:
        return blake2b(f"{j}:{i}".encode(), digest_size=8).digest()

    return tuple(tuple(sorted(range(bins), key=lambda i, j=j: key(j, i))) for j in range(bins))


def signature(hashes: Sequence[int], bins: int) -> list[int]:
    """The densified one-permutation MinHash signature of a set given its elements'
    hashes (uniform in [0, 2^61 - 1); repeats allowed): `bins` values.

    Bin of an element: h mod bins; its value: h div bins; a bin's value is the smallest
    of its elements'. Each empty bin then copies the value of the first non-empty bin in
    its `probe_order` (optimal densification; see the module). An empty `hashes` is
    refused: a set with no element has no MinHash (every text has at least one shingle).
    """
    if not hashes:
        raise ValueError("hashes: a set needs at least one element to have a signature")
    empty = -1
    mins = [empty] * bins
    for h in hashes:
        b = h % bins
        v = h // bins
        m = mins[b]
        if m == empty or v < m:
            mins[b] = v
    if empty not in mins:
        return mins
    out = list(mins)
    orders = probe_order(bins)
    for j, m in enumerate(mins):
        if m == empty:
            for src in orders[j]:
                v = mins[src]
                if v != empty:
                    out[j] = v
                    break
    return out


def band_keys(sig: Sequence[int], bands: int, rows: int) -> list[tuple[int, ...]]:
    """The signature cut into `bands` bands of `rows` values: the keys under which LSH
    files a set, one table per band. The keys are the values themselves (tuples), so two
    sets share a bucket only when their band agrees exactly."""
    if bands * rows > len(sig):
        raise ValueError(f"{bands} bands of {rows} rows need {bands * rows} values, got {len(sig)}")
    return [tuple(sig[i * rows : (i + 1) * rows]) for i in range(bands)]
