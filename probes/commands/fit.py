"""fit: the largest micro-batch (or sequence) that fits, by bisection (`probes.fit`)."""

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
    p.add_argument("--search", default="micro-batch", help="micro-batch|seq-len")
    p.add_argument("--max", type=int, default=4096, help="upper bound of the search")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.fit import fit_probe

    spec, config = shared.spec(args)
    return fit_probe(args, spec, config, shared.step_settings(args), shared.device(args), phases)


PROBE = Probe(
    name="fit",
    help="largest micro-batch (or context) that fits, by bisection",
    flags=flags,
    body=body,
    order=8,
)
