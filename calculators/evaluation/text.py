"""Text as the leakage audit compares it: normalised, cut into words, shingles and n-grams,
and hashed the same way in every process.

Normalisation (`normalise`): Unicode NFKC (compatibility forms folded: full-width
letters, ligatures, superscripts), case folding (`str.casefold`, Unicode's full case
folding: "Straße" and "STRASSE" agree), NFKC again (case folding can undo normalisation,
which is why the Unicode Standard's compatibility caseless match, section 3.13,
definition D145, normalises after folding), then every run of whitespace replaced by one
space and the ends stripped. Two texts are exact duplicates when their normalised forms are
equal.

Two word lists, each for the check that defines it:

- `words`: the normalised text split at spaces; punctuation stays attached ("end." is a
  word). The near-duplicate check shingles these, so equal normalised texts always have
  equal shingle sets (an exact duplicate is a near duplicate at Jaccard 1).
- `plain_words`: the same with every character that is neither a word character nor
  whitespace removed first ("don't" -> "dont", "state-of-the-art" -> "stateoftheart"),
  which is how GPT-3's contamination study defined a word: lower-cased, split at
  whitespace, punctuation dropped (Brown et al. 2020, "Language Models are Few-Shot
  Learners", appendix C). The n-gram check uses
  these.

Hashing: Python's `hash()` of a str is salted per process (PYTHONHASHSEED), so it would
give another MinHash signature on every run. `word_hash` is BLAKE2b (hashlib, in every
Python and in Pyodide) with an 8-byte digest, reduced modulo the Mersenne prime 2^61 - 1;
a shingle's hash is a polynomial in its words' hashes modulo that prime (`shingle_hashes`),
rolled along the text so that each shingle costs a few integer operations, not a BLAKE2b
call. Two different shingles differ, for some word, in the polynomial (coefficients -1, 0
or 1) that gives that word's weight; unless the fixed BASE is one of its at most k - 1
roots, the two hashes collide with probability 1/(2^61 - 1) over the word hashes (the
argument of Carter and Wegman 1979 for linear hashing modulo a prime). A collision can
only add or drop a MinHash candidate: every reported similarity is computed on the
shingles themselves (`shingles`, `jaccard`), never on hashes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from hashlib import blake2b

# The Mersenne prime 2^61 - 1: 61 bits keep collisions out of reach (see the module).
PRIME = (1 << 61) - 1
# The polynomial's base: a fixed residue (any value in [2, PRIME - 2] serves; the word
# hashes carry the randomness). This one is BLAKE2b-64 of b"kernodeck-shingle" mod PRIME.
BASE = int.from_bytes(blake2b(b"kernodeck-shingle", digest_size=8).digest(), "big") % PRIME
# The hash of the shingle of a text with no words (an empty text is one, empty, shingle).
EMPTY_SHINGLE = int.from_bytes(blake2b(b"", digest_size=8).digest(), "big") % PRIME

_SPACE = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[^\w\s]+")


def normalise(text: str) -> str:
    """`text` with Unicode NFKC, case folding and NFKC again, whitespace runs collapsed
    to one space and the ends stripped (see the module's docstring for why each)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return _SPACE.sub(" ", folded).strip()


def words(normalised: str) -> list[str]:
    """The words of a normalised text: split at spaces, punctuation kept."""
    return normalised.split()


def plain_words(normalised: str) -> list[str]:
    """The words of a normalised text with punctuation and symbols removed (characters
    neither word characters nor whitespace, as GPT-3's appendix C ignored them); a word
    that was only punctuation disappears."""
    return _NOT_WORD.sub("", normalised).split()


def shingles(tokens: Sequence[str], k: int) -> frozenset[str]:
    """The set of word k-shingles (k consecutive words, joined by one space) of `tokens`;
    a text of fewer than k words, the empty text included, is one shingle: all of it."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if len(tokens) <= k:
        return frozenset((" ".join(tokens),))
    return frozenset(" ".join(tokens[i : i + k]) for i in range(len(tokens) - k + 1))


def ngrams(tokens: Sequence[str], n: int) -> Iterator[str]:
    """Every word n-gram of `tokens`, in order, joined by one space (repeats included);
    nothing for a text of fewer than n words."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    for i in range(len(tokens) - n + 1):
        yield " ".join(tokens[i : i + n])


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 1.0 for two empty sets (they are equal)."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def word_hash(word: str) -> int:
    """BLAKE2b-64 of the word's UTF-8 bytes, modulo 2^61 - 1. Lone surrogates (which JSON
    allows) are encoded as they are ("surrogatepass") rather than refused."""
    digest = blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % PRIME


class WordHashes(dict[str, int]):
    """word -> `word_hash(word)`, each computed once: `table[word]` hashes on a miss, and
    `map(table.__getitem__, words)` runs in C for every word seen before."""

    def __missing__(self, word: str) -> int:
        value = self[word] = word_hash(word)
        return value


def shingle_hashes(hashes: Sequence[int], k: int) -> list[int]:
    """The hash of each word k-shingle, given the words' hashes, in text order.

    h(w_i .. w_{i+k-1}) = sum_j w_{i+j} * BASE^(k-1-j) mod (2^61 - 1), rolled from one
    shingle to the next (take the first word out, multiply by BASE, add the new one). A
    text of fewer than k words is one shingle, hashed by the same polynomial over all of
    its words; the empty text's one shingle hashes to EMPTY_SHINGLE.
    """
    n = len(hashes)
    if n == 0:
        return [EMPTY_SHINGLE]
    p, base = PRIME, BASE
    h = 0
    for w in hashes[: min(k, n)]:
        h = (h * base + w) % p
    out = [h]
    if n <= k:
        return out
    top = pow(base, k - 1, p)  # the first word's coefficient, taken out as the window moves
    append = out.append
    for old, new in zip(hashes[: n - k], hashes[k:], strict=True):  # words i and i + k
        h = ((h - old * top) * base + new) % p
        append(h)
    return out
