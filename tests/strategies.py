"""Shared hypothesis strategies: small, valid Hugging Face config.json dicts and their specs.

Each family strategy draws a config the way the family's config.json is written (the
keys it uses, the keys it may leave out), with sizes small enough that building the
tensor inventory stays fast. `hf_configs()` draws from all of them; `specs()` reads a
drawn config into a `ModelSpec`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from calculators.model.spec import ModelSpec

VOCAB = st.integers(min_value=8, max_value=512)
LAYERS = st.integers(min_value=1, max_value=6)
INTERMEDIATE = st.integers(min_value=4, max_value=128)
HEAD_DIM = st.sampled_from([2, 4, 8, 16, 32])
POSITIONS = st.integers(min_value=16, max_value=4096)
OPTIONAL_BOOL = st.sampled_from([None, True, False])


@st.composite
def heads(draw: st.DrawFn) -> tuple[int, int]:
    """(num_attention_heads, num_key_value_heads) with heads a multiple of kv heads."""
    kv = draw(st.integers(min_value=1, max_value=4))
    group = draw(st.integers(min_value=1, max_value=4))
    return kv * group, kv


def _put_optional(config: dict[str, Any], key: str, value: object) -> None:
    """Set `key` unless `value` is None (the key is then absent, as in many config.json)."""
    if value is not None:
        config[key] = value


@st.composite
def llama_configs(draw: st.DrawFn, model_type: str = "llama") -> dict[str, Any]:
    """LlamaConfig-style dicts: head_dim explicit (any hidden_size) or derived."""
    n_heads, n_kv = draw(heads())
    head_dim = draw(HEAD_DIM)
    config: dict[str, Any] = {
        "model_type": model_type,
        "vocab_size": draw(VOCAB),
        "num_hidden_layers": draw(LAYERS),
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "intermediate_size": draw(INTERMEDIATE),
        "max_position_embeddings": draw(POSITIONS),
    }
    if draw(st.booleans()):
        config["head_dim"] = head_dim
        config["hidden_size"] = draw(st.integers(min_value=4, max_value=256))
    else:
        config["hidden_size"] = n_heads * head_dim
    _put_optional(config, "tie_word_embeddings", draw(OPTIONAL_BOOL))
    _put_optional(config, "attention_bias", draw(OPTIONAL_BOOL))
    _put_optional(config, "mlp_bias", draw(OPTIONAL_BOOL))
    return config


@st.composite
def qwen2_configs(draw: st.DrawFn) -> dict[str, Any]:
    """Qwen2Config-style dicts, with or without use_sliding_window / max_window_layers."""
    n_heads, n_kv = draw(heads())
    n_layers = draw(LAYERS)
    config: dict[str, Any] = {
        "model_type": "qwen2",
        "vocab_size": draw(VOCAB),
        "hidden_size": n_heads * draw(HEAD_DIM),
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "intermediate_size": draw(INTERMEDIATE),
        "max_position_embeddings": draw(POSITIONS),
        "max_window_layers": draw(st.integers(min_value=0, max_value=n_layers)),
    }
    _put_optional(config, "sliding_window", draw(st.none() | st.integers(1, 4096)))
    _put_optional(config, "use_sliding_window", draw(OPTIONAL_BOOL))
    _put_optional(config, "tie_word_embeddings", draw(OPTIONAL_BOOL))
    return config


@st.composite
def gemma2_configs(draw: st.DrawFn) -> dict[str, Any]:
    """Gemma2Config-style dicts: explicit head_dim, tie key usually absent."""
    n_heads, n_kv = draw(heads())
    config: dict[str, Any] = {
        "model_type": "gemma2",
        "vocab_size": draw(VOCAB),
        "hidden_size": draw(st.integers(min_value=4, max_value=256)),
        "num_hidden_layers": draw(LAYERS),
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "head_dim": draw(HEAD_DIM),
        "intermediate_size": draw(INTERMEDIATE),
        "max_position_embeddings": draw(POSITIONS),
    }
    _put_optional(config, "sliding_window", draw(st.none() | st.integers(1, 4096)))
    _put_optional(config, "tie_word_embeddings", draw(OPTIONAL_BOOL))
    return config


@st.composite
def mixtral_configs(draw: st.DrawFn) -> dict[str, Any]:
    """MixtralConfig-style dicts: every layer MoE with num_local_experts w1/w2/w3."""
    config = draw(llama_configs(model_type="mixtral"))
    config.pop("attention_bias", None)
    config.pop("mlp_bias", None)
    n_experts = draw(st.integers(min_value=1, max_value=8))
    config["num_local_experts"] = n_experts
    config["num_experts_per_tok"] = draw(st.integers(min_value=1, max_value=n_experts))
    _put_optional(config, "sliding_window", draw(st.none() | st.integers(1, 4096)))
    return config


@st.composite
def deepseek_v3_configs(draw: st.DrawFn) -> dict[str, Any]:
    """DeepseekV3Config-style dicts: MLA attention, dense first layers, optional MTP."""
    n_layers = draw(LAYERS)
    n_heads = draw(st.integers(min_value=1, max_value=8))
    n_routed = draw(st.integers(min_value=1, max_value=16))
    return {
        "model_type": "deepseek_v3",
        "vocab_size": draw(VOCAB),
        "hidden_size": draw(st.integers(min_value=4, max_value=128)),
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_heads,
        "intermediate_size": draw(INTERMEDIATE),
        "max_position_embeddings": draw(POSITIONS),
        "q_lora_rank": draw(st.none() | st.integers(min_value=2, max_value=64)),
        "kv_lora_rank": draw(st.integers(min_value=2, max_value=64)),
        "qk_nope_head_dim": draw(st.integers(min_value=2, max_value=32)),
        "qk_rope_head_dim": draw(st.integers(min_value=2, max_value=16)),
        "v_head_dim": draw(st.integers(min_value=2, max_value=32)),
        "n_routed_experts": n_routed,
        "num_experts_per_tok": draw(st.integers(min_value=1, max_value=n_routed)),
        "n_shared_experts": draw(st.integers(min_value=0, max_value=2)),
        "moe_intermediate_size": draw(st.integers(min_value=2, max_value=64)),
        "first_k_dense_replace": draw(st.integers(min_value=0, max_value=n_layers)),
        "moe_layer_freq": draw(st.integers(min_value=1, max_value=2)),
        "num_nextn_predict_layers": draw(st.integers(min_value=0, max_value=1)),
        "topk_method": "noaux_tc",
        "tie_word_embeddings": False,
    }


def hf_configs() -> st.SearchStrategy[dict[str, Any]]:
    """A config dict of any of the strategy families."""
    return st.one_of(
        llama_configs(),
        qwen2_configs(),
        gemma2_configs(),
        mixtral_configs(),
        deepseek_v3_configs(),
    )


def specs() -> st.SearchStrategy[ModelSpec]:
    """A `ModelSpec` read from `hf_configs()`."""
    return hf_configs().map(ModelSpec.from_hf_config)


__all__ = [
    "deepseek_v3_configs",
    "gemma2_configs",
    "heads",
    "hf_configs",
    "llama_configs",
    "mixtral_configs",
    "qwen2_configs",
    "specs",
]


def typed_text(*, newlines: bool = False) -> st.SearchStrategy[str]:
    """What a reader may type into a flag or a field: numbers of every size and sign,
    non-finite values, words, lists of numbers, phases, and very long text."""
    return st.one_of(
        st.integers(-(10**20), 10**20).map(str),
        st.sampled_from(
            ["", "0", "-1", "1e9", "1e300", "-1e300", "inf", "-inf", "nan", "1e-320", "a:1:1e300"]
        ),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text("abc-_,.:=0123456789e" + ("\n" if newlines else ""), max_size=16),
        st.lists(st.floats(-1e250, 1e250), min_size=1, max_size=5).map(
            lambda xs: ",".join(map(repr, xs))
        ),
        st.just("9" * 20_000),
    )
