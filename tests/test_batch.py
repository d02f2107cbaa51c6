"""Effective batch, accumulation, loss normalisation and learning-rate heuristics.

Expected values are worked by hand in the comments.
"""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.training.batch import (
    LIMITS,
    LR_SCALING_RULES,
    BatchQuery,
    BatchResult,
    LossBias,
    accumulation_for,
    effective_batch,
    mean_of_means_bias,
    micro_batch_weights,
    scaled_learning_rate,
    steps_per_epoch,
    updates_for_tokens,
)

# --- effective batch ------------------------------------------------------------------


def test_packed_batch():
    # 4 x 8 x 16 = 512 sequences; 512 x 4096 = 2,097,152 tokens (a 2M-token batch).
    result = effective_batch(BatchQuery(micro_batch=4, accumulation=8, gpus=16, seq_len=4096))
    assert result == BatchResult(
        sequences_per_update=512,
        sequences_per_gpu=32,
        tokens_per_update=2_097_152,
        slots_per_update=2_097_152,
        padding_per_update=0,
        padding_fraction=0.0,
        packing=True,
    )


def test_padded_batch():
    # 2 x 4 x 8 = 64 rows of 2048 slots = 131,072 slots; 64 x 1536 = 98,304 real tokens;
    # padding 32,768 = 1 - 1536 / 2048 = 0.25.
    q = BatchQuery(
        micro_batch=2,
        accumulation=4,
        gpus=8,
        seq_len=2048,
        packing=False,
        mean_sequence_tokens=1536,
    )
    result = effective_batch(q)
    assert result.sequences_per_update == 64
    assert result.tokens_per_update == 98_304
    assert result.slots_per_update == 131_072
    assert result.padding_per_update == 32_768
    assert result.padding_fraction == 0.25
    assert result.packing is False


def test_defaults_and_frozen():
    q = BatchQuery(micro_batch=3, seq_len=10)
    assert (q.accumulation, q.gpus, q.packing, q.mean_sequence_tokens) == (1, 1, True, None)
    assert effective_batch(q).tokens_per_update == 30
    with pytest.raises(FrozenInstanceError):
        q.micro_batch = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        BatchQuery(3, seq_len=10)  # type: ignore[misc]


def test_padded_full_rows_have_no_padding():
    q = BatchQuery(micro_batch=1, seq_len=512, packing=False, mean_sequence_tokens=512)
    assert effective_batch(q).padding_fraction == 0.0


@pytest.mark.parametrize("field", ["micro_batch", "accumulation", "gpus", "seq_len"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_query_rejects_non_positive(field, bad):
    kwargs = {"micro_batch": 1, "seq_len": 8, field: bad}
    with pytest.raises(
        ValueError, match=re.escape(f"{field} must be a positive integer, got {bad!r}")
    ):
        BatchQuery(**kwargs)


@pytest.mark.parametrize("bad", [1, 0, "yes", None])
def test_query_rejects_non_bool_packing(bad):
    with pytest.raises(ValueError, match=re.escape(f"packing must be True or False, got {bad!r}")):
        BatchQuery(micro_batch=1, seq_len=8, packing=bad)


def test_query_mean_tokens_rules():
    with pytest.raises(
        ValueError,
        match=r"mean_sequence_tokens applies only when packing is "
        r"False, got 5",
    ):
        BatchQuery(micro_batch=1, seq_len=8, mean_sequence_tokens=5)
    with pytest.raises(
        ValueError,
        match=r"mean_sequence_tokens is required when packing is "
        r"False, got None",
    ):
        BatchQuery(micro_batch=1, seq_len=8, packing=False)
    with pytest.raises(ValueError, match=r"mean_sequence_tokens must be a positive integer, got 0"):
        BatchQuery(micro_batch=1, seq_len=8, packing=False, mean_sequence_tokens=0)
    with pytest.raises(
        ValueError, match=r"mean_sequence_tokens must be at most seq_len \(8\), got 9"
    ):
        BatchQuery(micro_batch=1, seq_len=8, packing=False, mean_sequence_tokens=9)


# --- accumulation, steps, updates -----------------------------------------------------


def test_accumulation_for():
    # 96 / (3 x 4) = 8; 1024 / (4 x 8) = 32.
    assert accumulation_for(96, 3, 4) == 8
    assert accumulation_for(1024, micro_batch=4, gpus=8) == 32
    assert accumulation_for(12, 3, 4) == 1


def test_accumulation_for_names_nearest():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "global_batch 100 is not a multiple of micro_batch x gpus = 3 x 4 = 12; "
            "nearest: 96 or 108"
        ),
    ):
        accumulation_for(100, 3, 4)


def test_accumulation_for_below_one_unit():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "global_batch 5 is not a multiple of micro_batch x gpus = 3 x 4 = 12; nearest: 12"
        ),
    ):
        accumulation_for(5, 3, 4)


