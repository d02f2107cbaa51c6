"""time-to-quality: train until the eval loss reaches a target; wall time, GPU-hours and
cost to target across seeded repeats, scored as MLPerf Training does
(`probes.time_to_quality`)."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    p.add_argument(
        "--target-loss",
        type=float,
        metavar="L",
        help="required: stop when the mean eval loss (nats per byte) is at or below L "
        "(ln 256 = 5.545 is a uniform guess)",
    )
    p.add_argument(
        "--train",
        metavar="FILE",
        help="UTF-8 text to train on (default: the shipped probes/data/corpus/train.txt)",
    )
    p.add_argument(
        "--eval",
        metavar="FILE",
        help="UTF-8 text to evaluate on (default: the shipped probes/data/corpus/eval.txt)",
    )
    p.add_argument("--seq-len", type=int, default=128, help="bytes per training window")
    p.add_argument("--micro-batch", type=int, default=8, help="windows per step")
    p.add_argument("--lr", type=float, default=1e-3, help="constant learning rate")
    p.add_argument("--optimizer", default="adamw", help="adamw|sgd|sgd-momentum|adafactor|...")
    p.add_argument(
        "--precision",
        default="fp32",
        help="fp32|amp-bf16|amp-fp16|bf16-fp32-master|bf16 "
        "(bf16-mixed, the old name of bf16-fp32-master, is still read)",
    )
    p.add_argument("--eval-every", type=int, default=10, help="steps between evaluations")
    p.add_argument(
        "--eval-windows", type=int, default=32, help="most eval windows (fixed, evenly spaced)"
    )
    p.add_argument("--max-steps", type=int, default=1000, help="steps before a run gives up")
    p.add_argument(
        "--repeats", type=int, default=5, help="seeded runs (>= 5: drop fastest and slowest)"
    )
    p.add_argument(
        "--warmup", type=int, default=2, help="untimed steps on random bytes before repeat 0"
    )
    p.add_argument("--price", type=float, metavar="USD_PER_GPU_HOUR", help="cost per GPU-hour")
    p.add_argument("--gpus", type=int, default=1, help="GPUs the run occupies, for GPU-hours")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.time_to_quality import time_to_quality_probe

    return time_to_quality_probe(args, shared.device(args), phases)


PROBE = Probe(
    name="time-to-quality",
    help="steps, seconds, GPU-hours and cost to an eval-loss target",
    flags=flags,
    body=body,
    order=8,
)
