"""checkpoint: save, resume in a new process, compare bitwise (`probes.checkpoint`)."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    p.add_argument("--micro-batch", type=int, default=2, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=32, help="tokens per sequence")
    p.add_argument("--steps", type=int, default=3, help="steps before the checkpoint (N)")
    p.add_argument("--more-steps", type=int, default=3, help="steps after resuming (M)")
    p.add_argument("--omit", default="", help="leave this piece out of the checkpoint")
    p.add_argument("--dir", help="checkpoint folder (default: a temporary one)")
    p.add_argument("--role", default="driver", help=argparse.SUPPRESS)


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.checkpoint import checkpoint_probe

    spec, config = shared.spec(args)
    return checkpoint_probe(args, spec, config, shared.device(args), phases)


PROBE = Probe(
    name="checkpoint",
    help="save, resume in a new process, compare bitwise",
    flags=flags,
    body=body,
    order=6,
)
