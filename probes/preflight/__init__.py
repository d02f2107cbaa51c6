"""preflight: eight checks of a training setup, in order, on the device it will run on,
before the campaign spends its budget (`python -m probes preflight`).

1 initial-loss  the loss at initialisation near ln(V) (`learning`)
2 gradients     every tensor meant to train gets a finite, non-zero gradient and
                changes; every other tensor stays bitwise the same (`learning`)
3 overfit       one fixed batch is learnt; a fresh batch is not (`learning`)
4 memory        a full step's peak against the calculators' estimate; the largest
                micro-batch that fits with --fit (train-step, fit probes)
5 accumulation  k micro-batches equal one batch k times the size (accumulation probe)
6 resume        save, resume in a new process, continue: bitwise equal; the checkpoint
                loads with weights_only=True (checkpoint probe)
7 data-order    same seed same batches, set_epoch reshuffles, resume at the saved
                position, ranks disjoint (`data_order`)
8 speed         tokens/s, MFU and the planned run's time and cost (throughput probe,
                throughput calculator)

Each check reports pass, fail or skipped with what it measured against what threshold
and, when it fails, where to look (`outcome`). A failed check fails the run (exit 1); a
check that could not run is skipped with its reason, never passed. Under torchrun the
collective checks (4, 5) run on every rank, check 6 on rank 0 only, and the report is
rank 0's.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import torch

from probes.preflight import data_order, learning, reused
from probes.preflight.outcome import (
    CheckOutcome,
    errored_outcome,
    failed,
    render_outcomes,
    skipped_outcome,
)
from probes.preflight.settings import CHECKS, PreflightSettings, config_path, read_settings
from probes.report import Phases

VERSION = "1"
TITLES = {
    "initial-loss": "Initial loss near ln(V)",
    "gradients": "Gradients reach what should train",
    "overfit": "Overfit one batch",
    "memory": "A full step's memory",
    "accumulation": "Accumulation equivalence",
    "resume": "Kill and resume",
    "data-order": "Data order",
    "speed": "Speed and the planned run",
}


def _skipped(check: str, why: str) -> CheckOutcome:
    return skipped_outcome(CHECKS, TITLES, check, why)


def _errored(check: str, e: Exception) -> CheckOutcome:
    return errored_outcome(CHECKS, TITLES, check, e)


def _next_group_names(round_: int) -> None:
    """Give the next process group names no earlier group used.

    Checks 4 and 5 each start and end their own process group. Ending the default group
    resets torch's group counter (`destroy_process_group`), so a second group takes the
    same store keys as the first and a rank can read its peer's stale address and fail
    to connect (seen 1 run in 2 with gloo on CPU). Every rank sets the same value, so
    the ranks still agree on the names. `_world.group_count` is torch's own counter
    (torch.distributed.distributed_c10d); no public API sets it.
    """
    from torch.distributed import distributed_c10d

    distributed_c10d._world.group_count = 1000 * round_


def preflight_probe(
    args: argparse.Namespace,
    spec: Any,
    config: dict[str, Any],
    s: Any,
    device: str,
    phases: Phases,
) -> dict[str, Any]:
    """Run the selected checks in order; the report's sections with one entry per check."""
    p = read_settings(args)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    args._rank = rank
    if p.strategy != "single" and device.startswith("cuda"):
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(device)
    outcomes: list[CheckOutcome] = []
    step: dict[str, Any] = {}
    loop: learning.Loop | None = None

    def run(check: str, fn: Callable[[], CheckOutcome]) -> None:
        if check not in p.checks:
            outcomes.append(_skipped(check, "not selected (--checks)"))
            return
        phases.current = check
        t0 = time.perf_counter()
        try:
            o = fn()
        except torch.OutOfMemoryError as e:
            o = _errored(check, e)
            o.look_at = f"out of memory: {o.look_at}"
        except Exception as e:  # one broken check must not hide the others' results
            o = _errored(check, e)
        o.seconds = time.perf_counter() - t0
        outcomes.append(o)

    def the_loop() -> learning.Loop:
        nonlocal loop
        if loop is None:
            loop = learning.build_loop(spec, config, s, p, device, args.hf)
        return loop

    run("initial-loss", lambda: learning.initial_loss(the_loop(), s, p))
    run("gradients", lambda: learning.gradients(the_loop(), s, p))
    run("overfit", lambda: learning.overfit(the_loop(), s, p))
    loop = None
    reused.free_memory(device)

    def memory() -> CheckOutcome:
        o, sections = reused.memory(args, spec, config, s, p, device, phases)
        step.update(sections)
        return o

    run("memory", memory)
    reused.free_memory(device)
    if p.strategy != "single":
        _next_group_names(1)
    run("accumulation", lambda: reused.accumulation(args, spec, config, s, p, device, phases))
    reused.free_memory(device)
    if rank == 0:
        cfg = config_path(args, p.pretrained)
        run("resume", lambda: reused.resume(args, spec, cfg, s, p, device, phases))
    else:
        outcomes.append(_skipped("resume", f"runs on rank 0 only (this is rank {rank})"))
    run("data-order", lambda: data_order.data_order(s.seed, rank, world, s.micro_batch))
    reused.free_memory(device)
    run("speed", lambda: reused.speed(args, spec, config, s, p, device, world, phases))
    phases.current = "done"
    return sections(args, spec, s, p, device, world, outcomes, step)


def sections(
    args: argparse.Namespace,
    spec: Any,
    s: Any,
    p: PreflightSettings,
    device: str,
    world: int,
    outcomes: list[CheckOutcome],
    step: dict[str, Any],
) -> dict[str, Any]:
    """The report: one entry per check under details.checks; the step's peak against its
    estimate in estimate/measured (the train-step probe's names), and each check's
    headline figure in measured."""
    measured: dict[str, Any] = {}
    units: dict[str, str] = {}
    for o in outcomes:
        for k, v in o.measured.items():
            if (
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and (o.id, k) != ("memory", "peak")
            ):
                measured[f"{o.id.replace('-', '_')}.{k}"] = v
                units[f"{o.id.replace('-', '_')}.{k}"] = o.units.get(k, "")
    estimate: dict[str, Any] = {}
    if step.get("estimate") and step.get("measured"):
        estimate["peak"] = step["estimate"]["peak"]
        measured["peak"] = step["measured"]["peak"]
        units["peak"] = "bytes"
    bad = failed(outcomes)
    details: dict[str, Any] = {
        "checks": [o.as_dict() for o in outcomes],
        "passed": [o.id for o in outcomes if o.status == "pass"],
        "failed": [o.id for o in bad],
        "skipped": [o.id for o in outcomes if o.status == "skipped"],
        "backend": step.get("details", {}).get("backend", "none"),
        "world_size": world,
    }
    if bad:
        details["status"] = "error"
        details["error"] = "failed checks: " + ", ".join(f"{o.number} {o.id}" for o in bad)
    inputs = {
        **asdict(s),
        **{k: v for k, v in asdict(p).items() if k != "checks"},
        "checks": list(p.checks),
        "model": spec.name,
        "model_type": spec.model_type,
        "device": device,
        "hf": bool(args.hf),
        "world_size": world,
    }
    return {
        "inputs": inputs,
        "estimate": estimate,
        "measured": measured,
        "units": units,
        "details": details,
        "text": render_outcomes(outcomes),
    }


__all__ = ["CHECKS", "VERSION", "PreflightSettings", "preflight_probe", "read_settings"]
