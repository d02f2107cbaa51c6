"""adapter: four checks of a PEFT LoRA adapter on transformers' own model: what trains,
an update, reloading in a new process, merging (`probes.adapter`)."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    p.add_argument("--lora-rank", type=int, help="LoRA rank r (required unless --adapter)")
    p.add_argument("--lora-alpha", type=float, help="LoRA alpha (default: the rank, scale 1)")
    p.add_argument(
        "--lora-targets",
        default="all-attention",
        help="module names, all-attention or all-linear (as the calculators count them)",
    )
    p.add_argument(
        "--base-format",
        default="bf16",
        help="fp32|bf16|fp16, or bitsandbytes int8|nf4|nf4-dq|fp4|fp4-dq (CUDA)",
    )
    p.add_argument("--micro-batch", type=int, default=2, help="sequences in the fixed batch")
    p.add_argument("--seq-len", type=int, default=32, help="tokens per sequence")
    p.add_argument(
        "--lr",
        type=float,
        default=2e-2,
        help="AdamW learning rate of check 2 (the adapter of 3, 4)",
    )
    p.add_argument("--adapter", metavar="DIR", help="check this saved adapter instead")
    p.add_argument("--save-adapter", metavar="DIR", help="keep the trained adapter here")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.adapter import adapter_probe, read_settings

    settings = read_settings(args)  # bad flags end the run before anything is built
    spec, config = shared.spec_or_checkpoint(args, settings.pretrained)
    name = settings.pretrained or spec.name
    return adapter_probe(args, spec, config, name, shared.device(args), phases)


PROBE = Probe(
    name="adapter",
    help="LoRA adapter checks: counts, update, reload, merge (PEFT)",
    flags=flags,
    body=body,
    order=10,
)
