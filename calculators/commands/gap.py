"""gap: the calculators' estimate against what was measured on a GPU, part by part
(`calculators.memory.gap`).

The estimate is the inference envelope's allocation lines (`calculators.memory.envelope`)
or the training step's peak phase (`calculators.training.step`); the reserve lines it is
compared with are the card's runtime's, with the reader's overrides
(`calculators.memory.reserves`).
"""

from __future__ import annotations

from dataclasses import replace
from html import escape
from itertools import pairwise
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.envelope import PREFILL_CHUNK
from calculators.commands.shared import (
    ATTENTION,
    BATCH,
    CONTEXT,
    FORMAT,
    GPU,
    KV,
    MODEL_SOURCE,
    RESERVE,
    UsageError,
    assumption_lines,
    kv_settings,
    load_spec,
    reserves,
    warning_lines,
)
from calculators.commands.training import (
    CHECKPOINTING,
    MICRO_BATCH,
    OPTIMIZER,
    OPTIMIZER_IMPL,
    PRECISION,
    SEQ_LEN,
)
from calculators.errors import InputError, shown
from calculators.limits import MAX_MEMORY_GIB
from calculators.memory.envelope import EnvelopeQuery, memory_envelope
from calculators.memory.gap import UNIT_BYTES, Measured, MemoryGap, measured_bytes, memory_gap
from calculators.memory.gpus import get_gpu
from calculators.memory.reserves import Line, default_reserves
from calculators.model.spec import ModelSpec
from calculators.render import table
from calculators.training.step import PHASE_LABELS, TrainingMemory, TrainingQuery, training_fit
from calculators.units import format_gib
from calculators.web.render import html_table, stacked_bar_svg, summary

WORKLOADS = ("inference", "training")

# Lines of `calculators.training.step` whose sum is a phase, for the phases that are plain
# sums (`_training_memory`): after load = parameters + master + optimizer states + DDP
# buckets; end of forward adds the activations and the gathered FSDP root; the optimizer
# step adds the gradients it reads (fp32 master gradients where there is a master copy)
# and its scratch. The backward peak is a maximum over three moments: it is shown as
# after load plus the rest of the phase.
_AFTER_LOAD = ("parameters", "master_weights", "optimizer_states", "ddp_buckets")
_PHASE_LINES = {
    "after_load": _AFTER_LOAD,
    "after_forward": (
        *_AFTER_LOAD,
        "layer_activations",
        "embedding_and_norm",
        "logits",
        "autocast_weight_copies",
        "gathered_root",
    ),
    "optimizer_step": (*_AFTER_LOAD, "master_gradients", "step_temporaries"),
}


def training_peak_lines(memory: TrainingMemory) -> tuple[Line, ...]:
    """The lines whose sum is the training step's peak phase (`memory.peak_bytes`).

    A phase that is a plain sum of lines is shown by those lines; otherwise (the backward
    peak) the after-load lines plus one line for the rest of the phase, peak - after load
    (>= 0: the peak is the largest phase). Lines of 0 bytes are left out.
    """
    by_id = {line.id: line for line in memory.lines}
    ids = list(_PHASE_LINES.get(memory.peak_phase, _AFTER_LOAD))
    if "master_gradients" in ids and by_id["master_gradients"].bytes == 0:
        # no fp32 master: the step reads the gradients themselves
        ids[ids.index("master_gradients")] = "gradients"
    chosen = [by_id[i] for i in ids]
    if sum(line.bytes for line in chosen) != memory.peak_bytes:
        chosen = [by_id[i] for i in _AFTER_LOAD]
    rest = memory.peak_bytes - sum(line.bytes for line in chosen)
    lines = [line for line in chosen if line.bytes]
    if rest:
        label = PHASE_LABELS[memory.peak_phase]
        lines.append(
            Line(
                id="peak_phase_rest",
                label=f"Rest of the peak phase ({label.lower()})",
                bytes=rest,
                basis="the peak phase minus the after-load lines: activations still held, "
                "gradients so far and backward transients",
                source="calculators.training.step.training_memory",
            )
        )
    return tuple(lines)


