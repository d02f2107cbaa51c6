"""kv-cache: the KV cache held after a prefill, against the calculators."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    p.add_argument("--context", type=int, required=True, help="tokens per sequence")
    p.add_argument("--batch", type=int, default=1, help="sequences")
    p.add_argument(
        "--kv-format",
        default=None,
        help="fp32|bf16|fp16; default: the model's dtype from its config.json, as "
        "transformers' dtype='auto' loads it (bf16 if none; a float32 config stays float32, "
        "where vLLM would load 16 bits: pass bf16 to measure vLLM's case)",
    )


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.inference import kv_cache_probe, model_format, probe_memory_bytes

    spec, config = shared.spec(args)
    fmt = args.kv_format or model_format(config)
    device = shared.device(args)
    need = probe_memory_bytes(spec, fmt, context=args.context, batch=args.batch)
    _check_free_memory(device, need, args.batch)
    phases.current = "prefill"
    with shared.backend(args, device) as b:
        return kv_cache_probe(
            spec, fmt, context=args.context, batch=args.batch, device=device, backend=b
        )


def _check_free_memory(device: str, need: int, batch: int) -> None:
    """Refuse before loading when the card cannot hold the probe: an out-of-memory error
    after minutes of loading tells less than this."""
    import torch

    if not device.startswith("cuda"):
        return
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    if need > free:
        raise ValueError(
            f"batch: the probe needs about {need / 2**30:.1f} GiB (weights, cache and a "
            f"one-pass prefill of {batch} sequences) and {device} has {free / 2**30:.1f} GiB "
            "free; lower --batch (the cache grows linearly with it, so a smaller batch checks "
            "the same formula)"
        )


PROBE = Probe(
    name="kv-cache", help="KV cache held after a prefill", flags=flags, body=body, order=3
)
