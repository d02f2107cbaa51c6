"""weights and kv-cache probes: what a loaded model and its KV cache really hold.

weights:  builds the model in a torch dtype (fp32, bf16, fp16: the formats torch holds
          natively) and measures `sum(p.numel())`, the bytes of its unique parameter
          storages, and what the backend sees allocated; the estimate is
          `parameter_counts(spec).total` and `weight_bytes(spec, format).main_bytes`.
kv-cache: runs a no-grad prefill of `batch` sequences of `context` tokens and keeps
          what transformers' DynamicCache would: per layer K and V after RoPE (the last
          `window` tokens on sliding layers), or MLA's latent c_kv and shared rope key.
          Like a runtime, it computes the logits of the last position only
          (transformers' `logits_to_keep=1` in generate(), vLLM's sampler): the logits of
          every position would be batch x context x vocabulary values, far more than the
          cache. Measured: the bytes those tensors hold and the allocator's growth with
          the cache alive and everything else freed; estimate: `kv_cache_bytes`.
          The probe itself needs `probe_memory_bytes`: it prefills the whole batch in one
          pass, as generate() does, not in a server's chunks.
"""

from __future__ import annotations

from typing import Any

import torch

from calculators.memory.activations import inference_workspace
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.weights import weight_bytes
from calculators.model.params import parameter_counts
from calculators.model.spec import ModelSpec
from probes.memory import CPUBackend, CudaBackend, storage_bytes
from probes.model import build_model, parameter_count

VERSION = "1"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# config.json's dtype (transformers >= 4.56) or torch_dtype, as a probe format
CONFIG_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def model_format(config: dict[str, Any]) -> str:
    """The format the checkpoint is published in, from its config.json: what
    transformers' dtype="auto" loads (a float32 config stays float32; vLLM's
    dtype="auto" would load such a checkpoint in 16 bits, so on a float32 model the probe
    measures a cache twice the size vLLM's would be unless told `--kv-format bf16`).
    bf16 when the config names none or a dtype a probe cannot hold."""
    name = config.get("dtype") or config.get("torch_dtype")
    return CONFIG_DTYPES.get(str(name), "bf16")


def probe_memory_bytes(spec: ModelSpec, fmt: str, *, context: int, batch: int) -> int:
    """What the kv-cache probe holds at its peak, in bytes: the weights in `fmt`, the
    cache, and the working set of a one-pass prefill of the whole batch (one layer's
    activations plus the last position's logits, `inference_workspace` with no chunk).
    The caching allocator's fragmentation and the CUDA context come on top."""
    cache = kv_cache_bytes(spec, context=context, batch=batch, settings=KVSettings(kv_format=fmt))
    work = inference_workspace(spec, context=context, batch=batch, prefill_chunk=None)
    return weight_bytes(spec, fmt).main_bytes + cache.total_bytes + work.total


def _dtype(fmt: str) -> torch.dtype:
    if fmt not in DTYPES:
        raise ValueError(f"format must be one of {', '.join(DTYPES)} for a probe, got {fmt!r}")
    return DTYPES[fmt]


def weights_probe(
    spec: ModelSpec, fmt: str, *, device: str, backend: CPUBackend | CudaBackend
) -> dict[str, Any]:
    dtype = _dtype(fmt)
    backend.start()
    before = backend.current()
    model = build_model(spec, device=device, dtype=dtype)
    allocated = backend.current() - before
    measured = {
        "parameters": parameter_count(model),
        "weight_bytes": storage_bytes(model.parameters()),
        "allocated_bytes": allocated,
    }
    w = weight_bytes(spec, fmt).main_bytes
    estimate = {
        "parameters": parameter_counts(spec).total,
        "weight_bytes": w,
        "allocated_bytes": w,
    }
    return {
        "inputs": {
            "model": spec.name,
            "model_type": spec.model_type,
            "format": fmt,
            "device": device,
        },
        "estimate": estimate,
        "measured": measured,
        "units": {"parameters": "parameters", "weight_bytes": "bytes", "allocated_bytes": "bytes"},
        "details": {"backend": backend.kind},
    }


def kv_cache_probe(
    spec: ModelSpec,
    fmt: str,
    *,
    context: int,
    batch: int,
    device: str,
    backend: CPUBackend | CudaBackend,
) -> dict[str, Any]:
    for name, v in (("context", context), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    dtype = _dtype(fmt)
    model = build_model(spec, device=device, dtype=dtype).eval()
    attn = [layer.self_attn for layer in model.model.layers]
    sinks: list[list[torch.Tensor]] = [[] for _ in attn]
    ids = torch.randint(0, spec.vocab_size, (batch, context), device=device)
    with torch.no_grad():
        backend.start()
        before = backend.current()
        for a, sink in zip(attn, sinks, strict=True):
            a.kv_sink = sink
        # the last position's logits only, as a runtime computes them
        logits = torch.nn.functional.linear(model.hidden(ids)[:, -1:], model.output_weight())
        del logits
        allocated = backend.current() - before
        for a in attn:
            a.kv_sink = None
    held = sum(t.untyped_storage().nbytes() for sink in sinks for t in sink)
    est = kv_cache_bytes(spec, context=context, batch=batch, settings=KVSettings(kv_format=fmt))
    return {
        "inputs": {
            "model": spec.name,
            "model_type": spec.model_type,
            "kv_format": fmt,
            "context": context,
            "batch": batch,
            "device": device,
            "allocation": "dynamic",
            "mla_layout": "latent",
        },
        "estimate": {"kv_cache_bytes": est.total_bytes, "allocated_bytes": est.total_bytes},
        "measured": {"kv_cache_bytes": held, "allocated_bytes": allocated},
        "units": {"kv_cache_bytes": "bytes", "allocated_bytes": "bytes"},
        "details": {
            "backend": backend.kind,
            "prefill_peak_bytes": backend.end("prefill").peak_bytes,
            "probe_memory_bytes": probe_memory_bytes(spec, fmt, context=context, batch=batch),
            "logits": "last position only",
        },
    }