def _context(args: Args) -> int:
    if args.context is None:
        raise UsageError("--context is needed for the inference workload", "context")
    return args.context


def _estimate(
    spec: ModelSpec, args: Args
) -> tuple[tuple[Line, ...], tuple[Line, ...], tuple[str, ...], str]:
    """The estimate's lines, the reserve lines, the warnings and a description of the run."""
    overrides = reserves(args.reserve)
    if args.workload == "inference":
        query = EnvelopeQuery(
            context=_context(args),
            batch=args.batch,
            weights_format=args.format,
            kv=kv_settings(args),
            max_length=args.max_length,
            prefill_chunk=args.prefill_chunk,
            attention=args.attention,
            reserves=overrides,
        )
        env = memory_envelope(spec, query, gpu=args.gpu, select_cards=False)
        reserve_ids = {r.id for r in default_reserves(get_gpu(args.gpu).runtime)}
        estimate = tuple(line for line in env.lines if line.id not in reserve_ids)
        kept = tuple(line for line in env.lines if line.id in reserve_ids)
        run = f"inference, {args.batch} x {query.context:,} tokens, {args.format}"
        return estimate, kept, env.warnings, run
    if args.workload == "training":
        tq = TrainingQuery(
            micro_batch=args.micro_batch,
            seq_len=args.seq_len,
            precision=args.precision,
            optimizer=args.optimizer,
            optimizer_impl=args.optimizer_impl,
            checkpointing=args.checkpointing,
            attention=args.attention,
            reserves=overrides,
        )
        fit = training_fit(spec, tq, gpu=args.gpu)
        m = fit.memory
        run = (
            f"training step, {tq.micro_batch} x {tq.seq_len:,} tokens, {tq.precision}, "
            f"{tq.optimizer} ({tq.optimizer_impl}), "
            f"peak phase: {PHASE_LABELS[m.peak_phase].lower()}"
        )
        return training_peak_lines(m), fit.reserves, m.warnings, run
    raise InputError(
        "workload", f"workload must be one of {', '.join(WORKLOADS)}; got {shown(args.workload)}"
    )


def _measured(args: Args) -> Measured:
    return Measured(
        **{
            f: measured_bytes(f, getattr(args, f), args.unit)
            for f in ("allocated", "reserved", "device_used")
        }
    )


def _capacity_warnings(measured: Measured, gpu: str) -> tuple[str, ...]:
    """A measurement above what the card shows software: a unit or a card mixed up."""
    visible = get_gpu(gpu).visible_bytes
    given = [v for v in (measured.allocated, measured.reserved, measured.device_used) if v]
    if not given or max(given) <= visible:
        return ()
    return (
        f"a measurement ({format_gib(max(given))}) is above the {format_gib(visible)} "
        f"{gpu} shows software (torch's total_memory): check the unit (nvidia-smi prints "
        f"MiB) and the card; nvidia-smi's total can be a few hundred MiB above torch's",
    )


def gap_json(r: MemoryGap) -> dict[str, Any]:
    m = r.measured
    return {
        "estimate_lines": [
            {"id": x.id, "label": x.label, "bytes": x.bytes} for x in r.estimate_lines
        ],
        "estimate_bytes": r.estimate_bytes,
        "measured": {
            "allocated_bytes": m.allocated,
            "reserved_bytes": m.reserved,
            "device_used_bytes": m.device_used,
        },
        "parts": [vars(p) for p in r.parts],
        "notes": list(r.notes),
    }


def _within(p: dict[str, Any]) -> str:
    if p["within_reserve"] is None:
        return "-"
    return "yes" if p["within_reserve"] else "NO"


