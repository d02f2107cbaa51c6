"""The useful-cost calculator: rows checked by hand, agreement with the envelope and the
throughput bounds, invariants, and bad input."""

from itertools import pairwise
from math import ceil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.memory.envelope import EnvelopeQuery, memory_envelope
from calculators.memory.gpus import get_gpu
from calculators.memory.kv_cache import KVSettings
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.planning.useful_cost import (
    MAX_ROWS,
    UsefulCostQuery,
    card_counts,
    cost_per_million_tokens,
    most_sequences,
    parse_card_prices,
    parse_quality,
    useful_cost,
)
from calculators.training.throughput import inference_bounds
from tests.strategies import specs

LLAMA = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"), name="llama-3.1-8b")
MIXTRAL = ModelSpec.from_hf_config(load_preset("mixtral-8x7b"), name="mixtral-8x7b")

MIB = 2**20
# Llama 3.1 8B (config.json of meta-llama/Llama-3.1-8B): 8,030,261,248 parameters (its
# safetensors metadata), hidden 4096, 32 layers, 32 query and 8 KV heads of 128,
# intermediate 14336, vocabulary 128,256.
LLAMA_PARAMETERS = 8_030_261_248
# One token of one sequence in a bf16 cache: 32 layers x (K and V) x 8 heads x 128 x 2 bytes.
LLAMA_KV_PER_TOKEN = 32 * 2 * 8 * 128 * 2


def query(**kw):
    base = dict(
        context=8192,
        sequences=16,
        gpus=("h100-sxm",),
        formats=("bf16",),
        kv_formats=("bf16",),
        prices={"h100-sxm": 2.5},
        prefill_chunk=8192,
    )
    return UsefulCostQuery(**{**base, **kw})


def test_bf16_on_one_h100_by_hand():
    r = useful_cost(LLAMA, query()).row("bf16/bf16/h100-sxm")
    weights = 2 * LLAMA_PARAMETERS  # 16,060,522,496 bytes
    kv = 16 * 8192 * LLAMA_KV_PER_TOKEN  # 16 GiB
    # the prefill workspace of one 8192-token chunk (calculators.memory.activations):
    residual = 2 * 8192 * 4096 * 2  # residual stream and normed input, bf16
    mlp = 3 * 8192 * 14336 * 2  # gate, up and their product: larger than attention's
    logits = 16 * 128_256 * (2 + 4)  # last position of each sequence, bf16 and its fp32 copy
    activations = residual + mlp + logits
    demand = weights + kv + activations
    # CUDA reserves (calculators.memory.reserves): 768 MiB context, 512 MiB framework,
    # 5% of the allocations for fragmentation
    total = demand + 768 * MIB + 512 * MIB + ceil(0.05 * demand)
    assert (r.weights_bytes, r.kv_bytes, r.activations_bytes) == (weights, kv, activations)
    assert r.kv_bytes_per_sequence == 8192 * LLAMA_KV_PER_TOKEN == 2**30
    assert r.per_card_bytes == total == sum(r.per_card.values())
    assert r.per_card["allocator_fragmentation"] == ceil(0.05 * demand)
    h100 = get_gpu("h100-sxm")
    assert total <= h100.visible_bytes and r.cards == 1 and r.fits
    assert r.headroom_bytes == h100.visible_bytes - total
    # a decode step reads every weight and the 16 caches once, at 3,350 GB/s
    assert r.bytes_read_per_card == weights + kv
    tokens_per_second = 16 / ((weights + kv) / (3350 * 1e9))
    assert r.decode_bound == "bandwidth"
    assert r.decode_tokens_per_second == pytest.approx(tokens_per_second, rel=1e-12)
    assert r.usd_per_hour == 2.5
    # 2.5 USD per hour over tokens/s x 3600 tokens per hour, per million
    cost = 2.5 / (tokens_per_second * 3600) * 1e6
    assert r.cost_per_million_tokens == pytest.approx(cost, rel=1e-12)


def test_fp8_cache_halves_the_kv_lines():
    rows = useful_cost(LLAMA, query(kv_formats=("bf16", "fp8")))
    bf16, fp8 = rows.row("bf16/bf16/h100-sxm"), rows.row("bf16/fp8/h100-sxm")
    # one byte per value plus vLLM's two fp32 scales per layer: 32 x 8 bytes
    assert fp8.kv_bytes == bf16.kv_bytes // 2 + 32 * 8
    assert fp8.max_sequences > bf16.max_sequences
    assert fp8.cost_per_million_tokens < bf16.cost_per_million_tokens


