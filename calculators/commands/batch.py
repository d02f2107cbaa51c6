"""batch: sequences and tokens per optimizer update, and accumulation steps
(`calculators.training.batch`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import UsageError
from calculators.limits import (
    MAX_ACCUMULATION,
    MAX_GLOBAL_BATCH,
    MAX_GPUS,
    MAX_MICRO_BATCH,
    MAX_SEQUENCE_TOKENS,
)
from calculators.training.batch import BatchQuery, accumulation_for, effective_batch
from calculators.web.render import html_table, summary


def run(args: Args) -> tuple[dict[str, Any], str]:
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


def html(r: dict[str, Any]) -> str:
    rows = [[k.replace("_", " "), f"{v:,}" if isinstance(v, int) else str(v)] for k, v in r.items()]
    return summary(
        f"{r['sequences_per_update']:,} sequences and {r['tokens_per_update']:,} tokens per "
        "update; normalise the loss by the update's total token count."
    ) + html_table(["quantity", "value"], rows, caption="Effective batch")


CALCULATOR = Calculator(
    name="batch",
    title="Effective batch",
    summary="Sequences and tokens per optimizer update, and accumulation steps.",
    help="effective batch: sequences and tokens per update",
    inputs=(
        Input(
            name="micro_batch",
            label="Micro-batch",
            kind="int",
            example=4,
            unit="sequences",
            minimum=1,
            maximum=MAX_MICRO_BATCH,
            required=True,
            help="Sequences per GPU per forward/backward pass.",
        ),
        Input(
            name="accumulation",
            label="Accumulation steps",
            kind="int",
            optional=True,
            minimum=1,
            maximum=MAX_ACCUMULATION,
            help="Micro-batches per update; or give the global batch instead.",
        ),
        Input(
            name="gpus",
            label="Data-parallel GPUs",
            kind="int",
            default=1,
            example=8,
            unit="GPUs",
            minimum=1,
            maximum=MAX_GPUS,
            help="Data-parallel ranks (a tensor-parallel group counts once).",
        ),
        Input(
            name="seq_len",
            label="Sequence length",
            kind="int",
            example=4096,
            unit="tokens",
            minimum=1,
            maximum=MAX_SEQUENCE_TOKENS,
            required=True,
            help="Tokens per row, padded or packed.",
        ),
        Input(
            name="global_batch",
            label="Target global batch",
            kind="int",
            example=256,
            optional=True,
            unit="sequences",
            minimum=1,
            maximum=MAX_GLOBAL_BATCH,
            help="Sequences per update; the accumulation steps are derived from it.",
        ),
        Input(
            name="mean_tokens",
            label="Mean real tokens per row",
            kind="int",
            optional=True,
            unit="tokens",
            minimum=1,
            maximum=MAX_SEQUENCE_TOKENS,
            help="Without packing: mean real tokens per padded row; empty: packed.",
        ),
    ),
    run=run,
    html=html,
    renamed={"mean_sequence_tokens": "mean_tokens"},
    order=6,
)
