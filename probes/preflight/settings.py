"""The preflight's own settings, read from its flags and checked before any check runs:
a bad value ends the run with one line naming the flag, the value and the bound."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass

# The checks, in the order they run (their `--checks` names).
CHECKS = (
    "initial-loss",
    "gradients",
    "overfit",
    "memory",
    "accumulation",
    "resume",
    "data-order",
    "speed",
)
STRATEGIES = ("single", "ddp", "fsdp")


@dataclass(frozen=True, kw_only=True)
class PreflightSettings:
    """What the checks need beyond the training step's own settings (`StepSettings`).

    checks:            the checks to run; the others are reported as skipped.
    lr:                learning rate of checks 2 and 3 (the step's optimizer).
    init_tolerance:    check 1 and 3: allowed distance from ln(V), as a fraction of ln(V).
    overfit_steps:     check 3: steps on one fixed batch.
    overfit_fraction:  check 3: the loss must fall below this fraction of its start.
    memory_tolerance:  check 4: allowed excess of the measured peak over the estimate.
    fit, fit_max:      check 4: search the largest micro-batch, up to fit_max.
    accumulation:      check 5: micro-batches per update.
    resume_at, resume_steps: check 6: save after N steps, continue M steps.
    warmup, speed_steps: check 8: untimed, then timed steps.
    tokens, price, gpus, gpu, min_mfu: check 8: the planned run, its price per GPU-hour,
                       its GPU count, the catalog card, and an optional MFU floor.
    freeze:            name fragments of tensors the reader freezes on purpose.
    strategy:          single, or ddp / fsdp under torchrun.
    pretrained:        a local checkpoint folder (`--hf --config DIR`), else None.
    """

    checks: tuple[str, ...] = CHECKS
    lr: float = 1e-3
    init_tolerance: float = 0.1
    overfit_steps: int = 50
    overfit_fraction: float = 0.5
    memory_tolerance: float = 0.1
    fit: bool = False
    fit_max: int = 256
    accumulation: int = 4
    resume_at: int = 2
    resume_steps: int = 2
    warmup: int = 2
    speed_steps: int = 5
    tokens: int | None = None
    price: float | None = None
    gpus: int | None = None
    gpu: str | None = None
    min_mfu: float | None = None
    freeze: tuple[str, ...] = ()
    strategy: str = "single"
    pretrained: str | None = None

    def __post_init__(self) -> None:
        unknown = [c for c in self.checks if c not in CHECKS]
        if unknown or not self.checks:
            raise ValueError(
                f"checks must list some of {', '.join(CHECKS)} or be all, got {','.join(unknown)!r}"
            )
        _positive_float("lr", self.lr, 1.0)
        _fraction("init-tolerance", self.init_tolerance)
        _fraction("overfit-fraction", self.overfit_fraction)
        _positive_float("memory-tolerance", self.memory_tolerance, 10.0, zero=True)
        _int_in("overfit-steps", self.overfit_steps, 1, 100_000)
        _int_in("fit-max", self.fit_max, 1, 1_000_000)
        _int_in("accumulation", self.accumulation, 2, 1024)
        _int_in("resume-at", self.resume_at, 1, 10_000)
        _int_in("resume-steps", self.resume_steps, 1, 10_000)
        _int_in("warmup", self.warmup, 0, 10_000)
        _int_in("speed-steps", self.speed_steps, 1, 100_000)
        if self.tokens is not None:
            _int_in("tokens", self.tokens, 1, 10**16)
        if self.gpus is not None:
            _int_in("gpus", self.gpus, 1, 1_000_000)
        if self.price is not None:
            _positive_float("price", self.price, 1e6, zero=True)
        if self.min_mfu is not None:
            _fraction("min-mfu", self.min_mfu)
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}"
            )
        if self.strategy != "single" and "RANK" not in os.environ:
            raise ValueError(
                f"strategy {self.strategy} runs under torchrun: "
                "torchrun --nproc-per-node N -m probes preflight --strategy ..."
            )


def _int_in(flag: str, v: object, low: int, high: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ValueError(f"{flag} must be an integer from {low:,} to {high:,}, got {v!r}")


def _positive_float(flag: str, v: float, high: float, *, zero: bool = False) -> None:
    low_ok = v >= 0 if zero else v > 0
    if not math.isfinite(v) or not low_ok or v > high:
        bound = "from 0" if zero else "above 0"
        raise ValueError(f"{flag} must be a number {bound} to {high:g}, got {v!r}")


def _fraction(flag: str, v: float) -> None:
    if not math.isfinite(v) or not 0 < v < 1:
        raise ValueError(f"{flag} must be a number strictly between 0 and 1, got {v!r}")


def read_settings(args: argparse.Namespace) -> PreflightSettings:
    """The flags as settings; ValueError naming the flag on a bad value."""
    checks = CHECKS if args.checks == "all" else tuple(c for c in args.checks.split(",") if c)
    pretrained = None
    if args.config is not None and os.path.isdir(args.config):
        if not args.hf:
            raise ValueError(
                f"config {args.config!r} is a folder: a local checkpoint loads with --hf"
            )
        pretrained = args.config
    return PreflightSettings(
        checks=checks,
        lr=args.lr,
        init_tolerance=args.init_tolerance,
        overfit_steps=args.overfit_steps,
        overfit_fraction=args.overfit_fraction,
        memory_tolerance=args.memory_tolerance,
        fit=args.fit,
        fit_max=args.fit_max,
        accumulation=args.accumulation,
        resume_at=args.resume_at,
        resume_steps=args.resume_steps,
        warmup=args.warmup,
        speed_steps=args.speed_steps,
        tokens=args.tokens,
        price=args.price,
        gpus=args.gpus,
        gpu=args.gpu,
        min_mfu=args.min_mfu,
        freeze=tuple(f for f in (args.freeze or "").split(",") if f),
        strategy=args.strategy,
        pretrained=pretrained,
    )


def config_path(args: argparse.Namespace, pretrained: str | None) -> str | None:
    """The config.json the other probes read: the checkpoint folder's, or --config."""
    if pretrained is not None:
        return os.path.join(pretrained, "config.json")
    return args.config