def test_a_whole_batch_prefill_needs_two_l40s_by_hand():
    # no prefill chunk: 16 x 8192 tokens in one step, whose MLP workspace alone is
    # 3 x 131,072 x 14,336 x 2 bytes = 10.5 GiB, on each card
    q = query(gpus=("l40s",), prefill_chunk=None, prices={"l40s": 1.0})
    r = useful_cost(LLAMA, q).row("bf16/bf16/l40s")
    assert r.cards == 2 == r.split_cards
    weights, kv = 2 * LLAMA_PARAMETERS, 16 * 8192 * LLAMA_KV_PER_TOKEN
    # tensor parallelism over 2: half of the weights, 4 of the 8 KV heads on each card
    assert r.per_card["weights"] == weights // 2
    assert r.per_card["kv_cache"] == kv // 2
    assert r.per_card["activations"] == r.activations_bytes >= 3 * 16 * 8192 * 14336 * 2
    # each card reads its half at 864 GB/s; both are paid for
    assert r.bytes_read_per_card == (weights + kv) // 2
    tokens_per_second = 16 / ((weights + kv) / 2 / (864 * 1e9))
    assert r.decode_tokens_per_second == pytest.approx(tokens_per_second, rel=1e-12)
    assert r.usd_per_hour == 2.0
    assert r.cost_per_million_tokens == pytest.approx(
        1.0 * 2 / (tokens_per_second * 3600) * 1e6, rel=1e-12
    )


def test_a_row_that_does_not_fit_says_so_and_has_no_cost():
    q = query(gpus=("l40s",), prefill_chunk=None, prices={"l40s": 1.0}, max_cards=1)
    r = useful_cost(LLAMA, q).row("bf16/bf16/l40s")
    assert r.cards is None and not r.fits and r.split_cards == 1
    assert r.headroom_bytes < 0
    assert r.decode_tokens_per_second is None and r.cost_per_million_tokens is None
    assert r.usd_per_hour is None
    # fewer sequences would fit on the one card: what it could reach is still given
    assert 0 < r.max_sequences < 16
    assert r.full_cost_per_million_tokens is not None


@pytest.mark.parametrize(
    ("fmt", "kv_format", "gpu", "sequences", "chunk"),
    [
        ("bf16", "bf16", "l40s", 16, None),
        ("nf4", "fp8", "l40s", 16, None),
        ("gptq-int4", "bf16", "h200", 64, 8192),
        ("bf16", "int8", "mi300x", 8, None),
        ("bf16", "bf16", "rtx-4090", 1, None),
    ],
)
def test_cards_and_sequences_agree_with_the_envelope(fmt, kv_format, gpu, sequences, chunk):
    q = query(
        gpus=(gpu,),
        formats=(fmt,),
        kv_formats=(kv_format,),
        sequences=sequences,
        prefill_chunk=chunk,
        prices={},
    )
    row = useful_cost(LLAMA, q).rows[0]
    env = memory_envelope(
        LLAMA,
        EnvelopeQuery(
            context=8192,
            batch=sequences,
            weights_format=fmt,
            kv=KVSettings(kv_format=kv_format),
            prefill_chunk=chunk,
        ),
        gpu=gpu,
    )
    card = next(c for c in env.cards if c.gpu == gpu)
    assert row.cards == card.cards_needed
    if row.cards == 1:
        assert row.per_card_bytes == env.total_bytes
        assert row.max_sequences == card.max_sequences
    elif row.cards is not None:
        assert row.per_card_bytes == card.per_card_bytes


@pytest.mark.parametrize(("spec", "fmt"), [(LLAMA, "nf4"), (MIXTRAL, "bf16"), (MIXTRAL, "nf4")])
def test_one_card_decode_bound_is_the_throughput_calculators(spec, fmt):
    q = query(formats=(fmt,), gpus=("h200",), sequences=4, prices={"h200": 3.0})
    row = useful_cost(spec, q).rows[0]
    assert row.cards == 1
    b = inference_bounds(
        spec, gpu="h200", context=8192, batch=4, weights_format=fmt, kv=KVSettings()
    )
    assert b.decode_bound == row.decode_bound == "bandwidth"
    assert row.bytes_read_per_card == b.bytes_per_step
    assert row.decode_tokens_per_second == pytest.approx(b.decode_tokens_per_second, rel=1e-12)


