"""The sampling calculator: hand-worked cases for both orders, invariants, bad input, and
agreement with transformers' own logits processors (where torch and transformers are
installed; the Pyodide run skips those tests)."""

from __future__ import annotations

import re
import warnings
from itertools import pairwise
from math import exp, fsum, inf, isclose, log, sqrt

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.generation.sampling import (
    LLAMA_CPP,
    ORDER_STAGES,
    ORDERS,
    TRANSFORMERS,
    NextTokenLogits,
    SamplingSettings,
    entropy_bits,
    min_p_filtered_logits,
    penalized_tokens,
    repetition_penalized_logits,
    sampling_distribution,
    softmax,
    top_k_filtered_logits,
    top_p_filtered_logits,
)
from calculators.limits import MAX_SAMPLING_LOGITS


def distribution(logits, previous=(), **settings):
    return sampling_distribution(
        NextTokenLogits(logits=tuple(logits), previous=tuple(previous)),
        SamplingSettings(**settings),
    )


# ---- hand-worked cases -----------------------------------------------------------------


def test_softmax_by_hand():
    # weights exp(x - max): e^-ln3 = 1/3 and 1, so 1/4 and 3/4
    p = softmax([0.0, log(3.0)])
    assert p[0] == pytest.approx(0.25, abs=1e-15) and p[1] == pytest.approx(0.75, abs=1e-15)
    # equal logits: exactly 1/4 each, and a filtered token exactly 0
    assert softmax([5.0, 5.0, 5.0, 5.0, -inf]) == (0.25, 0.25, 0.25, 0.25, 0.0)
    # logits near the float limit do not overflow: only differences count
    assert softmax([1e6, 1e6 - log(3.0)])[0] == pytest.approx(0.75, abs=1e-9)


def test_entropy_by_hand():
    assert entropy_bits([0.25] * 4) == 2.0  # log2 4
    assert entropy_bits([1.0, 0.0]) == 0.0
    # -(0.5 log2 0.5 + 2 x 0.25 log2 0.25) = 0.5 + 1
    assert entropy_bits([0.5, 0.25, 0.25]) == 1.5


def test_repetition_penalty_is_ctrl_with_the_sign_fix():
    # previous ids 0, 1, 2 and 1 again: each penalised once; r = 2
    #   token 0: 2.0 > 0 is divided  -> 1.0
    #   token 1: -1.0 < 0 is multiplied -> -2.0 (once, though it occurred twice)
    #   token 2: 0.0 stays 0.0; token 3 was not seen: 3.0 unchanged
    x = (2.0, -1.0, 0.0, 3.0)
    assert repetition_penalized_logits(x, [0, 1, 2, 1], 2.0) == (1.0, -2.0, 0.0, 3.0)
    r = distribution(x, [0, 1, 2, 1], repetition_penalty=2.0)
    assert r.stage("repetition_penalty").logits == (1.0, -2.0, 0.0, 3.0)
    assert r.penalized == (0, 1, 2)
    # a penalty below 1 rewards: 2.0 / 0.5 = 4.0, -1.0 x 0.5 = -0.5
    assert repetition_penalized_logits(x, [0, 1], 0.5) == (4.0, -0.5, 0.0, 3.0)


def test_llama_cpp_penalises_only_the_last_n_tokens():
    previous = [0, 1, 2, 1]
    s = SamplingSettings(repetition_penalty=1.5, order=LLAMA_CPP, penalty_last_n=2)
    # the last two ids are 2 and 1: token 0 (first) is outside the window
    assert penalized_tokens(previous, s) == (1, 2)
    off = SamplingSettings(repetition_penalty=1.5, order=LLAMA_CPP, penalty_last_n=0)
    assert penalized_tokens(previous, off) == ()
    # transformers reads every previous id
    assert penalized_tokens(previous, SamplingSettings(repetition_penalty=1.5)) == (0, 1, 2)
    r = distribution([3.0, 3.0, 3.0], previous, repetition_penalty=1.5, order=LLAMA_CPP)
    # the default window, 64, holds all four: 3 / 1.5 = 2 for all three tokens
    assert r.stage("repetition_penalty").logits == (2.0, 2.0, 2.0)
    r = distribution([3.0, 3.0, 3.0], previous, repetition_penalty=1.5, order=LLAMA_CPP,
                     penalty_last_n=0)  # fmt: skip
    assert not r.stage("repetition_penalty").enabled
    assert r.probabilities == pytest.approx((1 / 3, 1 / 3, 1 / 3), abs=1e-15)


