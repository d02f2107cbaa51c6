"""Storage formats of the KV cache, as data.

Each format stores `block_elements` values in `block_bytes` bytes (a block of 1 is
a plain dtype); `layer_scale_bytes` are per-layer constants that do not grow with
tokens (vLLM's per-tensor k_scale and v_scale for fp8 caches).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from calculators.errors import InputError, shown


@dataclass(frozen=True, kw_only=True)
class KVFormat:
    """A KV cache element format.

    bytes for n values = ceil(n / block_elements) x block_elements_bytes.
    """

    id: str
    name: str
    block_elements: int
    block_bytes: int
    layer_scale_bytes: int
    source: str

    def __post_init__(self) -> None:
        if self.block_elements <= 0 or self.block_bytes <= 0 or self.layer_scale_bytes < 0:
            raise ValueError(f"kv format {self.id}: block sizes must be positive")

    def bytes_for(self, values: int) -> int:
        """Bytes that hold `values` consecutive values of one row (one head's vector)."""
        if self.block_elements > 1 and values % self.block_elements:
            raise ValueError(
                f"kv_format {self.id} stores rows in blocks of {self.block_elements} values; "
                f"a row of {values} values does not divide"
            )
        return ceil(values / self.block_elements) * self.block_bytes

    @property
    def bits_per_value(self) -> float:
        """Average storage bits per cached value, scales included."""
        return 8 * self.block_bytes / self.block_elements


KV_FORMATS: dict[str, KVFormat] = {
    f.id: f
    for f in (
        KVFormat(
            id="fp32",
            name="fp32",
            block_elements=1,
            block_bytes=4,
            layer_scale_bytes=0,
            source="IEEE 754 binary32; torch.float32",
        ),
        KVFormat(
            id="bf16",
            name="bf16",
            block_elements=1,
            block_bytes=2,
            layer_scale_bytes=0,
            source="bfloat16; torch.bfloat16, the default cache dtype of bf16 models",
        ),
        KVFormat(
            id="fp16",
            name="fp16",
            block_elements=1,
            block_bytes=2,
            layer_scale_bytes=0,
            source="IEEE 754 binary16; torch.float16",
        ),
        KVFormat(
            id="fp8",
            name="fp8 e4m3 with per-tensor k/v scales",
            block_elements=1,
            block_bytes=1,
            layer_scale_bytes=8,
            source="vLLM --kv-cache-dtype fp8 (fp8_e4m3): one byte per value, fp32 "
            "_k_scale and _v_scale per attention layer (vllm/attention/layer.py)",
        ),
        KVFormat(
            id="fp8-e5m2",
            name="fp8 e5m2",
            block_elements=1,
            block_bytes=1,
            layer_scale_bytes=8,
            source="vLLM --kv-cache-dtype fp8_e5m2; OCP 8-bit floating point spec v1.0",
        ),
        KVFormat(
            id="int8",
            name="int8, blocks of 32 with an fp16 scale (q8_0)",
            block_elements=32,
            block_bytes=34,
            layer_scale_bytes=0,
            source="llama.cpp --cache-type-k/-v q8_0: block_q8_0 = fp16 d + 32 x int8 "
            "(ggml/src/ggml-common.h), 34 bytes per 32 values",
        ),
    )
}


def get_kv_format(kv_format: str) -> KVFormat:
    """The KV format `kv_format`; ValueError naming the field and the known ids otherwise."""
    try:
        return KV_FORMATS[kv_format]
    except KeyError:
        raise InputError(
            "kv_format", f"kv_format must be one of {', '.join(KV_FORMATS)}; got {shown(kv_format)}"
        ) from None
