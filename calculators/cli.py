"""Command line: `python -m calculators SUBCOMMAND` (weights, kv-cache, envelope, training,
throughput, batch, budget, seeds, presets, gpus, formats).

Tables by default, `--json` for machines. Bad input of any kind ends with one line
on stderr, `error: ...` naming the field and the value, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from calculators.batch import BatchQuery, accumulation_for, effective_batch
from calculators.budget import (
    EXAMPLE_PHASES,
    Campaign,
    Package,
    Phase,
    campaign_budget,
    phase_from_tokens,
)
from calculators.envelope import EnvelopeQuery, EnvelopeResult, memory_envelope
from calculators.formats import FORMATS
from calculators.gpus import GPUS
from calculators.kv_cache import (
    KVCacheResult,
    KVSettings,
    kv_cache_bytes,
    max_context,
    max_sequences,
)
from calculators.kv_formats import KV_FORMATS
from calculators.params import parameter_counts
from calculators.presets import get_preset, load_preset, preset_ids
from calculators.render import table
from calculators.seeds import (
    PairedComparison,
    minimum_detectable_effect,
    paired_difference,
    seeds_needed,
)
from calculators.spec import ModelSpec
from calculators.throughput import inference_bounds, training_time
from calculators.training import (
    DEFAULT_LORA_TARGETS,
    TrainingFit,
    TrainingQuery,
    max_micro_batch,
    training_fit,
)
from calculators.units import GIB, format_count, format_gib
from calculators.weights import weight_bytes


class UsageError(Exception):
    """A bad command line, reported in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _load_spec(args: argparse.Namespace) -> ModelSpec:
    if args.config is not None:
        try:
            with open(args.config, encoding="utf-8") as f:
                config = json.load(f)
        except OSError as e:
            raise UsageError(f"config {args.config!r} cannot be read: {e.strerror}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UsageError(f"config {args.config!r} is not valid JSON: {e}") from None
        return ModelSpec.from_hf_config(config, name=args.config)
    get_preset(args.model)
    return ModelSpec.from_hf_config(load_preset(args.model), name=args.model)


def _gib_to_bytes(flag: str, value: float | None) -> int | None:
    if value is None:
        return None
    if not value >= 0:
        raise ValueError(f"{flag} must be a non-negative number of GiB, got {value!r}")
    return int(value * GIB)


def _kv_settings(args: argparse.Namespace) -> KVSettings:
    return KVSettings(
        kv_format=args.kv_format,
        allocation=args.allocation,
        block_size=args.block_size,
        mla_layout=args.mla_layout,
    )


def _keep(args: argparse.Namespace) -> frozenset[str] | None:
    if args.keep_unquantized is None:
        return None
    return frozenset(r for r in args.keep_unquantized.split(",") if r)


def _reserves(pairs: list[str]) -> dict[str, int | float]:
    out: dict[str, int | float] = {}
    for pair in pairs:
        rid, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--reserve must be ID=VALUE, got {pair!r}")
        try:
            out[rid] = float(value) if "." in value else int(value)
        except ValueError:
            raise UsageError(f"--reserve {rid} must be a number, got {value!r}") from None
    return out


# ---- commands -------------------------------------------------------------------------


def cmd_weights(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    spec = _load_spec(args)
    counts = parameter_counts(spec)
    w = weight_bytes(spec, args.format, keep_unquantized=_keep(args))
    data = {
        "model": spec.name,
        "model_type": spec.model_type,
        "format": args.format,
        "parameters": {
            "total": counts.total,
            "active": counts.active,
            "embedding": counts.embedding,
            "non_embedding": counts.non_embedding,
            "mtp": counts.mtp,
            "by_line": counts.by_line,
        },
        "weight_bytes": w.main_bytes,
        "mtp_weight_bytes": w.mtp_bytes,
        "bytes_by_category": w.by_category,
        "bytes_by_format": w.by_format,
        "assumptions": list(spec.assumptions),
    }
    rows = [[line, format_count(n), f"{n:,}"] for line, n in counts.by_line.items() if n]
    rows += [
        ["total", format_count(counts.total), f"{counts.total:,}"],
        ["active per token", format_count(counts.active), f"{counts.active:,}"],
    ]
    if counts.mtp:
        rows.append(["MTP modules (apart)", format_count(counts.mtp), f"{counts.mtp:,}"])
    text = "\n".join(
        [
            f"{spec.name} ({spec.model_type})",
            table(["parameters", "count", "exact"], rows),
            "",
            table(
                ["weights in " + args.format, "GiB", "bytes"],
                [[fmt, format_gib(b), f"{b:,}"] for fmt, b in w.by_format.items()]
                + [["total (main model)", format_gib(w.main_bytes), f"{w.main_bytes:,}"]]
                + _mtp_rows(w.mtp_bytes),
            ),
            *_assumption_lines(spec),
        ]
    )
    return data, text


def _mtp_rows(mtp_bytes: int) -> list[list[str]]:
    if not mtp_bytes:
        return []
    return [["MTP modules (apart)", format_gib(mtp_bytes), f"{mtp_bytes:,}"]]


def _kv_json(r: KVCacheResult) -> dict[str, Any]:
    return {
        "context": r.context,
        "batch": r.batch,
        "kv_format": r.kv_format,
        "allocation": r.allocation,
        "block_size": r.block_size,
        "allocated_length": r.allocated_length,
        "bytes_per_token": r.bytes_per_token,
        "per_sequence_bytes": r.per_sequence_bytes,
        "scale_bytes": r.scale_bytes,
        "total_bytes": r.total_bytes,
        "lines": [vars(line) for line in r.lines],
    }


def cmd_kv_cache(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    spec = _load_spec(args)
    settings = _kv_settings(args)
    r = kv_cache_bytes(
        spec, context=args.context, batch=args.batch, settings=settings, max_length=args.max_length
    )
    data = {"model": spec.name, **_kv_json(r)}
    rows = [
        [
            f"{line.layers} x {line.attention}"
            + (f" (window {line.window})" if line.window else ""),
            f"{line.bytes_per_token:,}",
            f"{line.tokens_held:,}",
            format_gib(line.bytes),
        ]
        for line in r.lines
    ]
    if r.scale_bytes:
        rows.append(["per-layer scales", "", "", format_gib(r.scale_bytes)])
    rows.append(["total", f"{r.bytes_per_token:,}", "", format_gib(r.total_bytes)])
    text = [
        f"{spec.name}: KV cache, {r.batch} x {r.context} tokens, {r.kv_format}, {r.allocation}",
        table(["layers", "bytes/token", "tokens held", "GiB"], rows),
    ]
    free = _gib_to_bytes("--free-gib", args.free_gib)
    if free is not None:
        limit = max_context(spec, free_bytes=free, batch=args.batch, settings=settings)
        seqs = max_sequences(
            spec,
            free_bytes=free,
            context=args.context,
            settings=settings,
            max_length=args.max_length,
        )
        data.update(
            free_bytes=free,
            max_context=limit.max_context,
            max_context_limited_by=limit.limited_by,
            max_sequences=seqs,
        )
        text.append(
            f"\nIn {format_gib(free)} free: longest context {limit.max_context:,} tokens "
            f"for {args.batch} sequence(s) (limited by {limit.limited_by}); "
            f"at most {seqs:,} sequences of {args.context:,} tokens"
        )
    return data, "\n".join(text + _assumption_lines(spec))


def _envelope_json(r: EnvelopeResult) -> dict[str, Any]:
    return {
        "lines": [vars(line) for line in r.lines],
        "total_bytes": r.total_bytes,
        "gpu": r.gpu,
        "visible_bytes": r.visible_bytes,
        "headroom_bytes": r.headroom_bytes,
        "fits": r.fits,
        "cards": [{**vars(c), "fits": c.fits} for c in r.cards],
    }


def cmd_envelope(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    spec = _load_spec(args)
    query = EnvelopeQuery(
        context=args.context,
        batch=args.batch,
        weights_format=args.format,
        kv=_kv_settings(args),
        max_length=args.max_length,
        prefill_chunk=args.prefill_chunk,
        attention=args.attention,
        include_mtp=args.include_mtp,
        keep_unquantized=_keep(args),
        reserves=_reserves(args.reserve),
    )
    visible = _gib_to_bytes("--memory-gib", args.memory_gib)
    gpu = None if visible is not None else args.gpu
    r = memory_envelope(spec, query, gpu=gpu, visible_bytes=visible, runtime=args.runtime)
    card = gpu or f"a card with {format_gib(r.visible_bytes)} visible"
    verdict = "fits" if r.fits else "does NOT fit"
    text = [
        f"{spec.name}: {args.batch} x {args.context} tokens on {card}",
        table(
            ["line", "GiB", "basis"],
            [[line.label, format_gib(line.bytes), line.basis] for line in r.lines]
            + [["total", format_gib(r.total_bytes), ""]],
        ),
        f"\nVisible memory {format_gib(r.visible_bytes)}: {verdict}, "
        f"headroom {format_gib(r.headroom_bytes)}",
        "Cards that fit: " + (", ".join(c.gpu for c in r.cards if c.fits) or "none"),
    ]
    return {"model": spec.name, **_envelope_json(r)}, "\n".join(text + _assumption_lines(spec))


def _training_json(fit: TrainingFit) -> dict[str, Any]:
    m = fit.memory
    return {
        "total_parameters": m.total_parameters,
        "trainable_parameters": m.trainable_parameters,
        "tokens_per_micro_batch": m.tokens_per_micro_batch,
        "per_gpu_bytes": m.per_gpu_bytes,
        "phases": [vars(p) for p in m.phases],
        "peak_phase": m.peak_phase,
        "lines": [vars(line) for line in m.lines],
        "reserves": [vars(line) for line in fit.reserves],
        "total_bytes": fit.total_bytes,
        "visible_bytes": fit.visible_bytes,
        "headroom_bytes": fit.headroom_bytes,
        "fits": fit.fits,
        "assumptions": list(m.assumptions),
    }


FSDP_STAGES = {"full-shard": 3, "shard-grad-op": 2}  # FSDP paper, arXiv:2304.11277, 3.2


def _zero_stage(zero: int | None, fsdp: str | None) -> int:
    if fsdp is None:
        return 0 if zero is None else zero
    if fsdp not in FSDP_STAGES:
        raise UsageError(f"--fsdp must be full-shard or shard-grad-op, got {fsdp!r}")
    if zero is not None and zero != FSDP_STAGES[fsdp]:
        raise UsageError(f"--fsdp {fsdp} is ZeRO-{FSDP_STAGES[fsdp]}, but --zero {zero} was given")
    return FSDP_STAGES[fsdp]


def cmd_training(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    spec = None if args.params is not None else _load_spec(args)
    targets = tuple(t for t in args.lora_targets.split(",") if t)
    query = TrainingQuery(
        micro_batch=args.micro_batch,
        seq_len=args.seq_len,
        precision=args.precision,
        optimizer=args.optimizer,
        optimizer_impl=args.optimizer_impl,
        checkpointing=args.checkpointing,
        attention=args.attention,
        dropout=args.dropout,
        capacity_factor=args.capacity_factor,
        lora_rank=args.lora_rank,
        lora_targets=targets,
        base_format=args.base_format,
        zero_stage=_zero_stage(args.zero, args.fsdp),
        gpus=args.gpus,
        ddp_bucket_view=args.ddp_bucket_view,
        prefetch=args.prefetch,
        reserves=_reserves(args.reserve),
    )
    visible = _gib_to_bytes("--memory-gib", args.memory_gib)
    gpu = None if visible is not None else args.gpu
    card = dict(gpu=gpu, visible_bytes=visible, runtime=args.runtime)
    fit = training_fit(spec, query, params=args.params, **card)
    m = fit.memory
    name = spec.name if spec is not None else f"{args.params:,} parameters"
    data = {"model": name, **_training_json(fit)}
    where = gpu or f"a card with {format_gib(fit.visible_bytes)} visible"
    text = [
        f"{name}: training step per GPU, {query.micro_batch} x {query.seq_len:,} tokens, "
        f"{query.precision}, {query.optimizer} ({query.optimizer_impl}), "
        f"ZeRO-{query.zero_stage} on {query.gpus} GPU(s)",
        f"Trainable parameters: {m.trainable_parameters:,} of {m.total_parameters:,}",
        "",
        table(
            ["line", "GiB", "basis"],
            [[line.label, format_gib(line.bytes), line.basis] for line in m.lines if line.bytes],
        ),
        "",
        table(
            ["phase", "GiB"],
            [
                [p.label + (" (peak)" if p.id == m.peak_phase else ""), format_gib(p.bytes)]
                for p in m.phases
            ],
        ),
        "",
        table(
            ["on top of the peak", "GiB", "basis"],
            [[r.label, format_gib(r.bytes), r.basis] for r in fit.reserves]
            + [["total", format_gib(fit.total_bytes), ""]],
        ),
        f"\nVisible memory on {where} {format_gib(fit.visible_bytes)}: "
        f"{'fits' if fit.fits else 'does NOT fit'}, headroom {format_gib(fit.headroom_bytes)}",
    ]
    if spec is not None:
        largest = max_micro_batch(spec, query, **card)
        data["max_micro_batch"] = largest
        text.append(
            f"Largest micro-batch at {query.seq_len:,} tokens that fits: {largest}"
            + (" (model states or one sequence already exceed the card)" if not largest else "")
        )
    text += [f"  - {a}" for a in m.assumptions]
    return data, "\n".join(text)


def cmd_throughput(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    spec = _load_spec(args)
    t = training_time(
        spec,
        tokens=args.tokens,
        seq_len=args.seq_len,
        gpu=args.gpu,
        gpus=args.gpus,
        mfu=args.mfu,
        precision=args.precision,
    )
    b = inference_bounds(
        spec,
        gpu=args.gpu,
        context=args.context,
        batch=args.batch,
        weights_format=args.format,
        kv=_kv_settings(args),
        precision=args.precision,
    )
    data = {
        "model": spec.name,
        "training": {**vars(t), "gpu_hours": t.gpu_hours},
        "inference": vars(b),
    }
    text = [
        f"{spec.name} on {args.gpus} x {args.gpu}, {args.precision}, MFU {args.mfu:.0%}",
        f"Training: {t.flops_per_token:.4g} FLOPs per token at sequence {args.seq_len:,}; "
        f"{args.tokens:,} tokens take {t.seconds / 3600:,.2f} h wall clock "
        f"({t.gpu_hours:,.1f} GPU-hours, {t.tokens_per_second:,.0f} tokens/s)",
        f"Decode upper bound, batch {b.batch} at context {b.context:,}: "
        f"{b.decode_tokens_per_second:,.0f} tokens/s ({b.decode_bound}-bound, "
        f"{format_gib(b.bytes_per_step)} read per step)",
        f"Prefill upper bound: {b.prefill_tokens_per_second:,.0f} tokens/s (compute peak)",
    ]
    return data, "\n".join(text)


def cmd_batch(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    accumulation = args.accumulation
    if args.global_batch is not None:
        if args.accumulation is not None:
            raise UsageError("give --accumulation or --global-batch, not both")
        accumulation = accumulation_for(args.global_batch, args.micro_batch, args.gpus)
        data["accumulation_steps"] = accumulation
    r = effective_batch(
        BatchQuery(
            micro_batch=args.micro_batch,
            accumulation=accumulation or 1,
            gpus=args.gpus,
            seq_len=args.seq_len,
            packing=args.mean_tokens is None,
            mean_sequence_tokens=args.mean_tokens,
        )
    )
    data.update(vars(r))
    text = [
        f"{args.micro_batch} per micro-batch x {accumulation or 1} accumulation steps x "
        f"{args.gpus} GPUs = {r.sequences_per_update:,} sequences per update",
        f"{r.tokens_per_update:,} tokens per update"
        + (
            ""
            if r.packing
            else f" ({r.padding_fraction:.1%} of {r.slots_per_update:,} slots are padding)"
        ),
        "Normalise the loss by the update's total token count, not per micro-batch.",
    ]
    return data, "\n".join(text)


def _fields(flag: str, text: str, n_min: int, n_max: int) -> list[str]:
    parts = text.split(":")
    if not n_min <= len(parts) <= n_max:
        raise UsageError(
            f"{flag} must have {n_min} to {n_max} fields separated by ':', got {text!r}"
        )
    return parts


def _number(flag: str, text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise UsageError(f"{flag} field must be a number, got {text!r}") from None


def _budget_phase(args: argparse.Namespace, f: list[str]) -> Phase:
    """NAME:RUNS:GPU_HOURS[:GPUS], or NAME:RUNS:tokens=N[:GPUS] derived from throughput."""
    runs = _number("--phase", f[1], int)
    gpus = _number("--phase", f[3], int) if len(f) == 4 else 1
    if not f[2].startswith("tokens="):
        hours = _number("--phase", f[2], float)
        return Phase(name=f[0], runs=runs, gpu_hours_per_run=hours, gpus_per_run=gpus)
    if args.model is None and args.config is None:
        raise UsageError(f"--phase {f[0]}: tokens= needs --model or --config to derive hours")
    return phase_from_tokens(
        f[0],
        runs=runs,
        tokens_per_run=_number("--phase", f[2].removeprefix("tokens="), int),
        spec=_load_spec(args),
        seq_len=args.seq_len,
        gpu=args.gpu,
        mfu=args.mfu,
        gpus_per_run=gpus,
    )


def cmd_budget(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    phases = EXAMPLE_PHASES
    if args.phase:
        phases = tuple(_budget_phase(args, _fields("--phase", text, 3, 4)) for text in args.phase)
    packages = None
    if args.package:
        packages = tuple(
            Package(
                days=_number("--package", f[0], int),
                gpus=_number("--package", f[1], int),
                price_usd=_number("--package", f[2], float),
                label=f"{f[0]}-day offer",
            )
            for f in (_fields("--package", text, 3, 3) for text in args.package)
        )
    r = campaign_budget(
        Campaign(
            phases=phases,
            gpus=args.gpus,
            price_per_gpu_hour=args.price,
            margin=args.margin,
            decisions=args.decisions,
            packages=packages,
        )
    )
    data = {
        "phases": [vars(p) for p in r.phases],
        "gpu_hours": r.gpu_hours,
        "margin_gpu_hours": r.margin_gpu_hours,
        "wall_hours": r.wall_hours,
        "wall_days": r.wall_days,
        "cost_usd": r.cost_usd,
        "cost_per_decision": r.cost_per_decision,
        "packages": [vars(k) for k in r.packages],
        "schedule": list(r.schedule),
        "example_phases": not args.phase,
    }
    rows = [
        [p.name, f"{p.runs} + {p.reruns}", f"{p.gpu_hours:,.1f}", f"{p.wall_hours:,.1f}"]
        for p in r.phases
    ]
    rows.append(["total", "", f"{r.gpu_hours:,.1f}", f"{r.wall_hours:,.1f}"])
    best = r.cheapest_covering
    text = [
        (
            "Example phases (pass --phase NAME:RUNS:GPU_HOURS[:GPUS] for yours)\n"
            if not args.phase
            else ""
        )
        + table(["phase", "runs + reruns", "GPU-hours", "wall hours"], rows),
        f"\n{r.wall_days:.2f} days on {args.gpus} GPUs; ${r.cost_usd:,.2f} at "
        f"${args.price:,.2f} per GPU-hour"
        + ("" if r.cost_per_decision is None else f", ${r.cost_per_decision:,.2f} per decision"),
        table(
            ["package", "covers", "slack hours", "USD"],
            [
                [
                    k.label,
                    "yes" if k.covers else "no",
                    f"{k.slack_hours:,.1f}",
                    f"{k.price_usd:,.2f}",
                ]
                for k in r.packages
            ],
        ),
        "Cheapest package that covers the plan: " + (best.label if best else "none"),
        "",
        table(
            ["day", "GPU-hours by phase"],
            [
                [str(i + 1), ", ".join(f"{n} {h:,.1f}" for n, h in day.items())]
                for i, day in enumerate(r.schedule)
            ],
        ),
    ]
    return data, "\n".join(text)


def _scores(flag: str, text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"{flag} must be comma-separated numbers, got {text!r}") from None


def cmd_seeds(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    text: list[str] = []
    if args.a is not None or args.b is not None:
        if args.a is None or args.b is None:
            raise UsageError("--a and --b must be given together")
        r = paired_difference(
            PairedComparison(
                a=_scores("--a", args.a), b=_scores("--b", args.b), confidence=args.confidence
            )
        )
        data["paired"] = {**vars(r), "excludes_zero": r.excludes_zero}
        p = "n/a (all differences equal)" if r.p_value is None else f"{r.p_value:.4g}"
        text.append(
            f"{r.seeds} paired seeds: mean difference (b - a) {r.mean_difference:.4g}, "
            f"sd {r.sd_difference:.4g}\n{r.confidence:.0%} interval "
            f"[{r.ci_low:.4g}, {r.ci_high:.4g}] (t = {r.t_critical:.4g}, df {r.seeds - 1}); "
            f"two-sided p {p}; " + ("excludes 0" if r.excludes_zero else "includes 0")
        )
        sd = args.sd_difference if args.sd_difference is not None else r.sd_difference
        seeds = args.seeds if args.seeds is not None else r.seeds
    else:
        sd, seeds = args.sd_difference, args.seeds
    # sd 0 from identical differences has no MDE; a user-given sd is always checked
    if sd is not None and seeds is not None and (sd > 0 or args.sd_difference is not None):
        mde = minimum_detectable_effect(sd, seeds, alpha=args.alpha, power=args.power)
        data["minimum_detectable_effect"] = mde
        text.append(
            f"Minimum detectable effect with {seeds} seeds (alpha {args.alpha}, "
            f"power {args.power}): {mde:.4g}"
        )
    if args.effect is not None:
        if sd is None:
            raise UsageError("--effect needs --sd-difference or --a/--b")
        n = seeds_needed(args.effect, sd, alpha=args.alpha, power=args.power)
        data["seeds_needed"] = n
        text.append(f"Seeds needed to detect {args.effect:g}: {n}")
    if not data:
        raise UsageError("give --a and --b, or --sd-difference with --seeds or --effect")
    return data, "\n".join(text)


def cmd_presets(args: argparse.Namespace) -> tuple[Any, str]:
    rows = [get_preset(pid) for pid in preset_ids()]
    data = [vars(p) for p in rows]
    return data, table(["preset", "Hugging Face repository"], [[p.id, p.hf_repo] for p in rows])


def cmd_gpus(args: argparse.Namespace) -> tuple[Any, str]:
    data = [vars(g) for g in GPUS]
    rows = [
        [
            g.id,
            g.memory_vendor,
            format_gib(g.visible_bytes),
            f"{g.bandwidth_gb_s:,.0f}",
            f"{g.bf16_dense_tflops:,.1f}",
            "-" if g.fp8_dense_tflops is None else f"{g.fp8_dense_tflops:,.1f}",
        ]
        for g in GPUS
    ]
    return data, table(
        ["gpu", "vendor memory", "visible", "GB/s", "BF16 TFLOPS", "FP8 TFLOPS"], rows
    )


def cmd_formats(args: argparse.Namespace) -> tuple[Any, str]:
    data = {
        "weights": {fid: {"name": f.name, "source": f.source} for fid, f in FORMATS.items()},
        "kv": {
            fid: {"name": f.name, "bits_per_value": f.bits_per_value, "source": f.source}
            for fid, f in KV_FORMATS.items()
        },
    }
    text = table(["weights format", "name"], [[fid, f.name] for fid, f in FORMATS.items()])
    text += "\n\n" + table(
        ["kv format", "bits/value"],
        [[fid, f"{f.bits_per_value:g}"] for fid, f in KV_FORMATS.items()],
    )
    return data, text


def _assumption_lines(spec: ModelSpec) -> list[str]:
    return (
        ["", "Read from config.json:", *(f"  - {a}" for a in spec.assumptions)]
        if spec.assumptions
        else []
    )


# ---- parser ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m calculators", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def model_args(p: argparse.ArgumentParser, *, params: bool = False) -> None:
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json")
        src.add_argument("--model", metavar="PRESET", help="a shipped preset (see `presets`)")
        if params:
            src.add_argument("--params", type=int, help="parameter count only: no shapes")
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def card_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--gpu", default="h100-sxm", help="catalog card (see `gpus`)")
        p.add_argument("--memory-gib", type=float, help="visible memory of a card not listed")
        p.add_argument("--runtime", default="cuda", help="cuda or hip, with --memory-gib")
        p.add_argument(
            "--reserve",
            action="append",
            default=[],
            metavar="ID=VALUE",
            help="override a reserve line, e.g. runtime_context=536870912",
        )

    def kv_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--context", type=int, required=True, help="tokens per sequence")
        p.add_argument("--batch", type=int, default=1, help="concurrent sequences")
        p.add_argument("--kv-format", default="bf16", help="KV cache format (see `formats`)")
        p.add_argument("--allocation", default="dynamic", help="dynamic, paged or static")
        p.add_argument("--block-size", type=int, default=16, help="paged block, tokens")
        p.add_argument("--max-length", type=int, help="static cache length, tokens")
        p.add_argument("--mla-layout", default="latent", help="latent or expanded (MLA)")

    def format_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--format", default="bf16", help="weights format (see `formats`)")
        p.add_argument(
            "--keep-unquantized",
            metavar="ROLES",
            help="comma-separated GGUF roles kept in float, e.g. token_embd,output",
        )

    p = sub.add_parser("weights", help="parameter counts and weights memory")
    model_args(p)
    format_args(p)
    p.set_defaults(run=cmd_weights)

    p = sub.add_parser("kv-cache", help="KV cache memory, and what fits in free memory")
    model_args(p)
    kv_args(p)
    p.add_argument("--free-gib", type=float, help="free memory for the cache, GiB")
    p.set_defaults(run=cmd_kv_cache)

    p = sub.add_parser("envelope", help="inference memory envelope against a card")
    model_args(p)
    format_args(p)
    kv_args(p)
    card_args(p)
    p.add_argument("--prefill-chunk", type=int, help="tokens per prefill step if chunked")
    p.add_argument("--attention", default="sdpa", help="sdpa (flash) or eager")
    p.add_argument("--include-mtp", action="store_true", help="load MTP modules too")
    p.set_defaults(run=cmd_envelope)

    p = sub.add_parser("training", help="training-step memory per GPU, phase by phase")
    model_args(p, params=True)
    card_args(p)
    p.add_argument("--micro-batch", type=int, default=1, help="sequences per GPU per step")
    p.add_argument("--seq-len", type=int, default=2048, help="tokens per sequence")
    p.add_argument(
        "--precision", default="bf16-mixed", help="fp32, amp-bf16, amp-fp16, bf16-mixed or bf16"
    )
    p.add_argument(
        "--optimizer", default="adamw", help="adamw, adamw-8bit, sgd, sgd-momentum or adafactor"
    )
    p.add_argument("--optimizer-impl", default="foreach", help="foreach, for-loop or fused")
    p.add_argument("--checkpointing", default="none", help="none, full or selective")
    p.add_argument("--attention", default="sdpa", help="sdpa (flash) or eager")
    p.add_argument("--dropout", action="store_true", help="attention and residual dropout on")
    p.add_argument("--capacity-factor", type=float, help="MoE expert capacity (default dropless)")
    p.add_argument("--lora-rank", type=int, help="LoRA rank (default: full fine-tuning)")
    p.add_argument(
        "--lora-targets",
        default=",".join(DEFAULT_LORA_TARGETS),
        help="comma-separated module names, all-attention or all-linear",
    )
    p.add_argument("--base-format", help="frozen base format under LoRA, e.g. nf4-dq (QLoRA)")
    p.add_argument("--zero", type=int, help="ZeRO stage 0-3 (default 0: DDP when --gpus > 1)")
    p.add_argument(
        "--fsdp", help="full-shard (= ZeRO-3) or shard-grad-op (= ZeRO-2), instead of --zero"
    )
    p.add_argument("--gpus", type=int, default=1, help="data-parallel GPUs")
    p.add_argument("--ddp-bucket-view", action="store_true", help="DDP gradient_as_bucket_view")
    p.add_argument("--prefetch", type=int, default=1, help="ZeRO-3/FSDP units gathered ahead")
    p.set_defaults(run=cmd_training)

    p = sub.add_parser("throughput", help="training time at an MFU, decode/prefill bounds")
    model_args(p)
    p.add_argument("--gpu", default="h100-sxm", help="catalog card (see `gpus`)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs training together")
    p.add_argument("--tokens", type=int, default=10**9, help="training tokens")
    p.add_argument("--seq-len", type=int, default=4096, help="training sequence length")
    p.add_argument("--mfu", type=float, default=0.3, help="model FLOPs utilisation, (0, 1]")
    p.add_argument("--precision", default="bf16", help="bf16 or fp8 tensor peak")
    p.add_argument("--format", default="bf16", help="weights format for decoding")
    kv_args(p)
    p.set_defaults(run=cmd_throughput)

    p = sub.add_parser("batch", help="effective batch: sequences and tokens per update")
    p.add_argument("--micro-batch", type=int, required=True, help="sequences per GPU per step")
    p.add_argument("--accumulation", type=int, help="micro-batches per update")
    p.add_argument("--gpus", type=int, default=1, help="data-parallel ranks")
    p.add_argument("--seq-len", type=int, required=True, help="tokens per sequence slot")
    p.add_argument("--global-batch", type=int, help="target sequences per update")
    p.add_argument("--mean-tokens", type=int, help="mean real tokens per padded sequence")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=cmd_batch)

    p = sub.add_parser("budget", help="campaign GPU-hours, days, cost and packages")
    p.add_argument(
        "--phase",
        action="append",
        default=[],
        metavar="NAME:RUNS:GPU_HOURS[:GPUS]",
        help="a phase; repeat in order (default: an example campaign); GPU_HOURS may be "
        "tokens=N, derived from --model/--config, --gpu, --mfu and --seq-len",
    )
    p.add_argument("--config", metavar="PATH", help="config.json, for tokens= phases")
    p.add_argument("--model", metavar="PRESET", help="a preset, for tokens= phases")
    p.add_argument("--gpu", default="h100-sxm", help="catalog card, for tokens= phases")
    p.add_argument("--mfu", type=float, default=0.3, help="MFU, for tokens= phases")
    p.add_argument("--seq-len", type=int, default=4096, help="sequence, for tokens= phases")
    p.add_argument("--gpus", type=int, default=1, help="GPUs rented in parallel")
    p.add_argument("--price", type=float, required=True, help="USD per GPU-hour")
    p.add_argument("--margin", type=float, default=0.2, help="share of runs redone")
    p.add_argument("--decisions", type=int, help="useful results, for cost per decision")
    p.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="DAYS:GPUS:USD",
        help="a rental offer to compare (default: 3/7/30-day examples)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=cmd_budget)

    p = sub.add_parser("seeds", help="paired seed statistics: interval, MDE, seeds needed")
    p.add_argument("--a", metavar="SCORES", help="variant A scores, one per seed: 0.81,0.80")
    p.add_argument("--b", metavar="SCORES", help="variant B scores, same seeds, same order")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level")
    p.add_argument("--sd-difference", type=float, help="sd of per-seed differences")
    p.add_argument("--seeds", type=int, help="seeds for the minimum detectable effect")
    p.add_argument("--effect", type=float, help="gap to detect: how many seeds it needs")
    p.add_argument("--alpha", type=float, default=0.05, help="two-sided test level")
    p.add_argument("--power", type=float, default=0.8, help="probability to detect")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=cmd_seeds)

    for name, run, text in (
        ("presets", cmd_presets, "shipped model presets"),
        ("gpus", cmd_gpus, "the GPU catalog"),
        ("formats", cmd_formats, "weights and KV formats"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        p.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0, or 2 for bad input)."""
    try:
        args = build_parser().parse_args(argv)
        data, text = args.run(args)
    except (UsageError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(data, indent=2) if args.json else text)
    return 0
