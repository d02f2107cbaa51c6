"""fit: the largest micro-batch (or sequence length) whose training step fits, found by
bisection on real out-of-memory errors.

Each try builds the model afresh, runs the measured train-step (two steps) and either
finishes or raises `torch.OutOfMemoryError`; the error is caught, its phase recorded,
and memory freed (`gc.collect()`, `torch.cuda.empty_cache()`) before the next try.
The search doubles from 1 until a try fails (or `--max` is reached), then bisects
between the last success and the first failure. On CPU, `--memory-limit BYTES` makes
the live-tensor tracker raise the same error, so the path is testable without a GPU.

Estimate: the largest value whose `training_memory` peak stays within the limit (with
`--memory-limit`), or the calculators' `max_micro_batch` against the detected card's
visible memory with its reserve lines (without it, on CUDA).
"""

from __future__ import annotations

import argparse
import gc
from dataclasses import replace
from typing import Any

import torch

from calculators.model.spec import ModelSpec
from probes.memory import make_backend
from probes.report import Phases
from probes.train_step import StepSettings, estimate, train_step

VERSION = "1"
SEARCHES = {"micro-batch": "micro_batch", "seq-len": "seq_len"}


def try_value(
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    device: str,
    memory_limit: int | None,
) -> dict[str, Any]:
    """One try: status ok with the measured peak, or oom with the phase it happened in."""
    phases = Phases()
    try:
        with make_backend(device, memory_limit) as b:
            out = train_step(spec, config, s, device=device, backend=b, phases=phases)
        return {"status": "ok", "peak": out["measured"]["peak"]}
    except torch.OutOfMemoryError as e:
        return {"status": "oom", "phase": phases.current, "error": str(e).splitlines()[0]}
    finally:
        gc.collect()
        if device.startswith("cuda"):
            torch.cuda.empty_cache()


def search(fits: Any, hi_bound: int) -> tuple[int, list[int]]:
    """Largest v in [1, hi_bound] with fits(v) (fits monotone), 0 if none; tried values."""
    tried: list[int] = []

    def ok(v: int) -> bool:
        tried.append(v)
        return fits(v)

    if not ok(1):
        return 0, tried
    lo, hi = 1, 0
    while not hi:
        v = min(2 * lo, hi_bound)
        if v == lo:  # the bound itself fits
            return lo, tried
        if ok(v):
            lo = v
        else:
            hi = v
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo, tried


def _estimated(spec: ModelSpec, s: StepSettings, field: str, limit: int | None, hi: int) -> int:
    if limit is not None:

        def fits(v: int) -> bool:
            return estimate(spec, replace(s, **{field: v})).peak_bytes <= limit

        return search(fits, hi)[0]
    from calculators.training.step import TrainingQuery, max_micro_batch
    from probes.throughput import detect_card

    card = detect_card("cuda", None)
    visible = torch.cuda.get_device_properties(0).total_memory
    q = TrainingQuery(
        micro_batch=1,
        seq_len=s.seq_len,
        precision=s.precision,
        optimizer=s.optimizer,
        optimizer_impl=s.optimizer_impl,
        checkpointing=s.checkpointing,
        attention=s.attention,
        lora_rank=s.lora_rank,
        lora_targets=s.lora_targets,
    )
    runtime = "hip" if getattr(torch.version, "hip", None) else "cuda"
    if card is not None:
        return max_micro_batch(spec, q, gpu=card)
    return max_micro_batch(spec, q, gpu=None, visible_bytes=visible, runtime=runtime)


def fit_probe(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    device: str,
    phases: Phases,
) -> dict[str, Any]:
    if args.search not in SEARCHES:
        raise ValueError(f"search must be micro-batch or seq-len, got {args.search!r}")
    if args.max < 1:
        raise ValueError(f"max must be a positive integer, got {args.max}")
    if args.memory_limit is not None and args.memory_limit < 1:
        raise ValueError(
            f"memory-limit must be a positive number of bytes, got {args.memory_limit}"
        )
    if device == "cpu" and args.memory_limit is None:
        raise ValueError("fit on CPU needs --memory-limit BYTES (the CPU has no fixed capacity)")
    if device != "cpu" and args.search == "seq-len" and args.memory_limit is None:
        raise ValueError(
            "fit --search seq-len needs --memory-limit (the card estimate is per micro-batch)"
        )
    field = SEARCHES[args.search]
    attempts: list[dict[str, Any]] = []

    def fits(v: int) -> bool:
        phases.current = f"try {args.search}={v}"
        r = try_value(spec, config, replace(s, **{field: v}), device, args.memory_limit)
        attempts.append({args.search: v, **r})
        return r["status"] == "ok"

    found, _ = search(fits, args.max)
    expected = _estimated(spec, s, field, args.memory_limit, args.max)
    ooms = [a for a in attempts if a["status"] == "oom"]
    lines = [
        f"{args.search}={a[args.search]}: {a['status']}"
        + (f" (peak {a['peak']:,} bytes)" if a["status"] == "ok" else f" in {a['phase']}")
        for a in attempts
    ]
    return {
        "inputs": {
            "model": spec.name,
            "model_type": spec.model_type,
            "search": args.search,
            "micro_batch": s.micro_batch,
            "seq_len": s.seq_len,
            "precision": s.precision,
            "optimizer": s.optimizer,
            "checkpointing": s.checkpointing,
            "memory_limit": args.memory_limit,
            "max": args.max,
            "device": device,
        },
        "estimate": {f"max_{field}": expected},
        "measured": {f"max_{field}": found},
        "units": {f"max_{field}": "sequences" if field == "micro_batch" else "tokens"},
        "details": {"attempts": attempts, "oom_phases": sorted({a["phase"] for a in ooms})},
        "text": "\n".join(lines),
    }