@pytest.mark.parametrize(
    ("args", "field", "bad"),
    [((0, 1, 1), "global_batch", 0), ((8, -2, 1), "micro_batch", -2), ((8, 1, 2.0), "gpus", 2.0)],
)
def test_accumulation_for_rejects(args, field, bad):
    with pytest.raises(
        ValueError, match=re.escape(f"{field} must be a positive integer, got {bad!r}")
    ):
        accumulation_for(*args)


def test_steps_per_epoch():
    # 1,000,000 / 512 = 1953.125: 1953 with drop_last, 1954 without.
    assert steps_per_epoch(1_000_000, 512) == 1953
    assert steps_per_epoch(1_000_000, 512, drop_last=False) == 1954
    assert steps_per_epoch(1024, 512) == steps_per_epoch(1024, 512, drop_last=False) == 2
    assert steps_per_epoch(100, 512) == 0
    assert steps_per_epoch(100, 512, drop_last=False) == 1


def test_steps_per_epoch_rejects():
    with pytest.raises(ValueError, match=r"dataset_sequences must be a positive integer, got 0"):
        steps_per_epoch(0, 1)
    with pytest.raises(
        ValueError, match=r"sequences_per_update must be a positive integer, got -1"
    ):
        steps_per_epoch(10, -1)
    with pytest.raises(ValueError, match=r"drop_last must be True or False, got 1"):
        steps_per_epoch(10, 1, drop_last=1)  # type: ignore[arg-type]


def test_updates_for_tokens():
    # 15T tokens at 2^22 = 4,194,304 tokens per update: 3,576,278.6 -> 3,576,279.
    assert updates_for_tokens(15 * 10**12, 4_194_304) == 3_576_279
    assert updates_for_tokens(4_194_304, 4_194_304) == 1
    assert updates_for_tokens(0, 10) == 0


def test_updates_for_tokens_rejects():
    with pytest.raises(ValueError, match=r"total_tokens must be a non-negative integer, got -5"):
        updates_for_tokens(-5, 10)
    with pytest.raises(ValueError, match=r"tokens_per_update must be a positive integer, got 0"):
        updates_for_tokens(10, 0)


# --- loss normalisation ---------------------------------------------------------------


def test_worked_example_bias():
    # 100 and 300 tokens, mean losses 2.0 and 1.0: token mean (200 + 300) / 400 = 1.25,
    # mean of means (2.0 + 1.0) / 2 = 1.5, bias +0.25.
    assert mean_of_means_bias([100, 300], [2.0, 1.0]) == LossBias(
        token_mean_loss=1.25, mean_of_means_loss=1.5, bias=0.25
    )


def test_bias_from_sequence_lengths():
    # Per-sequence lengths sum to the same 100 and 300 tokens.
    assert mean_of_means_bias([[60, 40], [100, 200]], [2.0, 1.0]).bias == 0.25


