"""accumulation: k accumulated micro-batches against one batch of k times the size
(`probes.accumulation`)."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    p.add_argument("--micro-batch", type=int, default=2, help="sequences per micro-batch")
    p.add_argument("--accumulation", type=int, default=4, help="micro-batches per update")
    p.add_argument("--seq-len", type=int, default=32, help="tokens per sequence")
    p.add_argument("--precision", default="fp32", help="fp32|bf16")
    p.add_argument("--strategy", default="single", help="single|ddp (under torchrun)")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.accumulation import accumulation_probe

    spec, config = shared.spec(args)
    return accumulation_probe(args, spec, config, shared.device(args), phases)


PROBE = Probe(
    name="accumulation",
    help="accumulated gradient vs one large batch",
    flags=flags,
    body=body,
    order=5,
)
