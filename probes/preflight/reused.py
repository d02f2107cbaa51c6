"""Checks 4, 5, 6 and 8, each the existing probe run on the reader's settings and read
against a threshold: train-step and fit (memory), accumulation, checkpoint (kill and
resume), throughput (speed), with the throughput calculator for the planned run."""

from __future__ import annotations

import argparse
import gc
import math
import os
import tempfile
from dataclasses import replace
from typing import Any

import torch

from calculators.model.spec import ModelSpec
from probes.preflight.outcome import CheckOutcome
from probes.preflight.settings import PreflightSettings
from probes.report import Phases
from probes.train_step import StepSettings

# accumulation's precisions: the probe runs fp32 or bf16 weights (tolerances 1e-5, 2e-2)
ACCUMULATION_PRECISION = {
    "fp32": "fp32",
    "amp-bf16": "bf16",
    "amp-fp16": "bf16",
    "bf16-fp32-master": "bf16",
    "bf16": "bf16",
}


def free_memory(device: str) -> None:
    """Drop what the previous check left, so that the next one measures only itself."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def memory(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    p: PreflightSettings,
    device: str,
    phases: Phases,
) -> tuple[CheckOutcome, dict[str, Any]]:
    """Check 4: the measured peak of a full step (train-step probe) within
    (1 + memory_tolerance) x the calculators' estimate; with --fit the largest micro-batch
    that fits (fit probe). Also returns the train-step sections for the report."""
    from probes.commands import shared
    from probes.distributed import train_step_distributed
    from probes.train_step import estimate, estimate_entries, train_step

    out = CheckOutcome(number=4, id="memory", title="A full step's memory")
    try:
        if p.strategy != "single":
            step = train_step_distributed(args, spec, config, s, phases)
        else:
            with shared.backend(args, device) as b:
                step = train_step(
                    spec, config, s, device=device, backend=b, phases=phases, hf=args.hf
                )
            step["estimate"] = estimate_entries(estimate(spec, s))
    except torch.OutOfMemoryError as e:
        out.status = "fail"
        out.summary = f"out of memory in {phases.current}"
        out.look_at = (
            "the step does not fit: lower --micro-batch, --checkpointing full, a smaller "
            f"optimizer state, LoRA or sharding (fsdp) ({str(e).splitlines()[0]})"
        )
        return out, {}
    peak, est = step["measured"]["peak"], step["estimate"]["peak"]
    limit = est * (1 + p.memory_tolerance)
    out.measured = {"peak": peak}
    out.threshold = {"estimate_peak": est, "limit": limit}
    out.units = {"peak": "bytes", "estimate_peak": "bytes", "limit": "bytes"}
    out.details = {
        "backend": step["details"].get("backend"),
        "measured": step["measured"],
        "estimate": step["estimate"],
    }
    ok = peak <= limit
    out.summary = (
        f"peak {peak:,} bytes vs estimate {est:,} "
        f"(ratio {peak / est:.3f}, limit {1 + p.memory_tolerance:.2f})"
    )
    if p.fit:
        _fit(args, spec, config, s, p, device, phases, out)
    out.status = "pass" if ok else "fail"
    if not ok:
        out.look_at = (
            "what the estimate does not model: the CUDA context and allocator reserve (see "
            "reserved in the train-step probe), extra buffers your code keeps, logits kept "
            "in fp32, a wrapper's copies"
        )
    return out, step


def _fit(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    p: PreflightSettings,
    device: str,
    phases: Phases,
    out: CheckOutcome,
) -> None:
    from probes.fit import fit_probe

    if p.strategy != "single":
        out.details["fit"] = (
            "not run: the fit probe searches in one process (run it without torchrun)"
        )
        return
    if device == "cpu" and args.memory_limit is None:
        out.details["fit"] = "not run: on CPU the fit needs --memory-limit BYTES"
        return
    free_memory(device)
    ns = argparse.Namespace(search="micro-batch", max=p.fit_max, memory_limit=args.memory_limit)
    r = fit_probe(ns, spec, config, s, device, phases)
    out.measured["max_micro_batch"] = r["measured"]["max_micro_batch"]
    out.threshold["estimated_max_micro_batch"] = r["estimate"]["max_micro_batch"]
    out.units["max_micro_batch"] = out.units["estimated_max_micro_batch"] = "sequences"
    out.details["fit"] = r["details"]["attempts"]
    found, expected = r["measured"]["max_micro_batch"], r["estimate"]["max_micro_batch"]
    out.summary += f"; largest micro-batch {found} (estimate {expected})"


def accumulation(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    p: PreflightSettings,
    device: str,
    phases: Phases,
) -> CheckOutcome:
    """Check 5: the accumulation probe at the reader's micro-batch and sequence length,
    with its tolerance for the precision (fp32 1e-5, bf16 2e-2 relative L2)."""
    from probes.accumulation import accumulation_probe

    out = CheckOutcome(number=5, id="accumulation", title="Accumulation equivalence")
    precision = ACCUMULATION_PRECISION[s.precision]
    ns = argparse.Namespace(
        micro_batch=s.micro_batch,
        accumulation=p.accumulation,
        seq_len=s.seq_len,
        precision=precision,
        strategy="ddp" if p.strategy == "ddp" else "single",
        seed=s.seed,
    )
    try:
        r = accumulation_probe(ns, spec, config, device, phases)
    except torch.OutOfMemoryError:
        out.status = "skipped"
        out.summary = "out of memory: the reference holds all k micro-batches in one batch"
        out.look_at = "lower --accumulation (or --micro-batch) for this check"
        return out
    args._rank = getattr(ns, "_rank", getattr(args, "_rank", 0))
    d = r["details"]
    rel = r["measured"]["token_mean_rel_l2"]
    out.measured = {
        "token_mean_rel_l2": rel,
        "mean_of_means_rel_l2": r["measured"]["mean_of_means_rel_l2"],
    }
    out.threshold = {"tolerance": d["tolerance"]}
    out.units = {
        "token_mean_rel_l2": "ratio",
        "mean_of_means_rel_l2": "ratio",
        "tolerance": "ratio",
    }
    out.details = {
        "precision_run": precision,
        "strategy_run": ns.strategy,
        "token_counts": d["token_counts"],
        "model": "the probes' reference decoder of the same config, without LoRA",
    }
    out.status = "pass" if d["passes"] else "fail"
    out.summary = (
        f"{p.accumulation} micro-batches vs one batch: relative L2 {rel:.3g} "
        f"(tolerance {d['tolerance']:g}, {precision}); "
        f"mean of means {out.measured['mean_of_means_rel_l2']:.3g}"
    )
    if not d["passes"]:
        out.look_at = (
            "divide each micro-batch's summed loss by the update's token count (all-reduced "
            "across ranks), not by its own; DDP no_sync on all but the last micro-batch"
        )
    return out


def resume(
    args: argparse.Namespace,
    spec: ModelSpec,
    config_file: str | None,
    s: StepSettings,
    p: PreflightSettings,
    device: str,
    phases: Phases,
) -> CheckOutcome:
    """Check 6: the checkpoint probe (save after N steps, resume in a new process, M more
    steps, compare with the uninterrupted run bitwise), and the checkpoint file loads with
    `torch.load(..., weights_only=True)`."""
    from probes.checkpoint import checkpoint_probe

    out = CheckOutcome(number=6, id="resume", title="Kill and resume")
    deterministic = torch.are_deterministic_algorithms_enabled()
    with tempfile.TemporaryDirectory(prefix="preflight-ckpt-") as folder:
        ns = argparse.Namespace(
            config=config_file,
            model=args.model,
            micro_batch=s.micro_batch,
            seq_len=s.seq_len,
            steps=p.resume_at,
            more_steps=p.resume_steps,
            omit="",
            dir=folder,
            role="driver",
            seed=s.seed,
        )
        try:
            r = checkpoint_probe(ns, spec, {}, device, phases)
        except torch.OutOfMemoryError:
            # The check trains the whole model in fp32 with AdamW (and clones it to compare):
            # a card that holds the reader's bf16 or LoRA run may not hold that. Not a fault
            # of the reader's loop, so not a fail; run it on a shallower copy of the config.
            out.status = "skipped"
            out.summary = "out of memory: the check trains the full model in fp32 with AdamW"
            out.look_at = (
                "run --checks resume on a copy of config.json with fewer layers "
                "(num_hidden_layers): resumption does not depend on depth"
            )
            return out
        finally:  # the probe turns deterministic algorithms on for CUDA: not for check 8
            torch.use_deterministic_algorithms(deterministic)
        safe, why = True, None
        try:
            torch.load(os.path.join(folder, "checkpoint.pt"), weights_only=True)
        except Exception as e:  # the safe unpickler's refusal names the offending type
            safe, why = False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
    res = r["details"]["results"]["nothing"]
    equal = bool(res["bitwise_equal"])
    out.measured = {
        "bitwise_equal": int(equal),
        "max_abs_diff": res["max_abs_diff"],
        "loads_weights_only": int(safe),
    }
    out.threshold = {"bitwise_equal": 1, "max_abs_diff": 0.0, "loads_weights_only": 1}
    out.units = {
        "bitwise_equal": "boolean",
        "max_abs_diff": "value",
        "loads_weights_only": "boolean",
    }
    out.details = {
        "pieces": r["details"]["pieces"],
        "steps_before_save": p.resume_at,
        "steps_after_resume": p.resume_steps,
        "model": "the checkpoint probe's loop (reference decoder, fp32, AdamW, warmup "
        "schedule, every RNG, data position) on the same config",
        **({"weights_only_error": why} if why else {}),
    }
    out.status = "pass" if equal and safe else "fail"
    out.summary = (
        f"resumed in a new process: {'bitwise equal' if equal else 'DIFFERS'} "
        f"(max abs diff {res['max_abs_diff']:.3g}); "
        f"weights_only=True load: {'yes' if safe else 'NO'}"
    )
    looks = []
    if not equal:
        looks.append(
            "a piece of state is not saved or not restored: optimizer state, LR scheduler, "
            "step, torch/CUDA/Python/numpy RNG, data position (python -m probes checkpoint "
            "--omit all lists what each one breaks)"
        )
    if not safe:
        looks.append("store plain tensors, numbers, strings, lists and dicts only")
    out.look_at = "; ".join(looks) or None
    return out


def planned_run_seconds(tokens: int, tokens_per_second: float, gpus: int) -> float:
    """seconds = tokens / (tokens/s per GPU x GPUs): the measured rate held for the run,
    data-parallel scaling assumed linear (the throughput calculator's assumption at a
    fixed MFU, `calculators.training.throughput.training_time`)."""
    return tokens / (tokens_per_second * gpus)


def speed(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    p: PreflightSettings,
    device: str,
    world: int,
    phases: Phases,
) -> CheckOutcome:
    """Check 8: tokens/s after warm-up (throughput probe), MFU against the catalog card's
    dense BF16 peak, and the planned run's time and cost; with --min-mfu an MFU floor."""
    from calculators.memory.gpus import get_gpu
    from calculators.training.throughput import training_time
    from probes.throughput import detect_card, step_flops_per_token, training_rate

    out = CheckOutcome(number=8, id="speed", title="Speed and the planned run")
    rate = training_rate(spec, config, replace(s, steps=p.speed_steps), device, p.warmup, phases)
    tps = rate["tokens_per_second"]
    card = detect_card(device, p.gpu) if device.startswith("cuda") else None
    adapters = rate["adapter_parameters"]  # LoRA: 4 N + 6 N_a per token, not 6 N
    per_token, formula = step_flops_per_token(spec, s.seq_len, adapters)
    mfu = tps * per_token / (get_gpu(card).bf16_dense_tflops * 1e12) if card else None
    gpus = p.gpus or world
    out.measured = {"tokens_per_second": tps, "mfu": mfu}
    out.units = {"tokens_per_second": "tokens/s", "mfu": "ratio"}
    out.details = {
        "card": card,
        "flops_per_token": per_token,
        "flops_per_token_formula": formula,
        "adapter_parameters": adapters,
        "timed_steps": p.speed_steps,
        "warmup_steps": p.warmup,
        "gpus": gpus,
        "model": "built as the step (precision, LoRA, checkpointing); the probes' reference "
        "decoder, one process",
    }
    if p.tokens is not None:
        if mfu is not None and 0 < mfu <= 1:
            t = training_time(
                spec,
                tokens=p.tokens,
                seq_len=s.seq_len,
                gpu=card,
                gpus=gpus,
                mfu=mfu,
                adapter_parameters=adapters,
            )
            seconds, hours = t.seconds, t.gpu_hours
        else:
            seconds = planned_run_seconds(p.tokens, tps, gpus)
            hours = seconds * gpus / 3600
        out.measured["planned_run_hours"] = seconds / 3600
        out.measured["planned_run_gpu_hours"] = hours
        out.units["planned_run_hours"] = "hours"
        out.units["planned_run_gpu_hours"] = "GPU-hours"
        if p.price is not None:
            out.measured["planned_run_cost"] = hours * p.price
            out.units["planned_run_cost"] = "USD"
    plan = ""
    if "planned_run_hours" in out.measured:
        hours_run = out.measured["planned_run_hours"]
        plan = f"; {p.tokens:,} tokens: {hours_run:.3g} h on {gpus} device(s)"
        if "planned_run_cost" in out.measured:
            plan += f", {out.measured['planned_run_cost']:,.2f} USD"
    shown = (
        f"MFU {mfu:.3f}"
        if mfu is not None
        else "MFU not reported (no catalog peak for this device)"
    )
    out.summary = f"{tps:,.0f} tokens/s, {shown}{plan}"
    if p.min_mfu is None:
        out.status = "pass"
        out.threshold = {"min_mfu": None}
    elif mfu is None:
        out.status = "skipped"
        out.threshold = {"min_mfu": p.min_mfu}
        out.look_at = "no MFU on this device: it needs a catalog GPU (--gpu on an unknown card)"
    else:
        out.threshold = {"min_mfu": p.min_mfu}
        out.status = "pass" if mfu >= p.min_mfu else "fail"
        if mfu < p.min_mfu:
            out.look_at = (
                "a small micro-batch or sequence, fp32 matmuls, the data loader (GPU idle "
                "between steps), checkpointing's recompute, communication under torchrun"
            )
    if not math.isfinite(tps) or tps <= 0:
        out.status = "fail"
        out.look_at = "no tokens were processed in the timed steps"
    return out
