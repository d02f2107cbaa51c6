"""What each subcommand of `python -m calculators` computes: its JSON data and its table.

A command takes `args`, an object whose attributes are the subcommand's flags in
snake_case: the CLI's `Args`, or the pages' namespace built from form
inputs (calculators.web.compute). `DEFAULTS` holds every flag's default per subcommand;
the CLI parser takes its defaults from it, so both callers see the same values.

No argparse here: the browser imports this module, and argparse alone costs about 60 ms
to import in Pyodide, where the standard library ships as source.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from calculators.errors import InputError, shown
from calculators.memory.envelope import EnvelopeQuery, EnvelopeResult, memory_envelope
from calculators.memory.formats import FORMATS
from calculators.memory.gpus import GPUS
from calculators.memory.kv_cache import (
    KVCacheResult,
    KVSettings,
    kv_cache_bytes,
    max_context,
    max_sequences,
)
from calculators.memory.kv_formats import KV_FORMATS
from calculators.memory.weights import weight_bytes
from calculators.model.params import parameter_counts
from calculators.model.presets import get_preset, load_preset, preset_ids
from calculators.model.spec import ModelSpec, position_warnings
from calculators.parsing import parse_float, parse_int, parse_number, parse_numbers
from calculators.planning.budget import (
    EXAMPLE_PHASES,
    Campaign,
    Package,
    Phase,
    campaign_budget,
    phase_from_tokens,
)
from calculators.render import table
from calculators.statistics.seeds import (
    PairedComparison,
    minimum_detectable_effect,
    paired_difference,
    seeds_needed,
)
from calculators.training.batch import BatchQuery, accumulation_for, effective_batch
from calculators.training.step import (
    DEFAULT_LORA_TARGETS,
    TrainingFit,
    TrainingQuery,
    max_micro_batch,
    training_fit,
)
from calculators.training.throughput import inference_bounds, training_time
from calculators.units import format_count, format_gib, gib_to_bytes

# An argparse.Namespace or a types.SimpleNamespace with the subcommand's DEFAULTS keys.
Args = Any


class UsageError(InputError):
    """A bad command line as a whole (flags that do not go together), in one line;
    `field` is the input to fix, '' when no single one is to blame."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(field, message, subject="")


def _load_spec(args: Args) -> ModelSpec:
    if args.config is not None:
        try:
            with open(args.config, encoding="utf-8") as f:
                config = json.load(f)
        except OSError as e:
            raise UsageError(
                f"config {shown(args.config)} cannot be read: {e.strerror}", "config"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UsageError(
                f"config {shown(args.config)} is not valid JSON: {e}", "config"
            ) from None
        try:
            return ModelSpec.from_hf_config(config, name=args.config)
        except ValueError as e:  # a config's keys are one input: the file
            raise UsageError(str(e), "config") from None
    get_preset(args.model)
    return ModelSpec.from_hf_config(load_preset(args.model), name=args.model)


def _gib_to_bytes(field: str, value: float | None, *, allow_zero: bool = False) -> int | None:
    return None if value is None else gib_to_bytes(field, value, allow_zero=allow_zero)


def _kv_settings(args: Args) -> KVSettings:
    return KVSettings(
        kv_format=args.kv_format,
        allocation=args.allocation,
        block_size=args.block_size,
        mla_layout=args.mla_layout,
    )


def _keep(args: Args) -> frozenset[str] | None:
    if args.keep_unquantized is None:
        return None
    return frozenset(r for r in args.keep_unquantized.split(",") if r)


def _reserves(pairs: list[str]) -> dict[str, int | float]:
    """ID=VALUE pairs: bytes as whole numbers (536870912 or 5.12e8), fractions as 0.1."""
    out: dict[str, int | float] = {}
    for pair in pairs:
        rid, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--reserve must be ID=VALUE, got {shown(pair)}", "reserve")
        try:
            out[rid] = parse_number("reserve", value)
        except InputError:
            raise UsageError(
                f"--reserve {shown(rid)} must be a number, got {shown(value)}", "reserve"
            ) from None
    return out


# ---- commands -------------------------------------------------------------------------


def cmd_weights(args: Args) -> tuple[dict[str, Any], str]:
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
        # the rows under weight_bytes add up to it; the MTP modules are apart
        "bytes_by_category": w.main_by_category,
        "bytes_by_format": w.main_by_format,
        "mtp_bytes_by_format": w.mtp_by_format,
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
                [[fmt, format_gib(b), f"{b:,}"] for fmt, b in w.main_by_format.items()]
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
        "warnings": list(r.warnings),
    }


