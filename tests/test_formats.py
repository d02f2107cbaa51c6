"""Number formats: layouts pinned to their sources, exact bytes, properties, errors."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.memory.formats import (
    FORMATS,
    KEEP_GGUF,
    QuantContext,
    TensorStorage,
    get_format,
    tensor_storage,
)
from calculators.memory.gguf import GGML_TYPES
from calculators.model.tensors import Tensor

REQUIRED_IDS = (
    "fp32",
    "bf16",
    "fp16",
    "fp8-e4m3",
    "fp8-e5m2",
    "fp8-e4m3-block128",
    "fp8-e5m2-block128",
    "int8",
    "gptq-int4",
    "awq-int4",
    "nf4",
    "fp4",
    "nf4-dq",
    "fp4-dq",
    "gguf-q8_0",
    "gguf-q6_k",
    "gguf-q5_k_m",
    "gguf-q4_k_m",
    "gguf-q4_0",
)
OPTION_IDS = (
    "gptq-int4-g32",
    "gptq-int4-g64-noidx",
    "gptq-int4-gnone",
    "awq-int4-g64",
    "nf4-b128",
    "fp4-dq-b256",
)
QUANTIZED_IDS = tuple(i for i in (*REQUIRED_IDS, *OPTION_IDS) if i not in ("fp32", "bf16", "fp16"))

CTX = QuantContext(n_layers=32, n_experts=0, n_gqa=4, has_output=True)


def test_format_ids_are_exactly_the_offered_ones():
    assert tuple(FORMATS) == REQUIRED_IDS


@pytest.mark.parametrize("fid", REQUIRED_IDS)
def test_every_format_documents_layout_and_sources(fid):
    f = FORMATS[fid]
    assert f.id == fid and f.name and f.layout and f.source and f.keep_source
    assert f.bits > 0


# ---- bits per weight derived from the block structs -------------------------------------


@pytest.mark.parametrize(
    ("fid", "bits"),
    [
        ("fp32", 32),
        ("bf16", 16),
        ("fp16", 16),
        ("fp8-e4m3", 8),
        ("int8", 8),
        ("gptq-int4", 4),
        ("awq-int4", 4),
        ("nf4", 4),
        ("nf4-dq", 4),
        # ggml-common.h: block_q8_0 = 2 + 32 bytes / 32; q6_K "Effectively 6.5625 bits".
        ("gguf-q8_0", Fraction(17, 2)),
        ("gguf-q6_k", Fraction(105, 16)),
        ("gguf-q5_k_m", Fraction(11, 2)),
        ("gguf-q4_k_m", Fraction(9, 2)),
        ("gguf-q4_0", Fraction(9, 2)),
    ],
)
def test_nominal_bits(fid, bits):
    assert FORMATS[fid].bits == bits


@pytest.mark.parametrize(
    ("fid", "bpw"),
    [
        ("fp8-e4m3", 8 + Fraction(32, 4096 * 4096)),  # one fp32 scale per tensor
        ("fp8-e4m3-block128", 8 + Fraction(32, 128 * 128)),
        # GPTQ g128: 4 + zeros 4/128 + scales 16/128 bits, + g_idx 32 bits per input column.
        ("gptq-int4", 4 + Fraction(4, 128) + Fraction(16, 128) + Fraction(32, 4096)),
        ("awq-int4", 4 + Fraction(4, 128) + Fraction(16, 128)),
        ("gguf-q4_k_m", Fraction(9, 2)),
    ],
)
def test_effective_bits_per_weight_large_matrix(fid, bpw):
    assert FORMATS[fid].bits_per_weight((4096, 4096)) == bpw


def test_bnb4_bits_per_weight_from_bitsandbytes_docs():
    # bitsandbytes: 4-bit codes + one fp32 absmax per 64 -> 4.5 bits; double quantisation
    # (QLoRA arXiv:2305.14314 section 3) -> 8/64 + 32/(64*256) = 0.127 bits for the constants.
    n = 4096 * 4096
    assert float(FORMATS["nf4"].bits_per_weight((4096, 4096))) == pytest.approx(4.5, abs=1e-4)
    dq = FORMATS["nf4-dq"].bits_per_weight((4096, 4096))
    assert float(dq) == pytest.approx(4 + 8 / 64 + 32 / (64 * 256), abs=1e-3)
    assert FORMATS["nf4"].storage_bytes((4096, 4096)) > n // 2


# ---- exact bytes for small shapes --------------------------------------------------------


def _json_len(s: str) -> int:
    return len(s.encode())


@pytest.mark.parametrize(
    ("fid", "shape", "expected"),
    [
        ("fp32", (3, 5), 60),
        ("bf16", (3, 5), 30),
        ("fp16", (3, 5), 30),
        ("fp8-e4m3", (3, 5), 15 + 4),
        ("fp8-e5m2", (3, 5), 15 + 4),
        # DeepSeek-V3 kv_a_proj_with_mqa (576, 7168): weight 4,128,768 B + scale_inv (5, 56) fp32
        ("fp8-e4m3-block128", (576, 7168), 4_128_768 + 1_120),
        ("fp8-e4m3-block128", (200, 300), 60_000 + 4 * 2 * 3),
        # LLM.int8: int8 weight + SCB fp32 per row + weight_format uint8
        ("int8", (4, 8), 32 + 16 + 1),
        # GPTQ (out 16, in 256) g128: qweight 32x16 int32, qzeros 2x2, scales 2x16 fp16, g_idx 256
        ("gptq-int4", (16, 256), 2048 + 16 + 64 + 1024),
        ("gptq-int4-gnone-noidx", (16, 256), 2048 + 8 + 32),
        ("gptq-int4-g64-noidx", (16, 256), 2048 + 32 + 128),
        ("gptq-int4", (16, 200), 4 * 25 * 16 + 4 * 2 * 2 + 2 * 2 * 16 + 4 * 200),
        # AWQ (out 16, in 256) g128: qweight 256x2 int32, qzeros 2x2, scales 2x16 fp16
        ("awq-int4", (16, 256), 2048 + 16 + 64),
        ("awq-int4-g64", (16, 256), 2048 + 32 + 128),
        # GGUF blocks
        ("gguf-q4_0", (2, 64), 2 * 2 * 18),
        ("gguf-q8_0", (3, 64), 3 * 2 * 34),
        ("gguf-q4_k_m", (2, 256), 2 * 144),
        ("gguf-q5_k_m", (2, 512), 2 * 2 * 176),
        ("gguf-q6_k", (2, 256), 2 * 210),
        # ne0 not a multiple of 256: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0; then F16
        ("gguf-q4_k_m", (2, 288), 2 * 9 * 22),
        ("gguf-q5_k_m", (1, 288), 9 * 24),
        ("gguf-q6_k", (1, 288), 9 * 34),
        ("gguf-q4_k_m", (2, 48), 2 * 48 * 2),
        ("gguf-q8_0", (1, 48), 48 * 2),
        # 1-D: never quantised
        ("gptq-int4", (4096,), 8192),
        ("gguf-q4_k_m", (4096,), 16384),
        ("nf4", (10,), 20),
    ],
)
def test_exact_bytes(fid, shape, expected):
    assert get_format(fid).storage_bytes(shape) == expected


def test_nf4_exact_bytes_with_packed_quant_state():
    meta = '{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [64, 64]}'
    # weight 4096/2 + absmax 64 x fp32 + quant_map 16 x fp32 + JSON
    assert FORMATS["nf4"].storage_bytes((64, 64)) == 2048 + 256 + 64 + _json_len(meta)
    meta_fp4 = meta.replace("nf4", "fp4")
    assert FORMATS["fp4"].storage_bytes((64, 64)) == 2048 + 256 + 64 + _json_len(meta_fp4)


def test_nf4_double_quant_exact_bytes():
    meta = (
        '{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [64, 64], '
        '"nested_blocksize": 256, "nested_dtype": "float32", '
        '"nested_offset": 0.021447399258613586}'
    )
    # weight 2048 + absmax uint8 x 64 + nested_absmax 1 x fp32 + nested_quant_map 256 x fp32
    # + quant_map 16 x fp32 + JSON (offset repr assumed 20 characters)
    expected = 2048 + 64 + 4 + 1024 + 64 + _json_len(meta)
    assert FORMATS["nf4-dq"].storage_bytes((64, 64)) == expected


def test_bnb4_odd_element_count_rounds_up():
    f = FORMATS["nf4"]
    base = f.storage_bytes((1, 64))
    assert f.storage_bytes((1, 65)) - base == 1 + 4  # one more byte of codes, one more block


def test_ggml_block_structs_match_ggml_common_h():
    # sizeof() of each struct as written in ggml/src/ggml-common.h (ggml_half = 2 bytes)
    qk_k, half = 256, 2
    assert GGML_TYPES["Q4_0"].type_size == half + 32 // 2
    assert GGML_TYPES["Q8_0"].type_size == half + 32
    assert GGML_TYPES["Q5_0"].type_size == half + 4 + 32 // 2
    assert GGML_TYPES["Q5_1"].type_size == 2 * half + 4 + 32 // 2
    assert GGML_TYPES["Q4_K"].type_size == 2 * half + 12 + qk_k // 2
    assert GGML_TYPES["Q5_K"].type_size == 2 * half + 12 + qk_k // 2 + qk_k // 8
    assert GGML_TYPES["Q6_K"].type_size == half + qk_k // 16 + 3 * qk_k // 4
    assert (
        GGML_TYPES["Q4_K"].type_size,
        GGML_TYPES["Q5_K"].type_size,
        GGML_TYPES["Q6_K"].type_size,
    ) == (144, 176, 210)
    assert (GGML_TYPES["Q4_0"].type_size, GGML_TYPES["Q8_0"].type_size) == (18, 34)


# ---- option ids and errors ---------------------------------------------------------------


def test_option_ids_parse():
    g = get_format("gptq-int4-g32")
    assert (g.group_size, g.g_idx) == (32, True)
    g = get_format("gptq-int4-gnone-noidx")
    assert (g.group_size, g.g_idx) == (None, False)
    assert get_format("gptq-int4-g128") == FORMATS["gptq-int4"]
    a = get_format("awq-int4-g64")
    assert a.group_size == 64
    b = get_format("nf4-dq-b128")
    assert (b.quant_type, b.double_quant, b.group_size) == ("nf4", True, 128)


@pytest.mark.parametrize(
    "bad",
    ["q4", "", "gptq-int4-g0", "gptq-int4-g00", "awq-int4-g", "awq-int4-g0", "GPTQ-INT4", None, 4],
)
def test_unknown_format_is_an_error_naming_the_field(bad):
    with pytest.raises(ValueError, match=r"^format must be one of fp32, bf16, fp16, "):
        get_format(bad)


def test_bad_bnb_blocksize_names_the_bound():
    with pytest.raises(ValueError, match=r"^blocksize must be one of 32, 64, .*; got 100"):
        get_format("nf4-b100")


def test_unknown_format_message_lists_ids_and_value():
    with pytest.raises(ValueError) as e:
        get_format("q4")
    msg = str(e.value)
    assert msg.startswith("format must be one of fp32, bf16, fp16")
    assert "got 'q4'" in msg


def test_number_format_validation():
    f = FORMATS["gptq-int4"]
    with pytest.raises(ValueError, match="group_size must be a positive integer"):
        replace(f, group_size=0)
    with pytest.raises(ValueError, match="float_format must be one of"):
        replace(f, float_format="fp64")
    with pytest.raises(ValueError, match="keep_unquantized must hold tensor roles"):
        replace(f, keep_unquantized=frozenset({"lm_head"}))
    with pytest.raises(ValueError, match="bits must be > 0"):
        replace(f, bits=Fraction(0))
    with pytest.raises(ValueError, match="quant_type must be one of nf4, fp4"):
        replace(FORMATS["nf4"], quant_type="int4")
    with pytest.raises(ValueError, match="gguf_mix must be one of"):
        replace(FORMATS["gguf-q4_0"], gguf_mix="Q3_K_M")


@pytest.mark.parametrize("shape", [(), (0, 4), (4, -1)])
def test_bad_shapes_rejected(shape):
    with pytest.raises(ValueError, match="shape must be"):
        FORMATS["bf16"].storage_bytes(shape)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("n_layers", {"n_layers": 0}),
        ("n_experts", {"n_experts": -1}),
        ("n_gqa", {"n_gqa": 0}),
        ("has_output", {"has_output": 1}),
    ],
)
def test_quant_context_validation(field, kwargs):
    base = {"n_layers": 4, "n_experts": 0, "n_gqa": 1, "has_output": True}
    with pytest.raises(ValueError, match=rf"^{field} must be"):
        QuantContext(**(base | kwargs))


def test_tensor_storage_validation():
    with pytest.raises(ValueError, match="bytes must be > 0"):
        TensorStorage(name="x", role="norm", format_id="bf16", parameters=1, bytes=0)


# ---- per-tensor storage ------------------------------------------------------------------


def _t(role, shape, layer=0, count=1, category="attention"):
    return Tensor(
        name=f"t.{role}", role=role, shape=shape, category=category, layer=layer, count=count
    )


def test_one_d_tensors_stay_float():
    norm = _t("norm", (4096,), category="norms")
    assert tensor_storage("gptq-int4", norm, CTX).format_id == "fp16"
    assert tensor_storage("gptq-int4", norm, CTX).bytes == 8192
    assert tensor_storage("nf4-dq", norm, CTX).format_id == "bf16"
    s = tensor_storage("gguf-q4_k_m", norm, CTX)
    assert (s.format_id, s.bytes) == ("gguf:F32", 16384)
    assert tensor_storage("fp32", norm, CTX).bytes == 16384


def test_default_unquantized_roles():
    emb = _t("token_embd", (1000, 256), layer=None, category="embedding")
    router = _t("ffn_gate_inp", (8, 256), category="router")
    assert tensor_storage("gptq-int4", emb, CTX).format_id == "fp16"
    assert tensor_storage("awq-int4", router, CTX).format_id == "fp16"
    assert tensor_storage("fp8-e4m3", router, CTX).format_id == "bf16"
    # bitsandbytes replaces every nn.Linear but lm_head: the router is quantised
    assert tensor_storage("nf4", router, CTX).format_id == "nf4"
    assert tensor_storage("int8", emb, CTX).format_id == "bf16"
    assert tensor_storage("gguf-q4_k_m", router, CTX).format_id == "gguf:F32"
    eh = _t("nextn_eh_proj", (256, 512), category="mtp")
    assert tensor_storage("fp8-e4m3-block128", eh, CTX).format_id == "bf16"


def test_keep_unquantized_override():
    emb = _t("token_embd", (1024, 256), layer=None, category="embedding")
    s = tensor_storage("gptq-int4", emb, CTX, keep_unquantized=frozenset())
    assert s.format_id == "gptq-int4"
    assert s.bytes == FORMATS["gptq-int4"].storage_bytes((1024, 256))
    q = _t("attn_q", (256, 256))
    s = tensor_storage("awq-int4", q, CTX, keep_unquantized=frozenset({"attn_q"}))
    assert (s.format_id, s.bytes) == ("fp16", 256 * 256 * 2)
    out = _t("output", (1024, 256), layer=None, category="lm_head")
    s = tensor_storage("gguf-q4_k_m", out, CTX, keep_unquantized=KEEP_GGUF | {"output"})
    assert (s.format_id, s.bytes) == ("gguf:F16", 1024 * 256 * 2)
    with pytest.raises(ValueError, match="keep_unquantized must hold tensor roles"):
        tensor_storage("bf16", q, CTX, keep_unquantized=frozenset({"lm_head"}))


def test_count_multiplies_bytes_and_parameters():
    one = _t("ffn_down_exps", (256, 512), count=1, category="experts")
    eight = _t("ffn_down_exps", (256, 512), count=8, category="experts")
    for fid in ("gptq-int4", "nf4-dq", "fp8-e4m3-block128", "gguf-q4_0"):
        a, b = tensor_storage(fid, one, CTX), tensor_storage(fid, eight, CTX)
        assert b.bytes == 8 * a.bytes
        assert b.parameters == 8 * a.parameters == 8 * 256 * 512


# ---- properties --------------------------------------------------------------------------

rows_st = st.integers(min_value=1, max_value=3000)
cols_st = st.integers(min_value=1, max_value=3000)
blocks_st = st.integers(min_value=1, max_value=24).map(lambda k: 256 * k)
fid_st = st.sampled_from((*REQUIRED_IDS, *OPTION_IDS))


@given(fid=fid_st, rows=rows_st, cols=cols_st, lead=st.integers(min_value=1, max_value=4))
def test_bytes_positive_integers(fid, rows, cols, lead):
    f = get_format(fid)
    for shape in ((cols,), (rows, cols), (lead, rows, cols)):
        b = f.storage_bytes(shape)
        assert isinstance(b, int) and b > 0


@given(fid=fid_st, rows=rows_st, extra=rows_st, cols=blocks_st, more=blocks_st)
def test_bytes_monotone_in_shape(fid, rows, extra, cols, more):
    f = get_format(fid)
    b = f.storage_bytes((rows, cols))
    assert f.storage_bytes((rows + extra, cols)) > b
    assert f.storage_bytes((rows, cols + more)) > b


@given(fid=fid_st, rows=rows_st, cols=cols_st, extra=rows_st)
def test_bytes_monotone_in_rows_any_width(fid, rows, cols, extra):
    f = get_format(fid)
    assert f.storage_bytes((rows + extra, cols)) >= f.storage_bytes((rows, cols))


@given(fid=st.sampled_from(QUANTIZED_IDS), rows=blocks_st, cols=blocks_st)
def test_quantized_smaller_than_bf16_for_large_matrices(fid, rows, cols):
    assert get_format(fid).storage_bytes((rows, cols)) < 2 * rows * cols


@given(rows=blocks_st, cols=blocks_st)
def test_four_bit_formats_between_four_and_five_bits(rows, cols):
    for fid in ("gptq-int4", "awq-int4", "nf4", "nf4-dq", "gguf-q4_k_m", "gguf-q4_0"):
        bpw = get_format(fid).bits_per_weight((rows, cols))
        assert 4 < bpw <= 5
