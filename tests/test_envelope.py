"""The inference envelope: named lines that add up, reserves, verdict and card fit."""

from math import ceil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.memory.activations import inference_workspace
from calculators.memory.envelope import EnvelopeQuery, memory_envelope
from calculators.memory.gpus import GPUS, get_gpu
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.reserves import default_reserves
from calculators.memory.weights import weight_bytes
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec

LLAMA = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"))
DSV3 = ModelSpec.from_hf_config(load_preset("deepseek-v3"))
LINE_IDS = [
    "weights",
    "kv_cache",
    "activations",
    "runtime_context",
    "allocator_fragmentation",
    "framework_overhead",
]


def test_lines_are_named_and_add_up():
    q = EnvelopeQuery(context=8192, batch=4)
    r = memory_envelope(LLAMA, q, gpu="l40s")
    assert [line.id for line in r.lines] == LINE_IDS
    assert r.total_bytes == sum(line.bytes for line in r.lines)
    # Llama-3.1-8B in bf16: 8,030,261,248 parameters x 2 bytes (HF safetensors count).
    assert r.line("weights").bytes == 16_060_522_496
    # 4 x 8192 tokens x 131,072 bytes per token = 4 GiB exactly.
    assert r.line("kv_cache").bytes == 4 * 2**30
    ws = inference_workspace(LLAMA, context=8192, batch=4)
    assert r.line("activations").bytes == ws.total
    with pytest.raises(KeyError):
        r.line("hidden_multiplier")


def test_fragmentation_is_a_fraction_of_the_allocations_only():
    r = memory_envelope(LLAMA, EnvelopeQuery(context=2048), gpu="h100-sxm")
    demand = sum(r.line(i).bytes for i in ("weights", "kv_cache", "activations"))
    frac = {d.id: d.value for d in default_reserves("cuda")}["allocator_fragmentation"]
    assert r.line("allocator_fragmentation").bytes == ceil(frac * demand)
    fixed = {d.id: d.value for d in default_reserves("cuda") if d.kind == "bytes"}
    for rid, value in fixed.items():
        assert r.line(rid).bytes == value


def test_verdict_and_headroom_against_the_visible_memory():
    r = memory_envelope(LLAMA, EnvelopeQuery(context=8192, batch=4), gpu="l40s")
    assert r.visible_bytes == get_gpu("l40s").visible_bytes
    assert r.headroom_bytes == r.visible_bytes - r.total_bytes
    assert r.fits
    # 16 GiB of bf16 weights cannot fit a card that shows 12 GiB.
    small = memory_envelope(LLAMA, EnvelopeQuery(context=8192), gpu=None, visible_bytes=12 * 2**30)
    assert not small.fits
    assert small.headroom_bytes < 0


def test_reserve_overrides_replace_the_default_line():
    q = EnvelopeQuery(context=1024, reserves={"runtime_context": 0, "allocator_fragmentation": 0})
    r = memory_envelope(LLAMA, q, gpu="h100-sxm")
    assert r.line("runtime_context").bytes == 0
    assert r.line("allocator_fragmentation").bytes == 0
    assert "set by the user" in r.line("runtime_context").basis
    assert r.line("runtime_context").source == "user input"


def test_cards_use_their_own_runtime_reserves():
    r = memory_envelope(LLAMA, EnvelopeQuery(context=4096), gpu="h100-sxm")
    by_id = {c.gpu: c for c in r.cards}
    assert set(by_id) == {g.id for g in GPUS}
    cuda_fixed = sum(d.value for d in default_reserves("cuda") if d.kind == "bytes")
    hip_fixed = sum(d.value for d in default_reserves("hip") if d.kind == "bytes")
    assert by_id["mi300x"].total_bytes - by_id["h100-sxm"].total_bytes == hip_fixed - cuda_fixed
    for c in r.cards:
        assert c.fits == (c.visible_bytes >= c.total_bytes)
    assert by_id["h100-sxm"].total_bytes == r.total_bytes