def cmd_kv_cache(args: Args) -> tuple[dict[str, Any], str]:
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
        *_warning_lines(r.warnings),
        table(["layers", "bytes/token", "tokens held", "GiB"], rows),
    ]
    free = _gib_to_bytes("free_gib", args.free_gib, allow_zero=True)
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
        "warnings": list(r.warnings),
    }


def cmd_envelope(args: Args) -> tuple[dict[str, Any], str]:
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
    visible = _gib_to_bytes("memory_gib", args.memory_gib)
    gpu = None if visible is not None else args.gpu
    r = memory_envelope(spec, query, gpu=gpu, visible_bytes=visible, runtime=args.runtime)
    card = gpu or f"a card with {format_gib(r.visible_bytes)} visible"
    verdict = "fits" if r.fits else "does NOT fit"
    text = [
        f"{spec.name}: {args.batch} x {args.context} tokens on {card}",
        *_warning_lines(r.warnings),
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
        "warnings": list(m.warnings),
    }


FSDP_STAGES = {"full-shard": 3, "shard-grad-op": 2}  # FSDP paper, arXiv:2304.11277, 3.2


def _zero_stage(zero: int | None, fsdp: str | None) -> int:
    if fsdp is None:
        return 0 if zero is None else zero
    if fsdp not in FSDP_STAGES:
        raise UsageError(f"--fsdp must be full-shard or shard-grad-op, got {shown(fsdp)}", "fsdp")
    if zero is not None and zero != FSDP_STAGES[fsdp]:
        raise UsageError(f"--fsdp {fsdp} is ZeRO-{FSDP_STAGES[fsdp]}, but --zero {zero} was given")
    return FSDP_STAGES[fsdp]


