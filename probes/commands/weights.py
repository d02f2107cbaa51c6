"""weights: parameters and weight bytes of the built model, against the calculators."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    p.add_argument("--format", default="fp32", help="fp32|bf16|fp16")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.inference import weights_probe

    spec, _ = shared.spec(args)
    device = shared.device(args)
    phases.current = "load"
    with shared.backend(args, device) as b:
        return weights_probe(spec, args.format, device=device, backend=b)


PROBE = Probe(
    name="weights",
    help="parameters and weight bytes of the built model",
    flags=flags,
    body=body,
    order=2,
)
