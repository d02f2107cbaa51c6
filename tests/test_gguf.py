"""llama.cpp per-tensor type choice (src/llama-quant.cpp llama_tensor_get_type), ported."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.memory.formats import QuantContext
from calculators.memory.gguf import (
    GGML_TYPES,
    GGUF_MIXES,
    fallback_type,
    get_ggml_type,
    ggml_n_dims,
    ggml_tensor_bytes,
    gguf_tensor_type,
    use_more_bits,
)
from calculators.model.tensors import Tensor

DENSE = QuantContext(n_layers=32, n_experts=0, n_gqa=4, has_output=True)
TIED = QuantContext(n_layers=32, n_experts=0, n_gqa=4, has_output=False)
MIXTRAL = QuantContext(n_layers=32, n_experts=8, n_gqa=4, has_output=True)
MOE64 = QuantContext(n_layers=27, n_experts=64, n_gqa=1, has_output=True)
L70B = QuantContext(n_layers=80, n_experts=0, n_gqa=8, has_output=True, model_type_70b=True)


def T(role, shape=(4096, 4096), layer=0, count=1):
    return Tensor(
        name=f"blk.{layer}.{role}",
        role=role,
        shape=shape,
        category="attention",
        layer=layer,
        count=count,
    )


def typ(mix, role, ctx=DENSE, **kw):
    shape = kw.pop("shape", (4096, 4096))
    layer = kw.pop("layer", 0)
    return gguf_tensor_type(mix, T(role, shape, layer), ctx, **kw)


# ---- blocks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "block", "size", "bpw"),
    [
        ("Q4_0", 32, 18, 4.5),
        ("Q4_1", 32, 20, 5.0),
        ("Q5_0", 32, 22, 5.5),
        ("Q5_1", 32, 24, 6.0),
        ("Q8_0", 32, 34, 8.5),
        ("Q2_K", 256, 84, 2.625),
        ("Q3_K", 256, 110, 3.4375),
        ("Q4_K", 256, 144, 4.5),
        ("Q5_K", 256, 176, 5.5),
        ("Q6_K", 256, 210, 6.5625),
        ("F16", 1, 2, 16),
        ("F32", 1, 4, 32),
    ],
)
def test_block_sizes_from_ggml_common_h(name, block, size, bpw):
    t = GGML_TYPES[name]
    assert (t.block_size, t.type_size) == (block, size)
    assert t.bits_per_weight == bpw  # the "Effectively x bits per weight" comments
    assert t.source


def test_ggml_tensor_bytes():
    assert ggml_tensor_bytes("Q4_K", (4096, 4096)) == 4096 * 16 * 144
    assert ggml_tensor_bytes("Q8_0", (2, 3, 64)) == 6 * 2 * 34
    with pytest.raises(ValueError, match=r"^ne0 must be a positive multiple of Q4_K's block size"):
        ggml_tensor_bytes("Q4_K", (4, 100))
    with pytest.raises(ValueError, match=r"^ggml type must be one of .*; got 'Q7_K'"):
        get_ggml_type("Q7_K")
    with pytest.raises(ValueError, match=r"^shape must be"):
        ggml_tensor_bytes("F16", ())


def test_mix_default_types():
    assert {m: GGUF_MIXES[m].default_type for m in GGUF_MIXES} == {
        "Q8_0": "Q8_0",
        "Q6_K": "Q6_K",
        "Q5_K_M": "Q5_K",
        "Q4_K_M": "Q4_K",
        "Q4_0": "Q4_0",
    }


# ---- use_more_bits -------------------------------------------------------------------------


def test_use_more_bits_32_layers():
    # n/8 = 4: layers 0-3 and 28-31, and every third layer from 6: half of the layers
    chosen = [i for i in range(32) if use_more_bits(i, 32)]
    assert chosen == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]


def test_use_more_bits_small_models():
    assert [i for i in range(8) if use_more_bits(i, 8)] == [0, 3, 6, 7]
    assert [i for i in range(16) if use_more_bits(i, 16)] == [0, 1, 4, 7, 10, 13, 14, 15]
    # n < 8: n/8 = 0, so layer 0 is not special; 7n/8 still marks the last layers
    assert [i for i in range(4) if use_more_bits(i, 4)] == [2, 3]


@given(n=st.integers(min_value=1, max_value=200))
def test_use_more_bits_selects_about_half(n):
    k = sum(use_more_bits(i, n) for i in range(n))
    assert n // 4 <= k <= n // 2 + 2


# ---- output and token embeddings ----------------------------------------------------------


def test_output_gets_q6_k_except_in_q8_0():
    for mix in ("Q4_K_M", "Q5_K_M", "Q4_0", "Q6_K"):
        assert typ(mix, "output", shape=(32000, 4096)) == "Q6_K"
    assert typ("Q8_0", "output", shape=(32000, 4096)) == "Q8_0"


def test_output_q8_0_when_row_does_not_fill_k_blocks():
    # Qwen2.5-0.5B: hidden 896 is not a multiple of 256 -> output (or tied embedding) Q8_0
    assert typ("Q4_K_M", "output", shape=(151936, 896)) == "Q8_0"
    assert typ("Q4_K_M", "token_embd", TIED, shape=(151936, 896)) == "Q8_0"
    # Q4_0 (block 32) picks Q6_K, then the fallback turns it into Q8_0
    assert typ("Q4_0", "token_embd", TIED, shape=(151936, 896)) == "Q8_0"


def test_tied_token_embedding_is_treated_as_output():
    assert typ("Q4_K_M", "token_embd", TIED, shape=(128256, 2048)) == "Q6_K"
    assert typ("Q4_K_M", "token_embd", DENSE, shape=(128256, 4096)) == "Q4_K"
    assert typ("Q4_0", "token_embd", DENSE, shape=(32000, 4096)) == "Q4_0"
    assert typ("Q8_0", "token_embd", TIED, shape=(32000, 4096)) == "Q8_0"


# ---- attention ----------------------------------------------------------------------------


@pytest.mark.parametrize("mix", ["Q4_K_M", "Q5_K_M"])
def test_attn_v_more_bits_layers(mix):
    default = GGUF_MIXES[mix].default_type
    shape = (1024, 4096)
    assert typ(mix, "attn_v", shape=shape, layer=0) == "Q6_K"
    assert typ(mix, "attn_v", shape=shape, layer=4) == default
    assert typ(mix, "attn_v", shape=shape, layer=6) == "Q6_K"
    assert typ(mix, "attn_v", shape=shape, layer=31) == "Q6_K"
    assert typ(mix, "attn_q", layer=0) == default
    assert typ(mix, "attn_k", shape=shape, layer=0) == default
    assert typ(mix, "attn_output", layer=0) == default


def test_attn_v_no_bump_in_q4_0_and_q6_k():
    assert typ("Q4_0", "attn_v", shape=(1024, 4096), layer=0) == "Q4_0"
    assert typ("Q6_K", "attn_v", shape=(1024, 4096), layer=0) == "Q6_K"


def test_eight_experts_attn_v_and_attn_k_q8_0_in_every_mix():
    for mix in GGUF_MIXES:
        assert typ(mix, "attn_v", MIXTRAL, shape=(1024, 4096), layer=5) == "Q8_0"
        assert typ(mix, "attn_k", MIXTRAL, shape=(1024, 4096), layer=5) == "Q8_0"
    # only exactly 8 experts (hparams.n_expert == 8)
    assert typ("Q4_K_M", "attn_k", MOE64, shape=(2048, 2048), layer=5) == "Q4_K"


def test_eight_experts_attn_output_q5_k_in_q4_k_m():
    assert typ("Q4_K_M", "attn_output", MIXTRAL, layer=5) == "Q5_K"
    assert typ("Q5_K_M", "attn_output", MIXTRAL, layer=5) == "Q5_K"  # the default
    assert typ("Q4_0", "attn_output", MIXTRAL, layer=5) == "Q4_0"
    assert typ("Q4_K_M", "attn_output", DENSE, layer=5) == "Q4_K"


def test_llama_70b_attn_v_q5_k():
    assert typ("Q4_K_M", "attn_v", L70B, shape=(1024, 8192), layer=20) == "Q5_K"
    assert typ("Q4_K_M", "attn_v", L70B, shape=(1024, 8192), layer=0) == "Q6_K"
    assert typ("Q4_0", "attn_v", L70B, shape=(1024, 8192), layer=20) == "Q4_0"


def test_attn_qkv_ruleset_8784689():
    # fused qkv (Phi-3, GPT-2): its own rule, every layer
    for layer in (0, 4):
        assert typ("Q4_K_M", "attn_qkv", shape=(9216, 3072), layer=layer) == "Q5_K"
        assert typ("Q5_K_M", "attn_qkv", shape=(9216, 3072), layer=layer) == "Q6_K"
    assert typ("Q4_0", "attn_qkv", shape=(9216, 3072)) == "Q4_0"
    assert typ("Q4_K_M", "attn_kv_b", shape=(32768, 512), layer=0) == "Q4_K"


def test_attn_qkv_and_kv_b_ruleset_007dbbf_follow_attn_v():
    kw = {"ruleset": "007dbbf"}
    assert typ("Q4_K_M", "attn_qkv", shape=(9216, 3072), layer=0, **kw) == "Q6_K"
    assert typ("Q4_K_M", "attn_qkv", shape=(9216, 3072), layer=4, **kw) == "Q4_K"
    assert typ("Q4_K_M", "attn_kv_b", MOE64, shape=(32768, 512), layer=0, **kw) == "Q6_K"
    assert typ("Q4_K_M", "attn_kv_b", MOE64, shape=(32768, 512), layer=4, **kw) == "Q4_K"


# ---- feed-forward -------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["ffn_down", "ffn_down_exps", "ffn_down_shexp"])
def test_ffn_down_more_bits_layers(role):
    shape = (4096, 14336)
    assert typ("Q4_K_M", role, shape=shape, layer=0) == "Q6_K"
    assert typ("Q4_K_M", role, shape=shape, layer=4) == "Q4_K"
    assert typ("Q5_K_M", role, shape=shape, layer=9) == "Q6_K"
    assert typ("Q5_K_M", role, shape=shape, layer=10) == "Q5_K"
    assert typ("Q4_0", role, shape=shape, layer=0) == "Q4_0"


def test_q4_0_with_imatrix_guards_first_ffn_down_layers():
    assert typ("Q4_0", "ffn_down", shape=(4096, 14336), layer=3, imatrix=True) == "Q4_1"
    assert typ("Q4_0", "ffn_down", shape=(4096, 14336), layer=4, imatrix=True) == "Q4_0"


@pytest.mark.parametrize(
    "role",
    [
        "ffn_gate",
        "ffn_up",
        "ffn_gate_up",
        "ffn_gate_exps",
        "ffn_up_exps",
        "ffn_gate_shexp",
        "attn_q_a",
        "attn_q_b",
        "attn_kv_a_mqa",
        "nextn_eh_proj",
    ],
)
def test_other_matrices_take_the_default(role):
    for mix, default in (("Q4_K_M", "Q4_K"), ("Q5_K_M", "Q5_K"), ("Q4_0", "Q4_0")):
        assert typ(mix, role, shape=(2048, 4096), layer=0) == default


def test_never_quantized_roles_stay_f32():
    for mix in GGUF_MIXES:
        assert typ(mix, "ffn_gate_inp", MIXTRAL, shape=(8, 4096)) == "F32"
        assert typ(mix, "position_embd", shape=(1024, 768)) == "F32"
        assert typ(mix, "norm", shape=(4096,)) == "F32"
        assert typ(mix, "bias", shape=(4096,)) == "F32"
        # Qwen2-MoE shared_expert_gate (1, hidden) is 1-D to ggml
        assert typ(mix, "ffn_gate_inp_shexp", MOE64, shape=(1, 2048)) == "F32"


def test_ggml_n_dims():
    assert ggml_n_dims((1, 2048)) == 1
    assert ggml_n_dims((8, 1, 64)) == 3
    assert ggml_n_dims((1, 1, 64)) == 1
    assert ggml_n_dims((64,)) == 1


# ---- fallback -----------------------------------------------------------------------------


def test_fallbacks_when_row_is_not_a_multiple_of_256():
    # Gemma-3-1B hidden 1152, Qwen2.5-0.5B hidden 896
    assert typ("Q4_K_M", "attn_q", shape=(1024, 1152), layer=4) == "Q5_0"
    assert typ("Q4_K_M", "attn_v", shape=(256, 896), layer=0) == "Q8_0"  # Q6_K -> Q8_0
    assert typ("Q5_K_M", "attn_q", shape=(896, 896), layer=4) == "Q5_1"
    assert typ("Q6_K", "attn_q", shape=(896, 896)) == "Q8_0"
    assert fallback_type("Q4_K", 256) == "Q4_K"
    assert fallback_type("Q4_K", 48) == "F16"
    assert fallback_type("Q8_0", 48) == "F16"
    assert fallback_type("Q3_K", 96) == "Q4_0"


# ---- a whole small model ------------------------------------------------------------------


def test_small_llama_q4_k_m_type_census():
    n = 8
    ctx = QuantContext(n_layers=n, n_experts=0, n_gqa=4, has_output=True)
    types = {}
    for i in range(n):
        for role, shape in (
            ("attn_q", (256, 256)),
            ("attn_k", (64, 256)),
            ("attn_v", (64, 256)),
            ("attn_output", (256, 256)),
            ("ffn_gate", (512, 256)),
            ("ffn_up", (512, 256)),
            ("ffn_down", (256, 512)),
        ):
            types[(role, i)] = gguf_tensor_type("Q4_K_M", T(role, shape, i), ctx)
    more = {0, 3, 6, 7}
    for i in range(n):
        want = "Q6_K" if i in more else "Q4_K"
        assert types[("attn_v", i)] == want
        assert types[("ffn_down", i)] == want
        assert types[("attn_q", i)] == types[("ffn_up", i)] == "Q4_K"


def test_errors_name_the_field():
    with pytest.raises(ValueError, match=r"^gguf mix must be one of Q8_0, .*; got 'Q3_K_M'"):
        typ("Q3_K_M", "attn_q")
    with pytest.raises(ValueError, match=r"^ruleset must be one of 8784689, 007dbbf; got 'b1'"):
        typ("Q4_K_M", "attn_q", ruleset="b1")