def cmd_training(args: Args) -> tuple[dict[str, Any], str]:
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
    visible = _gib_to_bytes("memory_gib", args.memory_gib)
    gpu = None if visible is not None else args.gpu
    card = dict(gpu=gpu, visible_bytes=visible, runtime=args.runtime)
    fit = training_fit(spec, query, params=args.params, **card)
    m = fit.memory
    name = spec.name if spec is not None else f"{args.params:,} parameters"
    data = {"model": name, **_training_json(fit)}
    where = gpu or "the card given by its memory"
    text = [
        f"{name}: training step per GPU, {query.micro_batch} x {query.seq_len:,} tokens, "
        f"{query.precision}, {query.optimizer} ({query.optimizer_impl}), "
        f"ZeRO-{query.zero_stage} on {query.gpus} GPU(s)",
        *_warning_lines(m.warnings),
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
        f"\nVisible memory on {where}: {format_gib(fit.visible_bytes)}; "
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


def cmd_throughput(args: Args) -> tuple[dict[str, Any], str]:
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
    warnings = position_warnings(spec, seq_len=args.seq_len, context=args.context)
    data = {
        "model": spec.name,
        "training": {**vars(t), "gpu_hours": t.gpu_hours},
        "inference": vars(b),
        "warnings": list(warnings),
    }
    text = [
        f"{spec.name} on {args.gpus} x {args.gpu}, {args.precision}, MFU {args.mfu:.0%}",
        *_warning_lines(warnings),
        f"Training: {t.flops_per_token:.4g} FLOPs per token at sequence {args.seq_len:,}; "
        f"{args.tokens:,} tokens take {t.seconds / 3600:,.2f} h wall clock "
        f"({t.gpu_hours:,.1f} GPU-hours, {t.tokens_per_second:,.0f} tokens/s)",
        f"Decode upper bound, batch {b.batch} at context {b.context:,}: "
        f"{b.decode_tokens_per_second:,.0f} tokens/s ({b.decode_bound}-bound, "
        f"{format_gib(b.bytes_per_step)} read per step)",
        f"Prefill upper bound: {b.prefill_tokens_per_second:,.0f} tokens/s (compute peak)",
    ]
    return data, "\n".join(text)


def cmd_batch(args: Args) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    accumulation = args.accumulation
    if args.global_batch is not None:
        if args.accumulation is not None:
            raise UsageError("give --accumulation or --global-batch, not both", "accumulation")
        accumulation = accumulation_for(args.global_batch, args.micro_batch, args.gpus)
        data["accumulation_steps"] = accumulation
    elif accumulation is None:
        accumulation = 1  # an absent flag; 0 typed is refused by BatchQuery
    r = effective_batch(
        BatchQuery(
            micro_batch=args.micro_batch,
            accumulation=accumulation,
            gpus=args.gpus,
            seq_len=args.seq_len,
            packing=args.mean_tokens is None,
            mean_sequence_tokens=args.mean_tokens,
        )
    )
    data.update(vars(r))
    text = [
        f"{args.micro_batch} per micro-batch x {accumulation} accumulation steps x "
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


def _fields(field: str, text: str, names: tuple[str, ...], required: int) -> list[str]:
    """The ':'-separated parts of one --phase or --package value."""
    parts = text.split(":")
    if not required <= len(parts) <= len(names):
        form = ":".join(names[:required]) + "".join(f"[:{n}]" for n in names[required:])
        raise UsageError(f"--{field} must be {form}, got {shown(text)}", field)
    return parts


def _part(field: str, text: str, name: str, value: str, parse: Callable[[str, str], Any]) -> Any:
    """One part of a --phase or --package value, parsed; the error names the part."""
    try:
        return parse(name, value)
    except InputError as e:
        raise UsageError(f"--{field} {shown(text)}: {e}", field) from None


_PHASE = ("NAME", "RUNS", "GPU_HOURS", "GPUS")


def _budget_phase(args: Args, text: str) -> Phase:
    """NAME:RUNS:GPU_HOURS[:GPUS], or NAME:RUNS:tokens=N[:GPUS] derived from throughput."""
    f = _fields("phase", text, _PHASE, 3)
    runs = _part("phase", text, "RUNS", f[1], parse_int)
    gpus = _part("phase", text, "GPUS", f[3], parse_int) if len(f) == 4 else 1
    if not f[2].startswith("tokens="):
        hours = _part("phase", text, "GPU_HOURS", f[2], parse_float)
        return Phase(name=f[0], runs=runs, gpu_hours_per_run=hours, gpus_per_run=gpus)
    if args.model is None and args.config is None:
        raise UsageError(
            f"--phase {shown(f[0])}: tokens= needs --model or --config to derive hours", "phase"
        )
    return phase_from_tokens(
        f[0],
        runs=runs,
        tokens_per_run=_part("phase", text, "tokens", f[2].removeprefix("tokens="), parse_int),
        spec=_load_spec(args),
        seq_len=args.seq_len,
        gpu=args.gpu,
        mfu=args.mfu,
        gpus_per_run=gpus,
    )


def _budget_package(text: str) -> Package:
    """DAYS:GPUS:USD."""
    f = _fields("package", text, ("DAYS", "GPUS", "USD"), 3)
    return Package(
        days=_part("package", text, "DAYS", f[0], parse_int),
        gpus=_part("package", text, "GPUS", f[1], parse_int),
        price_usd=_part("package", text, "USD", f[2], parse_float),
        label=f"{f[0]}-day offer",
    )


def cmd_budget(args: Args) -> tuple[dict[str, Any], str]:
    phases = EXAMPLE_PHASES
    if args.phase:
        phases = tuple(_budget_phase(args, text) for text in args.phase)
    packages = tuple(_budget_package(text) for text in args.package) if args.package else None
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
        "schedule_period_days": r.schedule_period_days,
        "example_phases": not args.phase,
    }
    rows = [
        [p.name, f"{p.runs:,} + {p.reruns:,}", f"{p.gpu_hours:,.1f}", f"{p.wall_hours:,.1f}"]
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
        f"\n{r.wall_days:,.2f} days on {args.gpus:,} GPUs; ${r.cost_usd:,.2f} at "
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
            ["day" if r.schedule_period_days == 1 else "days", "GPU-hours by phase"],
            [
                [
                    period_label(i, r.schedule_period_days),
                    ", ".join(f"{n} {h:,.1f}" for n, h in row.items()),
                ]
                for i, row in enumerate(r.schedule)
            ],
        ),
    ]
    return data, "\n".join(text)


def period_label(index: int, period_days: int) -> str:
    """Row `index` (from 0) of a schedule in periods of `period_days`: '3' or '8-14'."""
    first = index * period_days + 1
    return str(first) if period_days == 1 else f"{first:,}-{first + period_days - 1:,}"


