"""accumulation: K micro-batches give one large batch's gradient when the loss is divided
by the update's total token count, and not when each micro-batch takes its own mean.

Micro-batches have uneven real lengths (labels past a row's length are -100, ignored).
Three gradients of the same weights:

  reference     one batch of all K micro-batches, loss = token sum / N
  token_mean    K backward passes, loss_k = token sum_k / N (N: tokens of the update)
  mean_of_means K backward passes, loss_k = mean_k / K (the common mistake)

`measured` holds the relative L2 distance of each to the reference (below 1e-5 in
fp32, below 2e-2 in bf16 for token_mean; mean_of_means is shown as a number), and the
losses; `estimate` holds `calculators.training.batch.mean_of_means_bias` of the measured
per-micro-batch mean losses, so the reported mean-of-means loss checks that formula.

Under torchrun with `--strategy ddp`, each rank runs its own K micro-batches in
DistributedDataParallel with `no_sync()` on all but the last, the token count is
all-reduced first and each rank's loss is multiplied by the world size (DDP averages
gradients); rank 0 compares with the gradient one process computes over every rank's
micro-batches.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

import torch

from calculators.model.spec import ModelSpec
from calculators.training.batch import mean_of_means_bias
from probes.distributed import end_process_group
from probes.model import build_model
from probes.report import Phases

VERSION = "1"
TOLERANCE = {"fp32": 1e-5, "bf16": 2e-2}


def uneven_micro_batches(
    vocab: int, k: int, micro_batch: int, seq_len: int, seed: int, device: str
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """K micro-batches whose rows hold between 1 and seq_len real tokens."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(k):
        ids = torch.randint(0, vocab, (micro_batch, seq_len + 1), generator=gen)
        labels = ids[:, 1:].clone()
        lengths = torch.randint(1, seq_len + 1, (micro_batch,), generator=gen)
        labels[torch.arange(seq_len)[None, :] >= lengths[:, None]] = -100
        out.append((ids[:, :-1].contiguous().to(device), labels.to(device)))
    return out


def _grad(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.float().flatten() for p in model.parameters() if p.grad is not None])


def rel_l2(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a - ref).norm() / ref.norm())


def gradients(
    model: torch.nn.Module, mbs: list[tuple[torch.Tensor, torch.Tensor]]
) -> dict[str, Any]:
    """The three gradients and the per-micro-batch token counts and mean losses."""
    inner = getattr(model, "module", model)
    counts = [int((lab != -100).sum()) for _, lab in mbs]
    n = sum(counts)
    out: dict[str, Any] = {"counts": counts}

    inner.zero_grad(set_to_none=True)
    ids = torch.cat([i for i, _ in mbs])
    labels = torch.cat([lab for _, lab in mbs])
    loss = inner.loss(ids, labels, "sum") / n
    loss.backward()
    out["reference"], out["reference_loss"] = _grad(inner), loss.item()

    inner.zero_grad(set_to_none=True)
    for ids, labels in mbs:
        (inner.loss(ids, labels, "sum") / n).backward()
    out["token_mean"] = _grad(inner)

    inner.zero_grad(set_to_none=True)
    means = []
    for ids, labels in mbs:
        loss = inner.loss(ids, labels, "mean")
        means.append(loss.item())
        (loss / len(mbs)).backward()
    out["mean_of_means"], out["means"] = _grad(inner), means
    return out


def _dtype(precision: str) -> torch.dtype:
    if precision not in TOLERANCE:
        raise ValueError(f"precision must be fp32 or bf16 for accumulation, got {precision!r}")
    return torch.float32 if precision == "fp32" else torch.bfloat16


def accumulation_probe(
    args: argparse.Namespace, spec: ModelSpec, config: dict[str, Any], device: str, phases: Phases
) -> dict[str, Any]:
    for name in ("micro_batch", "accumulation", "seq_len"):
        v = getattr(args, name)
        if v < 1:
            raise ValueError(f"{name.replace('_', '-')} must be a positive integer, got {v}")
    if args.accumulation < 2:
        raise ValueError(f"accumulation must be at least 2, got {args.accumulation}")
    dtype = _dtype(args.precision)
    if args.strategy == "ddp":
        return _ddp(args, spec, device, dtype, phases)
    if args.strategy != "single":
        raise ValueError(f"strategy must be single or ddp, got {args.strategy!r}")
    phases.current = "gradients"
    model = build_model(spec, device=device, dtype=dtype, seed=args.seed)
    mbs = uneven_micro_batches(
        spec.vocab_size, args.accumulation, args.micro_batch, args.seq_len, args.seed, device
    )
    g = gradients(model, mbs)
    return _sections(args, spec, device, g, world=1)