def test_cost_formula():
    # 2 cards at 2 USD for 1,000 tokens/s: 4 USD buy 3.6 million tokens
    assert cost_per_million_tokens(2.0, 2, 1000.0) == pytest.approx(4 / 3.6)


def test_card_counts_follow_the_valid_degrees():
    assert card_counts(LLAMA, 8) == (1, 2, 4, 8)
    assert card_counts(LLAMA, 3) == (1, 2)
    assert card_counts(LLAMA, 1) == (1,)


def test_most_sequences_finds_the_edge():
    for edge in (0, 1, 2, 37, 1024, 999_999, 1_000_000):
        assert most_sequences(lambda s, e=edge: s <= e) == edge
        assert most_sequences(lambda s, e=edge: s <= e, known=min(edge, 7)) == edge


def test_prices_per_card_and_for_the_rest():
    assert parse_card_prices(["h200=3.5", " 2 ", ""]) == {"h200": 3.5, "*": 2.0}
    q = query(gpus=("h100-sxm", "h200"), prices=parse_card_prices(["h200=3.5", "2"]))
    r = useful_cost(LLAMA, q)
    assert r.row("bf16/bf16/h200").price_per_gpu_hour == 3.5
    assert r.row("bf16/bf16/h100-sxm").price_per_gpu_hour == 2.0


def test_no_price_leaves_the_cost_out_but_not_the_rest():
    r = useful_cost(LLAMA, query(prices={})).rows[0]
    assert r.cost_per_million_tokens is None and r.decode_tokens_per_second is not None


def test_quality_marks_the_frontier_and_the_cheapest():
    q = query(
        formats=("bf16", "fp8-e4m3", "nf4"),
        kv_formats=("bf16", "fp8"),
        quality=parse_quality(["bf16=0", "nf4=0.05", "fp8-e4m3/fp8=0.01"]),
    )
    r = useful_cost(LLAMA, q)
    assert r.row("nf4/bf16/h100-sxm").quality == 0.05
    assert r.row("fp8-e4m3/fp8/h100-sxm").quality == 0.01
    assert r.row("fp8-e4m3/bf16/h100-sxm").quality is None
    front = {row.id for row in r.rows if row.frontier}
    # the cheapest row with a quality, and the best quality's cheapest row, are on it
    scored = [row for row in r.rows if row.quality is not None]
    assert min(scored, key=lambda x: x.cost_per_million_tokens).id in front
    best = min(x.quality for x in scored)
    assert (
        min((x for x in scored if x.quality == best), key=lambda x: x.cost_per_million_tokens).id
        in front
    )
    assert r.cheapest == {
        f: min((x for x in r.rows if x.format == f), key=lambda x: x.cost_per_million_tokens).id
        for f in ("bf16", "fp8-e4m3", "nf4")
    }
    higher = useful_cost(LLAMA, query(**{**vars(q), "quality_better": "higher"}))
    assert {row.id for row in higher.rows if row.frontier} != front


def test_context_past_the_model_limit_is_computed_with_a_warning():
    r = useful_cost(LLAMA, query(context=200_000, sequences=1, prefill_chunk=None))
    assert r.warnings and "max_position_embeddings" in r.warnings[0]


def test_an_mla_model_keeps_its_latent_cache_whole_on_every_card():
    deepseek = ModelSpec.from_hf_config(load_preset("deepseek-v3"), name="deepseek-v3")
    q = query(formats=("fp8-e4m3-block128",), gpus=("h200",), sequences=4, prices={"h200": 3})
    r = useful_cost(deepseek, q).rows[0]
    assert r.cards == 8
    assert r.per_card["kv_cache"] == r.kv_bytes


