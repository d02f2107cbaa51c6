"""Weight formats applied to a model's linear layers: by torchao where it runs, else a
simulation of the format's storage layout in torch (labelled `simulated`).

Which linears: those of the decoder layers (`.layers.` in the module's name), as the
calculators' formats keep the embeddings and the output head in float
(`calculators.memory.formats` KEEP_*); MoE routers (`gate`, `shared_expert_gate`) stay in
float for gptq-int4 and fp8-e4m3 (AutoGPTQ and llm-compressor skip them) and are quantized
for int8 and nf4 (bitsandbytes replaces every nn.Linear but lm_head). Parameters that are
not nn.Linear (stacked expert tensors) stay in float and are listed.

Every quantized layer computes weight-only: the stored codes are dequantized to the
activations' dtype and multiplied in that dtype (torchao's int8 weight-only and NF4 paths do
the same; fused GPU kernels round differently, not by the format).

Formats, what each quantized linear stores, and the sources:

- int8, torchao `Int8WeightOnlyConfig`: qdata int8 [out, in] + scale fp32 [out, 1] +
  zero_point int8 [out, 1] (torchao quantization Int8Tensor).
- nf4, torchao `to_nf4`: 4-bit codes uint8 [n/2] + int8 block scales [n/64] + scaler
  factors [n/64/sb] + mean + 16-value table (QLoRA arXiv:2305.14314; torchao NF4Tensor).
- gptq-int4[-g<N|none>], simulated: qweight int32 [in/8, out] + qzeros int32 [G, out/8] +
  scales fp16 [G, out] + g_idx int32 [in] (AutoGPTQ QuantLinear; IST-DASLab/gptq quant.py).
- fp8-e4m3, torch float8 dtype: weight float8_e4m3fn [out, in] + weight_scale fp32 [1]
  (OCP OFP8 v1.0; compressed-tensors, strategy 'tensor').
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from calculators.memory.formats import get_format

ROUTERS = frozenset({"gate", "shared_expert_gate"})
NF4_BLOCK = 64  # torchao to_nf4 default block_size (QLoRA's 64)
NF4_SCALER_BLOCK = 256  # torchao to_nf4 default scaler_block_size (QLoRA's 256)
NF4_CODES = 16
FP8_E4M3_MAX = 448.0  # OCP OFP8 v1.0: largest finite E4M3 value; torch.finfo(float8_e4m3fn).max
GPTQ_BITS = 4
GPTQ_MAXQ = 2**GPTQ_BITS - 1
GPTQ_PER_INT32 = 32 // GPTQ_BITS
_GPTQ_ID = re.compile(r"gptq-int4(-g(\d+|none))?")


NOISY_LOGGERS = ("torchao", "torch.utils._pytree")


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """torchao logs the CUDA extensions it cannot load on import, and its modules (some
    imported lazily, by transformers too) trip torch's pytree deprecation log: keep those
    lines out of the probe's output while it runs."""
    loggers = [logging.getLogger(n) for n in NOISY_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


@contextlib.contextmanager
def _quiet_import() -> Iterator[None]:
    """Quiet logs, and no import-time warnings (pytest runs with warnings as errors)."""
    with quiet_logs(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def import_torchao() -> ModuleType | None:
    """torchao, imported quietly, or None where it is not installed."""
    try:
        with _quiet_import():
            import torchao
            import torchao.quantization
    except ImportError:
        return None
    return torchao


# ---------------------------------------------------------------------------- targets


def quantized_linears(model: nn.Module, keep_routers: bool) -> list[tuple[str, nn.Linear]]:
    """(name, module) of the nn.Linear layers a format quantizes (see the module docstring)."""
    out = []
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear) or ".layers." not in f".{name}":
            continue
        if keep_routers and name.rsplit(".", 1)[-1] in ROUTERS:
            continue
        out.append((name, module))
    return out


def _replace(model: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, new)


def left_in_float(model: nn.Module, quantized: set[str]) -> list[str]:
    """Names of matrices inside the decoder layers that no format here quantizes."""
    out = []
    for name, p in model.named_parameters():
        owner = name.rpartition(".")[0]
        if p.dim() >= 2 and ".layers." in f".{name}" and owner not in quantized:
            out.append(name)
    return out


# ---------------------------------------------------------------------------- GPTQ layout


def gptq_quantize(
    w: torch.Tensor, group_size: int | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Round-to-nearest asymmetric 4-bit codes of w (out, in) per group of input columns.

    Per row and group g: xmin = min(0, min w), xmax = max(0, max w) (both 0: -1 and +1),
    scale = (xmax - xmin) / 15 stored as fp16, zero = round(-xmin / scale) in 0..15,
    q = clamp(round(w / scale) + zero, 0, 15); w is read back as (q - zero) x scale.
    Source: IST-DASLab/gptq quant.py Quantizer.find_params / quantize (asymmetric,
    per-channel). Only the layout and rounding: GPTQ's Hessian-based error compensation
    (arXiv:2210.17323, Algorithm 1) is NOT applied, so errors are larger than a real
    GPTQ checkpoint's.

    Returns q int64 (out, in), zeros int64 (G, out), scales fp16 (G, out).
    """
    out_f, in_f = w.shape
    g = in_f if group_size is None else group_size
    groups = math.ceil(in_f / g)
    w = w.float()
    q = torch.empty(out_f, in_f, dtype=torch.int64)
    zeros = torch.empty(groups, out_f, dtype=torch.int64)
    scales = torch.empty(groups, out_f, dtype=torch.float16)
    for i in range(groups):
        block = w[:, i * g : (i + 1) * g]
        xmin = block.min(1).values.clamp(max=0)
        xmax = block.max(1).values.clamp(min=0)
        both_zero = (xmin == 0) & (xmax == 0)
        xmin[both_zero], xmax[both_zero] = -1.0, 1.0
        scale = ((xmax - xmin) / GPTQ_MAXQ).half()
        s = scale.float()
        zero = torch.round(-xmin / s).clamp(0, GPTQ_MAXQ)
        q[:, i * g : (i + 1) * g] = (
            (torch.round(block / s[:, None]) + zero[:, None]).clamp(0, GPTQ_MAXQ).long()
        )
        zeros[i], scales[i] = zero.long(), scale
    return q, zeros, scales


def _to_int32(x: torch.Tensor) -> torch.Tensor:
    """Unsigned 32-bit words held in int64 as the int32 with the same bits."""
    return torch.where(x >= 2**31, x - 2**32, x).to(torch.int32)


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """Pack 4-bit codes (rows, cols), rows a multiple of 8, into int32 (rows / 8, cols):
    row 8k + j in bits 4j..4j+3 of word k (AutoGPTQ QuantLinear.pack's qweight order)."""
    rows, cols = codes.shape
    if rows % GPTQ_PER_INT32:
        raise ValueError(f"rows must be a multiple of {GPTQ_PER_INT32} to pack, got {rows}")
    c = codes.long().view(rows // GPTQ_PER_INT32, GPTQ_PER_INT32, cols)
    shifts = (torch.arange(GPTQ_PER_INT32, device=codes.device) * GPTQ_BITS).view(1, -1, 1)
    return _to_int32((c << shifts).sum(1))


def unpack_int4(words: torch.Tensor) -> torch.Tensor:
    """Inverse of `pack_int4`: int32 (rows / 8, cols) -> int64 codes (rows, cols)."""
    w = words.long() & 0xFFFFFFFF
    shifts = (torch.arange(GPTQ_PER_INT32, device=words.device) * GPTQ_BITS).view(1, -1, 1)
    codes = (w.unsqueeze(1) >> shifts) & GPTQ_MAXQ
    return codes.reshape(-1, words.shape[1])


class GPTQLinear(nn.Module):
    """A linear stored in AutoGPTQ's buffers (qweight, qzeros, scales, g_idx), computed by
    dequantizing to the input's dtype. qzeros hold the zero points as they are (GPTQModel's
    v2 convention); AutoGPTQ's v1 checkpoints store zero - 1, the same bytes."""

    def __init__(self, linear: nn.Linear, group_size: int | None) -> None:
        super().__init__()
        out_f, in_f = linear.weight.shape
        if in_f % GPTQ_PER_INT32 or out_f % GPTQ_PER_INT32:
            raise ValueError(
                f"gptq-int4 packs 8 codes per int32: in and out features must be multiples "
                f"of 8, got a linear of {in_f} -> {out_f}"
            )
        q, zeros, scales = gptq_quantize(linear.weight.detach(), group_size)
        g = in_f if group_size is None else group_size
        dev = linear.weight.device
        self.register_buffer("qweight", pack_int4(q.t().contiguous()).to(dev))
        self.register_buffer("qzeros", pack_int4(zeros.t().contiguous()).t().contiguous().to(dev))
        self.register_buffer("scales", scales.to(dev))
        self.register_buffer("g_idx", (torch.arange(in_f) // g).to(torch.int32).to(dev))
        self.bias = linear.bias

    def dequantized(self) -> torch.Tensor:
        """The weight (out, in) the codes stand for, in float32."""
        q = unpack_int4(self.qweight).t()  # (out, in)
        zeros = unpack_int4(self.qzeros.t().contiguous()).t()  # (G, out)
        g = self.g_idx.long()
        return (q - zeros[g].t()).float() * self.scales.float()[g].t()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.dequantized().to(x.dtype), self.bias)


# ---------------------------------------------------------------------------- FP8


def fp8_quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """E4M3 codes and the per-tensor fp32 scale amax / 448 (compressed-tensors' 'tensor'
    strategy, the calculators' fp8-e4m3 layout); an all-zero tensor gets scale 1."""
    amax = w.detach().abs().max().float()
    scale = (amax / FP8_E4M3_MAX if amax > 0 else torch.ones(())).reshape(1)
    codes = (w.detach().float() / scale).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX)
    return codes.to(torch.float8_e4m3fn), scale.float()


class FP8Linear(nn.Module):
    """A linear whose weight is stored as torch.float8_e4m3fn with one fp32 scale; the
    product is taken in the activations' dtype (weight-only: the activations stay 16-bit,
    where FP8 W8A8 kernels would also round them to fp8)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        codes, scale = fp8_quantize(linear.weight)
        self.register_buffer("weight", codes)
        self.register_buffer("weight_scale", scale.to(codes.device))
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.float() * self.weight_scale
        return F.linear(x, w.to(x.dtype), self.bias)


# ---------------------------------------------------------------------------- NF4 (torchao)


def nf4_scaler_block(numel: int) -> int:
    """torchao's scaler block for a tensor of `numel` values: 256 blocks of 64 (QLoRA),
    or where 256 does not divide the blocks (small tensors), the largest power of two that
    does (to_nf4 asserts divisibility). ValueError when 64 does not divide numel."""
    if numel % NF4_BLOCK:
        raise ValueError(f"nf4 stores blocks of {NF4_BLOCK}: a tensor of {numel} values")
    blocks = numel // NF4_BLOCK
    sb = NF4_SCALER_BLOCK
    while blocks % sb:
        sb //= 2
    return sb


def torchao_nf4_bytes(numel: int, elem_bytes: int, scaler_block: int) -> int:
    """Bytes torchao's NF4Tensor holds for `numel` weights of a float of `elem_bytes`.

    quantized_data uint8 [n/2] + quantized_scalers int8 [n/64] + quantization_factor
    [n/64/sb] (float) + scaler_mean (one float) + the 16-value nf4 table (float). When the
    tensor has a single scaler block, quantization_factor is a view of an (1, sb) tensor and
    keeps all sb values' storage (NF4Tensor.double_quantize_scalers, torchao 0.18).
    Source: torchao/quantization/quantize_/workflows/nf4/nf4_tensor.py.
    """
    blocks = numel // NF4_BLOCK
    scaler_blocks = blocks // scaler_block
    factors = scaler_block if scaler_blocks == 1 else scaler_blocks
    return numel // 2 + blocks + (factors + 1 + NF4_CODES) * elem_bytes


class NF4Linear(nn.Module):
    """A linear whose weight is torchao's NF4Tensor, computed by torchao's linear_nf4."""

    def __init__(self, linear: nn.Linear, to_nf4: Callable[..., Any], linear_nf4: Any) -> None:
        super().__init__()
        w = linear.weight.detach()
        self.scaler_block = nf4_scaler_block(w.numel())
        with _quiet_import():
            self.weight = nn.Parameter(
                to_nf4(w.contiguous(), NF4_BLOCK, self.scaler_block), requires_grad=False
            )
        self.bias = linear.bias
        self._linear_nf4 = linear_nf4

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self._linear_nf4(x, self.weight)
        return y if self.bias is None else y + self.bias


# ---------------------------------------------------------------------------- apply


@dataclass(kw_only=True)
class Applied:
    """A weight format as applied here.

    id:             the format id as given (`--formats`).
    estimate_id:    the calculators' format whose bytes (`calculators.memory.weights`)
                    the measured bytes are compared with.
    applied_by:     "torchao", "torch float8 dtype" or "simulated".
    simulated:      True unless a library quantized the weights and computes with them.
    layout:         what each quantized linear stores, in words.
    notes:          how this differs from the format readers run (algorithm, kernels, layout).
    tensors:        per quantized linear: name, shape and format-specific facts.
    left_in_float:  matrices of the decoder layers this format left unquantized.
    """

    id: str
    estimate_id: str
    applied_by: str
    simulated: bool
    layout: str
    notes: list[str] = field(default_factory=list)
    tensors: list[dict[str, Any]] = field(default_factory=list)
    left_in_float: list[str] = field(default_factory=list)


def _int8(model: nn.Module, fid: str) -> Applied:
    torchao = import_torchao()
    if torchao is None:
        raise ValueError("--formats int8 needs torchao installed (pip install torchao)")
    with _quiet_import():
        from torchao.quantization import Int8WeightOnlyConfig, quantize_

    targets = quantized_linears(model, keep_routers=False)
    names = {n for n, _ in targets}
    with _quiet_import():
        quantize_(model, Int8WeightOnlyConfig(), filter_fn=lambda m, fqn: fqn in names)
    return Applied(
        id=fid,
        estimate_id="int8",
        applied_by="torchao",
        simulated=False,
        layout=(
            f"torchao {torchao.__version__} Int8WeightOnlyConfig: qdata int8 [out, in] + "
            "scale fp32 [out, 1] + zero_point int8 [out, 1] (symmetric, zeros)"
        ),
        notes=[
            "the calculators' int8 is bitsandbytes LLM.int8(): weight int8 + SCB fp32 [out] + "
            "one uint8 weight_format; torchao keeps an int8 zero point per row instead of the "
            "one byte: out - 1 more bytes per linear",
            "LLM.int8() also splits activation outlier columns (threshold 6.0) into a 16-bit "
            "product; torchao's weight-only int8 does not: the quality figures are torchao's",
        ],
        tensors=[{"name": n, "shape": list(m.weight.shape)} for n, m in targets],
    )


def _nf4(model: nn.Module, fid: str) -> Applied:
    torchao = import_torchao()
    if torchao is None:
        raise ValueError("--formats nf4 needs torchao installed (pip install torchao)")
    with _quiet_import():
        try:  # torchao 0.18 keeps NF4Tensor under quantization/, older releases under dtypes/
            from torchao.quantization.quantize_.workflows.nf4.nf4_tensor import (
                linear_nf4,
                to_nf4,
            )
        except ImportError:
            from torchao.dtypes.nf4tensor import linear_nf4, to_nf4  # type: ignore[no-redef]

    targets = quantized_linears(model, keep_routers=False)
    tensors = []
    for name, module in targets:
        new = NF4Linear(module, to_nf4, linear_nf4)
        tensors.append(
            {"name": name, "shape": list(module.weight.shape), "scaler_block": new.scaler_block}
        )
        _replace(model, name, new)
    small = [t["name"] for t in tensors if t["scaler_block"] != NF4_SCALER_BLOCK]
    notes = [
        "torchao's NF4 is always double-quantized, so the estimate is the calculators' nf4-dq "
        "(bitsandbytes): both store 4-bit codes and one 8-bit scale per 64 weights; "
        "bitsandbytes adds fp32 tables (16 + 256 values), an fp32 scale per 256 blocks and "
        "its quant_state JSON, torchao a 16-value table, a mean and a factor per scaler "
        "block in the weights' dtype",
    ]
    if small:
        notes.append(
            f"{len(small)} linear(s) have fewer than {NF4_SCALER_BLOCK} blocks per scaler "
            "block (to_nf4 needs it to divide): they use the largest power of two that does, "
            "recorded as scaler_block"
        )
    return Applied(
        id=fid,
        estimate_id="nf4-dq",
        applied_by="torchao",
        simulated=False,
        layout=(
            f"torchao {torchao.__version__} to_nf4 (block {NF4_BLOCK}, scaler block "
            f"{NF4_SCALER_BLOCK}): uint8 [n/2] + int8 [n/64] + factor [n/64/sb] + mean + "
            "table[16], floats in the weights' dtype"
        ),
        notes=notes,
        tensors=tensors,
    )


def _gptq(model: nn.Module, fid: str) -> Applied:
    fmt = get_format(fid)  # gptq-int4 (group 128) or gptq-int4-g<N|none>
    group = fmt.group_size
    targets = quantized_linears(model, keep_routers=True)
    for name, module in targets:
        _replace(model, name, GPTQLinear(module, group))
    return Applied(
        id=fid,
        estimate_id=fmt.id,
        applied_by="simulated",
        simulated=True,
        layout=(
            f"AutoGPTQ buffers, group {group or 'none'}: qweight int32 [in/8, out] + qzeros "
            "int32 [G, out/8] + scales fp16 [G, out] + g_idx int32 [in]"
        ),
        notes=[
            "simulated: round-to-nearest 4-bit asymmetric codes in GPTQ's layout, WITHOUT "
            "GPTQ's Hessian-based error compensation; a real GPTQ checkpoint has lower error",
            "dequantized to the activations' dtype and multiplied there; exllama/marlin kernels "
            "fuse the dequantization",
        ],
        tensors=[{"name": n, "shape": list(m.weight.shape)} for n, m in targets],
    )


def _fp8(model: nn.Module, fid: str) -> Applied:
    targets = quantized_linears(model, keep_routers=True)
    for name, module in targets:
        _replace(model, name, FP8Linear(module))
    return Applied(
        id=fid,
        estimate_id="fp8-e4m3",
        applied_by="torch float8 dtype",
        simulated=True,
        layout="weight torch.float8_e4m3fn [out, in] + weight_scale fp32 [1] (amax / 448)",
        notes=[
            "the storage is real (torch.float8_e4m3fn); the product is simulated: weights are "
            "scaled back to 16 bits and multiplied there, where FP8 serving kernels (W8A8) "
            "also round the activations to fp8",
        ],
        tensors=[{"name": n, "shape": list(m.weight.shape)} for n, m in targets],
    )


WEIGHT_FORMATS: dict[str, Callable[[nn.Module, str], Applied]] = {
    "int8": _int8,
    "nf4": _nf4,
    "gptq-int4": _gptq,
    "fp8-e4m3": _fp8,
}
FORMAT_CHOICES = ("int8", "nf4", "gptq-int4", "gptq-int4-g<N|none>", "fp8-e4m3")


def check_format(fid: str) -> Callable[[nn.Module, str], Applied]:
    """The function applying weight format `fid`; ValueError naming --formats otherwise."""
    if fid in WEIGHT_FORMATS:
        return WEIGHT_FORMATS[fid]
    m = _GPTQ_ID.fullmatch(fid)
    if m and (m.group(2) in (None, "none") or int(m.group(2)) > 0):
        return _gptq
    raise ValueError(f"--formats must list ids of {', '.join(FORMAT_CHOICES)}; got {fid!r}")


def apply_format(model: nn.Module, fid: str) -> Applied:
    """Quantize `model`'s linears in place to format `fid`; what was done."""
    applied = check_format(fid)(model, fid)
    done = {t["name"] for t in applied.tensors}
    applied.left_in_float = left_in_float(model, done)
    return applied