def test_top_k_ties_transformers_keeps_them_llama_cpp_does_not():
    x = (3.0, 2.0, 2.0, 1.0)
    # k = 2: the 2nd largest logit is 2.0; transformers keeps every x >= 2.0: three tokens
    assert top_k_filtered_logits(x, 2, TRANSFORMERS) == (3.0, 2.0, 2.0, -inf)
    # llama.cpp keeps exactly two: token 0 and, of the tied 1 and 2, the lower id
    assert top_k_filtered_logits(x, 2, LLAMA_CPP) == (3.0, 2.0, -inf, -inf)
    r = distribution(x, top_k=2)
    # softmax over 3, 2, 2: e / (e + 2), 1 / (e + 2) each
    e = exp(1.0)
    assert r.probabilities == pytest.approx((e / (e + 2), 1 / (e + 2), 1 / (e + 2), 0.0))
    assert r.probabilities[3] == 0.0 and r.kept == 3
    # k past the vocabulary keeps everything; greedy is top-k 1
    assert top_k_filtered_logits(x, 10, TRANSFORMERS) == x
    assert distribution(x, top_k=1).probabilities == (1.0, 0.0, 0.0, 0.0)


def test_top_p_by_hand_in_both_libraries():
    # p = 0.6, 0.3, 0.1 from logits ln 6, ln 3, ln 1
    x = (log(6.0), log(3.0), 0.0)
    # transformers, P = 0.85: ascending running sums 0.1, 0.4; 0.1 <= 1 - 0.85 = 0.15 is
    # removed, 0.4 is not: tokens 0 and 1 stay
    assert top_p_filtered_logits(x, 0.85, TRANSFORMERS)[2] == -inf
    # llama.cpp: descending sums 0.6, 0.9 >= 0.85 at the second: the same two stay
    assert top_p_filtered_logits(x, 0.85, LLAMA_CPP) == (x[0], x[1], -inf)
    # P = 0.5: transformers removes 0.1 and 0.4 (<= 0.5); llama.cpp stops at 0.6 >= 0.5
    for order in ORDERS:
        assert top_p_filtered_logits(x, 0.5, order) == (x[0], -inf, -inf)
    # four equal tokens (0.25 each), P = 0.5: sums reach 0.5 at two tokens exactly; both
    # keep two, the lower ids (the libraries' sorts leave the choice among ties open)
    for order in ORDERS:
        assert top_p_filtered_logits((0.0,) * 4, 0.5, order) == (0.0, 0.0, -inf, -inf)


def test_min_p_by_hand_in_both_libraries():
    # p_i / p_max = exp(x_i - 2): 1, e^-1 = 0.368, e^-2 = 0.135; M = 0.2 removes the last
    x = (2.0, 1.0, 0.0)
    for order in ORDERS:
        assert min_p_filtered_logits(x, 0.2, order) == (2.0, 1.0, -inf)
    # M = 1 keeps the most probable and its ties only
    for order in ORDERS:
        assert min_p_filtered_logits((1.0, 1.0, 0.5), 1.0, order) == (1.0, 1.0, -inf)


