"""throughput: training time at an MFU, and upper bounds for decoding and prefill
(`calculators.training.throughput`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import (
    BATCH,
    CONTEXT,
    FORMAT,
    GPU,
    KV,
    MODEL_SOURCE,
    kv_settings,
    load_spec,
    warning_lines,
)
from calculators.commands.training import LORA_RANK, LORA_TARGETS
from calculators.limits import MAX_GPUS, MAX_SEQUENCE_TOKENS, MAX_TRAINING_TOKENS
from calculators.model.spec import position_warnings
from calculators.training.lora import adapter_parameters_or_none
from calculators.training.throughput import inference_bounds, training_time
from calculators.units import format_gib
from calculators.web.render import html_table, summary


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    t = training_time(
        spec,
        tokens=args.tokens,
        seq_len=args.seq_len,
        gpu=args.gpu,
        gpus=args.gpus,
        mfu=args.mfu,
        precision=args.precision,
        adapter_parameters=adapter_parameters_or_none(spec, args.lora_rank, args.lora_targets),
    )
    b = inference_bounds(
        spec,
        gpu=args.gpu,
        context=args.context,
        batch=args.batch,
        weights_format=args.format,
        kv=kv_settings(args),
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
        *warning_lines(warnings),
        f"Training{'' if t.adapter_parameters is None else ' (LoRA, base frozen)'}: "
        f"{t.flops_per_token:.4g} FLOPs per token at sequence {args.seq_len:,}; "
        f"{args.tokens:,} tokens take {t.seconds / 3600:,.2f} h wall clock "
        f"({t.gpu_hours:,.1f} GPU-hours, {t.tokens_per_second:,.0f} tokens/s)",
        f"Decode upper bound, batch {b.batch} at context {b.context:,}: "
        f"{b.decode_tokens_per_second:,.0f} tokens/s ({b.decode_bound}-bound, "
        f"{format_gib(b.bytes_per_step)} read per step)",
        f"Prefill upper bound: {b.prefill_tokens_per_second:,.0f} tokens/s (compute peak)",
    ]
    return data, "\n".join(text)


def html(r: dict[str, Any]) -> str:
    t, b = r["training"], r["inference"]
    return "".join(
        [
            summary(
                f"{r['model']}: {t['tokens']:,} training tokens take "
                f"{t['seconds'] / 3600:,.2f} h on {t['gpus']:,} GPU(s) at MFU {t['mfu']:.0%} "
                f"({t['gpu_hours']:,.1f} GPU-hours)."
            ),
            html_table(
                ["quantity", "value"],
                [
                    [
                        "FLOPs per token"
                        + ("" if t["adapter_parameters"] is None else " (LoRA, base frozen)"),
                        f"{t['flops_per_token']:.4g}",
                    ],
                    ["total FLOPs", f"{t['total_flops']:.4g}"],
                    ["tokens per second", f"{t['tokens_per_second']:,.0f}"],
                    ["wall-clock hours", f"{t['seconds'] / 3600:,.2f}"],
                    ["GPU-hours", f"{t['gpu_hours']:,.1f}"],
                ],
                caption="Training",
            ),
            html_table(
                ["quantity", "value"],
                [
                    [
                        "decode tokens per second (upper bound)",
                        f"{b['decode_tokens_per_second']:,.0f}",
                    ],
                    ["decode bound", b["decode_bound"]],
                    ["bytes read per decode step", format_gib(b["bytes_per_step"])],
                    [
                        "prefill tokens per second (upper bound)",
                        f"{b['prefill_tokens_per_second']:,.0f}",
                    ],
                ],
                caption=f"Inference, batch {b['batch']:,} at context {b['context']:,}",
            ),
        ]
    )


CALCULATOR = Calculator(
    name="throughput",
    title="Training time and decode bounds",
    summary="Training time at an MFU, and upper bounds for decoding and prefill.",
    help="training time at an MFU, decode/prefill bounds",
    inputs=(
        *MODEL_SOURCE,
        GPU,
        Input(
            name="gpus",
            label="GPUs",
            kind="int",
            default=1,
            unit="GPUs",
            minimum=1,
            maximum=MAX_GPUS,
            help="GPUs training together.",
        ),
        Input(
            name="tokens",
            label="Training tokens",
            kind="int",
            default=10**9,
            unit="tokens",
            minimum=1,
            maximum=MAX_TRAINING_TOKENS,
            help="Tokens the run trains on.",
        ),
        Input(
            name="seq_len",
            label="Training sequence length",
            kind="int",
            default=4096,
            unit="tokens",
            minimum=1,
            maximum=MAX_SEQUENCE_TOKENS,
            help="Sequence length in training (attention FLOPs grow with it).",
        ),
        Input(
            name="mfu",
            label="MFU",
            kind="float",
            default=0.3,
            minimum=0,
            maximum=1,
            help="Model FLOPs utilisation in (0, 1]; measure yours.",
        ),
        Input(
            name="precision",
            label="Tensor precision",
            kind="choice",
            default="bf16",
            choices=("bf16", "fp8"),
            help="Which dense tensor peak the MFU is taken against.",
        ),
        replace(
            LORA_RANK,
            help="Empty: full training (6N FLOPs per token); a rank: LoRA on a frozen base "
            "(4N plus the adapter's 6 N_a).",
        ),
        LORA_TARGETS,
        FORMAT,
        CONTEXT,
        BATCH,
        *KV,
    ),
    run=run,
    html=html,
    renamed={"weights_format": "format"},
    order=5,
)