def _sections(
    args: argparse.Namespace, spec: ModelSpec, device: str, g: dict[str, Any], world: int
) -> dict[str, Any]:
    tol = TOLERANCE[args.precision]
    token = rel_l2(g["token_mean"], g["reference"])
    mom = rel_l2(g["mean_of_means"], g["reference"])
    bias = mean_of_means_bias(g["counts"], g["means"])
    measured = {
        "token_mean_rel_l2": token,
        "mean_of_means_rel_l2": mom,
        "token_mean_loss": g["reference_loss"],
        "mean_of_means_loss": sum(g["means"]) / len(g["means"]),
    }
    ok = token < tol
    details: dict[str, Any] = {
        "tolerance": tol,
        "token_counts": g["counts"],
        "mean_losses": g["means"],
        "passes": ok,
    }
    if not ok:
        details["status"] = "error"
        details["error"] = f"token-mean accumulation differs by {token:.3g} >= {tol:g}"
    text = (
        f"token-mean accumulation vs one batch: relative L2 {token:.3g} "
        f"(tolerance {tol:g}: {'pass' if ok else 'FAIL'})\n"
        f"mean of micro-batch means vs one batch: relative L2 {mom:.3g} "
        f"(token counts {g['counts']})"
    )
    return {
        "inputs": {
            "model": spec.name,
            "model_type": spec.model_type,
            "micro_batch": args.micro_batch,
            "accumulation": args.accumulation,
            "seq_len": args.seq_len,
            "precision": args.precision,
            "strategy": args.strategy,
            "world_size": world,
            "device": device,
        },
        "estimate": {
            "token_mean_loss": bias.token_mean_loss,
            "mean_of_means_loss": bias.mean_of_means_loss,
        },
        "measured": measured,
        "units": {k: "ratio" if k.endswith("rel_l2") else "nats" for k in measured},
        "details": details,
        "text": text,
    }


def _ddp(
    args: argparse.Namespace, spec: ModelSpec, device: str, dtype: torch.dtype, phases: Phases
) -> dict[str, Any]:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    if "RANK" not in os.environ:
        raise ValueError("strategy ddp runs under torchrun --nproc-per-node N -m probes ...")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device.startswith("cuda"):
        device = f"cuda:{local}"
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        args._rank = rank
        phases.current = "gradients"
        k = args.accumulation
        every = uneven_micro_batches(
            spec.vocab_size, k * world, args.micro_batch, args.seq_len, args.seed, device
        )
        mine = every[rank * k : (rank + 1) * k]
        model = build_model(spec, device=device, dtype=dtype, seed=args.seed)
        ddp = DDP(model, device_ids=[local] if device.startswith("cuda") else None)
        local_tokens = torch.tensor(
            [sum(int((lab != -100).sum()) for _, lab in mine)], device=device
        )
        dist.all_reduce(local_tokens)
        n = int(local_tokens)
        for i, (ids, labels) in enumerate(mine):
            ctx = ddp.no_sync() if i < k - 1 else contextlib.nullcontext()
            with ctx:
                logits = ddp(ids)
                loss = torch.nn.functional.cross_entropy(
                    logits.float().view(-1, logits.shape[-1]),
                    labels.reshape(-1),
                    ignore_index=-100,
                    reduction="sum",
                )
                (loss * world / n).backward()
        distributed = _grad(model)
        del ddp
        single = build_model(spec, device=device, dtype=dtype, seed=args.seed)
        g = gradients(single, every)
        dist.barrier()
    finally:
        end_process_group()
    g["token_mean"] = distributed
    out = _sections(args, spec, device, g, world)
    out["details"]["method"] = (
        "DDP no_sync on all but the last micro-batch; token count all-reduced; "
        "loss x world size / N (DDP averages); reference: one process over all ranks' data"
    )
    return out
