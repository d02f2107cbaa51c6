"""What one card holds under tensor parallelism: weights split, KV heads split or
replicated, an MLA latent held whole."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.memory.tensor_parallel import DEGREES, card_share, tp_refusal, valid_degrees
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec


def spec(preset: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset), name=preset)


def test_degrees_divide_the_heads():
    # Llama 3.1 70B config.json: 64 attention heads, 8 KV heads: 2, 4, 8 all divide both
    assert valid_degrees(spec("llama-3.1-70b")) == (2, 4, 8)
    # Qwen2.5-0.5B config.json: 14 attention heads, 2 KV heads: only 2 divides 14
    assert valid_degrees(spec("qwen2.5-0.5b")) == (2,)


def test_kv_heads_split_until_there_is_one_per_card():
    llama = spec("llama-3.1-70b")  # 8 KV heads
    assert [card_share(llama, d).kv_heads_per_card for d in (1, 2, 4, 8)] == [8, 4, 2, 1]
    # Llama 3.2 1B: 32 heads, 8 KV heads; Qwen3-0.6B: 16 heads, 8 KV heads
    qwen = spec("qwen3-0.6b")
    assert card_share(qwen, 8).kv_cache(800, qwen.num_kv_heads) == 100


def test_kv_heads_are_replicated_past_their_count():
    # Qwen3-30B-A3B config.json: 32 attention heads and 4 KV heads; on 8 cards each
    # holds one KV head (vLLM replicates), so a quarter of the cache, not an eighth
    moe = spec("qwen3-30b-a3b")
    assert moe.num_kv_heads == 4
    share = card_share(moe, 8)
    assert share.kv_heads_per_card == 1
    assert share.kv_cache(4_000, moe.num_kv_heads) == 1_000


def test_an_mla_latent_cache_is_held_whole():
    ds = spec("deepseek-v2-lite")
    assert card_share(ds, 2).kv_cache(12_345, ds.num_kv_heads) == 12_345


def test_a_degree_that_does_not_divide_the_heads_is_refused():
    with pytest.raises(ValueError, match=r"degree must be one of \[2\] for this model, got 4"):
        card_share(spec("qwen2.5-0.5b"), 4)


@given(st.integers(min_value=0, max_value=10**18), st.sampled_from(DEGREES))
def test_weights_split_evenly_and_round_up(weights, degree):
    share = card_share(spec("llama-3.1-70b"), degree)
    each = share.weights(weights)
    assert each * degree >= weights > (each - 1) * degree or weights == 0


def test_the_envelope_and_the_serve_calculator_refuse_the_same_degrees() -> None:
    # one predicate (tp_refusal) for both: a degree the envelope offers is one vLLM starts
    from calculators.errors import InputError
    from calculators.model.presets import preset_ids
    from calculators.serving.sharding import check_degree

    for preset in preset_ids():
        spec = ModelSpec.from_hf_config(load_preset(preset), name=preset)
        for fmt in ("bf16", "awq-int4"):
            offered = valid_degrees(spec, fmt)
            for d in DEGREES:
                try:
                    check_degree(spec, d, fmt)
                    starts = True
                except InputError:
                    starts = False
                assert (d in offered) == starts, (preset, fmt, d)


def test_awq_groups_must_stay_whole_on_each_card() -> None:
    # Llama 3.1 70B: intermediate 28,672 rows; at 8 cards 3,584 per card = 28 groups of 128
    spec = ModelSpec.from_hf_config(load_preset("llama-3.1-70b"), name="llama-3.1-70b")
    assert tp_refusal(spec, 8, "awq-int4") is None
    # OLMo 2 7B: intermediate 11,008; at 8 cards 1,376 rows, not whole 128-row groups
    olmo = ModelSpec.from_hf_config(load_preset("olmo2-7b"), name="olmo2-7b")
    assert "not whole 128-row" in (tp_refusal(olmo, 8, "awq-int4") or "")
    assert tp_refusal(olmo, 8, "bf16") is None and 8 not in valid_degrees(olmo, "awq-int4")
