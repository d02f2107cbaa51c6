"""Number formats of model weights, as data: how many bytes one stored tensor takes.

Every format states its exact storage layout in words (`layout`) and implements it
in `NumberFormat.storage_bytes(shape)`, scales, zero points and index tensors
included, as the checkpoint (or the GPU memory it is loaded into) holds them. A
format also names the tensor roles its reference implementation leaves in float
(`keep_unquantized`, with `keep_source`) and the float format they stay in.

Shapes are PyTorch shapes; a linear weight is (out_features, in_features), so
`in_features = shape[-1]` and `out_features = prod(shape[:-1])` (leading dims of
a stacked tensor multiply into the rows). Bytes are exact integers.

1-D tensors (norms, biases, the DeepSeek router bias) are never quantised: GGUF
keeps them F32 (convert_hf_to_gguf.py), the Hugging Face methods keep them in the
checkpoint's float dtype (`float_format`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from math import ceil, prod
from typing import Literal, get_args

from calculators.errors import InputError, shown
from calculators.memory.gguf import (
    DEFAULT_RULESET,
    GGML_TYPES,
    GGUF_MIXES,
    NEVER_QUANTIZED,
    fallback_type,
    ggml_tensor_bytes,
    gguf_tensor_type,
)
from calculators.model.tensors import Role, Tensor

ROLES: frozenset[str] = frozenset(get_args(Role))

Family = Literal["float", "fp8", "fp8-block", "int8", "gptq", "awq", "bnb4", "gguf"]
FAMILIES: tuple[str, ...] = get_args(Family)

# Plain float element formats: bytes per element.
FLOAT_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2}
_TORCH_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}

# bitsandbytes 4-bit constants (bitsandbytes/functional.py quantize_4bit, QuantState.as_dict).
BNB_NESTED_BLOCKSIZE = 256  # quantize_blockwise(absmax - offset, blocksize=256)
BNB_QUANT_MAP_VALUES = 16  # get_4bit_type(): 16 fp32 code values
BNB_NESTED_QUANT_MAP_VALUES = 256  # create_dynamic_map(): 256 fp32 code values
# QuantState.as_dict(packed=True) writes the non-tensor fields as JSON bytes in a
# uint8 tensor `weight.quant_state.bitsandbytes__<nf4|fp4>`; nested_offset is a Python
# float whose repr length varies; we assume 20 characters (e.g. 0.021447399258613586).
BNB_OFFSET_REPR_CHARS = 20

# Roles each reference implementation leaves unquantised (besides 1-D tensors).
_EMBEDDINGS = frozenset({"token_embd", "position_embd", "output"})
_ROUTERS = frozenset({"ffn_gate_inp", "ffn_gate_inp_shexp"})
KEEP_HF_LINEAR_ONLY = _EMBEDDINGS  # bitsandbytes via transformers
KEEP_GPTQ_AWQ = _EMBEDDINGS | _ROUTERS
KEEP_FP8 = _EMBEDDINGS | _ROUTERS
KEEP_FP8_BLOCK = _EMBEDDINGS | _ROUTERS | {"nextn_eh_proj"}
KEEP_GGUF = NEVER_QUANTIZED - {"norm", "bias", "exp_probs_b"}

SRC_BNB_KEEP = (
    "transformers src/transformers/integrations/bitsandbytes.py get_keys_to_not_convert "
    "(keeps the output embedding lm_head and tied weights); embeddings are nn.Embedding, "
    "which replace_with_bnb_linear does not touch; the router is an nn.Linear and is quantised"
)
SRC_GPTQ_KEEP = (
    "AutoGPTQ auto_gptq/modeling/<family>.py inside_layer_modules: only the decoder "
    "layers' attention and MLP/expert projections are quantised (lm_head only with "
    "lm_head=True); Mixtral's block_sparse_moe.gate and Qwen2-MoE's shared_expert_gate "
    "are not listed"
)
SRC_AWQ_KEEP = (
    "AutoAWQ awq/models/<family>.py: decoder-layer linears only, lm_head never; "
    "modules_to_not_convert = ['gate'] for MoE routers (awq/models/mixtral.py)"
)
SRC_FP8_KEEP = (
    "llm-compressor examples/quantization_w8a8_fp8: QuantizationModifier(targets='Linear', "
    "scheme='FP8', ignore=['lm_head']), MoE examples add ignore 're:.*mlp.gate$'; "
    "embeddings are not Linear"
)
SRC_FP8_BLOCK_KEEP = (
    "deepseek-ai/DeepSeek-V3 model.safetensors.index.json: embed_tokens, lm_head, "
    "mlp.gate (router), eh_proj and norms are BF16 without weight_scale_inv "
    "(inference/model.py Gate has no scale)"
)
SRC_GGUF_KEEP = (
    "llama.cpp src/llama-quant.cpp tensor_allows_quantization (skips ffn_gate_inp, "
    "pos_embd, 1-D tensors); convert_hf_to_gguf.py ModelBase.prepare_tensors writes them F32"
)


def _dims(shape: tuple[int, ...]) -> tuple[int, int]:
    """(out_features, in_features) of a weight: rows = prod(shape[:-1]), cols = shape[-1]."""
    if not shape or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise ValueError(f"shape must be non-empty positive integers; got {shape!r}")
    return prod(shape[:-1]), shape[-1]


@dataclass(frozen=True, kw_only=True)
class NumberFormat:
    """A weight storage format.

    id, name:     identifier (`FORMATS` key) and a readable name.
    family:       which layout `storage_bytes` implements (see `FAMILIES`).
    bits:         nominal bits of one weight code (16, 8, 4; for GGUF the bits per
                  weight of the mix's default block type, e.g. 4.5 for Q4_K).
    layout:       the exact storage of one tensor, in words.
    float_format: the float format of the tensors it leaves unquantised (fp32, bf16, fp16).
    keep_unquantized: roles the reference implementation leaves in float by default.
    keep_source:  where that default comes from.
    group_size:   GPTQ/AWQ group along in_features (None = one group per row, GPTQ
                  group_size -1); bitsandbytes 4-bit blocksize; fp8 block edge.
    g_idx:        GPTQ: an int32 g_idx[in_features] is stored.
    double_quant: bitsandbytes 4-bit: absmax quantised to uint8 (compress_statistics).
    quant_type:   bitsandbytes 4-bit code: "nf4" or "fp4".
    gguf_mix:     GGUF file type (`calculators.memory.gguf.GGUF_MIXES`).
    source:       where the layout comes from.
    """

    id: str
    name: str
    family: Family
    bits: Fraction
    layout: str
    float_format: str
    keep_unquantized: frozenset[str]
    keep_source: str
    source: str
    group_size: int | None = None
    g_idx: bool = False
    double_quant: bool = False
    quant_type: str | None = None
    gguf_mix: str | None = None

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("id must be a non-empty string; got ''")
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got {self.family!r}")
        if not self.bits > 0:
            raise ValueError(f"bits must be > 0; got {self.bits!r}")
        if self.float_format not in FLOAT_BYTES:
            raise ValueError(
                f"float_format must be one of {', '.join(FLOAT_BYTES)}; got {self.float_format!r}"
            )
        unknown = sorted(set(self.keep_unquantized) - ROLES)
        if unknown:
            raise ValueError(
                f"keep_unquantized must hold tensor roles ({', '.join(sorted(ROLES))}); "
                f"got {', '.join(unknown)}"
            )
        if self.group_size is not None and self.group_size <= 0:
            raise ValueError(
                f"group_size must be a positive integer or None; got {self.group_size}"
            )
        if self.family in ("fp8-block", "bnb4") and self.group_size is None:
            raise ValueError(f"group_size is required for family {self.family}; got None")
        if self.family == "bnb4" and self.quant_type not in ("nf4", "fp4"):
            raise ValueError(f"quant_type must be one of nf4, fp4; got {self.quant_type!r}")
        if self.family == "gguf" and self.gguf_mix not in GGUF_MIXES:
            raise ValueError(
                f"gguf_mix must be one of {', '.join(GGUF_MIXES)}; got {self.gguf_mix!r}"
            )

    # ------------------------------------------------------------------ layouts

    def storage_bytes(self, shape: tuple[int, ...]) -> int:
        """Bytes of one tensor of `shape` in this format, all side tensors included.

        Matrices (2-D or more) get the quantised layout; 1-D shapes are never
        quantised and take `vector_bytes`. For GGUF this is the mix's default type
        (with llama.cpp's ne0 fallback); per-role choices are in `tensor_storage`.
        """
        rows, cols = _dims(shape)
        if len(shape) < 2:
            return self.vector_bytes(shape)
        n = rows * cols
        fam = self.family
        if fam == "float":
            return n * FLOAT_BYTES[self.id]
        if fam == "fp8":
            return n + 4
        if fam == "fp8-block":
            assert self.group_size is not None
            b = self.group_size
            batch = prod(shape[:-2])
            return n + 4 * batch * ceil(shape[-2] / b) * ceil(cols / b)
        if fam == "int8":
            return n + 4 * rows + 1
        if fam == "gptq":
            groups = 1 if self.group_size is None else ceil(cols / self.group_size)
            qweight = 4 * ceil(cols * 4 / 32) * rows
            qzeros = 4 * groups * ceil(rows * 4 / 32)
            scales = 2 * groups * rows
            return qweight + qzeros + scales + (4 * cols if self.g_idx else 0)
        if fam == "awq":
            groups = 1 if self.group_size is None else ceil(cols / self.group_size)
            packed_out = ceil(rows * 4 / 32)
            return 4 * cols * packed_out + 4 * groups * packed_out + 2 * groups * rows
        if fam == "bnb4":
            return self._bnb4_bytes(shape)
        assert fam == "gguf" and self.gguf_mix is not None
        default = GGUF_MIXES[self.gguf_mix].default_type
        return ggml_tensor_bytes(fallback_type(default, cols), shape)

    def vector_bytes(self, shape: tuple[int, ...]) -> int:
        """Bytes of a 1-D (never quantised) tensor: F32 for GGUF, `float_format` otherwise."""
        n = prod(_dims(shape))
        if self.family == "gguf":
            return 4 * n
        return n * FLOAT_BYTES[self.float_format]

    def float_bytes(self, shape: tuple[int, ...]) -> int:
        """Bytes of a matrix this format leaves unquantised (`float_id`)."""
        n = prod(_dims(shape))
        return n * (4 if self.family == "gguf" else FLOAT_BYTES[self.float_format])

    @property
    def float_id(self) -> str:
        """Format id reported for tensors left in float."""
        return "gguf:F32" if self.family == "gguf" else self.float_format

    def bits_per_weight(self, shape: tuple[int, ...]) -> Fraction:
        """Effective storage bits per weight for `shape`: 8 x storage_bytes / numel."""
        return Fraction(8 * self.storage_bytes(shape), prod(_dims(shape)))

    def _bnb4_bytes(self, shape: tuple[int, ...]) -> int:
        """bitsandbytes Params4bit + QuantState.as_dict(packed=True), one tensor.

        weight uint8 [(n+1)//2, 1]; absmax fp32 [ceil(n/blocksize)]; quant_map fp32[16];
        with double quantisation absmax is uint8 [ceil(n/blocksize)] and
        nested_absmax fp32 [ceil(blocks/256)] + nested_quant_map fp32[256] are added;
        plus the JSON of the non-tensor fields as uint8 bytes.
        """
        assert self.group_size is not None
        n = prod(shape)
        blocks = ceil(n / self.group_size)
        total = (n + 1) // 2 + 4 * BNB_QUANT_MAP_VALUES
        meta: dict[str, object] = {
            "quant_type": self.quant_type,
            "blocksize": self.group_size,
            "dtype": _TORCH_DTYPE[self.float_format],
            "shape": list(shape),
        }
        if self.double_quant:
            total += blocks + 4 * ceil(blocks / BNB_NESTED_BLOCKSIZE)
            total += 4 * BNB_NESTED_QUANT_MAP_VALUES
            meta |= {
                "nested_blocksize": BNB_NESTED_BLOCKSIZE,
                "nested_dtype": "float32",
                "nested_offset": 0.0,
            }
            extra = BNB_OFFSET_REPR_CHARS - len("0.0")
        else:
            total += 4 * blocks
            extra = 0
        return total + len(json.dumps(meta).encode()) + extra


# ---------------------------------------------------------------------- constructors


def gptq_format(*, group_size: int | None = 128, g_idx: bool = True) -> NumberFormat:
    """AutoGPTQ 4-bit layout (exllama / cuda QuantLinear, auto_gptq/nn_modules/qlinear).

    Per linear of in x out: qweight int32 [in/8, out] (8 nibbles per int32),
    qzeros int32 [G, out/8], scales fp16 [G, out], g_idx int32 [in] (AutoGPTQ always
    saves it; desc_act only changes its values), G = ceil(in / group_size), G = 1
    for group_size None (-1). Divisions are rounded up.
    """
    g = "none" if group_size is None else str(group_size)
    suffix = "" if (group_size == 128 and g_idx) else f"-g{g}" + ("" if g_idx else "-noidx")
    return NumberFormat(
        id=f"gptq-int4{suffix}",
        name=f"GPTQ int4, group {g}" + (" with g_idx" if g_idx else ""),
        family="gptq",
        bits=Fraction(4),
        layout=(
            "qweight int32 [in/8, out] + qzeros int32 [G, out/8] + scales fp16 [G, out]"
            + (" + g_idx int32 [in]" if g_idx else "")
            + (f"; G = ceil(in / {g})" if group_size else "; G = 1")
        ),
        float_format="fp16",
        keep_unquantized=KEEP_GPTQ_AWQ,
        keep_source=SRC_GPTQ_KEEP,
        source="AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_exllama.py QuantLinear buffers "
        "(qweight, qzeros, scales, g_idx); GPTQ paper arXiv:2210.17323",
        group_size=group_size,
        g_idx=g_idx,
    )


def awq_format(*, group_size: int = 128) -> NumberFormat:
    """AutoAWQ GEMM layout (awq/modules/linear/gemm.py WQLinear_GEMM).

    Per linear of in x out: qweight int32 [in, out/8], qzeros int32 [in/group, out/8],
    scales fp16 [in/group, out]; no g_idx. Divisions are rounded up.
    """
    return NumberFormat(
        id="awq-int4" if group_size == 128 else f"awq-int4-g{group_size}",
        name=f"AWQ int4 GEMM, group {group_size}",
        family="awq",
        bits=Fraction(4),
        layout=f"qweight int32 [in, out/8] + qzeros int32 [G, out/8] + scales fp16 [G, out]; "
        f"G = ceil(in / {group_size}); no g_idx",
        float_format="fp16",
        keep_unquantized=KEEP_GPTQ_AWQ,
        keep_source=SRC_AWQ_KEEP,
        source="AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM buffers (qweight, qzeros, "
        "scales); AWQ paper arXiv:2306.00978",
        group_size=group_size,
    )


def bnb4_format(
    *,
    quant_type: str = "nf4",
    double_quant: bool = False,
    blocksize: int = 64,
    float_format: str = "bf16",
) -> NumberFormat:
    """bitsandbytes Linear4bit (Params4bit) as transformers saves it.

    weight uint8 [(n+1)/2, 1] (two 4-bit codes per byte); absmax fp32 per block of
    `blocksize` (64 in bitsandbytes quantize_4bit); quant_map fp32[16]; with double
    quantisation (bnb_4bit_use_double_quant, `-dq`): absmax uint8 per block,
    nested_absmax fp32 per 256 blocks, nested_quant_map fp32[256], and the fp32
    offset inside the packed JSON `quant_state.bitsandbytes__<type>` uint8 tensor.
    """
    if quant_type not in ("nf4", "fp4"):
        raise ValueError(f"quant_type must be one of nf4, fp4; got {quant_type!r}")
    if blocksize not in (32, 64, 128, 256, 512, 1024, 2048, 4096):
        raise ValueError(
            f"blocksize must be one of 32, 64, 128, 256, 512, 1024, 2048, 4096; got {blocksize}"
        )
    fid = (
        quant_type + ("-dq" if double_quant else "") + ("" if blocksize == 64 else f"-b{blocksize}")
    )
    absmax = (
        "absmax uint8 [blocks] + nested_absmax fp32 [ceil(blocks/256)] + nested_quant_map "
        "fp32[256] + offset (JSON)"
        if double_quant
        else "absmax fp32 [blocks]"
    )
    return NumberFormat(
        id=fid,
        name=f"bitsandbytes {quant_type.upper()}" + (" double-quant" if double_quant else ""),
        family="bnb4",
        bits=Fraction(4),
        layout=f"weight uint8 [ceil(n/2)] + {absmax} + quant_map fp32[16] + quant_state JSON "
        f"uint8; blocks = ceil(n / {blocksize})",
        float_format=float_format,
        keep_unquantized=KEEP_HF_LINEAR_ONLY,
        keep_source=SRC_BNB_KEEP,
        source="bitsandbytes/functional.py quantize_4bit and QuantState.as_dict(packed=True); "
        "bitsandbytes/_ops.py quantize_4bit fake (out uint8 [(n+1)//2, 1], absmax fp32 "
        "[ceil(n/blocksize)]); QLoRA arXiv:2305.14314",
        group_size=blocksize,
        double_quant=double_quant,
        quant_type=quant_type,
    )


def _float(fid: str, name: str, source: str) -> NumberFormat:
    return NumberFormat(
        id=fid,
        name=name,
        family="float",
        bits=Fraction(8 * FLOAT_BYTES[fid]),
        layout=f"{FLOAT_BYTES[fid]} bytes per element, no scales",
        float_format=fid,
        keep_unquantized=frozenset(),
        keep_source="nothing is quantised",
        source=source,
    )


def _fp8(fid: str, name: str) -> NumberFormat:
    return NumberFormat(
        id=fid,
        name=name,
        family="fp8",
        bits=Fraction(8),
        layout="weight fp8 [out, in] (1 byte per element) + weight_scale fp32 [1] per tensor",
        float_format="bf16",
        keep_unquantized=KEEP_FP8,
        keep_source=SRC_FP8_KEEP,
        source="OCP 8-bit Floating Point Specification (OFP8) v1.0; compressed-tensors "
        "float-quantized, strategy 'tensor' (weight_scale per tensor)",
    )


def _fp8_block(fid: str, name: str) -> NumberFormat:
    return NumberFormat(
        id=fid,
        name=name,
        family="fp8-block",
        bits=Fraction(8),
        layout="weight fp8 [out, in] + weight_scale_inv fp32 [ceil(out/128), ceil(in/128)]",
        float_format="bf16",
        keep_unquantized=KEEP_FP8_BLOCK,
        keep_source=SRC_FP8_BLOCK_KEEP,
        source="deepseek-ai/DeepSeek-V3 config.json quantization_config weight_block_size "
        "[128, 128]; inference/kernel.py weight_dequant; checkpoint kv_a_proj_with_mqa "
        "(576, 7168) has weight_scale_inv (5, 56)",
        group_size=128,
    )


def _gguf(fid: str, mix: str) -> NumberFormat:
    t = GGML_TYPES[GGUF_MIXES[mix].default_type]
    return NumberFormat(
        id=fid,
        name=f"GGUF {mix}",
        family="gguf",
        bits=t.bits_per_weight,
        layout=f"ggml blocks: {t.name} = {t.type_size} bytes per {t.block_size} values "
        f"({t.struct}); per-tensor types from llama_tensor_get_type: "
        f"{GGUF_MIXES[mix].description}; 1-D, router and positions F32",
        float_format="fp16",
        keep_unquantized=KEEP_GGUF,
        keep_source=SRC_GGUF_KEEP,
        source=f"{t.source}; {GGUF_MIXES[mix].source}",
        gguf_mix=mix,
    )


FORMATS: dict[str, NumberFormat] = {
    f.id: f
    for f in (
        _float("fp32", "fp32", "IEEE 754 binary32; torch.float32"),
        _float("bf16", "bf16", "bfloat16 (Google Brain); torch.bfloat16"),
        _float("fp16", "fp16", "IEEE 754 binary16; torch.float16"),
        _fp8("fp8-e4m3", "FP8 E4M3, per-tensor scale"),
        _fp8("fp8-e5m2", "FP8 E5M2, per-tensor scale"),
        _fp8_block("fp8-e4m3-block128", "FP8 E4M3, 128x128 block scales"),
        _fp8_block("fp8-e5m2-block128", "FP8 E5M2, 128x128 block scales"),
        NumberFormat(
            id="int8",
            name="int8 LLM.int8() (bitsandbytes), per-row scale",
            family="int8",
            bits=Fraction(8),
            layout="weight int8 [out, in] + SCB fp32 [out] (per-output-row absmax) + "
            "weight_format uint8 scalar",
            float_format="bf16",
            keep_unquantized=KEEP_HF_LINEAR_ONLY,
            keep_source=SRC_BNB_KEEP,
            source="bitsandbytes/nn/modules.py Linear8bitLt._save_to_state_dict (weight int8, "
            "SCB, weight_format); LLM.int8() arXiv:2208.07339",
        ),
        gptq_format(),
        awq_format(),
        bnb4_format(quant_type="nf4"),
        bnb4_format(quant_type="fp4"),
        bnb4_format(quant_type="nf4", double_quant=True),
        bnb4_format(quant_type="fp4", double_quant=True),
        _gguf("gguf-q8_0", "Q8_0"),
        _gguf("gguf-q6_k", "Q6_K"),
        _gguf("gguf-q5_k_m", "Q5_K_M"),
        _gguf("gguf-q4_k_m", "Q4_K_M"),
        _gguf("gguf-q4_0", "Q4_0"),
    )
}

_GPTQ_ID = re.compile(r"gptq-int4-g(\d+|none)(-noidx)?")
_AWQ_ID = re.compile(r"awq-int4-g(\d+)")
_BNB_ID = re.compile(r"(nf4|fp4)(-dq)?-b(\d+)")
FORMAT_PATTERNS = ("gptq-int4-g<N|none>[-noidx]", "awq-int4-g<N>", "<nf4|fp4>[-dq]-b<N>")


def get_format(format_id: str) -> NumberFormat:
    """The format `format_id`: a `FORMATS` id, or one with options
    (gptq-int4-g64, gptq-int4-gnone-noidx, awq-int4-g64, nf4-dq-b128).
    ValueError naming `format` and the known ids otherwise."""
    fmt = FORMATS.get(format_id) if isinstance(format_id, str) else None
    if fmt is not None:
        return fmt
    if isinstance(format_id, str):
        m = _GPTQ_ID.fullmatch(format_id)
        if m and (m.group(1) == "none" or int(m.group(1)) > 0):
            group = None if m.group(1) == "none" else int(m.group(1))
            return gptq_format(group_size=group, g_idx=m.group(2) is None)
        m = _AWQ_ID.fullmatch(format_id)
        if m and int(m.group(1)) > 0:
            return awq_format(group_size=int(m.group(1)))
        m = _BNB_ID.fullmatch(format_id)
        if m:
            return bnb4_format(
                quant_type=m.group(1),
                double_quant=m.group(2) is not None,
                blocksize=int(m.group(3)),
            )
    raise InputError(
        "format",
        f"format must be one of {', '.join(FORMATS)} (or {', '.join(FORMAT_PATTERNS)}); "
        f"got {shown(format_id)}",
    )


# ---------------------------------------------------------------------- per-tensor storage


@dataclass(frozen=True, kw_only=True)
class QuantContext:
    """What per-tensor rules need to know about the model.

    n_layers:   decoder layers (llama.cpp n_layer; MTP layers not included).
    n_experts:  routed experts per MoE layer, 0 for a dense model.
    n_gqa:      num_heads // num_kv_heads.
    has_output: a separate lm_head (`output`) tensor is stored, i.e. untied embeddings.
    model_type_70b: llama.cpp classifies the model as LLM_TYPE_70B (80 layers with
                GQA), which lifts attn_v in the Q3_K/Q4_K mixes to Q5_K.
    """

    n_layers: int
    n_experts: int
    n_gqa: int
    has_output: bool
    model_type_70b: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.n_layers, int) or self.n_layers < 1:
            raise ValueError(f"n_layers must be an integer >= 1; got {self.n_layers!r}")
        if not isinstance(self.n_experts, int) or self.n_experts < 0:
            raise ValueError(f"n_experts must be an integer >= 0; got {self.n_experts!r}")
        if not isinstance(self.n_gqa, int) or self.n_gqa < 1:
            raise ValueError(f"n_gqa must be an integer >= 1; got {self.n_gqa!r}")
        if not isinstance(self.has_output, bool):
            raise ValueError(f"has_output must be a bool; got {self.has_output!r}")


@dataclass(frozen=True, kw_only=True)
class TensorStorage:
    """How one `Tensor` (all `count` of it) is stored.

    format_id: the format this tensor actually takes: a `FORMATS` id, a float id
               (fp32, bf16, fp16) for tensors left unquantised, or `gguf:<TYPE>`
               (gguf:Q6_K, gguf:F32 ...) for GGUF files.
    """

    name: str
    role: str
    format_id: str
    parameters: int
    bytes: int

    def __post_init__(self) -> None:
        if self.parameters <= 0:
            raise ValueError(f"parameters must be > 0; got {self.parameters}")
        if self.bytes <= 0:
            raise ValueError(f"bytes must be > 0; got {self.bytes}")


def check_keep_unquantized(keep: frozenset[str] | None) -> None:
    """ValueError naming keep_unquantized if it is not a set of known roles."""
    if keep is None:
        return
    if not isinstance(keep, frozenset | set):
        raise InputError(
            "keep_unquantized", f"keep_unquantized must be a frozenset of roles; got {shown(keep)}"
        )
    unknown = sorted(set(keep) - ROLES)
    if unknown:
        raise InputError(
            "keep_unquantized",
            f"keep_unquantized must hold tensor roles ({', '.join(sorted(ROLES))}); "
            f"got {shown(', '.join(unknown))}",
        )


def tensor_storage(
    format_id: str,
    tensor: Tensor,
    ctx: QuantContext,
    *,
    keep_unquantized: frozenset[str] | None = None,
) -> TensorStorage:
    """Bytes of `tensor` (count x one tensor) stored in format `format_id`.

    1-D tensors: float (`vector_bytes`). Roles in `keep_unquantized` (default: the
    format's `keep_unquantized`): float matrices, in `float_format` for HF methods;
    for GGUF, F32 for the roles llama.cpp never quantises and F16 for other roles a
    caller keeps (what `--output-tensor-type f16` writes). Everything else: GGUF
    picks the type per tensor with `gguf_tensor_type` (ruleset 8784689, no
    imatrix); the other formats use `storage_bytes`.
    """
    fmt = get_format(format_id)
    check_keep_unquantized(keep_unquantized)
    keep = fmt.keep_unquantized if keep_unquantized is None else keep_unquantized
    shape, count = tensor.shape, tensor.count
    if not tensor.is_matrix:
        fid, per = fmt.float_id, fmt.vector_bytes(shape)
    elif tensor.role in keep:
        if fmt.family == "gguf" and tensor.role not in KEEP_GGUF:
            fid, per = "gguf:F16", ggml_tensor_bytes("F16", shape)
        else:
            fid, per = fmt.float_id, fmt.float_bytes(shape)
    elif fmt.family == "gguf":
        assert fmt.gguf_mix is not None
        gtype = gguf_tensor_type(fmt.gguf_mix, tensor, ctx, ruleset=DEFAULT_RULESET)
        fid, per = f"gguf:{gtype}", ggml_tensor_bytes(gtype, shape)
    else:
        fid, per = fmt.id, fmt.storage_bytes(shape)
    return TensorStorage(
        name=tensor.name,
        role=tensor.role,
        format_id=fid,
        parameters=tensor.parameters,
        bytes=per * count,
    )
