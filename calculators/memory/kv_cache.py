"""KV cache memory: per token, per context and batch, and the inverse questions.

Per layer and token one sequence caches:
  full or sliding attention (GQA/MQA/MHA):  2 x n_kv_heads x head_dim values
      (K and V; Ainslie et al. 2023, arXiv:2305.13245, GQA);
  MLA, latent layout (vLLM, SGLang):        kv_lora_rank + qk_rope_head_dim values
      (DeepSeek-V2 paper, arXiv:2405.04434, eq. 9-10: the compressed c_t^KV and the
      shared decoupled key k_t^R; K and V are rebuilt from them, nothing is doubled);
  MLA, expanded layout (transformers' eager DeepseekV3Attention):
      n_heads x (qk_nope + qk_rope) + n_heads x v_head_dim values.
A sliding-window layer holds at most `window` tokens (Beltagy et al. 2020;
Mistral 7B, arXiv:2310.06825, section 2 "rolling buffer cache").

Allocation:
  dynamic: tokens actually held (transformers' DynamicCache);
  paged:   each sequence's tokens rounded up to whole blocks of `block_size`
           (vLLM PagedAttention, Kwon et al. 2023, arXiv:2309.06180; default 16);
           a sliding layer past its window holds ceil((window - 1) / block) + 1 blocks;
  static:  preallocated for `max_length` tokens whatever the context
           (transformers' StaticCache, max_cache_len).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Literal

from calculators.checks import non_negative_int, positive_int
from calculators.errors import InputError, shown
from calculators.limits import MAX_BLOCK_TOKENS, MAX_CONCURRENT_SEQUENCES, MAX_SEQUENCE_TOKENS
from calculators.memory.kv_formats import KVFormat, get_kv_format
from calculators.model.spec import LayerSpec, ModelSpec, position_warnings

Allocation = Literal["dynamic", "paged", "static"]
MLALayout = Literal["latent", "expanded"]


@dataclass(frozen=True, kw_only=True)
class KVSettings:
    """How the cache is stored and allocated."""

    kv_format: str = "bf16"
    allocation: Allocation = "dynamic"
    block_size: int = 16
    mla_layout: MLALayout = "latent"

    def __post_init__(self) -> None:
        get_kv_format(self.kv_format)
        if self.allocation not in ("dynamic", "paged", "static"):
            raise InputError(
                "allocation",
                f"allocation must be one of dynamic, paged, static; got {shown(self.allocation)}",
            )
        positive_int("block_size", self.block_size, maximum=MAX_BLOCK_TOKENS)
        if self.mla_layout not in ("latent", "expanded"):
            raise InputError(
                "mla_layout", f"mla_layout must be latent or expanded; got {shown(self.mla_layout)}"
            )

    @property
    def format(self) -> KVFormat:
        return get_kv_format(self.kv_format)


@dataclass(frozen=True, kw_only=True)
class KVLine:
    """The layers of one attention kind (and window) and what they cache."""

    attention: str
    window: int | None
    layers: int
    bytes_per_token: int  # one token of one sequence over these layers
    tokens_held: int  # per sequence per layer, after window and allocation rounding
    bytes: int  # for the whole batch


@dataclass(frozen=True, kw_only=True)
class KVCacheResult:
    """KV cache for `batch` sequences of `context` tokens.

    bytes_per_token: what one more token of one sequence adds over all layers while
                     no sliding window is full yet (no allocation rounding).
    total_bytes:     batch x sum over layers of tokens_held x per-token bytes, plus
                     per-layer scale constants.
    warnings:        lengths past the model's max_position_embeddings (computed anyway).
    """

    context: int
    batch: int
    kv_format: str
    allocation: Allocation
    block_size: int
    allocated_length: int
    bytes_per_token: int
    per_sequence_bytes: int
    scale_bytes: int
    total_bytes: int
    lines: tuple[KVLine, ...]
    warnings: tuple[str, ...] = ()


def layer_bytes_per_token(spec: ModelSpec, layer: LayerSpec, settings: KVSettings) -> int:
    """Bytes one token of one sequence occupies in one layer's cache."""
    fmt = settings.format
    if layer.attention == "mla":
        assert spec.mla is not None
        m = spec.mla
        if settings.mla_layout == "latent":
            return fmt.bytes_for(m.kv_lora_rank + m.qk_rope_head_dim)
        k = fmt.bytes_for(m.qk_nope_head_dim + m.qk_rope_head_dim)
        return spec.num_heads * (k + fmt.bytes_for(m.v_head_dim))
    return 2 * spec.num_kv_heads * fmt.bytes_for(spec.head_dim)


def kv_bytes_per_token(spec: ModelSpec, settings: KVSettings | None = None) -> int:
    """Bytes one more token of one sequence adds over all layers (no window full yet)."""
    settings = settings or KVSettings()
    return sum(layer_bytes_per_token(spec, layer, settings) for layer in spec.layers)