def test_the_two_orders_differ_by_hand():
    # p = 0.6, 0.3, 0.1; temperature 2 flattens, top-p 0.85 and min-p 0.4 filter
    x = (log(6.0), log(3.0), 0.0)
    common = dict(temperature=2.0, top_p=0.85, min_p=0.4)
    # llama.cpp filters first, on 0.6, 0.3, 0.1: top-p keeps tokens 0 and 1 (0.6 + 0.3 >=
    # 0.85); min-p 0.4 x 0.6 = 0.24 keeps both; then T = 2 takes the square root of the
    # weights: sqrt 6 and sqrt 3, so sqrt 2 / (sqrt 2 + 1) and 1 / (sqrt 2 + 1)
    ll = distribution(x, order=LLAMA_CPP, **common)
    assert ll.probabilities == pytest.approx(
        (sqrt(2) / (sqrt(2) + 1), 1 / (sqrt(2) + 1), 0.0), abs=1e-15
    )
    assert [s.kept for s in ll.stages] == [3, 3, 3, 2, 2, 2]
    # transformers scales first: weights sqrt 6, sqrt 3, 1 (sum 5.181): 0.473, 0.334, 0.193;
    # top-p removes sums <= 0.15: the first, 0.193, is above, so all three stay; min-p's bound
    # is 0.4 x 0.473 = 0.189 < 0.193: all three stay
    hf = distribution(x, **common)
    total = sqrt(6) + sqrt(3) + 1
    assert hf.probabilities == pytest.approx((sqrt(6) / total, sqrt(3) / total, 1 / total))
    assert hf.kept == 3
    assert [s.id for s in hf.stages[1:]] == list(ORDER_STAGES[TRANSFORMERS])
    assert [s.id for s in ll.stages[1:]] == list(ORDER_STAGES[LLAMA_CPP])


def test_disabled_stages_pass_the_logits_through():
    x = (1.0, -2.0, 0.5)
    r = distribution(x)
    assert [s.enabled for s in r.stages] == [True, False, False, False, False, False]
    assert all(s.logits == x for s in r.stages)
    assert r.probabilities == softmax(x)


# ---- invariants ------------------------------------------------------------------------

LOGITS = st.lists(
    st.one_of(
        st.floats(-30, 30, allow_nan=False),
        st.integers(-8, 8).map(float),  # ties
    ),
    min_size=1,
    max_size=40,
)


@st.composite
def cases(draw):
    logits = draw(LOGITS)
    n = len(logits)
    previous = draw(st.lists(st.integers(0, n - 1), max_size=10))
    s = SamplingSettings(
        temperature=draw(st.one_of(st.just(1.0), st.floats(0.05, 5.0))),
        top_k=draw(st.integers(0, n + 2)),
        top_p=draw(st.one_of(st.just(1.0), st.floats(0.01, 1.0))),
        min_p=draw(st.one_of(st.just(0.0), st.floats(0.0, 1.0))),
        repetition_penalty=draw(st.one_of(st.just(1.0), st.floats(0.5, 2.0))),
        penalty_last_n=draw(st.integers(0, 12)),
        order=draw(st.sampled_from(ORDERS)),
    )
    return logits, previous, s


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_every_distribution_is_a_distribution(case):
    logits, previous, s = case
    r = sampling_distribution(NextTokenLogits(logits=tuple(logits), previous=tuple(previous)), s)
    assert len(r.stages) == 6
    for stage in r.stages:
        p = stage.probabilities
        assert abs(fsum(p) - 1.0) <= 1e-12
        # a filtered token has probability exactly 0
        assert all(q == 0.0 for q, v in zip(p, stage.logits, strict=True) if v == -inf)
        assert stage.kept == sum(v != -inf for v in stage.logits) >= 1
        assert 0.0 <= stage.entropy_bits <= max(0.0, log(stage.kept, 2)) + 1e-9
    # a filter never brings a token back
    for before, after in pairwise(r.stages):
        assert all(
            not (a != -inf and b == -inf) for b, a in zip(before.logits, after.logits, strict=True)
        )
    # no stage after the penalty removes the most probable token (lowest id among ties)
    x = r.stage("repetition_penalty").logits
    best = min(range(len(x)), key=lambda i: (-x[i], i))
    assert r.probabilities[best] == max(r.probabilities) > 0


