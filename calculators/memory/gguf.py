"""llama.cpp GGUF storage: the ggml block types, and the per-tensor type choice of
`llama-quantize` for the file types this project offers.

Block types (`GGML_TYPES`) are the structs of `ggml/src/ggml-common.h`: a row of
`ne0` values (the last PyTorch dimension, in_features of a linear weight) is
stored as `ne0 / block_size` blocks of `type_size` bytes, so

    bytes(tensor) = rows x (ne0 / block_size) x type_size,   rows = numel / ne0

(`ggml_row_size` in ggml/src/ggml.c). Bits per weight are derived from the struct:
8 x type_size / block_size.

The file type (`GGUF_MIXES`: Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0) sets a default
block type; `gguf_tensor_type` then ports the logic of `llama_tensor_get_type`
(and `tensor_type_fallback`) in llama.cpp `src/llama-quant.cpp`, written anew in
Python, for the tensor roles of `calculators.model.tensors.Role`. Not ported: the IQ*,
Q2_K, Q3_K and TQ mixes, the Falcon-only rules, MXFP4_MOE, and the user overrides
(--tensor-type, --pure).

Two rule sets are kept, because llama.cpp changed how it treats fused qkv:
  "8784689"  llama.cpp commit 8784689 (2025) and every release since the k-quant
             mixes (PR #1684, 2023): attn_qkv has its own rule (Q5_K in Q4_K_M,
             Q6_K in Q5_K_M); attn_kv_b keeps the default type. Published GGUF
             files (TheBloke, bartowski, microsoft/Phi-3 ...) were made this way.
  "007dbbf"  llama.cpp commit 007dbbf (2026, `tensor_category` refactor):
             attn_qkv and attn_kv_b are "attn_v-like" (`category_is_attn_v`) and
             follow the attn_v rules, so Q4_K_M gives them Q6_K on the
             use_more_bits layers and Q4_K elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import prod
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from calculators.memory.formats import QuantContext
    from calculators.model.tensors import Tensor

GGML_COMMON_H = "llama.cpp ggml/src/ggml-common.h"
LLAMA_QUANT_CPP = "llama.cpp src/llama-quant.cpp"


@dataclass(frozen=True, kw_only=True)
class GGMLType:
    """One ggml storage type: `block_size` values in `type_size` bytes."""

    name: str
    block_size: int
    type_size: int
    struct: str
    source: str

    def __post_init__(self) -> None:
        if self.block_size <= 0 or self.type_size <= 0:
            raise ValueError(
                f"ggml type {self.name}: block_size and type_size must be positive, "
                f"got {self.block_size} and {self.type_size}"
            )

    @property
    def bits_per_weight(self) -> Fraction:
        """8 x type_size / block_size, exact."""
        return Fraction(8 * self.type_size, self.block_size)

    def row_bytes(self, ne0: int) -> int:
        """Bytes of one row of `ne0` values (`ggml_row_size`); ne0 must fill whole blocks."""
        if ne0 <= 0 or ne0 % self.block_size:
            raise ValueError(
                f"ne0 must be a positive multiple of {self.name}'s block size "
                f"{self.block_size}; got {ne0}"
            )
        return ne0 // self.block_size * self.type_size


def _t(name: str, block_size: int, type_size: int, struct: str, source: str) -> GGMLType:
    return GGMLType(
        name=name, block_size=block_size, type_size=type_size, struct=struct, source=source
    )


GGML_TYPES: dict[str, GGMLType] = {
    t.name: t
    for t in (
        _t("F32", 1, 4, "IEEE binary32", "ggml/src/ggml.c type_traits[GGML_TYPE_F32]"),
        _t("F16", 1, 2, "IEEE binary16 (ggml_half)", "ggml/src/ggml.c type_traits[GGML_TYPE_F16]"),
        _t("BF16", 1, 2, "bfloat16 (ggml_bf16_t)", "ggml/src/ggml.c type_traits[GGML_TYPE_BF16]"),
        _t(
            "Q4_0",
            32,
            18,
            "fp16 d + 16 bytes of 4-bit quants (32 values)",
            f"{GGML_COMMON_H} block_q4_0 (QK4_0 = 32)",
        ),
        _t(
            "Q4_1",
            32,
            20,
            "fp16 d + fp16 m + 16 bytes of 4-bit quants",
            f"{GGML_COMMON_H} block_q4_1 (QK4_1 = 32)",
        ),
        _t(
            "Q5_0",
            32,
            22,
            "fp16 d + 4 bytes of high bits + 16 bytes of low nibbles",
            f"{GGML_COMMON_H} block_q5_0 (QK5_0 = 32)",
        ),
        _t(
            "Q5_1",
            32,
            24,
            "fp16 d + fp16 m + 4 bytes of high bits + 16 bytes of nibbles",
            f"{GGML_COMMON_H} block_q5_1 (QK5_1 = 32)",
        ),
        _t("Q8_0", 32, 34, "fp16 d + 32 int8 quants", f"{GGML_COMMON_H} block_q8_0 (QK8_0 = 32)"),
        _t(
            "Q2_K",
            256,
            84,
            "16 bytes scales/mins + 64 bytes 2-bit quants + fp16 d + fp16 dmin",
            f"{GGML_COMMON_H} block_q2_K (QK_K = 256)",
        ),
        _t(
            "Q3_K",
            256,
            110,
            "32 bytes hmask + 64 bytes quants + 12 bytes scales + fp16 d",
            f"{GGML_COMMON_H} block_q3_K (QK_K = 256)",
        ),
        _t(
            "Q4_K",
            256,
            144,
            "fp16 d + fp16 dmin + 12 bytes 6-bit scales/mins + 128 bytes nibbles",
            f"{GGML_COMMON_H} block_q4_K (QK_K = 256, K_SCALE_SIZE = 12)",
        ),
        _t(
            "Q5_K",
            256,
            176,
            "fp16 d + fp16 dmin + 12 bytes scales/mins + 32 bytes high bits + 128 bytes nibbles",
            f"{GGML_COMMON_H} block_q5_K (QK_K = 256)",
        ),
        _t(
            "Q6_K",
            256,
            210,
            "128 bytes low nibbles + 64 bytes high 2 bits + 16 int8 scales + fp16 d",
            f"{GGML_COMMON_H} block_q6_K (QK_K = 256)",
        ),
    )
}


def get_ggml_type(name: str) -> GGMLType:
    """The ggml type `name` (e.g. "Q4_K"); ValueError naming the known ones otherwise."""
    try:
        return GGML_TYPES[name]
    except KeyError:
        raise ValueError(
            f"ggml type must be one of {', '.join(GGML_TYPES)}; got {name!r}"
        ) from None


def ggml_tensor_bytes(type_name: str, shape: tuple[int, ...]) -> int:
    """Bytes of a tensor of PyTorch `shape` stored as `type_name`.

    ne0 = shape[-1] (ggml's innermost dimension), rows = numel / ne0.
    """
    if not shape or any(d <= 0 for d in shape):
        raise ValueError(f"shape must be non-empty with positive dimensions; got {shape}")
    t = get_ggml_type(type_name)
    return prod(shape[:-1]) * t.row_bytes(shape[-1])


# `tensor_type_fallback` in src/llama-quant.cpp: when ne0 is not a multiple of the
# chosen type's block size. A type with no entry has no fallback in llama.cpp
# (it aborts); we then store F16, what llama.cpp uses when the fallback itself
# does not fit.
FALLBACK: dict[str, str] = {
    "Q2_K": "Q4_0",
    "Q3_K": "Q4_0",
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}


def fallback_type(type_name: str, ne0: int) -> str:
    """The type llama.cpp stores a row of `ne0` values in when it chose `type_name`.

    `tensor_type_fallback` (src/llama-quant.cpp): Q4_K -> Q5_0, Q5_K -> Q5_1,
    Q6_K -> Q8_0 when ne0 % 256 != 0; F16 when even the fallback does not divide.
    """
    t = get_ggml_type(type_name)
    if ne0 % t.block_size == 0:
        return type_name
    fb = FALLBACK.get(type_name)
    if fb is not None and ne0 % GGML_TYPES[fb].block_size == 0:
        return fb
    return "F16"


@dataclass(frozen=True, kw_only=True)
class GGUFMix:
    """A llama-quantize file type (LLAMA_FTYPE_MOSTLY_*) and its default block type."""

    id: str
    default_type: str
    description: str
    source: str

    def __post_init__(self) -> None:
        get_ggml_type(self.default_type)


GGUF_MIXES: dict[str, GGUFMix] = {
    m.id: m
    for m in (
        GGUFMix(
            id="Q8_0",
            default_type="Q8_0",
            description="Q8_0 for every quantisable matrix, output included",
            source=f"{LLAMA_QUANT_CPP} llama_ftype_get_default_type",
        ),
        GGUFMix(
            id="Q6_K",
            default_type="Q6_K",
            description="Q6_K for every quantisable matrix",
            source=f"{LLAMA_QUANT_CPP} llama_ftype_get_default_type",
        ),
        GGUFMix(
            id="Q5_K_M",
            default_type="Q5_K",
            description="Q5_K; Q6_K for output and for attn_v and ffn_down on the "
            "use_more_bits layers",
            source=f"{LLAMA_QUANT_CPP} llama_tensor_get_type (LLAMA_FTYPE_MOSTLY_Q5_K_M)",
        ),
        GGUFMix(
            id="Q4_K_M",
            default_type="Q4_K",
            description="Q4_K; Q6_K for output and for attn_v and ffn_down on the "
            "use_more_bits layers; Q5_K for attn_qkv",
            source=f"{LLAMA_QUANT_CPP} llama_tensor_get_type (LLAMA_FTYPE_MOSTLY_Q4_K_M)",
        ),
        GGUFMix(
            id="Q4_0",
            default_type="Q4_0",
            description="Q4_0; Q6_K for output",
            source=f"{LLAMA_QUANT_CPP} llama_tensor_get_type (LLAMA_FTYPE_MOSTLY_Q4_0)",
        ),
    )
}

Ruleset = Literal["8784689", "007dbbf"]
RULESETS: dict[str, str] = {
    "8784689": "llama.cpp 8784689 src/llama-quant.cpp llama_tensor_get_type: attn_qkv has its "
    "own rule (the behaviour of published 2023-2025 GGUF files)",
    "007dbbf": "llama.cpp 007dbbf src/llama-quant.cpp llama_tensor_get_type_impl: attn_qkv and "
    "attn_kv_b follow the attn_v rules (category_is_attn_v)",
}
DEFAULT_RULESET: Ruleset = "8784689"

# Roles llama-quantize never quantises (`tensor_allows_quantization`): norms and
# biases are 1-D; the MoE router (ffn_gate_inp) and learned positions are excluded
# by name. convert_hf_to_gguf.py writes all of them as F32 (ModelBase.prepare_tensors:
# n_dims <= 1, FFN_GATE_INP, POS_EMBD "are always in float32").
NEVER_QUANTIZED: frozenset[str] = frozenset(
    {"norm", "bias", "exp_probs_b", "ffn_gate_inp", "ffn_gate_inp_shexp", "position_embd"}
)

_FFN_DOWN = frozenset({"ffn_down", "ffn_down_exps", "ffn_down_shexp"})


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every
    third layer in between, get the higher-precision type in the _K_M mixes.

    True when i < n/8, or i >= 7n/8, or (i - n/8) % 3 == 2 (C integer division; the
    modulo of a negative number cannot occur because i >= n/8 there).
    """
    eighth = n_layers // 8
    return i_layer < eighth or i_layer >= 7 * n_layers // 8 or (i_layer - eighth) % 3 == 2


def ggml_n_dims(shape: tuple[int, ...]) -> int:
    """`ggml_n_dims`: dimensions once trailing ggml (leading PyTorch) sizes of 1 are dropped.

    Qwen2-MoE's shared_expert_gate (1, hidden) is 1-D to ggml, hence never quantised.
    """
    dims = len(shape)
    for d in shape[:-1]:
        if d != 1:
            break
        dims -= 1
    return max(dims, 1)


def gguf_tensor_type(
    mix_id: str,
    tensor: Tensor,
    ctx: QuantContext,
    *,
    imatrix: bool = False,
    ruleset: Ruleset = DEFAULT_RULESET,
) -> str:
    """The ggml type llama-quantize stores `tensor` in for file type `mix_id`.

    Port of `llama_tensor_get_type` (src/llama-quant.cpp) for Q8_0, Q6_K, Q5_K_M,
    Q4_K_M and Q4_0 (no --pure, no overrides). In order:

    1. Never quantised (`tensor_allows_quantization`): 1-D to ggml, norms, biases,
       the router `ffn_gate_inp`, `position_embd` -> F32, as convert_hf_to_gguf writes them.
    2. `output`, or `token_embd` when the model has no separate output (tied
       embeddings): Q8_0 if ne0 is not a multiple of the default type's block,
       else Q6_K unless the default is Q8_0.
    3. `token_embd` of an untied model: the default type.
    4. attn_v (and, in ruleset "007dbbf", attn_qkv and attn_kv_b): Q6_K on
       use_more_bits(layer, n_layers) for Q4_K_M and Q5_K_M; a 70B llama
       (`ctx.model_type_70b`) lifts Q3_K/Q4_K to Q5_K; 8 experts -> Q8_0.
    5. attn_k: Q8_0 when the model has exactly 8 experts (Mixtral).
    6. ffn_down, ffn_down_exps, ffn_down_shexp: Q6_K on use_more_bits layers for
       Q4_K_M and Q5_K_M; with an importance matrix, Q4_0 gives the first n/8
       layers Q4_1.
    7. attn_output: Q5_K in Q4_K_M when the model has exactly 8 experts.
    8. attn_qkv (ruleset "8784689"): Q5_K in Q4_K_M, Q6_K in Q5_K_M.
    9. `tensor_type_fallback`: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0 when ne0 is
       not a multiple of 256 (F16 when that still does not divide).

    Assumptions: tensors are visited in llama.cpp's order (sorted by layer), so its
    running counters `i_attention_wv` and `i_ffn_down` equal the layer index and
    `n_attention_wv = n_ffn_down = n_layers`; a layer index past the main layers
    (MTP) counts as a last layer.
    """
    try:
        mix = GGUF_MIXES[mix_id]
    except KeyError:
        raise ValueError(
            f"gguf mix must be one of {', '.join(GGUF_MIXES)}; got {mix_id!r}"
        ) from None
    if ruleset not in RULESETS:
        raise ValueError(f"ruleset must be one of {', '.join(RULESETS)}; got {ruleset!r}")
    role, shape = tensor.role, tensor.shape
    if role in NEVER_QUANTIZED or ggml_n_dims(shape) < 2:
        return "F32"

    default = mix.default_type
    ne0 = shape[-1]
    new = default
    layer = tensor.layer if tensor.layer is not None else 0
    n = ctx.n_layers
    k_m = mix_id in ("Q4_K_M", "Q5_K_M")
    attn_v_like = {"attn_v"} if ruleset == "8784689" else {"attn_v", "attn_qkv", "attn_kv_b"}

    if role == "output" or (role == "token_embd" and not ctx.has_output):
        if ne0 % GGML_TYPES[default].block_size:
            new = "Q8_0"
        elif default != "Q8_0":
            new = "Q6_K"
    elif role == "token_embd":
        pass
    elif role in attn_v_like:
        if k_m and use_more_bits(layer, n):
            new = "Q6_K"
        if ctx.model_type_70b and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"
        if ctx.n_experts == 8:
            new = "Q8_0"
    elif role == "attn_k":
        if ctx.n_experts == 8:
            new = "Q8_0"
    elif role in _FFN_DOWN:
        if k_m and use_more_bits(layer, n):
            new = "Q6_K"
        elif mix_id == "Q4_0" and imatrix and layer < n // 8:
            new = "Q4_1"
    elif role == "attn_output":
        if ctx.n_experts == 8 and mix_id == "Q4_K_M":
            new = "Q5_K"
    elif role == "attn_qkv":  # reached only in ruleset 8784689
        if mix_id == "Q4_K_M":
            new = "Q5_K"
        elif mix_id == "Q5_K_M":
            new = "Q6_K"
    return fallback_type(new, ne0)
