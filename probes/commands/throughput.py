"""throughput: training tokens/s and MFU, and decode tokens/s (`probes.throughput`)."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    shared.step_args(p)
    p.add_argument("--gpu", help="catalog card for the peak (default: detected)")
    p.add_argument("--context", type=int, default=128, help="decode context, tokens")
    p.add_argument("--batch", type=int, default=1, help="decode sequences")
    p.add_argument("--decode-tokens", type=int, default=16, help="tokens to decode")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.throughput import throughput_probe

    spec, config = shared.spec(args)
    return throughput_probe(
        args, spec, config, shared.step_settings(args), shared.device(args), phases
    )


PROBE = Probe(
    name="throughput",
    help="training tokens/s, MFU and decode tokens/s",
    flags=flags,
    body=body,
    order=7,
)
