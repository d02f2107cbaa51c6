"""training: training-step memory per GPU, phase by phase, against a card
(`calculators.training.step`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import (
    ATTENTION,
    CARD,
    MODEL_SOURCE,
    RESERVE,
    UsageError,
    gib_or_none,
    load_spec,
    reserves,
    warning_lines,
)
from calculators.errors import shown
from calculators.limits import MAX_GPUS, MAX_LORA_RANK, MAX_MICRO_BATCH, MAX_SEQUENCE_TOKENS
from calculators.render import table
from calculators.training.states import OPTIMIZERS, PRECISION_ALIASES, PRECISIONS
from calculators.training.step import (
    DEFAULT_LORA_TARGETS,
    TrainingFit,
    TrainingQuery,
    max_micro_batch,
    training_fit,
)
from calculators.units import format_gib, format_headroom
from calculators.web.render import html_table, phase_bars_svg, summary


def training_json(fit: TrainingFit) -> dict[str, Any]:
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


# The step's inputs other calculators share (gap's training workload).
MICRO_BATCH = Input(
    name="micro_batch",
    label="Micro-batch",
    kind="int",
    default=1,
    unit="sequences",
    minimum=1,
    maximum=MAX_MICRO_BATCH,
    help="Sequences per GPU per forward/backward pass.",
)
SEQ_LEN = Input(
    name="seq_len",
    label="Sequence length",
    kind="int",
    default=2048,
    unit="tokens",
    minimum=1,
    maximum=MAX_SEQUENCE_TOKENS,
    help="Tokens per sequence.",
)
# LoRA's inputs, declared once: the training, throughput and budget calculators take them.
LORA_RANK = Input(
    name="lora_rank",
    label="LoRA rank",
    kind="int",
    optional=True,
    minimum=1,
    maximum=MAX_LORA_RANK,
    help="Empty: full fine-tuning.",
)
LORA_TARGETS = Input(
    name="lora_targets",
    label="LoRA targets",
    kind="text",
    default=",".join(DEFAULT_LORA_TARGETS),
    help="Comma-separated module names, or all-linear (with a LoRA rank).",
)
PRECISION = Input(
    name="precision",
    label="Precision",
    kind="choice",
    default="bf16-fp32-master",
    choices=tuple(p.id for p in PRECISIONS),
    aliases=tuple(PRECISION_ALIASES.items()),
    help="Parameter, gradient and optimizer-state precision policy.",
)
OPTIMIZER = Input(
    name="optimizer",
    label="Optimizer",
    kind="choice",
    default="adamw",
    choices=tuple(o.id for o in OPTIMIZERS),
    help="Which optimizer's states are held.",
)
OPTIMIZER_IMPL = Input(
    name="optimizer_impl",
    label="Optimizer implementation",
    kind="choice",
    default="foreach",
    choices=("foreach", "for-loop", "fused"),
    help="PyTorch's implementation: its temporaries during the step differ.",
)
CHECKPOINTING = Input(
    name="checkpointing",
    label="Activation checkpointing",
    kind="choice",
    default="none",
    choices=("none", "full", "selective"),
    help="Recompute activations in backward instead of keeping them.",
)

FSDP_STAGES = {"full-shard": 3, "shard-grad-op": 2}  # FSDP paper, arXiv:2304.11277, 3.2


def _zero_stage(zero: int | None, fsdp: str | None) -> int:
    if fsdp is None:
        return 0 if zero is None else zero
    if fsdp not in FSDP_STAGES:
        raise UsageError(f"--fsdp must be full-shard or shard-grad-op, got {shown(fsdp)}", "fsdp")
    if zero is not None and zero != FSDP_STAGES[fsdp]:
        raise UsageError(f"--fsdp {fsdp} is ZeRO-{FSDP_STAGES[fsdp]}, but --zero {zero} was given")
    return FSDP_STAGES[fsdp]


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = None if args.params is not None else load_spec(args)
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
        reserves=reserves(args.reserve),
    )
    visible = gib_or_none("memory_gib", args.memory_gib)
    gpu = None if visible is not None else args.gpu
    card = dict(gpu=gpu, visible_bytes=visible, runtime=args.runtime)
    fit = training_fit(spec, query, params=args.params, **card)
    m = fit.memory
    name = spec.name if spec is not None else f"{args.params:,} parameters"
    data = {"model": name, **training_json(fit)}
    where = gpu or "the card given by its memory"
    text = [
        f"{name}: training step per GPU, {query.micro_batch} x {query.seq_len:,} tokens, "
        f"{query.precision}, {query.optimizer} ({query.optimizer_impl}), "
        f"ZeRO-{query.zero_stage} on {query.gpus} GPU(s)",
        *warning_lines(m.warnings),
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
        f"{'fits' if fit.fits else 'does NOT fit'}, headroom {format_headroom(fit.headroom_bytes)}",
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


def html(r: dict[str, Any]) -> str:
    reserves = sum(x["bytes"] for x in r["reserves"])
    verdict = "fits" if r["fits"] else "does not fit"
    largest = r.get("max_micro_batch")
    return "".join(
        [
            summary(
                f"{r['model']}: {format_gib(r['total_bytes'])} per GPU at the peak "
                f"({r['peak_phase'].replace('_', ' ')}) with reserves, against "
                f"{format_gib(r['visible_bytes'])} visible: {verdict}, headroom "
                f"{format_headroom(r['headroom_bytes'])}."
                + ("" if largest is None else f" Largest micro-batch that fits: {largest}.")
            ),
            phase_bars_svg(
                [(p["label"] + " + reserves", p["bytes"] + reserves) for p in r["phases"]],
                r["visible_bytes"],
                "visible",
            ),
            html_table(
                ["phase", "GiB"],
                [[p["label"], format_gib(p["bytes"])] for p in r["phases"]],
                caption="Phases of a step (reserves not included)",
            ),
            html_table(
                ["line", "GiB", "basis"],
                [
                    [x["label"], format_gib(x["bytes"]), x["basis"]]
                    for x in r["lines"]
                    if x["bytes"]
                ],
                caption="Memory lines",
            ),
            html_table(
                ["on top of the peak", "GiB", "basis"],
                [[x["label"], format_gib(x["bytes"]), x["basis"]] for x in r["reserves"]]
                + [["total", format_gib(r["total_bytes"]), ""]],
                caption="Reserves",
            ),
        ]
    )


CALCULATOR = Calculator(
    name="training",
    title="Training-step memory",
    summary="Training-step memory per GPU, phase by phase, against a card.",
    help="training-step memory per GPU, phase by phase",
    inputs=(
        *MODEL_SOURCE,
        Input(
            name="params",
            label="Parameters",
            kind="int",
            group="model",
            required=True,
            page=False,
            help="parameter count only: no shapes",
        ),
        MICRO_BATCH,
        SEQ_LEN,
        PRECISION,
        OPTIMIZER,
        OPTIMIZER_IMPL,
        CHECKPOINTING,
        ATTENTION,
        Input(
            name="dropout",
            label="Dropout on",
            kind="bool",
            default=False,
            help="Attention and residual dropout keep their masks for backward.",
        ),
        Input(
            name="capacity_factor",
            label="MoE capacity factor",
            kind="float",
            page=False,
            help="MoE expert capacity (default dropless)",
        ),
        LORA_RANK,
        LORA_TARGETS,
        Input(
            name="base_format",
            label="Frozen base format (LoRA)",
            kind="text",
            optional=True,
            help="Format of the frozen base under LoRA, e.g. nf4-dq (QLoRA).",
        ),
        Input(
            name="zero",
            label="ZeRO stage",
            kind="int",
            optional=True,
            minimum=0,
            maximum=3,
            help="0 to 3 (FSDP full-shard is 3, shard-grad-op is 2); empty: 0, DDP when GPUs > 1.",
        ),
        Input(
            name="fsdp",
            label="FSDP sharding",
            kind="choice",
            choices=tuple(FSDP_STAGES),
            page=False,
            help="full-shard (= ZeRO-3) or shard-grad-op (= ZeRO-2), instead of --zero",
        ),
        Input(
            name="gpus",
            label="Data-parallel GPUs",
            kind="int",
            default=1,
            unit="GPUs",
            minimum=1,
            maximum=MAX_GPUS,
            help="GPUs the states are sharded over (ZeRO) or replicated on (DDP).",
        ),
        Input(
            name="ddp_bucket_view",
            label="DDP gradient_as_bucket_view",
            kind="bool",
            default=False,
            page=False,
            help="DDP gradient_as_bucket_view",
        ),
        Input(
            name="prefetch",
            label="ZeRO-3/FSDP prefetch",
            kind="int",
            default=1,
            page=False,
            help="ZeRO-3/FSDP units gathered ahead",
        ),
        *CARD,
        RESERVE,
    ),
    run=run,
    html=html,
    renamed={"zero_stage": "zero", "visible_bytes": "memory_gib", "reserves": "reserve"},
    order=4,
)
