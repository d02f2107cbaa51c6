"""ModelSpec, LayerSpec, MoESpec and MLASpec reject bad values, naming the field and the value."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from strategies import specs

from calculators.model.spec import LayerSpec, MLASpec, ModelSpec, MoESpec

BAD_POSITIVE = [0, -1, -4096, 1.5, 2.0, True, False, "8", None]


def _full(n: int) -> tuple[LayerSpec, ...]:
    return tuple(LayerSpec(attention="full") for _ in range(n))


def _spec(**overrides: object) -> ModelSpec:
    """A small valid dense spec, with `overrides` applied."""
    fields: dict[str, object] = {
        "name": "tiny",
        "model_type": "llama",
        "vocab_size": 32,
        "hidden_size": 16,
        "num_layers": 2,
        "num_heads": 4,
        "num_kv_heads": 2,
        "head_dim": 4,
        "intermediate_size": 64,
        "layers": _full(2),
        "tie_word_embeddings": False,
    }
    fields.update(overrides)
    return ModelSpec(**fields)  # type: ignore[arg-type]


def _moe(**overrides: object) -> MoESpec:
    fields: dict[str, object] = {
        "n_routed_experts": 4,
        "experts_per_token": 2,
        "expert_intermediate_size": 8,
    }
    fields.update(overrides)
    return MoESpec(**fields)  # type: ignore[arg-type]


def _mla(**overrides: object) -> MLASpec:
    fields: dict[str, object] = {
        "q_lora_rank": 8,
        "kv_lora_rank": 8,
        "qk_nope_head_dim": 4,
        "qk_rope_head_dim": 2,
        "v_head_dim": 4,
    }
    fields.update(overrides)
    return MLASpec(**fields)  # type: ignore[arg-type]


def _names(field: str, value: object) -> str:
    """Regex: the message names `field` and shows `value` as repr."""
    return rf"{field}\b.*{re.escape(repr(value))}"


# --- valid specs -----------------------------------------------------------------------------


def test_valid_spec_and_derived_properties():
    spec = _spec()
    assert spec.gqa_group == 2
    assert spec.norms_per_layer == 2
    assert spec.norm_names == ("input_layernorm", "post_attention_layernorm")
    assert spec.norm == "rmsnorm"
    assert spec.mlp == "gated"
    assert spec.moe is None and spec.mla is None
    assert spec.mtp_layers == 0
    assert spec.assumptions == ()


def test_mha_and_mqa_groups():
    assert _spec(num_heads=4, num_kv_heads=4).gqa_group == 1
    assert _spec(num_heads=4, num_kv_heads=1).gqa_group == 4


def test_specs_are_frozen():
    spec = _spec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.hidden_size = 32  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.layers[0].window = 4  # type: ignore[misc]


def test_moe_and_mla_specs_accept_valid_values():
    moe = _moe(n_shared_experts=2, shared_intermediate_size=16, router_score_bias=True)
    assert moe.shared_intermediate_size == 16
    assert _mla(q_lora_rank=None).q_lora_rank is None
    spec = _spec(
        layers=(LayerSpec(attention="mla"), LayerSpec(attention="mla", moe=True)),
        mla=_mla(),
        moe=_moe(),
        num_kv_heads=4,
        head_dim=6,
        mtp_layers=1,
    )
    assert spec.layers[1].moe and spec.mtp_layers == 1


@settings(max_examples=50, deadline=None)
@given(specs())
def test_read_specs_satisfy_invariants(spec):
    assert len(spec.layers) == spec.num_layers
    assert spec.num_heads % spec.num_kv_heads == 0
    assert (spec.mla is not None) == any(layer.attention == "mla" for layer in spec.layers)
    assert spec.moe is not None or not any(layer.moe for layer in spec.layers)
    for layer in spec.layers:
        assert (layer.window is not None) == (layer.attention == "sliding")


# --- ModelSpec -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    [
        "vocab_size",
        "hidden_size",
        "num_layers",
        "num_heads",
        "num_kv_heads",
        "head_dim",
        "intermediate_size",
    ],
)
@pytest.mark.parametrize("value", BAD_POSITIVE)
def test_model_sizes_must_be_positive_ints(field, value):
    with pytest.raises(
        ValueError, match=rf"^{field} must be a positive integer, got {re.escape(repr(value))}$"
    ):
        _spec(**{field: value})


def test_heads_must_be_a_multiple_of_kv_heads():
    # The message uses the config.json names (num_attention_heads / num_key_value_heads).
    with pytest.raises(
        ValueError,
        match=r"num_attention_heads \(4\) must be a multiple of num_key_value_heads, got 3",
    ):
        _spec(num_kv_heads=3)


def test_kv_heads_above_heads_rejected():
    with pytest.raises(ValueError, match=r"num_key_value_heads, got 8"):
        _spec(num_kv_heads=8)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_layers_must_match_num_layers(n):
    with pytest.raises(
        ValueError, match=rf"layers must list num_hidden_layers \(2\) entries, got {n}"
    ):
        _spec(layers=_full(n))


def test_mla_set_without_mla_layers():
    with pytest.raises(ValueError, match=r"^mla must be set exactly when layers use MLA"):
        _spec(mla=_mla())


def test_mla_layers_without_mla():
    with pytest.raises(ValueError, match=r"^mla must be set exactly when layers use MLA"):
        _spec(layers=(LayerSpec(attention="mla"), LayerSpec(attention="mla")))


def test_moe_layer_needs_moe_spec():
    with pytest.raises(ValueError, match=r"^moe must be set when a layer is MoE"):
        _spec(layers=(LayerSpec(attention="full"), LayerSpec(attention="full", moe=True)))


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_max_position_embeddings_must_be_positive(value):
    with pytest.raises(
        ValueError,
        match=rf"^max_position_embeddings must be a positive integer, got {re.escape(repr(value))}",
    ):
        _spec(max_position_embeddings=value)


def test_negative_mtp_layers():
    with pytest.raises(ValueError, match=r"mtp_layers must be a non-negative integer, got -1"):
        _spec(mtp_layers=-1)


@pytest.mark.parametrize("value", [1.5, True, "1"])
def test_mtp_layers_must_be_an_int(value):
    # Same convention as the size fields: bool and float are not counts.
    with pytest.raises(ValueError, match=_names("(mtp_layers|num_nextn_predict_layers)", value)):
        _spec(mtp_layers=value)


@pytest.mark.parametrize(
    ("build", "field", "value"),
    [
        pytest.param(
            lambda: LayerSpec(attention="banana"),  # type: ignore[arg-type]
            "attention",
            "banana",
            id="LayerSpec.attention",
        ),
        pytest.param(lambda: _spec(norm="layer_norm"), "norm", "layer_norm", id="norm"),
        pytest.param(lambda: _spec(mlp="swiglu"), "mlp", "swiglu", id="mlp"),
        pytest.param(lambda: _spec(qk_norm="yes"), "qk_norm", "yes", id="qk_norm"),
    ],
)
def test_enumerated_fields_reject_unknown_values(build, field, value):
    # These fields are Literal[...]; an unknown value would silently change the tensor
    # inventory (an unknown norm reads as RMSNorm, an unknown mlp as gated).
    with pytest.raises(ValueError, match=_names(field, value)):
        build()


# --- LayerSpec -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, 0, -512, 1.5, True])
def test_sliding_layer_needs_positive_window(value):
    with pytest.raises(
        ValueError, match=rf"^window must be a positive integer, got {re.escape(repr(value))}$"
    ):
        LayerSpec(attention="sliding", window=value)


@pytest.mark.parametrize("attention", ["full", "mla"])
def test_window_only_for_sliding_layers(attention):
    with pytest.raises(ValueError, match=r"^window is only for sliding layers, got 4096$"):
        LayerSpec(attention=attention, window=4096)


def test_layer_defaults():
    layer = LayerSpec(attention="sliding", window=4096)
    assert (layer.attention, layer.window, layer.moe) == ("sliding", 4096, False)
    assert LayerSpec(attention="full").window is None


# --- MoESpec ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["n_routed_experts", "experts_per_token", "expert_intermediate_size"]
)
@pytest.mark.parametrize("value", [0, -2, 1.5, True, None])
def test_moe_sizes_must_be_positive(field, value):
    with pytest.raises(
        ValueError, match=rf"^{field} must be a positive integer, got {re.escape(repr(value))}$"
    ):
        _moe(**{field: value})


def test_top_k_at_most_experts():
    with pytest.raises(
        ValueError, match=r"^experts_per_token must be at most n_routed_experts \(4\), got 5$"
    ):
        _moe(experts_per_token=5)
    assert _moe(experts_per_token=4).experts_per_token == 4


@pytest.mark.parametrize("field", ["n_shared_experts", "shared_intermediate_size"])
def test_negative_shared_sizes_rejected(field):
    # Rejected today; see the next test for the message.
    with pytest.raises(ValueError, match=field):
        _moe(**{field: -1})


@pytest.mark.parametrize("field", ["n_shared_experts", "shared_intermediate_size"])
@pytest.mark.parametrize("value", [-1, 1.5])
def test_shared_sizes_errors_name_field_and_value(field, value):
    with pytest.raises(ValueError, match=_names(field, value)):
        _moe(**{field: value})


# --- MLASpec ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]
)
@pytest.mark.parametrize("value", [0, -64, 1.5, True, None])
def test_mla_sizes_must_be_positive(field, value):
    with pytest.raises(
        ValueError, match=rf"^{field} must be a positive integer, got {re.escape(repr(value))}$"
    ):
        _mla(**{field: value})


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_q_lora_rank_positive_or_none(value):
    with pytest.raises(
        ValueError, match=rf"^q_lora_rank must be a positive integer, got {re.escape(repr(value))}$"
    ):
        _mla(q_lora_rank=value)