@pytest.mark.parametrize(
    ("kw", "field", "match"),
    [
        ({"gpus": ("h100-sxm", "h100-sxm")}, "gpus", "twice"),
        ({"gpus": ("h900",)}, "gpus", "'h900' is not one of h100-sxm, "),
        ({"gpus": ()}, "gpus", "at least one"),
        ({"formats": ("nf5",)}, "formats", "'nf5'"),
        ({"kv_formats": ("fp4",)}, "kv_formats", "'fp4'"),
        ({"max_cards": 9}, "max_cards", "at most 8"),
        ({"max_cards": 0}, "max_cards", "positive"),
        ({"sequences": 0}, "sequences", "positive"),
        ({"context": 2**31}, "context", "at most"),
        ({"prices": {"h100-sxm": -1.0}}, "price", "in \\[0"),
        ({"prices": {"h100-sxm": float("nan")}}, "price", "finite"),
        ({"quality": {("nf4", None): 0.1}}, "quality", "'nf4'"),
        ({"quality_better": "up"}, "quality_better", "lower or higher"),
        (
            {
                "gpus": ("h100-sxm", "h200", "l40s", "l4", "a100-80gb"),
                "formats": ("bf16", "fp16", "fp8-e4m3", "int8", "nf4", "gptq-int4"),
                "kv_formats": ("bf16", "fp8", "int8", "fp16", "fp8-e5m2"),
            },
            "gpus",
            f"at most {MAX_ROWS} rows",
        ),
    ],
)
def test_bad_queries_name_their_field(kw, field, match):
    with pytest.raises(InputError, match=match) as e:
        query(**kw)
    assert e.value.field == field


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (["nf4"], "is not FORMAT"),
        (["nf4=x"], "is not a number"),
        (["nf4=inf"], "finite"),
        (["nf4=1", "nf4=2"], "given twice"),
    ],
)
def test_bad_quality_lines(lines, match):
    with pytest.raises(InputError, match=match):
        parse_quality(lines)


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (["h900=2"], "h900"),
        (["=2"], "is not GPU=USD"),
        (["h200=abc"], "is not a number"),
        (["h200=1e9"], "at most|in \\[0"),
        (["h200=1", "h200=2"], "given twice"),
        (["1", "2"], "every card is given twice"),
    ],
)
def test_bad_price_lines(lines, match):
    with pytest.raises(InputError, match=match) as e:
        parse_card_prices(lines)
    assert e.value.field == "price"


# ---- invariants on small random models --------------------------------------------------

CARDS = st.sampled_from(["l4", "rtx-4090", "l40s", "h100-sxm", "mi300x"])
CONTEXTS = st.integers(min_value=1, max_value=32_768)


@settings(max_examples=40, deadline=None)
@given(spec=specs(), gpu=CARDS, context=CONTEXTS, kv=st.sampled_from(["bf16", "fp8"]))
def test_more_cards_never_hold_fewer_sequences(spec, gpu, context, kv):
    # a workload that rarely fits: the figures are for the largest count tried, or for
    # the fewest cards that hold it
    held = []
    for max_cards in (1, 2, 4, 8):
        q = UsefulCostQuery(
            context=context,
            sequences=1_000_000,
            gpus=(gpu,),
            formats=("bf16",),
            kv_formats=(kv,),
            max_cards=max_cards,
        )
        row = useful_cost(spec, q).rows[0]
        assert row.split_cards == (row.cards or card_counts(spec, max_cards)[-1])
        held.append(row.max_sequences)
    assert held == sorted(held)


# Formats from the most bytes per weight to the fewest. On a toy model a 4-bit format's
# block scales can outweigh its codes, so this holds for real shapes: the presets.
COARSER = (("fp32", "bf16", "fp8-e4m3", "nf4"), ("bf16", "int8", "gptq-int4"))
PRESETS = st.sampled_from(
    [
        ModelSpec.from_hf_config(load_preset(m), name=m)
        for m in ("gpt2", "qwen2.5-0.5b", "gemma-2-2b", "qwen3-8b", "mistral-7b-v0.1")
    ]
    + [LLAMA, MIXTRAL]
)


