"""Weights memory: the bytes a model's stored tensors take in a number format.

    total_bytes = sum over tensors t of tensor_storage(format, t).bytes

where each tensor's bytes come from `calculators.memory.formats` (quantised layout with
all scale, zero-point and index tensors, or float for the roles the method leaves
unquantised) and, for GGUF, the per-tensor type llama-quantize picks
(`calculators.memory.gguf.gguf_tensor_type`).

Assumptions: this is the tensor data only. A GGUF file adds its metadata (the
vocabulary: about 0.7 MB for a 32k Llama vocabulary, 7.8 MB for Llama 3's 128k)
and pads each tensor to 32 bytes; a safetensors file adds a JSON header (tens of
kB). Frameworks may add runtime buffers (rotary tables, workspace) not counted here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from calculators.memory.formats import (
    QuantContext,
    TensorStorage,
    check_keep_unquantized,
    get_format,
    tensor_storage,
)
from calculators.model.tensors import Tensor, model_tensors

if TYPE_CHECKING:
    from calculators.model.spec import ModelSpec


@dataclass(frozen=True, kw_only=True)
class WeightsResult:
    """Bytes of a model's weights in one format.

    total_bytes: every stored tensor, MTP modules included.
    main_bytes:  without the multi-token-prediction modules (`Tensor.mtp`).
    mtp_bytes:   the MTP modules alone; main_bytes + mtp_bytes = total_bytes.
    by_category: bytes per `Tensor.category` (all tensors; sums to total_bytes).
    by_format:   bytes per format a tensor actually took (`TensorStorage.format_id`,
                 e.g. gptq-int4 and fp16, or gguf:Q4_K and gguf:Q6_K); sums to total_bytes.
    main_by_category, main_by_format: the same without the MTP modules; each sums to
                 main_bytes, the total a table of the main model sits under.
    mtp_by_format: the MTP modules by format; sums to mtp_bytes.
    tensors:     one `TensorStorage` per `Tensor`, in input order.
    """

    format_id: str
    total_bytes: int
    main_bytes: int
    mtp_bytes: int
    by_category: dict[str, int]
    by_format: dict[str, int]
    tensors: tuple[TensorStorage, ...]
    main_by_category: dict[str, int] = field(default_factory=dict)
    main_by_format: dict[str, int] = field(default_factory=dict)
    mtp_by_format: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.main_bytes + self.mtp_bytes != self.total_bytes:
            raise ValueError(  # an internal invariant, not a reader's input
                f"total_bytes must equal main_bytes + mtp_bytes "
                f"({self.main_bytes} + {self.mtp_bytes}); got {self.total_bytes}"
            )

    @property
    def parameters(self) -> int:
        """Elements of all stored tensors."""
        return sum(t.parameters for t in self.tensors)

    @property
    def bits_per_weight(self) -> float:
        """Average storage bits per parameter over the whole model."""
        return 8 * self.total_bytes / self.parameters


def weight_bytes_of(
    tensors: Iterable[Tensor],
    ctx: QuantContext,
    format_id: str,
    keep_unquantized: frozenset[str] | None = None,
) -> WeightsResult:
    """Weights memory of an explicit tensor list (see `weight_bytes`)."""
    get_format(format_id)
    check_keep_unquantized(keep_unquantized)
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError("tensors must list at least one tensor; got none")
    stored: list[TensorStorage] = []
    by_category: dict[str, int] = {}
    by_format: dict[str, int] = {}
    main_by_category: dict[str, int] = {}
    main_by_format: dict[str, int] = {}
    mtp_by_format: dict[str, int] = {}
    main = mtp = 0
    for t in tensors:
        s = tensor_storage(format_id, t, ctx, keep_unquantized=keep_unquantized)
        stored.append(s)
        by_category[t.category] = by_category.get(t.category, 0) + s.bytes
        by_format[s.format_id] = by_format.get(s.format_id, 0) + s.bytes
        if t.mtp:
            mtp += s.bytes
            mtp_by_format[s.format_id] = mtp_by_format.get(s.format_id, 0) + s.bytes
        else:
            main += s.bytes
            main_by_category[t.category] = main_by_category.get(t.category, 0) + s.bytes
            main_by_format[s.format_id] = main_by_format.get(s.format_id, 0) + s.bytes
    return WeightsResult(
        format_id=format_id,
        total_bytes=main + mtp,
        main_bytes=main,
        mtp_bytes=mtp,
        by_category=by_category,
        by_format=by_format,
        tensors=tuple(stored),
        main_by_category=main_by_category,
        main_by_format=main_by_format,
        mtp_by_format=mtp_by_format,
    )


def quant_context(spec: ModelSpec, tensors: Iterable[Tensor]) -> QuantContext:
    """The facts per-tensor rules read, from the spec and its tensor list.

    has_output comes from the tensor list (an `output` tensor is stored), as
    llama.cpp decides it from the file; model_type_70b follows llama.cpp's
    `llama_quant_model_from_metadata` (80 layers with grouped-query attention).
    """
    n_gqa = spec.num_heads // spec.num_kv_heads
    return QuantContext(
        n_layers=spec.num_layers,
        n_experts=spec.moe.n_routed_experts if spec.moe is not None else 0,
        n_gqa=n_gqa,
        has_output=any(t.role == "output" for t in tensors),
        model_type_70b=spec.num_layers == 80 and n_gqa > 1,
    )


def weight_bytes(
    spec: ModelSpec, format_id: str, *, keep_unquantized: frozenset[str] | None = None
) -> WeightsResult:
    """Bytes of the weights of `spec` stored in `format_id`.

    Formula: sum of `tensor_storage` over `calculators.model.tensors.model_tensors(spec)`.
    keep_unquantized overrides the format's default set of roles left in float.
    Sources: the layouts in `calculators.memory.formats`; llama.cpp src/llama-quant.cpp for GGUF.
    """
    tensors = model_tensors(spec)
    return weight_bytes_of(tensors, quant_context(spec, tensors), format_id, keep_unquantized)
