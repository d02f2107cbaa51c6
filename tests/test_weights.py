"""Weights memory over a hand-built tensor list (no presets needed)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.memory.formats import FORMATS, QuantContext, get_format
from calculators.memory.weights import WeightsResult, weight_bytes_of
from calculators.model.tensors import Tensor

H, FF, V, KV = 256, 512, 1000, 64
CTX = QuantContext(n_layers=2, n_experts=0, n_gqa=4, has_output=True)


def _tiny_model(mtp: bool = True) -> list[Tensor]:
    ts = [
        Tensor(
            name="model.embed_tokens.weight", role="token_embd", shape=(V, H), category="embedding"
        )
    ]
    for i in range(2):
        p = f"model.layers.{i}"
        ts += [
            Tensor(
                name=f"{p}.input_layernorm.weight",
                role="norm",
                shape=(H,),
                category="norms",
                layer=i,
            ),
            Tensor(
                name=f"{p}.self_attn.q_proj.weight",
                role="attn_q",
                shape=(H, H),
                category="attention",
                layer=i,
            ),
            Tensor(
                name=f"{p}.self_attn.k_proj.weight",
                role="attn_k",
                shape=(KV, H),
                category="attention",
                layer=i,
            ),
            Tensor(
                name=f"{p}.self_attn.v_proj.weight",
                role="attn_v",
                shape=(KV, H),
                category="attention",
                layer=i,
            ),
            Tensor(
                name=f"{p}.self_attn.o_proj.weight",
                role="attn_output",
                shape=(H, H),
                category="attention",
                layer=i,
            ),
            Tensor(
                name=f"{p}.post_attention_layernorm.weight",
                role="norm",
                shape=(H,),
                category="norms",
                layer=i,
            ),
            Tensor(
                name=f"{p}.mlp.gate_proj.weight",
                role="ffn_gate",
                shape=(FF, H),
                category="mlp",
                layer=i,
            ),
            Tensor(
                name=f"{p}.mlp.up_proj.weight",
                role="ffn_up",
                shape=(FF, H),
                category="mlp",
                layer=i,
            ),
            Tensor(
                name=f"{p}.mlp.down_proj.weight",
                role="ffn_down",
                shape=(H, FF),
                category="mlp",
                layer=i,
            ),
        ]
    ts += [
        Tensor(name="model.norm.weight", role="norm", shape=(H,), category="norms"),
        Tensor(name="lm_head.weight", role="output", shape=(V, H), category="lm_head"),
    ]
    if mtp:
        ts.append(
            Tensor(
                name="model.layers.2.eh_proj.weight",
                role="nextn_eh_proj",
                shape=(H, 2 * H),
                category="mtp",
                layer=2,
                mtp=True,
            )
        )
    return ts


PARAMS_MAIN = 2 * V * H + 2 * (2 * H * H + 2 * KV * H + 3 * FF * H + 2 * H) + H
PARAMS_MTP = 2 * H * H


def test_bf16_is_two_bytes_per_parameter():
    r = weight_bytes_of(_tiny_model(), CTX, "bf16")
    assert r.main_bytes == 2 * PARAMS_MAIN
    assert r.mtp_bytes == 2 * PARAMS_MTP
    assert r.total_bytes == r.main_bytes + r.mtp_bytes
    assert r.parameters == PARAMS_MAIN + PARAMS_MTP
    assert r.bits_per_weight == 16
    assert r.by_format == {"bf16": r.total_bytes}
    assert r.format_id == "bf16"


def test_gptq_exact_bytes():
    def gptq(out, inp):  # qweight + qzeros + scales + g_idx, group 128
        g = -(-inp // 128)
        return 4 * (inp // 8) * out + 4 * g * (out // 8) + 2 * g * out + 4 * inp

    layer = 2 * gptq(H, H) + 2 * gptq(KV, H) + 2 * gptq(FF, H) + gptq(H, FF)
    expected_main = 2 * (V * H * 2) + 2 * layer + 2 * (5 * H)  # fp16 embeddings, norms
    r = weight_bytes_of(_tiny_model(mtp=False), CTX, "gptq-int4")
    assert r.total_bytes == r.main_bytes == expected_main
    assert r.mtp_bytes == 0
    assert r.by_format == {"fp16": 2 * (2 * V * H + 5 * H), "gptq-int4": 2 * layer}


def test_gguf_q4_k_m_types_and_bytes():
    r = weight_bytes_of(_tiny_model(mtp=False), CTX, "gguf-q4_k_m")
    by_name = {t.name: t for t in r.tensors}
    assert by_name["lm_head.weight"].format_id == "gguf:Q6_K"
    assert by_name["model.embed_tokens.weight"].format_id == "gguf:Q4_K"
    # n_layers = 2: n/8 = 0 and 7n/8 = 1, so use_more_bits marks layer 1 only
    assert by_name["model.layers.0.self_attn.v_proj.weight"].format_id == "gguf:Q4_K"
    assert by_name["model.layers.1.self_attn.v_proj.weight"].format_id == "gguf:Q6_K"
    assert by_name["model.layers.1.mlp.down_proj.weight"].format_id == "gguf:Q6_K"
    assert by_name["model.layers.0.input_layernorm.weight"].format_id == "gguf:F32"
    assert sum(r.by_format.values()) == r.total_bytes
    assert r.by_format["gguf:F32"] == 4 * 5 * H


def test_by_category_sums_to_total():
    for fid in FORMATS:
        r = weight_bytes_of(_tiny_model(), CTX, fid)
        assert sum(r.by_category.values()) == r.total_bytes
        assert sum(r.by_format.values()) == r.total_bytes
        assert set(r.by_category) == {"embedding", "attention", "mlp", "norms", "lm_head", "mtp"}
        assert r.by_category["mtp"] == r.mtp_bytes
        assert len(r.tensors) == len(_tiny_model())


def test_keep_unquantized_override_changes_bytes():
    base = weight_bytes_of(_tiny_model(), CTX, "awq-int4")
    all_q = weight_bytes_of(_tiny_model(), CTX, "awq-int4", keep_unquantized=frozenset())
    assert all_q.total_bytes < base.total_bytes
    assert "fp16" in all_q.by_format  # norms stay float whatever the set
    keep_mlp = weight_bytes_of(
        _tiny_model(),
        CTX,
        "awq-int4",
        keep_unquantized=frozenset({"token_embd", "output", "ffn_down"}),
    )
    assert keep_mlp.total_bytes > base.total_bytes


def test_errors():
    with pytest.raises(ValueError, match=r"^format must be one of"):
        weight_bytes_of(_tiny_model(), CTX, "q4")
    with pytest.raises(ValueError, match=r"^keep_unquantized must hold tensor roles"):
        weight_bytes_of(_tiny_model(), CTX, "nf4", keep_unquantized=frozenset({"embed"}))
    with pytest.raises(ValueError, match=r"^tensors must list at least one tensor"):
        weight_bytes_of([], CTX, "bf16")
    with pytest.raises(ValueError, match=r"^total_bytes must equal main_bytes"):
        WeightsResult(
            format_id="bf16",
            total_bytes=3,
            main_bytes=1,
            mtp_bytes=1,
            by_category={},
            by_format={},
            tensors=(),
        )


@given(fid=st.sampled_from(tuple(FORMATS)), scale=st.integers(min_value=1, max_value=4))
def test_more_layers_more_bytes(fid, scale):
    one = weight_bytes_of(_tiny_model(mtp=False), CTX, fid)
    ts = _tiny_model(mtp=False)
    extra = [t for t in ts if t.layer == 0] * scale
    ctx = QuantContext(n_layers=2 + scale, n_experts=0, n_gqa=4, has_output=True)
    more = weight_bytes_of(ts + extra, ctx, fid)
    assert more.total_bytes > one.total_bytes


@given(fid=st.sampled_from(tuple(f for f in FORMATS if get_format(f).family != "float")))
def test_quantized_model_smaller_than_bf16(fid):
    big = QuantContext(n_layers=1, n_experts=0, n_gqa=1, has_output=True)
    ts = [
        Tensor(name=f"l.{r}", role=r, shape=(4096, 4096), category="attention", layer=0)
        for r in ("attn_q", "attn_k", "attn_v", "attn_output")
    ]
    assert weight_bytes_of(ts, big, fid).total_bytes < weight_bytes_of(ts, big, "bf16").total_bytes
