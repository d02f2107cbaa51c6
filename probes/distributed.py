"""Data-parallel train-step under torchrun: every rank measured, against the sharded estimate.

`torchrun --nproc-per-node N -m probes train-step --strategy ddp|fsdp ...` runs the same
step on each rank (gloo on CPU, NCCL on CUDA/ROCm). ddp wraps the model in
DistributedDataParallel (a full replica, gradient buckets); fsdp shards each decoder
layer and the root with FSDP2's `fully_shard` (FULL_SHARD, ZeRO-3). Rank 0 gathers every
rank's phases, reports the largest per phase as `measured` (the rank that runs out
first) and each rank under `details.ranks`; the estimate is `training_memory` with
zero_stage 0 (ddp) or 3 (fsdp) and gpus = world size.
"""

from __future__ import annotations

import argparse
import gc
import os
from typing import Any

import torch
import torch.distributed as dist

from calculators.model.spec import ModelSpec
from probes.report import Phases
from probes.train_step import StepSettings, estimate, estimate_entries, train_step

STRATEGIES = {"ddp": 0, "fsdp": 3}


def _wrapper(strategy: str, device: str):  # type: ignore[no-untyped-def]
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        def wrap(model: torch.nn.Module) -> torch.nn.Module:
            ids = [torch.device(device).index] if device.startswith("cuda") else None
            return DDP(model, device_ids=ids)

        return wrap

    def shard(model: torch.nn.Module) -> torch.nn.Module:
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:
            from torch.distributed._composable.fsdp import fully_shard  # torch 2.4, 2.5
        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        return model

    return shard


def end_process_group() -> None:
    """Tear the group down so that no rank aborts on exit (call it in `finally`).

    The DDP/FSDP wrappers, which hold the group, are collected first: left in reference
    cycles they are destroyed at interpreter exit, after the group, and gloo aborts the
    process ("terminate called without an active exception", 1 run in 10 on CPU).
    Callers end their successful path with `dist.barrier()`, so that no rank tears
    gloo down while a peer still runs a collective; a failed path skips it rather than
    wait on a peer that is gone.
    """
    gc.collect()
    dist.destroy_process_group()


def train_step_distributed(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    phases: Phases,
) -> dict[str, Any]:
    if args.strategy not in STRATEGIES:
        raise ValueError(f"strategy must be single, ddp or fsdp, got {args.strategy!r}")
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise ValueError(
            f"strategy {args.strategy} runs under torchrun: "
            "torchrun --nproc-per-node N -m probes train-step --strategy ..."
        )
    from dataclasses import replace

    from probes.memory import default_device, make_backend

    # DDP rebuilds its gradient buckets in the forward of its second iteration; a step
    # from the third on sees the steady state
    s = replace(s, steps=max(s.steps, 3))

    local = int(os.environ.get("LOCAL_RANK", "0"))
    kind = args.device or default_device()
    device = f"cuda:{local}" if kind.startswith("cuda") else "cpu"
    if device.startswith("cuda"):
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        args._rank = rank
        with make_backend(device, getattr(args, "memory_limit", None)) as b:
            out = train_step(
                spec,
                config,
                s,
                device=device,
                backend=b,
                phases=phases,
                hf=args.hf,
                model_wrapper=_wrapper(args.strategy, device),
            )
        ranks: list[Any] = [None] * world
        dist.all_gather_object(ranks, out["measured"])
        dist.barrier()
    finally:
        end_process_group()
    est = estimate(spec, s, zero_stage=STRATEGIES[args.strategy], gpus=world)
    measured = {k: max(r[k] for r in ranks) for k in ranks[0]}
    out["measured"] = measured
    out["estimate"] = estimate_entries(est)
    out["units"] = {k: "bytes" for k in {**out["estimate"], **measured}}
    out["inputs"].update(
        strategy=args.strategy, world_size=world, zero_stage=STRATEGIES[args.strategy]
    )
    out["details"]["ranks"] = ranks
    out["details"]["estimate_lines"] = {line.id: line.bytes for line in est.lines}
    return out