def _p_value(p: float | None, log10_p: float | None) -> str:
    """'0.0123', or '10^-412.3' where p is below what a double holds."""
    if p is None or log10_p is None:
        return "undefined"
    return f"{p:.4g}" if p > 1e-300 else f"10^{log10_p:.1f}"


def cmd_seeds(args: Args) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    text: list[str] = []
    notes: list[str] = []  # what could not be computed, and why
    if args.a is not None or args.b is not None:
        if args.a is None or args.b is None:
            raise UsageError("--a and --b must be given together", "b" if args.b is None else "a")
        r = paired_difference(
            PairedComparison(
                a=parse_numbers("a", args.a),
                b=parse_numbers("b", args.b),
                confidence=args.confidence,
            )
        )
        data["paired"] = {**vars(r), "excludes_zero": r.excludes_zero}
        head = (
            f"{r.seeds} paired seeds: mean difference (b - a) {r.mean_difference:.4g}, "
            f"sd {r.sd_difference:.4g}"
        )
        if r.ci_low is None or r.ci_high is None:
            notes.append(
                "every difference b - a is the same, as typed: their sd is 0, so the t "
                "interval and the test are undefined (with more seeds, or scores to more "
                "digits, the differences would show their spread)"
            )
            text.append(head)
        else:
            text.append(
                f"{head}\n{r.confidence:.0%} interval [{r.ci_low:.4g}, {r.ci_high:.4g}] "
                f"(t = {r.t_critical:.4g}, df {r.seeds - 1}); two-sided p "
                f"{_p_value(r.p_value, r.log10_p_value)}; "
                + ("excludes 0" if r.excludes_zero else "includes 0")
            )
        sd = args.sd_difference if args.sd_difference is not None else r.sd_difference
        seeds = args.seeds if args.seeds is not None else r.seeds
    else:
        sd, seeds = args.sd_difference, args.seeds
    # An sd of 0 from equal differences plans nothing; an sd the reader gives is checked.
    usable = sd is not None and (sd > 0 or args.sd_difference is not None)
    if not usable and sd is not None and (seeds is not None or args.effect is not None):
        notes.append(
            "the minimum detectable effect and the seeds needed need an sd of the differences "
            "above 0: give one (--sd-difference), from a pilot run or an earlier campaign"
        )
    if usable and seeds is not None:
        mde = minimum_detectable_effect(sd, seeds, alpha=args.alpha, power=args.power)
        data["minimum_detectable_effect"] = mde
        text.append(
            f"Minimum detectable effect with {seeds} seeds (alpha {args.alpha:g}, "
            f"power {args.power:g}): {mde:.4g}"
        )
    if args.effect is not None and usable:
        n = seeds_needed(args.effect, sd, alpha=args.alpha, power=args.power)
        data["seeds_needed"] = n
        text.append(f"Seeds needed to detect {args.effect:g}: {n}")
    elif args.effect is not None and sd is None:
        raise UsageError("--effect needs --sd-difference or --a/--b", "effect")
    if not data:
        raise UsageError("give --a and --b, or --sd-difference with --seeds or --effect")
    data["notes"] = notes
    text += [f"Note: {n}" for n in notes]
    return data, "\n".join(text)


def cmd_presets(args: Args) -> tuple[Any, str]:
    rows = [get_preset(pid) for pid in preset_ids()]
    data = [vars(p) for p in rows]
    return data, table(["preset", "Hugging Face repository"], [[p.id, p.hf_repo] for p in rows])


def cmd_gpus(args: Args) -> tuple[Any, str]:
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


def cmd_formats(args: Args) -> tuple[Any, str]:
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


def _warning_lines(warnings: tuple[str, ...]) -> list[str]:
    return [f"WARNING: {w}" for w in warnings]


def _assumption_lines(spec: ModelSpec) -> list[str]:
    return (
        ["", "Read from config.json:", *(f"  - {a}" for a in spec.assumptions)]
        if spec.assumptions
        else []
    )


# ---- flags and their defaults, per subcommand ----------------------------------------