def test_worked_example_weights():
    w = micro_batch_weights([100, 300])
    assert w.tokens == (100, 300)
    assert w.token_mean == (1 / 400, 1 / 400)
    assert w.mean_of_means == (1 / 200, 1 / 600)  # 1 / (2 x 100), 1 / (2 x 300)
    assert w.token_mean_share == (0.25, 0.75)
    assert w.mean_of_means_share == (0.5, 0.5)


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([], "token_counts must hold at least one micro-batch, got []"),
        ("100", "token_counts must be a sequence of micro-batches, got '100'"),
        (100, "token_counts must be a sequence of micro-batches, got 100"),
        ([100, 0], "token_counts[1] must be a positive integer, got 0"),
        ([100, 2.5], "token_counts[1] must be a positive integer, got 2.5"),
        ([[0, 0]], "token_counts[0] must be a positive integer, got 0"),
        ([[5, -1]], "token_counts[0][1] must be a non-negative integer, got -1"),
    ],
)
def test_token_counts_rejected(counts, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        micro_batch_weights(counts)
    with pytest.raises(ValueError, match=re.escape(message)):
        mean_of_means_bias(counts, [1.0])


def test_mean_losses_rejected():
    with pytest.raises(
        ValueError, match=re.escape("mean_losses must have one entry per micro-batch (2), got 1")
    ):
        mean_of_means_bias([1, 2], [1.0])
    with pytest.raises(ValueError, match=re.escape("mean_losses must be a sequence of numbers")):
        mean_of_means_bias([1], 1.0)  # type: ignore[arg-type]
    for bad in (float("nan"), float("inf"), True, "1"):
        with pytest.raises(
            ValueError, match=re.escape(f"mean_losses[1] must be a finite number, got {bad!r}")
        ):
            mean_of_means_bias([1, 2], [1.0, bad])


# --- learning-rate heuristics ---------------------------------------------------------


def test_goyal_linear_rule():
    # Goyal et al. 2017: lr = 0.1 x k / 256; k = 8192 -> 0.1 x 32 = 3.2.
    result = scaled_learning_rate(0.1, 256, 8192, "linear")
    assert result.learning_rate == pytest.approx(3.2)
    assert result.factor == 32
    assert result.label == "heuristic"
    assert "arXiv:1706.02677" in result.source


def test_sqrt_rule():
    # 4x the batch -> 2x the learning rate: 3e-4 -> 6e-4.
    result = scaled_learning_rate(3e-4, 512, 2048, "sqrt")
    assert result.learning_rate == pytest.approx(6e-4)
    assert result.factor == 2
    assert "arXiv:1404.5997" in result.source
    assert "arXiv:2205.10287" in result.source


def test_rules_are_labelled_heuristics():
    assert set(LR_SCALING_RULES) == {"linear", "sqrt"}
    assert all(rule.label == "heuristic" for rule in LR_SCALING_RULES.values())
    assert LR_SCALING_RULES["linear"].exponent == 1.0
    assert LR_SCALING_RULES["sqrt"].exponent == 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, 256, 512, "linear"), "base_lr must be a positive number, got 0.0"),
        ((float("inf"), 256, 512, "linear"), "base_lr must be a positive number, got inf"),
        ((True, 256, 512, "linear"), "base_lr must be a positive number, got True"),
        ((0.1, 0, 512, "linear"), "base_batch must be a positive integer, got 0"),
        ((0.1, 256, -512, "linear"), "new_batch must be a positive integer, got -512"),
        ((0.1, 256, 512, "cubic"), "rule must be one of 'linear', 'sqrt'; got 'cubic'"),
    ],
)
def test_scaled_learning_rate_rejects(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        scaled_learning_rate(*args)


def test_limits_cover_the_known_gaps():
    text = " ".join(LIMITS).lower()
    for topic in ("batch norm", "dropout", "data order", "loss normalisation"):
        assert topic in text
    assert all(isinstance(line, str) and line for line in LIMITS)


# --- properties -----------------------------------------------------------------------

small = st.integers(min_value=1, max_value=64)
counts_st = st.lists(st.integers(min_value=1, max_value=10_000), min_size=1, max_size=16)


@given(micro=small, acc=small, gpus=small, seq_len=st.integers(1, 8192))
def test_sequences_is_the_product(micro, acc, gpus, seq_len):
    q = BatchQuery(micro_batch=micro, accumulation=acc, gpus=gpus, seq_len=seq_len)
    result = effective_batch(q)
    assert result.sequences_per_update == micro * acc * gpus
    assert result.tokens_per_update == micro * acc * gpus * seq_len
    assert accumulation_for(result.sequences_per_update, micro, gpus) == acc


@given(micro=small, acc=small, more=small, gpus=small, seq_len=st.integers(2, 8192), data=st.data())
def test_more_accumulation_never_lowers_tokens(micro, acc, more, gpus, seq_len, data):
    mean = data.draw(st.integers(1, seq_len))
    for packing in (True, False):
        extra = {} if packing else {"mean_sequence_tokens": mean}
        base = dict(micro_batch=micro, gpus=gpus, seq_len=seq_len, packing=packing, **extra)
        low = effective_batch(BatchQuery(accumulation=acc, **base))
        high = effective_batch(BatchQuery(accumulation=acc + more, **base))
        assert high.tokens_per_update >= low.tokens_per_update
        assert high.padding_fraction == pytest.approx(low.padding_fraction)
        assert 0 <= low.padding_fraction < 1


@given(counts=counts_st)
def test_weights_sum_to_one(counts):
    w = micro_batch_weights(counts)
    assert sum(w.token_mean_share) == pytest.approx(1)
    assert sum(w.mean_of_means_share) == pytest.approx(1)
    assert sum(n * x for n, x in zip(counts, w.token_mean, strict=True)) == pytest.approx(1)
    assert sum(n * x for n, x in zip(counts, w.mean_of_means, strict=True)) == pytest.approx(1)


@given(n=st.integers(1, 10_000), k=st.integers(1, 16), data=st.data())
def test_bias_zero_for_equal_counts(n, k, data):
    losses = data.draw(st.lists(st.floats(0, 20), min_size=k, max_size=k))
    result = mean_of_means_bias([n] * k, losses)
    assert result.bias == pytest.approx(0, abs=1e-12)
    w = micro_batch_weights([n] * k)
    assert w.token_mean == pytest.approx(w.mean_of_means)


@given(counts=counts_st, loss=st.floats(0, 20))
def test_bias_zero_for_equal_losses(counts, loss):
    assert mean_of_means_bias(counts, [loss] * len(counts)).bias == pytest.approx(0, abs=1e-12)


@given(counts=counts_st, data=st.data())
def test_bias_matches_weights(counts, data):
    losses = data.draw(st.lists(st.floats(0, 20), min_size=len(counts), max_size=len(counts)))
    w = micro_batch_weights(counts)
    result = mean_of_means_bias(counts, losses)
    expected = sum(
        (b - a) * n * m
        for a, b, n, m in zip(w.token_mean, w.mean_of_means, counts, losses, strict=True)
    )
    assert result.bias == pytest.approx(expected, abs=1e-9)
