"""train-step: training-step memory phase by phase, against the calculators' estimate
(`probes.train_step`; under torchrun `probes.distributed`)."""

from __future__ import annotations

import argparse
from typing import Any

from calculators.render import table
from calculators.units import format_gib
from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases

_CATS = ("parameters", "gradients", "optimizer_states", "activations", "temporaries")


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    shared.step_args(p)
    p.add_argument("--strategy", default="single", help="single|ddp|fsdp (under torchrun)")
    p.add_argument("--snapshot", metavar="FILE", help="CUDA memory snapshot for memory_viz")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.distributed import train_step_distributed
    from probes.train_step import estimate, estimate_entries, train_step

    spec, config = shared.spec(args)
    s = shared.step_settings(args)
    device = shared.device(args)
    if args.strategy != "single":
        return train_step_distributed(args, spec, config, s, phases)
    if args.snapshot and not device.startswith("cuda"):
        raise ValueError("--snapshot records the CUDA/ROCm allocator: it needs --device cuda")
    if args.snapshot and device.startswith("cuda"):
        from probes.memory import record_history

        record_history()
    with shared.backend(args, device) as b:
        out = train_step(spec, config, s, device=device, backend=b, phases=phases, hf=args.hf)
    if args.snapshot and device.startswith("cuda"):
        from probes.memory import dump_snapshot

        dump_snapshot(args.snapshot)
        out["details"]["snapshot"] = args.snapshot
    est = estimate(spec, s)
    out["estimate"] = estimate_entries(est)
    out["units"] = {k: "bytes" for k in {**out["estimate"], **out["measured"]}}
    out["details"]["estimate_peak_phase"] = est.peak_phase
    out["details"]["estimate_lines"] = {line.id: line.bytes for line in est.lines}
    cats = out["details"]["phases"]
    rows = [
        [name, *(format_gib(v.get("peak_by_category", {}).get(c, 0), 4) for c in _CATS)]
        for name, v in cats.items()
        if v.get("peak_by_category")
    ]
    out["text"] = (
        "peak of each phase by category (CPU tracker):\n" + table(["phase", *_CATS], rows)
        if rows
        else ""
    )
    return out


PROBE = Probe(
    name="train-step", help="training-step memory, phase by phase", flags=flags, body=body, order=4
)