def _reserve(p: dict[str, Any]) -> str:
    if p["reserve_id"] is None:
        return "none"
    return f"{p['reserve_id']} ({format_gib(p['reserve_bytes'])})"


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    measured = _measured(args)
    estimate, reserve_lines, warnings, described = _estimate(spec, args)
    r = memory_gap(estimate, reserve_lines, measured)
    warnings = (*warnings, *_capacity_warnings(measured, args.gpu))
    runtime = get_gpu(args.gpu).runtime
    data = {
        "workload": args.workload,
        "model": spec.name,
        "gpu": args.gpu,
        "runtime": runtime,
        **gap_json(r),
        "reserve_lines": [{"id": x.id, "label": x.label, "bytes": x.bytes} for x in reserve_lines],
        "warnings": list(warnings),
    }
    est = r.estimate_bytes
    given = [
        f"{name} {'not given' if value is None else format_gib(value)}"
        for name, value in (
            ("allocated", measured.allocated),
            ("reserved", measured.reserved),
            ("device used", measured.device_used),
        )
    ]
    parts = data["parts"]
    text = [
        f"{spec.name}: {described}, on {args.gpu} ({runtime})",
        *warning_lines(tuple(warnings)),
        table(
            ["estimate line", "GiB", "share"],
            [[x.label, format_gib(x.bytes), f"{x.bytes / est:.1%}"] for x in estimate]
            + [["estimate", format_gib(est), "100.0%"]],
        ),
        "",
        "Measured: " + ", ".join(given),
    ]
    if parts:
        text += [
            "",
            table(
                ["part", "GiB", "of estimate", "reserve line", "within"],
                [
                    [
                        p["label"],
                        format_gib(p["bytes"]),
                        f"{p['share_of_estimate']:+.1%}",
                        _reserve(p),
                        _within(p),
                    ]
                    for p in parts
                ],
            ),
            "",
            *(f"- {p['label']}: {p['meaning']} {p['action']}" for p in parts),
        ]
    text += [f"Note: {n}" for n in r.notes]
    return data, "\n".join(text + assumption_lines(spec))


# How the chart names the stretch between two measured levels.
_STRETCH = {
    ("estimate", "allocated"): "model error (allocated - estimate)",
    ("allocated", "reserved"): "allocator cache (reserved - allocated)",
    ("reserved", "device used"): "outside PyTorch (device used - reserved)",
}


def gap_segments(r: dict[str, Any]) -> list[tuple[str, int]]:
    """The chart's bar: the estimate, then each stretch between consecutive measured levels,
    up to the highest one given; never a negative segment.

    Where the first measured level is below the estimate (allocated < estimate), the bar
    starts with that level instead, named as below the estimate; the table gives the
    negative part.
    """
    m = r["measured"]
    levels = [
        (name, m[key])
        for name, key in (
            ("allocated", "allocated_bytes"),
            ("reserved", "reserved_bytes"),
            ("device used", "device_used_bytes"),
        )
        if m[key] is not None
    ]
    if not levels:
        return []
    estimate = r["estimate_bytes"]
    first, low = levels[0]
    if low >= estimate:
        segments = [
            ("estimate", estimate),
            (_STRETCH.get(("estimate", first), f"{first} - estimate"), low - estimate),
        ]
    else:
        segments = [(f"{first} ({format_gib(estimate - low)} below the estimate)", low)]
    for (lower, a), (upper, b) in pairwise(levels):
        segments.append((_STRETCH.get((lower, upper), f"{upper} - {lower}"), b - a))
    return segments