@settings(max_examples=100, deadline=None)
@given(case=cases())
def test_the_orders_agree_without_temperature_and_ties(case):
    """Without temperature, and without tied logits, both orders filter the same set: their
    tests are the same mathematically (top-p: removed where the ascending sum <= 1 - P is
    kept where the descending sum before it < P; min-p in probabilities or logits); only
    top-k differs, on ties."""
    logits, _previous, s = case
    assume(len(set(logits)) == len(logits))
    base = dict(top_k=s.top_k, top_p=s.top_p, min_p=s.min_p, penalty_last_n=64)
    a = distribution(logits, **base)
    b = distribution(logits, order=LLAMA_CPP, **base)
    # a token on a top-p or min-p threshold to rounding may fall either way
    p = a.stage("top_k").probabilities
    order = sorted(p, reverse=True)
    sums = [fsum(order[: j + 1]) for j in range(len(order))]
    assume(s.top_p == 1 or all(abs(c - s.top_p) > 1e-9 for c in sums))
    q = a.stage("top_p").probabilities
    assume(s.min_p == 0 or all(abs(v - s.min_p * max(q)) > 1e-12 for v in q))
    assert a.kept == b.kept
    assert a.probabilities == pytest.approx(b.probabilities, abs=1e-12)


# ---- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings_kw", "field", "words"),
    [
        ({"temperature": 0.0}, "temperature", "set top_k to 1"),
        ({"temperature": -1.0}, "temperature", "above 0"),
        ({"temperature": inf}, "temperature", "from 1e-06 to 1e+06"),
        ({"top_k": -1}, "top_k", "from 0 (off)"),
        ({"top_k": 2.5}, "top_k", "whole number"),
        ({"top_p": 0.0}, "top_p", "above 0 and at most 1"),
        ({"top_p": 1.5}, "top_p", "got 1.5"),
        ({"min_p": -0.1}, "min_p", "from 0 to 1"),
        ({"min_p": 2.0}, "min_p", "got 2.0"),
        ({"repetition_penalty": 0.0}, "repetition_penalty", "from 1e-06"),
        ({"penalty_last_n": -1}, "penalty_last_n", "from 0"),
        ({"order": "vllm"}, "order", "transformers, llama.cpp"),
    ],
)
def test_bad_settings_name_their_field(settings_kw, field, words):
    with pytest.raises(InputError, match=re.escape(words)) as e:
        SamplingSettings(**settings_kw)
    assert e.value.field == field
    assert str(e.value).startswith(field)


@pytest.mark.parametrize(
    ("logits", "previous", "field", "words"),
    [
        ((), (), "logits", "1 to 262,144 numbers"),
        ((1.0, float("nan")), (), "logits", "token 1 is nan"),
        ((1.0, inf), (), "logits", "token 1 is inf"),
        ((1.0, 2e6), (), "logits", "magnitude at most 1e"),
        ((1.0, 2.0), (2,), "previous", "from 0 to 1"),
        ((1.0, 2.0), (-1,), "previous", "got -1"),
    ],
)
def test_bad_logits_and_ids_name_their_field(logits, previous, field, words):
    with pytest.raises(InputError, match=re.escape(words)) as e:
        NextTokenLogits(logits=logits, previous=previous)
    assert e.value.field == field


def test_too_many_logits_are_refused_with_the_bound():
    with pytest.raises(InputError, match="262,144") as e:
        NextTokenLogits(logits=(0.0,) * (MAX_SAMPLING_LOGITS + 1))
    assert e.value.field == "logits"


# ---- against transformers' own processors (CPython with torch and transformers) ----------


@pytest.fixture(scope="module")
def hf():
    """torch and transformers' logits processors; the tests skip where they are absent (the
    Pyodide run, a machine without the probes extra)."""
    torch = pytest.importorskip("torch", reason="compares with transformers, which needs torch")
    with warnings.catch_warnings():  # a library's import-time warnings are not ours
        warnings.simplefilter("ignore")
        transformers = pytest.importorskip("transformers")
        from transformers.generation import logits_process
        from transformers.generation.utils import GenerationMixin
    return torch, transformers, logits_process, GenerationMixin


