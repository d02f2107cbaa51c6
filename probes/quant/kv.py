"""KV-cache formats, simulated: keys and values rounded through fp8 where a cache stores them.

Where: the keys after RoPE (and after any q/k norm) and the values, at the point they enter
attention, which is where a cache writes them: transformers' attention modules call
`cache.update(key_states, value_states)` right before the attention function, and the
reference decoder (`probes.model.Attention`) hands the same tensors to `attend`. With
`--hf` the hook wraps the attention function transformers looks up for the model
(`ALL_ATTENTION_FUNCTIONS`, an instance-local override removed afterwards); without it,
`probes.model.attend` is wrapped for the duration.

How: x -> clamp(x / s, +-448) as torch.float8_e4m3fn -> x 16-bit, with the per-tensor
scale s = 1.0, the scale vLLM uses when a checkpoint gives no k_scale / v_scale
(vllm/attention/layer.py, `--kv-cache-dtype fp8`; the calculators' kv format fp8).

How this differs from a real fp8 cache: every attention read here sees the rounded keys and
values, the prompt's own tokens included, as llama.cpp does with `-ctk/-ctv` (it writes the
batch into the cache, then attends over the cache). A server whose prefill attends over the
fresh 16-bit keys and values before it writes them to the cache only sees the rounding on
later steps, so its error on the prompt is smaller. The queries stay 16-bit. MLA models
(a latent cache) are not supported by this hook.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

FP8_E4M3_MAX = 448.0  # OCP OFP8 v1.0
KV_SCALE = 1.0  # vLLM's k_scale / v_scale without calibration
KV_FORMATS = ("fp8",)
KV_NOTES = (
    "simulated: keys after RoPE and values rounded through torch.float8_e4m3fn with scale "
    "1.0 (vLLM's default without k_scale/v_scale) where the cache stores them; queries stay "
    "16-bit",
    "every attention read sees the rounded values, the prompt's own tokens included, as "
    "llama.cpp's quantized cache does; a server whose prefill attends over the fresh 16-bit "
    "keys and values sees the rounding only on later steps",
)


def round_fp8(x: torch.Tensor, scale: float = KV_SCALE) -> torch.Tensor:
    """x stored as E4M3 with scale `scale` and read back in x's dtype."""
    codes = (x.float() / scale).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX).to(torch.float8_e4m3fn)
    return (codes.float() * scale).to(x.dtype)


def check_kv_format(kv: str) -> None:
    if kv not in KV_FORMATS:
        raise ValueError(f"--kv-formats must list ids of {', '.join(KV_FORMATS)}; got {kv!r}")


@contextlib.contextmanager
def _hf_hook(model: nn.Module, rounding: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    impl = model.config._attn_implementation
    if impl not in ALL_ATTENTION_FUNCTIONS:
        raise ValueError(f"--kv-formats: no attention function {impl!r} to wrap")
    had_local = impl in ALL_ATTENTION_FUNCTIONS._local_mapping
    original = ALL_ATTENTION_FUNCTIONS[impl]

    def rounded(module: nn.Module, query: Any, key: Any, value: Any, *args: Any, **kw: Any) -> Any:
        return original(module, query, rounding(key), rounding(value), *args, **kw)

    ALL_ATTENTION_FUNCTIONS[impl] = rounded
    try:
        yield
    finally:
        if had_local:
            ALL_ATTENTION_FUNCTIONS[impl] = original
        else:
            del ALL_ATTENTION_FUNCTIONS[impl]


@contextlib.contextmanager
def _reference_hook(rounding: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    import probes.model as reference

    original = reference.attend

    def rounded(q: Any, k: Any, v: Any, *args: Any, **kw: Any) -> Any:
        return original(q, rounding(k), rounding(v), *args, **kw)

    reference.attend = rounded
    try:
        yield
    finally:
        reference.attend = original


@contextlib.contextmanager
def kv_rounding(model: nn.Module, kv: str, hf: bool) -> Iterator[None]:
    """While open, `model`'s attention reads keys and values rounded to format `kv`."""
    check_kv_format(kv)
    if any(type(m).__name__ == "MLAttention" for m in model.modules()):
        raise ValueError("--kv-formats: MLA models cache a latent, which this hook does not round")
    hook = _hf_hook(model, round_fp8) if hf else _reference_hook(round_fp8)
    with hook:
        yield