def html(r: dict[str, Any]) -> str:
    m = r["measured"]
    est = r["estimate_bytes"]
    by_id = {p["id"]: p for p in r["parts"]}
    text = f"{r['model']} ({r['workload']}): estimate {format_gib(est)}"
    if m["allocated_bytes"] is not None:
        error = by_id["model_error"]["bytes"]
        side = "above" if error >= 0 else "below"
        text += (
            f"; allocated {format_gib(m['allocated_bytes'])}, {format_gib(abs(error))} "
            f"{side} it ({by_id['model_error']['share_of_estimate']:+.1%})"
        )
        if error < 0:
            text += " (a negative part: in the table, not drawn)"
    exceeded = [p["label"] for p in r["parts"] if p["within_reserve"] is False]
    if exceeded:
        text += "; above its reserve line: " + ", ".join(exceeded)
    elif any(p["within_reserve"] for p in r["parts"]):
        text += "; every measured part within its reserve line"
    segments = gap_segments(r)
    used = m["device_used_bytes"]
    chart = (
        stacked_bar_svg(
            segments,
            capacity=used,
            capacity_label="device used (measured)",
            title="estimate and measured gap, GiB",
        )
        if segments
        else ""
    )
    return "".join(
        [
            summary(text + "."),
            chart,
            html_table(
                ["line", "GiB", "share of estimate"],
                [
                    [x["label"], format_gib(x["bytes"]), f"{x['bytes'] / est:.1%}"]
                    for x in r["estimate_lines"]
                ]
                + [["estimate", format_gib(est), "100.0%"]],
                caption="The estimate, line by line",
            ),
            html_table(
                ["part", "GiB", "share of estimate", "reserve line", "within it?"],
                [
                    [
                        p["label"],
                        format_gib(p["bytes"]),
                        f"{p['share_of_estimate']:+.1%}",
                        _reserve(p),
                        _within(p),
                    ]
                    for p in r["parts"]
                ],
                caption="The gap, part by part",
            ),
            # the explanations are sentences: as table cells they made the table too wide
            # to read on a laptop, so each part gets a paragraph under the table
            *(
                f'<p class="kd-part"><strong>{escape(p["label"])}.</strong> '
                f"{escape(p['meaning'])} <em>What to do:</em> {escape(p['action'])}</p>"
                for p in r["parts"]
            ),
        ]
    )


# An entered measurement is at most one PiB; in MiB, the larger number, that is this.
_MAX_MEASURED = MAX_MEMORY_GIB * (UNIT_BYTES["GiB"] // UNIT_BYTES["MiB"])


def _measurement(name: str, label: str, example: float, help: str) -> Input:
    return Input(
        name=name,
        label=label,
        kind="float",
        optional=True,
        example=example,
        minimum=0,
        maximum=_MAX_MEASURED,
        help=help + " In the unit above; empty: not measured.",
    )


CALCULATOR = Calculator(
    name="gap",
    title="Measured gap: estimate against peak",
    summary="What a GPU measured against the estimate: model error, allocator cache and "
    "memory outside PyTorch, each against its reserve line.",
    help="measured peak memory against the estimate, part by part",
    inputs=(
        Input(
            name="workload",
            label="Workload",
            kind="choice",
            default="inference",
            choices=WORKLOADS,
            help="What was measured: inference (the envelope's lines) or a training step "
            "(its peak phase).",
        ),
        *MODEL_SOURCE,
        GPU,
        Input(
            name="unit",
            label="Unit of the measurements",
            kind="choice",
            default="GiB",
            choices=tuple(UNIT_BYTES),
            help="GiB (2^30 bytes) or MiB (2^20 bytes, as nvidia-smi and amd-smi print).",
        ),
        _measurement(
            "allocated",
            "Peak allocated",
            22.85,
            "torch.cuda.max_memory_allocated() of the run.",
        ),
        _measurement(
            "reserved",
            "Peak reserved",
            23.6,
            "torch.cuda.max_memory_reserved() of the run.",
        ),
        _measurement(
            "device_used",
            "Device used",
            24.4,
            "nvidia-smi / amd-smi used, or total - free from torch.cuda.mem_get_info(), "
            "read before torch.cuda.empty_cache().",
        ),
        FORMAT,
        # Needed by the inference workload only: not required, so a training reader can
        # leave it out (the run asks for it when the workload is inference).
        replace(
            CONTEXT,
            required=False,
            optional=True,
            help="Tokens per sequence: prompt plus generated tokens (inference).",
        ),
        # the page's example is the run its example measurements are for: 4 x 8192 tokens
        replace(BATCH, example=4),
        *KV,
        PREFILL_CHUNK,
        ATTENTION,
        MICRO_BATCH,
        SEQ_LEN,
        PRECISION,
        OPTIMIZER,
        OPTIMIZER_IMPL,
        CHECKPOINTING,
        RESERVE,
    ),
    run=run,
    html=html,
    renamed={"weights_format": "format", "reserves": "reserve", "kv": "kv_format"},
    # after the calculators it checks and the listings (presets 9, gpus 10, formats 11)
    order=12,
)