def test_mtp_modules_are_left_out_unless_asked():
    base = memory_envelope(DSV3, EnvelopeQuery(context=1024, weights_format="fp8-e4m3-block128"))
    with_mtp = memory_envelope(
        DSV3, EnvelopeQuery(context=1024, weights_format="fp8-e4m3-block128", include_mtp=True)
    )
    w = weight_bytes(DSV3, "fp8-e4m3-block128")
    assert base.line("weights").bytes == w.main_bytes
    assert with_mtp.line("weights").bytes == w.total_bytes
    assert w.mtp_bytes > 0


def test_kv_settings_flow_through():
    kv = KVSettings(kv_format="fp8", allocation="paged", block_size=32)
    r = memory_envelope(LLAMA, EnvelopeQuery(context=1000, batch=3, kv=kv))
    expected = kv_cache_bytes(LLAMA, context=1000, batch=3, settings=kv).total_bytes
    assert r.line("kv_cache").bytes == expected


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"context": 0}, "context must be a positive integer, got 0"),
        ({"context": 10, "batch": -1}, "batch must be a positive integer, got -1"),
        ({"context": 10, "reserves": {"magic": 1}}, "reserve must be one of .*'magic'"),
        ({"context": 10, "reserves": {"allocator_fragmentation": 1.5}}, "1.5"),
        ({"context": 10, "reserves": {"runtime_context": -1}}, "runtime_context.*-1"),
    ],
)
def test_bad_queries_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EnvelopeQuery(**kwargs)


def test_bad_cards_name_the_field():
    q = EnvelopeQuery(context=10)
    with pytest.raises(ValueError, match="gpu must be one of"):
        memory_envelope(LLAMA, q, gpu="h300")
    with pytest.raises(ValueError, match="visible_bytes must be a positive integer, got None"):
        memory_envelope(LLAMA, q, gpu=None)
    with pytest.raises(ValueError, match="runtime must be cuda or hip; got 'metal'"):
        memory_envelope(LLAMA, q, gpu=None, visible_bytes=2**30, runtime="metal")


@settings(max_examples=30, deadline=None)
@given(
    context=st.integers(1, 65536),
    extra=st.integers(0, 65536),
    batch=st.integers(1, 16),
)
def test_more_context_never_lowers_the_total(context, extra, batch):
    a = memory_envelope(LLAMA, EnvelopeQuery(context=context, batch=batch))
    b = memory_envelope(LLAMA, EnvelopeQuery(context=context + extra, batch=batch))
    assert 0 < a.total_bytes <= b.total_bytes
    assert all(line.bytes >= 0 for line in a.lines)


# Card selection: the longest context, the most sequences and the cards needed per card.

LLAMA70 = ModelSpec.from_hf_config(load_preset("llama-3.1-70b"))
QWEN_MOE = ModelSpec.from_hf_config(load_preset("qwen3-30b-a3b"))


def _total_on(spec, gpu, **query):
    return memory_envelope(spec, EnvelopeQuery(**query), gpu=gpu).total_bytes


@pytest.mark.parametrize("gpu", ["l40s", "h100-sxm", "a100-40gb", "mi300x"])
def test_longest_context_is_the_edge_of_fitting(gpu):
    q = EnvelopeQuery(context=8192, batch=4)
    card = next(c for c in memory_envelope(LLAMA, q, gpu=gpu).cards if c.gpu == gpu)
    visible = get_gpu(gpu).visible_bytes
    limit = LLAMA.max_position_embeddings
    assert card.max_context > 0
    assert _total_on(LLAMA, gpu, context=card.max_context, batch=4) <= visible
    if card.max_context < limit:
        assert _total_on(LLAMA, gpu, context=card.max_context + 1, batch=4) > visible


