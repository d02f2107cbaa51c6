"""What one card holds under tensor parallelism: weights split, KV heads split or
replicated, an MLA latent held whole."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.memory.tensor_parallel import DEGREES, card_share, valid_degrees
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