def run(command: str, args: Args) -> tuple[Any, str]:
    """Run subcommand `command`; an InputError names the command's own input.

    The calculators' dataclasses name a bad value by their field (price_per_gpu_hour);
    the reader typed it into the command's input (--price): `RENAMED` maps one to the
    other, and the message then starts with the flag.
    """
    try:
        return COMMANDS[command](args)
    except InputError as e:
        name = RENAMED.get(command, {}).get(e.field, e.field)
        if name in DEFAULTS[command] and e.subject:
            raise e.renamed(name, "--" + name.replace("_", "-")) from None
        if name in DEFAULTS[command]:
            raise InputError(name, str(e), subject="") from None
        raise


COMMANDS: dict[str, Callable[[Args], tuple[Any, str]]] = {
    "weights": cmd_weights,
    "kv-cache": cmd_kv_cache,
    "envelope": cmd_envelope,
    "training": cmd_training,
    "throughput": cmd_throughput,
    "batch": cmd_batch,
    "budget": cmd_budget,
    "seeds": cmd_seeds,
    "presets": cmd_presets,
    "gpus": cmd_gpus,
    "formats": cmd_formats,
}

# Every flag's default by destination; None where a flag is optional or required (the CLI
# parser enforces required flags and exclusive groups). Lists are copied before use.
_MODEL: dict[str, Any] = {"config": None, "model": None, "json": False}
_CARD: dict[str, Any] = {"gpu": "h100-sxm", "memory_gib": None, "runtime": "cuda", "reserve": []}
_KV: dict[str, Any] = {
    "context": None,
    "batch": 1,
    "kv_format": "bf16",
    "allocation": "dynamic",
    "block_size": 16,
    "max_length": None,
    "mla_layout": "latent",
}
_FORMAT: dict[str, Any] = {"format": "bf16", "keep_unquantized": None}

DEFAULTS: dict[str, dict[str, Any]] = {
    "weights": {**_MODEL, **_FORMAT},
    "kv-cache": {**_MODEL, **_KV, "free_gib": None},
    "envelope": {
        **_MODEL,
        **_FORMAT,
        **_KV,
        **_CARD,
        "prefill_chunk": None,
        "attention": "sdpa",
        "include_mtp": False,
    },
    "training": {
        **_MODEL,
        "params": None,
        **_CARD,
        "micro_batch": 1,
        "seq_len": 2048,
        "precision": "bf16-mixed",
        "optimizer": "adamw",
        "optimizer_impl": "foreach",
        "checkpointing": "none",
        "attention": "sdpa",
        "dropout": False,
        "capacity_factor": None,
        "lora_rank": None,
        "lora_targets": ",".join(DEFAULT_LORA_TARGETS),
        "base_format": None,
        "zero": None,
        "fsdp": None,
        "gpus": 1,
        "ddp_bucket_view": False,
        "prefetch": 1,
    },
    "throughput": {
        **_MODEL,
        "gpu": "h100-sxm",
        "gpus": 1,
        "tokens": 10**9,
        "seq_len": 4096,
        "mfu": 0.3,
        "precision": "bf16",
        "format": "bf16",
        **_KV,
    },
    "batch": {
        "micro_batch": None,
        "accumulation": None,
        "gpus": 1,
        "seq_len": None,
        "global_batch": None,
        "mean_tokens": None,
        "json": False,
    },
    "budget": {
        "phase": [],
        "config": None,
        "model": None,
        "gpu": "h100-sxm",
        "mfu": 0.3,
        "seq_len": 4096,
        "gpus": 1,
        "price": None,
        "margin": 0.2,
        "decisions": None,
        "package": [],
        "json": False,
    },
    "seeds": {
        "a": None,
        "b": None,
        "confidence": 0.95,
        "sd_difference": None,
        "seeds": None,
        "effect": None,
        "alpha": 0.05,
        "power": 0.8,
        "json": False,
    },
    "presets": {"json": False},
    "gpus": {"json": False},
    "formats": {"json": False},
}

# Fields of the calculators' dataclasses and functions that a command's input feeds under
# another name: {command: {field: input}}.
RENAMED: dict[str, dict[str, str]] = {
    "kv-cache": {"free_bytes": "free_gib"},
    "envelope": {
        "weights_format": "format",
        "visible_bytes": "memory_gib",
        "reserves": "reserve",
        "kv": "kv_format",
    },
    "training": {"zero_stage": "zero", "visible_bytes": "memory_gib", "reserves": "reserve"},
    "throughput": {"weights_format": "format"},
    "batch": {"mean_sequence_tokens": "mean_tokens"},
    "budget": {"price_per_gpu_hour": "price", "tokens": "phase"},
}
