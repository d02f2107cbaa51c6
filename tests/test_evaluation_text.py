"""Text as the leakage audit sees it: normalisation, words, shingles, n-grams, Jaccard and
the deterministic hashes (calculators.evaluation.text)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.evaluation.text import (
    BASE,
    EMPTY_SHINGLE,
    PRIME,
    WordHashes,
    jaccard,
    ngrams,
    normalise,
    plain_words,
    shingle_hashes,
    shingles,
    word_hash,
    words,
)

ROOT = Path(__file__).resolve().parents[1]


# ---- normalisation -------------------------------------------------------------------------


def test_normalise_folds_compatibility_forms_case_and_whitespace():
    # Full-width "ＡＢＣ" (U+FF21..) is "ABC" under NFKC; the ligature "ﬁ" (U+FB01) is "fi";
    # casefold maps "ß" to "ss" (Unicode CaseFolding.txt, 00DF; F); \t and \n are whitespace.
    assert normalise("  Straße\tＡＢＣ \n ﬁne  ") == "strasse abc fine"
    assert normalise("STRASSE abc FINE") == normalise("Straße ＡＢＣ ﬁne")


def test_normalise_renormalises_after_case_folding():
    # U+0130 (I with dot above) folds to "i" + U+0307 (combining dot), which NFKC leaves as
    # two code points; the point is that folding then NFKC is stable: applying it twice
    # changes nothing.
    once = normalise("İstanbul Ω K")  # Ohm sign U+2126 and Kelvin sign U+212A
    assert normalise(once) == once
    assert once.startswith("i\u0307stanbul")
    assert once.endswith("ω k")  # NFKC maps the Ohm and Kelvin signs to omega and K


@given(st.text(max_size=60))
def test_normalise_is_idempotent_and_has_no_runs_of_space(text):
    once = normalise(text)
    assert normalise(once) == once
    assert "  " not in once
    assert once == once.strip()


def test_empty_and_blank_texts_normalise_to_empty():
    assert normalise("") == ""
    assert normalise(" \t\n ") == ""
    assert words("") == []


# ---- words, shingles, n-grams -----------------------------------------------------------------


def test_words_keep_punctuation_plain_words_drop_it():
    text = normalise("Don't stop: state-of-the-art, OK?! — fine")
    assert words(text) == ["don't", "stop:", "state-of-the-art,", "ok?!", "—", "fine"]
    # a "word" that is only punctuation disappears from the plain words
    assert plain_words(text) == ["dont", "stop", "stateoftheart", "ok", "fine"]


def test_shingles_by_hand():
    tokens = ["a", "b", "c", "d"]
    assert shingles(tokens, 2) == {"a b", "b c", "c d"}
    assert shingles(tokens, 4) == {"a b c d"}
    # shorter than k: one shingle, the whole text; the empty text too
    assert shingles(tokens, 5) == {"a b c d"}
    assert shingles([], 3) == {""}
    # repeats collapse: a set
    assert shingles(["x", "x", "x"], 1) == {"x"}


def test_ngrams_by_hand():
    assert list(ngrams(["a", "b", "c"], 2)) == ["a b", "b c"]
    assert list(ngrams(["a", "b", "c"], 3)) == ["a b c"]
    assert list(ngrams(["a", "b"], 3)) == []  # shorter than n: no n-gram


@pytest.mark.parametrize("bad", [0, -1])
def test_lengths_below_one_are_refused(bad):
    with pytest.raises(ValueError, match="at least 1"):
        shingles(["a"], bad)
    with pytest.raises(ValueError, match="at least 1"):
        list(ngrams(["a"], bad))


def test_jaccard_by_hand():
    # {a b, b c, c d} and {b c, c d, d e}: 2 shared of 4 in all
    a = shingles(["a", "b", "c", "d"], 2)
    b = shingles(["b", "c", "d", "e"], 2)
    assert jaccard(a, b) == 2 / 4
    assert jaccard(a, a) == 1.0
    assert jaccard(a, frozenset({"x"})) == 0.0
    assert jaccard(frozenset(), frozenset()) == 1.0


# ---- hashes ---------------------------------------------------------------------------------


def test_word_hash_is_reduced_blake2b():
    from hashlib import blake2b

    digest = blake2b("naïve".encode(), digest_size=8).digest()
    assert word_hash("naïve") == int.from_bytes(digest, "big") % PRIME
    assert 0 <= word_hash("x") < PRIME


def test_word_hash_takes_lone_surrogates():
    # json.loads('"\\ud800"') gives a lone surrogate, which strict UTF-8 refuses to encode
    assert word_hash("\ud800") != word_hash("\ud801")


def test_word_hash_table_caches():
    table = WordHashes()
    assert list(map(table.__getitem__, ["a", "b", "a"])) == [
        word_hash("a"),
        word_hash("b"),
        word_hash("a"),
    ]
    assert len(table) == 2


def _direct(hashes, k):
    """The polynomial written out, shingle by shingle (no rolling)."""
    if not hashes:
        return [EMPTY_SHINGLE]
    if len(hashes) <= k:
        windows = [hashes]
    else:
        windows = [hashes[i : i + k] for i in range(len(hashes) - k + 1)]
    out = []
    for window in windows:
        h = 0
        for w in window:
            h = (h * BASE + w) % PRIME
        out.append(h)
    return out


def test_shingle_hashes_by_hand():
    # k = 2 over word hashes 1, 2, 3: (1*B + 2) and (2*B + 3), mod the prime
    assert shingle_hashes([1, 2, 3], 2) == [(BASE + 2) % PRIME, (2 * BASE + 3) % PRIME]
    assert shingle_hashes([7], 5) == [7]
    assert shingle_hashes([], 5) == [EMPTY_SHINGLE]


@given(
    st.lists(st.integers(min_value=0, max_value=PRIME - 1), max_size=40),
    st.integers(min_value=1, max_value=12),
)
def test_rolling_equals_the_polynomial(hashes, k):
    assert shingle_hashes(hashes, k) == _direct(hashes, k)


@given(st.lists(st.sampled_from("abcdefg"), max_size=30), st.integers(min_value=1, max_value=6))
def test_one_hash_per_distinct_shingle(tokens, k):
    # same shingle -> same hash, and (no collision among a few dozen 61-bit values) distinct
    # shingles -> distinct hashes: the hash set mirrors the shingle set
    table = WordHashes()
    hashes = shingle_hashes(list(map(table.__getitem__, tokens)), k)
    assert len(set(hashes)) == len(shingles(tokens, k))


@pytest.mark.skipif(sys.platform == "emscripten", reason="no subprocesses in Pyodide")
def test_hashes_do_not_depend_on_the_process_hash_seed():
    # Python's hash() of a str changes with PYTHONHASHSEED; the audit's hashes must not.
    code = (
        "from calculators.evaluation.text import WordHashes, shingle_hashes\n"
        "t = WordHashes()\n"
        "print(shingle_hashes(list(map(t.__getitem__, 'the cat sat on the mat'.split())), 3))"
    )
    outputs = set()
    for seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1