@pytest.mark.parametrize("gpu", ["l40s", "h100-sxm", "h200"])
def test_most_sequences_is_the_edge_of_fitting(gpu):
    q = EnvelopeQuery(context=8192, batch=1)
    card = next(c for c in memory_envelope(LLAMA, q, gpu=gpu).cards if c.gpu == gpu)
    visible = get_gpu(gpu).visible_bytes
    assert _total_on(LLAMA, gpu, context=8192, batch=card.max_sequences) <= visible
    assert _total_on(LLAMA, gpu, context=8192, batch=card.max_sequences + 1) > visible


def test_a_card_that_holds_the_model_needs_one_and_its_search_stops_at_the_model_limit():
    r = memory_envelope(LLAMA, EnvelopeQuery(context=8192, batch=1), gpu="b200")
    b200 = next(c for c in r.cards if c.gpu == "b200")
    assert (b200.cards_needed, b200.per_card_bytes) == (1, b200.total_bytes)
    # config.json max_position_embeddings 131072: the search does not go past it
    assert r.context_limit == LLAMA.max_position_embeddings == 131072
    assert b200.max_context == r.context_limit


def test_weights_that_do_not_fit_leave_no_context_and_no_sequence():
    # Llama 3.1 70B in bf16 is 2 x 70,553,706,496 bytes (HF safetensors count), above an
    # L40S's visible memory before any cache
    r = memory_envelope(LLAMA70, EnvelopeQuery(context=8192, batch=1), gpu="l40s")
    assert r.line("weights").bytes == 2 * 70_553_706_496
    l40s = next(c for c in r.cards if c.gpu == "l40s")
    assert (l40s.max_context, l40s.max_sequences) == (0, 0)


def test_cards_needed_is_the_fewest_tensor_parallel_cards_that_hold_it():
    q = EnvelopeQuery(context=8192, batch=4)
    r = memory_envelope(LLAMA70, q, gpu="h100-sxm")
    h100 = next(c for c in r.cards if c.gpu == "h100-sxm")
    visible = get_gpu("h100-sxm").visible_bytes
    assert not h100.fits and h100.cards_needed in (2, 4, 8)
    w = r.line("weights").bytes
    kv = r.line("kv_cache").bytes
    ws = r.line("activations").bytes
    frac = {d.id: d.value for d in default_reserves("cuda")}["allocator_fragmentation"]
    fixed = sum(d.value for d in default_reserves("cuda") if d.kind == "bytes")

    def each(degree):
        # 64 query heads and 8 KV heads (config.json): 8 / degree KV heads per card
        demand = ceil(w / degree) + ceil(kv * (8 // degree) / 8) + ws
        return demand + ceil(frac * demand) + fixed

    assert h100.per_card_bytes == each(h100.cards_needed) <= visible
    smaller = [d for d in (2, 4, 8) if d < h100.cards_needed]
    assert all(each(d) > visible for d in smaller)


def test_no_split_of_eight_cards_holds_it_is_said_not_guessed():
    r = memory_envelope(DSV3, EnvelopeQuery(context=4096, batch=1), gpu="h100-sxm")
    h100 = next(c for c in r.cards if c.gpu == "h100-sxm")
    assert (h100.cards_needed, h100.per_card_bytes) == (None, None)


@given(
    threshold=st.integers(min_value=0, max_value=5000),
    limit=st.integers(min_value=1, max_value=5000),
    known=st.integers(min_value=0, max_value=5000),
)
def test_the_search_finds_the_edge_from_any_known_start(threshold, limit, known):
    from calculators.memory.envelope import _largest

    calls = []

    def fits(n):
        calls.append(n)
        return n <= threshold

    known = min(known, threshold, limit)  # a start is only given when it fits
    assert _largest(fits, limit, known) == min(threshold, limit)
    assert all(1 <= n <= limit for n in calls)


def test_without_card_selection_the_lines_are_the_same():
    q = EnvelopeQuery(context=8192, batch=4)
    full = memory_envelope(LLAMA, q, gpu="l40s")
    lines_only = memory_envelope(LLAMA, q, gpu="l40s", select_cards=False)
    assert lines_only.lines == full.lines and lines_only.total_bytes == full.total_bytes
    assert lines_only.cards == () and len(full.cards) == len(GPUS)
