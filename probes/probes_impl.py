"""The CLI's probe bodies: flags in, report sections out (torch is imported here)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from calculators.render import table
from calculators.units import format_gib
from probes.cli import Phases
from probes.train_step import StepSettings

__all__ = ["BODIES", "render"]


def _show(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bytes":
        return f"{format_gib(int(value), 4)} ({int(value):,})"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}"


def render(report: dict[str, Any], text: str = "") -> str:
    """The estimate vs measured table of a report, then the probe's own lines."""
    names = list(report["estimate"]) + [
        n for n in report["measured"] if n not in report["estimate"]
    ]
    rows = []
    for n in names:
        unit = report["units"].get(n, "")
        ratio = report["ratio"].get(n)
        rows.append(
            [
                n,
                _show(report["estimate"].get(n), unit),
                _show(report["measured"].get(n), unit),
                "-" if ratio is None else f"{ratio:.3f}",
            ]
        )
    inputs = ", ".join(f"{k}={v}" for k, v in report["inputs"].items() if v is not None)
    head = f"{report['probe']['name']} ({report['status']}): {inputs}"
    parts = [head]
    if rows:
        parts.append(table(["figure", "estimate", "measured", "measured/estimate"], rows))
    if text:
        parts.append(text)
    return "\n".join(parts)


def _device(args: argparse.Namespace) -> str:
    from probes.memory import default_device

    return args.device or default_device()


@contextlib.contextmanager
def _backend(args: argparse.Namespace, device: str) -> Iterator[Any]:
    from probes.memory import make_backend

    with make_backend(device, getattr(args, "memory_limit", None)) as b:
        yield b


def _spec(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from probes.setup import load_spec

    return load_spec(args.config, args.model)


def body_env(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    import torch

    device = _device(args)
    details: dict[str, Any] = {
        "cuda_available": torch.cuda.is_available(),
        "device_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "distributed_available": torch.distributed.is_available(),
        "gloo": torch.distributed.is_available() and torch.distributed.is_gloo_available(),
    }
    measured: dict[str, Any] = {}
    if device.startswith("cuda"):
        from probes.memory import CudaBackend

        b = CudaBackend(device)
        details["context"] = b.context
        measured["context_bytes"] = b.context["context_bytes"]
    text = "\n".join(f"{k}: {v}" for k, v in details.items())
    return {
        "inputs": {"device": device},
        "measured": measured,
        "units": {k: "bytes" for k in measured},
        "details": details,
        "text": text,
    }


def body_weights(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.inference import weights_probe

    spec, _ = _spec(args)
    device = _device(args)
    phases.current = "load"
    with _backend(args, device) as b:
        return weights_probe(spec, args.format, device=device, backend=b)


def body_kv_cache(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.inference import kv_cache_probe

    spec, _ = _spec(args)
    device = _device(args)
    phases.current = "prefill"
    with _backend(args, device) as b:
        return kv_cache_probe(
            spec, args.kv_format, context=args.context, batch=args.batch, device=device, backend=b
        )


def step_settings(args: argparse.Namespace) -> StepSettings:
    return StepSettings(
        micro_batch=args.micro_batch,
        seq_len=args.seq_len,
        precision=args.precision,
        optimizer=args.optimizer,
        optimizer_impl=args.optimizer_impl,
        checkpointing=args.checkpointing,
        attention=args.attention,
        lora_rank=args.lora_rank,
        lora_targets=tuple(t for t in args.lora_targets.split(",") if t),
        steps=args.steps,
        seed=args.seed,
    )


def body_train_step(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.distributed import train_step_distributed
    from probes.train_step import estimate, estimate_entries, train_step

    spec, config = _spec(args)
    s = step_settings(args)
    device = _device(args)
    if args.strategy != "single":
        return train_step_distributed(args, spec, config, s, phases)
    if args.snapshot and not device.startswith("cuda"):
        raise ValueError("--snapshot records the CUDA/ROCm allocator: it needs --device cuda")
    if args.snapshot and device.startswith("cuda"):
        from probes.memory import record_history

        record_history()
    with _backend(args, device) as b:
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


_CATS = ("parameters", "gradients", "optimizer_states", "activations", "temporaries")


def body_accumulation(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.accumulation import accumulation_probe

    spec, config = _spec(args)
    return accumulation_probe(args, spec, config, _device(args), phases)


def body_checkpoint(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.checkpoint import checkpoint_probe

    spec, config = _spec(args)
    return checkpoint_probe(args, spec, config, _device(args), phases)


def body_throughput(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.throughput import throughput_probe

    spec, config = _spec(args)
    return throughput_probe(args, spec, config, step_settings(args), _device(args), phases)


def body_fit(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.fit import fit_probe

    spec, config = _spec(args)
    return fit_probe(args, spec, config, step_settings(args), _device(args), phases)


BODIES = {
    "env": body_env,
    "weights": body_weights,
    "kv-cache": body_kv_cache,
    "train-step": body_train_step,
    "accumulation": body_accumulation,
    "checkpoint": body_checkpoint,
    "throughput": body_throughput,
    "fit": body_fit,
}