@settings(max_examples=30, deadline=None)
@given(
    spec=PRESETS,
    gpu=CARDS,
    context=CONTEXTS,
    sequences=st.integers(min_value=1, max_value=64),
    chain=st.sampled_from(COARSER),
    price=st.floats(min_value=0.01, max_value=100),
)
def test_a_coarser_format_never_costs_more(spec, gpu, context, sequences, chain, price):
    q = UsefulCostQuery(
        context=context,
        sequences=sequences,
        gpus=(gpu,),
        formats=chain,
        kv_formats=("bf16",),
        prices={gpu: price},
    )
    rows = useful_cost(spec, q).rows
    for finer, coarser in pairwise(rows):
        assert coarser.weights_bytes <= finer.weights_bytes
        if finer.split_cards == coarser.split_cards:
            assert coarser.max_sequences >= finer.max_sequences
        if finer.cards is not None:
            assert coarser.cards is not None and coarser.cards <= finer.cards
            if coarser.cards == finer.cards:
                assert coarser.decode_tokens_per_second >= finer.decode_tokens_per_second
    for row in rows:
        if row.cost_per_million_tokens is not None:
            expected = price * row.cards / (row.decode_tokens_per_second * 3600) * 1e6
            assert row.cost_per_million_tokens == pytest.approx(expected, rel=1e-12)
            assert row.max_sequences >= sequences


@settings(max_examples=30, deadline=None)
@given(
    spec=specs(),
    values=st.lists(st.floats(min_value=-5, max_value=5), min_size=3, max_size=3),
    better=st.sampled_from(["lower", "higher"]),
)
def test_the_frontier_is_exactly_the_undominated_rows(spec, values, better):
    formats = ("bf16", "fp8-e4m3", "nf4")
    q = UsefulCostQuery(
        context=256,
        sequences=2,
        gpus=("l4", "h100-sxm"),
        formats=formats,
        kv_formats=("bf16",),
        prices={"l4": 0.5, "h100-sxm": 2.5},
        quality={(f, None): v for f, v in zip(formats, values, strict=True)},
        quality_better=better,
    )
    rows = [r for r in useful_cost(spec, q).rows if r.cost_per_million_tokens is not None]
    sign = 1 if better == "lower" else -1

    def dominates(a, b):
        at_most = a.cost_per_million_tokens <= b.cost_per_million_tokens
        as_good = sign * a.quality <= sign * b.quality
        strict = a.cost_per_million_tokens < b.cost_per_million_tokens or (
            sign * a.quality < sign * b.quality
        )
        return at_most and as_good and strict

    for r in rows:
        assert r.frontier == (not any(dominates(o, r) for o in rows))


def test_vllm_chunk_gives_each_card_vllm_serves_default():
    # vllm/engine/arg_utils.py (0.9+), get_batch_defaults: `vllm serve` takes 8192 tokens
    # per step on a card of at least 70 GiB that is not an A100, else 2048 (the serve
    # calculator's runtimes.vllm_batch_defaults); each row is the fixed chunk's row
    gpus = ("l40s", "a100-80gb", "h100-sxm", "h200")
    r = useful_cost(LLAMA, query(gpus=gpus, prefill_chunk=None, vllm_chunk=True, prices={}))
    chunks = {row.gpu: row.prefill_chunk for row in r.rows}
    assert chunks == {"l40s": 2048, "a100-80gb": 2048, "h100-sxm": 8192, "h200": 8192}
    for gpu, chunk in chunks.items():
        fixed = useful_cost(LLAMA, query(gpus=(gpu,), prefill_chunk=chunk, prices={}))
        assert r.row(f"bf16/bf16/{gpu}").per_card == fixed.row(f"bf16/bf16/{gpu}").per_card


def test_vllm_chunk_and_a_chunk_of_ones_own_are_refused_together():
    with pytest.raises(InputError, match="prefill_chunk must be empty when vllm_chunk is set") as e:
        query(vllm_chunk=True, prefill_chunk=4096)
    assert e.value.field == "prefill_chunk"


def test_the_text_says_how_the_prefill_was_counted():
    from calculators.commands.useful_cost import prefill_line

    def line(**kw):
        q = query(gpus=("l40s", "h200"), prices={}, **kw)
        rows = [
            {"gpu": r.gpu, "prefill_chunk": r.prefill_chunk} for r in useful_cost(LLAMA, q).rows
        ]
        return prefill_line({"rows": rows, "vllm_chunk": q.vllm_chunk})

    assert line(prefill_chunk=None, vllm_chunk=True) == (
        "Prefill in chunks of 2,048 tokens on l40s; 8,192 tokens on h200 "
        "(vllm serve's default on each card)."
    )
    assert line(prefill_chunk=4096) == "Prefill in chunks of 4,096 tokens on l40s, h200."
    assert line(prefill_chunk=None).startswith("Prefill: every prompt of the workload in one")