def test_transformers_applies_the_stages_in_the_documented_order(hf):
    _torch, transformers, lp, mixin = hf

    class Model(mixin):  # what _get_logits_processor reads of a model: its config
        def __init__(self):
            self.config = transformers.PretrainedConfig()

    config = transformers.GenerationConfig(
        do_sample=True, temperature=0.7, top_k=5, top_p=0.9, min_p=0.1, repetition_penalty=1.2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        processors = Model()._get_logits_processor(generation_config=config, input_ids_seq_length=3)
    stage_of = {
        lp.RepetitionPenaltyLogitsProcessor: "repetition_penalty",
        lp.TemperatureLogitsWarper: "temperature",
        lp.TopKLogitsWarper: "top_k",
        lp.TopPLogitsWarper: "top_p",
        lp.MinPLogitsWarper: "min_p",
    }
    assert [stage_of[type(p)] for p in processors] == list(ORDER_STAGES[TRANSFORMERS])


def _on_threshold(r, s) -> bool:
    """Whether a token sits on the top-p or min-p threshold to within rounding, where
    float64 sums in another order may decide the other way."""
    p = r.stage("top_k").probabilities
    ascending = sorted(p)
    sums = [fsum(ascending[: j + 1]) for j in range(len(p))]
    if s.top_p < 1 and any(isclose(c, 1 - s.top_p, rel_tol=1e-9, abs_tol=1e-12) for c in sums):
        return True
    q = r.stage("top_p").probabilities
    return s.min_p > 0 and any(isclose(v, s.min_p * max(q), rel_tol=1e-9) for v in q)


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_every_stage_matches_transformers_processors(hf, case):
    torch, _transformers, lp, _mixin = hf
    logits, previous, s = case
    s = SamplingSettings(**{**vars(s), "order": TRANSFORMERS})
    r = sampling_distribution(NextTokenLogits(logits=tuple(logits), previous=tuple(previous)), s)
    assume(not _on_threshold(r, s))
    # the processors _get_logits_processor appends for these settings, in float64
    processors = {
        "repetition_penalty": lp.RepetitionPenaltyLogitsProcessor(float(s.repetition_penalty))
        if s.repetition_penalty != 1.0 and previous
        else None,
        "temperature": lp.TemperatureLogitsWarper(float(s.temperature))
        if s.temperature != 1.0
        else None,
        "top_k": lp.TopKLogitsWarper(s.top_k) if s.top_k != 0 else None,
        "top_p": lp.TopPLogitsWarper(s.top_p) if s.top_p < 1.0 else None,
        "min_p": lp.MinPLogitsWarper(s.min_p),
    }
    # top-p is the only stage whose choice among tied logits is open (torch.sort's)
    x = r.stage("top_k").logits
    tied = {i for i, v in enumerate(x) if x.count(v) > 1} if s.top_p < 1 else set()
    ids = torch.tensor([previous or [0]], dtype=torch.long)
    scores = torch.tensor([logits], dtype=torch.float64)
    for stage in r.stages[1:]:
        processor = processors[stage.id]
        if processor is not None:
            scores = processor(ids, scores)
        theirs = scores[0].tolist()
        kept = [v != -inf for v in theirs]
        assert kept.count(True) == stage.kept, stage.id
        # which of several tied tokens top-p drops is torch.sort's choice: compare the
        # kept logits as sorted values, and each token's where its logit is not tied
        ours = stage.logits
        assert sorted(v for v in theirs if v != -inf) == pytest.approx(
            sorted(v for v in ours if v != -inf), rel=1e-15, abs=0
        ), stage.id
        for i, v in enumerate(ours):
            if i not in tied or stage.id in ("repetition_penalty", "temperature", "top_k"):
                assert theirs[i] == pytest.approx(v, rel=1e-15, abs=0), (stage.id, i)
    probabilities = torch.softmax(scores, dim=-1)[0].tolist()
    assert sorted(probabilities) == pytest.approx(sorted(r.probabilities), abs=1e-12)