def _tokens_held(layer: LayerSpec, length: int, settings: KVSettings) -> int:
    """Token slots one sequence holds in one layer.

    A paged sliding-window layer past its window keeps the blocks that the last
    `window` tokens touch; they rarely start on a block edge, so that is
    ceil((window - 1) / block) + 1 blocks (vLLM SlidingWindowSpec.max_memory_usage_bytes,
    vllm/v1/kv_cache_interface.py, which frees blocks wholly outside the window).
    """
    sliding = layer.attention == "sliding" and layer.window is not None
    if settings.allocation != "paged":
        return min(length, layer.window) if sliding else length
    block = settings.block_size
    if sliding and length > layer.window:
        return (ceil((layer.window - 1) / block) + 1) * block
    return ceil(length / block) * block


def kv_cache_bytes(
    spec: ModelSpec,
    *,
    context: int,
    batch: int = 1,
    settings: KVSettings | None = None,
    max_length: int | None = None,
) -> KVCacheResult:
    """KV cache of `batch` concurrent sequences of `context` tokens.

    For static allocation the cache is sized for `max_length` (default: context),
    which must be at least `context`.
    """
    settings = settings or KVSettings()
    positive_int("context", context, maximum=MAX_SEQUENCE_TOKENS)
    positive_int("batch", batch, maximum=MAX_CONCURRENT_SEQUENCES)
    length = context
    if settings.allocation == "static":
        length = context if max_length is None else max_length
        positive_int("max_length", length, maximum=MAX_SEQUENCE_TOKENS)
        if length < context:
            raise InputError(
                "max_length", f"max_length must be at least context ({context:,}), got {length:,}"
            )
    elif max_length is not None:
        raise InputError("max_length", "max_length applies only to allocation 'static'")

    groups: dict[tuple[str, int | None], list[LayerSpec]] = {}
    for layer in spec.layers:
        groups.setdefault((layer.attention, layer.window), []).append(layer)
    lines = []
    for (kind, window), layers in groups.items():
        # a layer's bytes per token depend only on its kind: one per group, times its layers
        per_token = len(layers) * layer_bytes_per_token(spec, layers[0], settings)
        held = _tokens_held(layers[0], length, settings)
        lines.append(
            KVLine(
                attention=kind,
                window=window,
                layers=len(layers),
                bytes_per_token=per_token,
                tokens_held=held,
                bytes=batch * held * per_token,
            )
        )
    scale_bytes = settings.format.layer_scale_bytes * spec.num_layers
    per_sequence = sum(line.tokens_held * line.bytes_per_token for line in lines)
    return KVCacheResult(
        context=context,
        batch=batch,
        kv_format=settings.kv_format,
        allocation=settings.allocation,
        block_size=settings.block_size,
        allocated_length=length,
        bytes_per_token=sum(line.bytes_per_token for line in lines),
        per_sequence_bytes=per_sequence,
        scale_bytes=scale_bytes,
        total_bytes=batch * per_sequence + scale_bytes,
        lines=tuple(lines),
        warnings=position_warnings(
            spec, context=context, max_length=length if length != context else None
        ),
    )


@dataclass(frozen=True, kw_only=True)
class ContextLimit:
    """The longest context whose cache fits, and what limited it.

    limited_by: "memory", or "max_position_embeddings" when the model's own limit
    binds first (a model with only sliding layers needs bounded memory at any length).
    """

    max_context: int
    limited_by: Literal["memory", "max_position_embeddings"]
    total_bytes: int


def max_context(
    spec: ModelSpec,
    *,
    free_bytes: int,
    batch: int = 1,
    settings: KVSettings | None = None,
    limit: int | None = None,
) -> ContextLimit:
    """Largest context L with kv_cache_bytes(L, batch) <= free_bytes.

    Bisection on L, valid because the cache is non-decreasing in L. The search stops
    at `limit` (default: the model's max_position_embeddings); a result of 0 means not
    even one token per sequence fits.
    """
    settings = settings or KVSettings()
    non_negative_int("free_bytes", free_bytes)
    positive_int("batch", batch)
    if limit is None:
        limit = spec.max_position_embeddings
    if limit is None:
        raise InputError("limit", "limit is required when the model has no max_position_embeddings")
    positive_int("limit", limit)

    def total(length: int) -> int:
        return kv_cache_bytes(spec, context=length, batch=batch, settings=settings).total_bytes

    if total(limit) <= free_bytes:
        return ContextLimit(
            max_context=limit, limited_by="max_position_embeddings", total_bytes=total(limit)
        )
    lo, hi = 0, limit  # total(lo) fits (or lo == 0), total(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if total(mid) <= free_bytes:
            lo = mid
        else:
            hi = mid
    return ContextLimit(max_context=lo, limited_by="memory", total_bytes=total(lo) if lo else 0)


def max_sequences(
    spec: ModelSpec,
    *,
    free_bytes: int,
    context: int,
    settings: KVSettings | None = None,
    max_length: int | None = None,
) -> int:
    """Most concurrent sequences of `context` tokens whose cache fits in `free_bytes`.

    floor((free_bytes - per-layer scale bytes) / per-sequence bytes); 0 when none fits.
    """
    non_negative_int("free_bytes", free_bytes)
    one = kv_cache_bytes(spec, context=context, batch=1, settings=settings, max_length=max_length)
    return max(0, (free_bytes - one.scale_bytes) // one.per_sequence_bytes)
