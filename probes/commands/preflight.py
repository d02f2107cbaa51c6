"""preflight: eight checks of a training setup before the campaign (`probes.preflight`):
initial loss, gradients, overfitting one batch, memory, accumulation, kill and resume,
data order, speed."""

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
    p.add_argument("--strategy", default="single", help="single|ddp|fsdp (under torchrun)")
    p.add_argument(
        "--checks",
        default="all",
        help="all, or some of initial-loss,gradients,overfit,memory,accumulation,resume,"
        "data-order,speed",
    )
    p.add_argument(
        "--freeze", metavar="NAMES", help="tensors you freeze on purpose (name fragments, commas)"
    )
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate of checks 2 and 3")
    p.add_argument(
        "--init-tolerance",
        type=float,
        default=0.1,
        help="check 1: allowed distance from ln(V), a fraction of ln(V)",
    )
    p.add_argument("--overfit-steps", type=int, default=50, help="check 3: steps on one batch")
    p.add_argument(
        "--overfit-fraction",
        type=float,
        default=0.5,
        help="check 3: the loss must fall below this fraction of its start",
    )
    p.add_argument(
        "--memory-tolerance",
        type=float,
        default=0.1,
        help="check 4: allowed excess of the measured peak over the estimate",
    )
    p.add_argument("--fit", action="store_true", help="check 4: find the largest micro-batch")
    p.add_argument("--fit-max", type=int, default=256, help="check 4: upper bound of --fit")
    p.add_argument("--accumulation", type=int, default=4, help="check 5: micro-batches per update")
    p.add_argument("--resume-at", type=int, default=2, help="check 6: steps before the save")
    p.add_argument("--resume-steps", type=int, default=2, help="check 6: steps after resuming")
    p.add_argument("--warmup", type=int, default=2, help="check 8: untimed steps")
    p.add_argument("--speed-steps", type=int, default=5, help="check 8: timed steps")
    p.add_argument("--tokens", type=int, help="check 8: tokens of the planned run")
    p.add_argument("--price", type=float, metavar="USD_PER_GPU_HOUR", help="check 8: price")
    p.add_argument(
        "--gpus", type=int, help="check 8: GPUs of the planned run (default: this launch)"
    )
    p.add_argument("--gpu", help="check 8: catalog card for the peak (default: detected)")
    p.add_argument("--min-mfu", type=float, help="check 8: fail below this MFU")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.preflight import preflight_probe, read_settings

    settings = read_settings(args)  # bad flags end the run before anything is built
    spec, config = shared.spec_or_checkpoint(args, settings.pretrained)
    s = shared.step_settings(args)
    return preflight_probe(args, spec, config, s, shared.device(args), phases)


PROBE = Probe(
    name="preflight",
    help="eight checks of a training setup before the campaign",
    flags=flags,
    body=body,
    order=9,
)
