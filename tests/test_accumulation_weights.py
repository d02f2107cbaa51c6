"""Per-token loss weights of accumulated micro-batches (calculators.training.accumulation_weights)
and the `batch` calculator's --micro-batch-tokens.

Expected values are worked by hand in the comments. The token counts 11 and 101 are the
sample lengths of transformers issue #24725; 10 and 100 are its loss-carrying tokens (the
first token of each sample is not trained), for which the issue states that a token of
the short sample gets ten times the gradient weight of one of the long sample.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import FrozenInstanceError
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.cli import main
from calculators.commands import CALCULATORS
from calculators.errors import InputError
from calculators.training.accumulation_weights import (
    MAX_LISTED_MICRO_BATCHES,
    UpdateTokens,
    accumulation_weights,
    all_reduced_tokens,
    gradient_all_reduces,
)
from calculators.training.batch import mean_of_means_bias, micro_batch_weights


def _update(rows, slots=1_000_000):
    return UpdateTokens(
        micro_batch_tokens=tuple(tuple(r) for r in rows),
        gpus=len(rows),
        accumulation=len(rows[0]),
        slots_per_micro_batch=slots,
    )


# --- hand-checked examples -------------------------------------------------------------


def test_issue_24725_lengths_on_one_gpu():
    # N = 11 + 101 = 112, G = 1, k = 2.
    w = accumulation_weights(_update([[11, 101]]))
    short, long = w.micro_batches
    assert w.all_reduced_tokens == 112
    assert w.tokens_per_gpu == (112,)
    # token sum: 1/112 for every token
    assert short.token_sum_denominator == long.token_sum_denominator == 112
    assert short.token_sum_weight == long.token_sum_weight == 1 / 112
    # mean of means: 1 / (k n) = 1/22 and 1/202
    assert (short.mean_of_means_denominator, long.mean_of_means_denominator) == (22, 202)
    assert short.mean_of_means_weight == 1 / 22
    assert long.mean_of_means_weight == 1 / 202
    # a short micro-batch's token against a long one's: 202 / 22 = 101 / 11
    assert w.spread == 101 / 11
    assert short.mean_of_means_weight / long.mean_of_means_weight == pytest.approx(101 / 11)
    # bias against the token sum: 112/22 and 112/202
    assert short.weight_ratio == 112 / 22
    assert long.weight_ratio == 112 / 202
    # shares: 11/112 and 101/112 under the token sum, 1/2 each under the mean of means
    assert (short.token_sum_share, long.token_sum_share) == (11 / 112, 101 / 112)
    assert short.mean_of_means_share == long.mean_of_means_share == 0.5
    # one GPU: no all-reduce, and the per-GPU token sum is the token sum
    assert short.rank_token_sum_denominator == 112
    assert (w.all_reduces_with_no_sync, w.all_reduces_without_no_sync) == (0, 0)
    assert (short.rank, short.step, long.rank, long.step) == (0, 0, 0, 1)
    assert (short.id, long.id) == ("gpu0-step0", "gpu0-step1")


def test_issue_24725_loss_tokens_give_ten_times():
    # 10 and 100 loss-carrying tokens: 1/20 against 1/200, the issue's "10 times".
    w = accumulation_weights(_update([[10, 100]]))
    assert w.spread == 10
    assert [m.mean_of_means_denominator for m in w.micro_batches] == [20, 200]
    assert [m.token_sum_denominator for m in w.micro_batches] == [110, 110]


def test_two_gpus_all_reduced_count():
    # GPU 0: 11, 101 (N_0 = 112); GPU 1: 60, 60 (N_1 = 120); N = 232; G k = 4.
    w = accumulation_weights(_update([[11, 101], [60, 60]]))
    assert w.tokens_per_gpu == (112, 120)
    assert w.all_reduced_tokens == 232
    assert [m.token_sum_denominator for m in w.micro_batches] == [232] * 4
    # mean of means: 4 n = 44, 404, 240, 240
    assert [m.mean_of_means_denominator for m in w.micro_batches] == [44, 404, 240, 240]
    # per-GPU token sum (count not all-reduced): G N_g = 224, 224, 240, 240
    assert [m.rank_token_sum_denominator for m in w.micro_batches] == [224, 224, 240, 240]
    assert [m.id for m in w.micro_batches] == [
        "gpu0-step0",
        "gpu0-step1",
        "gpu1-step0",
        "gpu1-step1",
    ]
    # no_sync on the first k - 1 = 1 micro-batch: 1 all-reduce per update instead of 2
    assert (w.all_reduces_with_no_sync, w.all_reduces_without_no_sync) == (1, 2)


def test_gradient_all_reduces():
    assert gradient_all_reduces(1, 8, no_sync=True) == 0
    assert gradient_all_reduces(1, 8, no_sync=False) == 0
    assert gradient_all_reduces(8, 8, no_sync=True) == 1
    assert gradient_all_reduces(8, 8, no_sync=False) == 8
    assert gradient_all_reduces(8, 1, no_sync=True) == 1
    with pytest.raises(InputError, match="gpus must be a positive integer, got 0"):
        gradient_all_reduces(0, 1, no_sync=True)


def test_agrees_with_batch_micro_batch_weights():
    # the flat list of calculators.training.batch gives the same weights with K = G k
    rows = [[11, 101, 7], [60, 60, 3]]
    w = accumulation_weights(_update(rows))
    flat = micro_batch_weights([n for r in rows for n in r])
    assert [m.token_sum_weight for m in w.micro_batches] == pytest.approx(flat.token_mean)
    assert [m.mean_of_means_weight for m in w.micro_batches] == pytest.approx(flat.mean_of_means)


def test_shares_give_the_two_losses_of_mean_of_means_bias():
    # mean_of_means_bias: 100 and 300 tokens, mean losses 2.0 and 1.0 -> 1.25 and 1.5
    w = accumulation_weights(_update([[100, 300]]))
    losses = (2.0, 1.0)
    bias = mean_of_means_bias([100, 300], losses)
    token = sum(m.token_sum_share * x for m, x in zip(w.micro_batches, losses, strict=True))
    means = sum(m.mean_of_means_share * x for m, x in zip(w.micro_batches, losses, strict=True))
    assert (token, means) == (bias.token_mean_loss, bias.mean_of_means_loss) == (1.25, 1.5)


def test_frozen_and_keyword_only():
    u = _update([[1, 2]])
    with pytest.raises(FrozenInstanceError):
        u.gpus = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        UpdateTokens(((1, 2),), 1, 2, 10)  # type: ignore[misc]
    assert all_reduced_tokens(u) == 3


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "gpus", "accumulation", "slots", "message"),
    [
        (((11, 101),), 2, 2, 200, r"one line per GPU \(gpus = 2\), got 1 line: '11,101'"),
        (((11, 101),), 1, 3, 200, r"accumulation = 3\) on each GPU, got 2 on GPU 0: '11,101'"),
        (((11, 0),), 1, 2, 200, "at least 1 token per micro-batch .* got 0 on GPU 0, step"),
        (((-4, 2),), 1, 2, 200, "at least 1 token .* got -4 on GPU 0, step 0"),
        (((True, 2),), 1, 2, 200, "at least 1 token .* got True"),
        (((11, 101),), 1, 2, 100, "at most micro_batch x seq_len = 100 .* got 101 on GPU 0"),
        ([[11, 101]], 1, 2, 200, "must be a tuple of tuples"),
        (
            ((1,) * (MAX_LISTED_MICRO_BATCHES + 1),),
            1,
            MAX_LISTED_MICRO_BATCHES + 1,
            10,
            "at most 4,096 micro-batches in all, got 4,097",
        ),
    ],
)
def test_update_tokens_rejects(rows, gpus, accumulation, slots, message):
    with pytest.raises(InputError, match=message) as e:
        UpdateTokens(
            micro_batch_tokens=rows,
            gpus=gpus,
            accumulation=accumulation,
            slots_per_micro_batch=slots,
        )
    assert e.value.field == "micro_batch_tokens"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


_BASE = ("batch", "--micro-batch", "1", "--seq-len", "128", "--accumulation", "2")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            ("--micro-batch-tokens", "11,x"),
            "--micro-batch-tokens must be comma-separated whole numbers, one line per GPU, "
            "got '11,x'",
        ),
        (
            ("--micro-batch-tokens", "0,5"),
            "--micro-batch-tokens must be at least 1 token per micro-batch (a mean over no "
            "tokens is undefined), got 0 on GPU 0, step 0",
        ),
        (
            ("--micro-batch-tokens", "-3,5"),
            "--micro-batch-tokens must be at least 1 token per micro-batch (a mean over no "
            "tokens is undefined), got -3 on GPU 0, step 0",
        ),
        (
            ("--micro-batch-tokens", "11,200"),
            "--micro-batch-tokens must be at most micro_batch x seq_len = 128 tokens per "
            "micro-batch, got 200 on GPU 0, step 1",
        ),
        (
            ("--micro-batch-tokens", "11,101,5"),
            "--micro-batch-tokens must list one micro-batch per accumulation step "
            "(accumulation = 2) on each GPU, got 3 on GPU 0: '11,101,5'",
        ),
        (
            ("--micro-batch-tokens", "11,101", "--micro-batch-tokens", "3,4"),
            "--micro-batch-tokens must hold one line per GPU (gpus = 1), got 2 lines: "
            "'11,101 | 3,4'",
        ),
        (
            ("--micro-batch-tokens", ",".join(["1"] * 5000)),
            "--micro-batch-tokens must list at most 4,096 micro-batches in all, got 5,000",
        ),
    ],
)
def test_cli_rejects_in_one_line(extra, expected):
    status, out, err = _cli(*_BASE, *extra)
    assert (status, out) == (2, "")
    assert err == f"error: {expected}\n"


# --- the batch command -----------------------------------------------------------------


def test_cli_json_adds_the_weights_only_when_asked(capsys):
    plain = json.loads(_cli(*_BASE, "--json")[1])
    status, out, _ = _cli(*_BASE, "--micro-batch-tokens", "11, 101", "--json")
    data = json.loads(out)
    assert status == 0
    assert "accumulation_weights" not in plain
    assert {k: v for k, v in data.items() if k != "accumulation_weights"} == plain
    w = data["accumulation_weights"]
    assert (w["gpus"], w["accumulation"], w["all_reduced_tokens"]) == (1, 2, 112)
    assert w["tokens_per_gpu"] == [112]
    assert w["spread"] == 101 / 11
    short = w["micro_batches"][0]
    assert short["id"] == "gpu0-step0"
    assert (short["tokens"], short["mean_of_means_denominator"]) == (11, 22)
    assert short["token_sum_denominator"] == 112
    assert short["weight_ratio"] == 112 / 22


def test_cli_text_names_both_normalisations():
    status, out, _ = _cli(*_BASE, "--micro-batch-tokens", "11,101")
    assert status == 0
    assert "Token sum (loss / 112): every token weighs 1/112" in out
    assert "step 0, 11 tokens: 1/22, 5.09 x the token sum's weight" in out
    assert "step 1, 101 tokens: 1/202, 0.554 x the token sum's weight" in out
    assert "weighs 9.18 times one of the longest" in out
    assert "DDP" not in out  # one GPU: nothing is all-reduced


def test_cli_ddp_lines_and_no_sync():
    status, out, _ = _cli(
        "batch",
        *("--micro-batch", "2", "--seq-len", "128", "--accumulation", "2", "--gpus", "2"),
        *("--micro-batch-tokens", "11,101", "--micro-batch-tokens", "60,60"),
    )
    assert status == 0
    assert "232 in 4 micro-batches (all-reduced over 2 GPUs)" in out
    assert "summed token loss x 2 / 232" in out
    assert "1 gradient all-reduce per update instead of 2" in out


def test_page_html_draws_the_weights():
    calc = CALCULATORS["batch"]
    args = _namespace(gpus=2, micro_batch_tokens=["11,101", "60,60"], micro_batch=2)
    data, _ = calc.run(args)
    page = calc.html(data)
    assert page.count('<svg class="kd-chart') == 2  # the wide and the narrow drawing
    # 4 micro-batches x 3 normalisations, each bar named once in each drawing and
    # labelled with its exact weight
    labels = re.findall(r"<text[^>]*>([^<]*)<", page)
    for name in ("GPU 0, step 0, 11 tokens", "GPU 1, step 1, 60 tokens"):
        for kind in ("token sum", "mean of means", "per-GPU sum"):
            assert labels.count(f"{name}: {kind}") == 2
    assert labels.count("1/44") == labels.count("1/404") == 2
    assert labels.count("1/232") == 2 * 4
    assert labels.count("1/224") == 2 * 2
    assert "Weight of one token, per micro-batch" in page
    plain, _ = calc.run(_namespace())
    assert "<svg" not in calc.html(plain)


def test_page_chart_keeps_the_extremes_of_many_micro_batches():
    calc = CALCULATORS["batch"]
    row = ",".join(str(n) for n in range(10, 26))  # 16 micro-batches of 10 to 25 tokens
    data, text = calc.run(_namespace(accumulation=16, micro_batch_tokens=[row]))
    page = calc.html(data)
    assert "fewest and most tokens" in page
    assert "step 0, 10 tokens: token sum" in page and "step 15, 25 tokens: token sum" in page
    assert "step 7, 17 tokens: token sum" not in page  # in the table, not the chart
    assert "step 7, 17 tokens</td>" in page
    assert "step 7, 17 tokens" not in text


def _namespace(**given_values):
    from types import SimpleNamespace

    values = {
        **CALCULATORS["batch"].defaults(),
        "micro_batch": 1,
        "seq_len": 128,
        "accumulation": 2,
    }
    values.update(given_values)
    return SimpleNamespace(**values)


# --- invariants ------------------------------------------------------------------------

_counts = st.integers(min_value=1, max_value=10_000)


@st.composite
def _rows(draw):
    gpus = draw(st.integers(min_value=1, max_value=4))
    steps = draw(st.integers(min_value=1, max_value=6))
    return [draw(st.lists(_counts, min_size=steps, max_size=steps)) for _ in range(gpus)]


@given(_rows())
def test_each_normalisation_spreads_exactly_one(rows):
    # sum over micro-batches of n / denominator is exactly 1 under every normalisation
    w = accumulation_weights(_update(rows))
    for key in ("token_sum", "mean_of_means", "rank_token_sum"):
        total = sum(Fraction(m.tokens, getattr(m, f"{key}_denominator")) for m in w.micro_batches)
        assert total == 1, key
    assert sum(m.token_sum_share for m in w.micro_batches) == pytest.approx(1)
    assert sum(m.mean_of_means_share for m in w.micro_batches) == pytest.approx(1)


@given(
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=6),
    _counts,
)
def test_equal_counts_give_equal_weights(gpus, steps, n):
    w = accumulation_weights(_update([[n] * steps for _ in range(gpus)]))
    assert w.spread == 1
    for m in w.micro_batches:
        assert m.token_sum_denominator == m.mean_of_means_denominator
        assert m.rank_token_sum_denominator == m.token_sum_denominator
        assert m.weight_ratio == 1


@given(_rows())
def test_bias_is_n_over_gkn(rows):
    w = accumulation_weights(_update(rows))
    gk = len(rows) * len(rows[0])
    for m in w.micro_batches:
        assert m.weight_ratio == pytest.approx(w.all_reduced_tokens / (gk * m.tokens))
        # a micro-batch shorter than the average is over-weighted, a longer one under
        assert (m.weight_ratio > 1) == (m.tokens * gk < w.all_reduced_tokens)
    ns = [n for r in rows for n in r]
    assert w.spread == max(ns) / min(ns)


@given(st.lists(_counts, min_size=1, max_size=8))
def test_one_gpu_per_gpu_sum_is_the_token_sum(row):
    w = accumulation_weights(_update([row]))
    assert all(m.rank_token_sum_denominator == m.token_sum_denominator for m in w.micro_batches)
