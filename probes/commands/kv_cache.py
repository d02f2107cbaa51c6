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
    p.add_argument("--kv-format", default="fp32", help="fp32|bf16|fp16 (the model's dtype)")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.inference import kv_cache_probe

    spec, _ = shared.spec(args)
    device = shared.device(args)
    phases.current = "prefill"
    with shared.backend(args, device) as b:
        return kv_cache_probe(
            spec, args.kv_format, context=args.context, batch=args.batch, device=device, backend=b
        )


PROBE = Probe(
    name="kv-cache", help="KV cache held after a prefill", flags=flags, body=body, order=3
)
