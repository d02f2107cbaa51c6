"""env: torch, the device, its driver and the allocator settings."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.common(p)


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    import torch

    device = shared.device(args)
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


PROBE = Probe(
    name="env", help="torch, device, driver and allocator settings", flags=flags, body=body, order=1
)
