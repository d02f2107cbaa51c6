"""batch: sequences and tokens per optimizer update, and accumulation steps
(`calculators.training.batch`); with the token counts of one update's micro-batches, the
weight of a token under each loss normalisation (`calculators.training.accumulation_weights`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import UsageError
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_ACCUMULATION,
    MAX_GLOBAL_BATCH,
    MAX_GPUS,
    MAX_MICRO_BATCH,
    MAX_SEQUENCE_TOKENS,
)
from calculators.parsing import parse_int
from calculators.training.accumulation_weights import (
    MAX_LISTED_MICRO_BATCHES,
    AccumulationWeights,
    UpdateTokens,
    accumulation_weights,
)
from calculators.training.batch import BatchQuery, accumulation_for, effective_batch
from calculators.web.render import bar_chart_svg, html_table, summary

_TOKENS = "micro_batch_tokens"
# Micro-batches drawn and listed in the text: all of them up to this many, else the one
# with the fewest tokens and the one with the most (the extremes carry the bias).
_SHOWN_MICRO_BATCHES = 8


def _micro_batch_tokens(lines: list[str]) -> tuple[tuple[int, ...], ...]:
    """One tuple of token counts per line (per GPU), read from 'N,N,...'; the item count is
    bounded before any is read."""
    items = sum(line.count(",") + 1 for line in lines)
    if items > MAX_LISTED_MICRO_BATCHES:
        raise InputError(
            _TOKENS,
            f"{_TOKENS} must list at most {MAX_LISTED_MICRO_BATCHES:,} micro-batches in all, "
            f"got {items:,}",
        )
    rows = []
    for line in lines:
        try:
            # empty items skipped, as calculators.parsing.parse_numbers does ('11,101,')
            rows.append(tuple(parse_int(_TOKENS, i) for i in line.split(",") if i.strip()))
        except InputError:
            raise InputError(
                _TOKENS,
                f"{_TOKENS} must be comma-separated whole numbers, one line per GPU, "
                f"got {shown(line)}",
            ) from None
    return tuple(rows)


def _weights_json(w: AccumulationWeights) -> dict[str, Any]:
    return {
        "gpus": w.gpus,
        "accumulation": w.accumulation,
        "tokens_per_gpu": list(w.tokens_per_gpu),
        "all_reduced_tokens": w.all_reduced_tokens,
        "spread": w.spread,
        "all_reduces_with_no_sync": w.all_reduces_with_no_sync,
        "all_reduces_without_no_sync": w.all_reduces_without_no_sync,
        "micro_batches": [
            {
                "id": m.id,
                "rank": m.rank,
                "step": m.step,
                "tokens": m.tokens,
                "token_sum_weight": m.token_sum_weight,
                "token_sum_denominator": m.token_sum_denominator,
                "token_sum_share": m.token_sum_share,
                "mean_of_means_weight": m.mean_of_means_weight,
                "mean_of_means_denominator": m.mean_of_means_denominator,
                "mean_of_means_share": m.mean_of_means_share,
                "rank_token_sum_weight": m.rank_token_sum_weight,
                "rank_token_sum_denominator": m.rank_token_sum_denominator,
                "rank_token_sum_share": m.rank_token_sum_share,
                "weight_ratio": m.weight_ratio,
            }
            for m in w.micro_batches
        ],
    }


def _shown(micro_batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The micro-batches a chart or the text shows: all of a few, else the extremes."""
    if len(micro_batches) <= _SHOWN_MICRO_BATCHES:
        return micro_batches
    fewest = min(micro_batches, key=lambda m: m["tokens"])
    most = max(micro_batches, key=lambda m: m["tokens"])
    return [fewest, most]


def _name(m: dict[str, Any], gpus: int) -> str:
    """'GPU 0, step 1, 101 tokens' ('step 1, 101 tokens' on one GPU): short enough that a
    chart's label column holds it with the normalisation's name."""
    where = f"GPU {m['rank']}, step {m['step']}" if gpus > 1 else f"step {m['step']}"
    return f"{where}, {m['tokens']:,} tokens"


def _weights_text(w: dict[str, Any]) -> list[str]:
    gpus, k, n = w["gpus"], w["accumulation"], w["all_reduced_tokens"]
    lines = [
        f"Tokens carrying a loss: {n:,} in {gpus * k:,} micro-batches"
        + (f" (all-reduced over {gpus} GPUs)" if gpus > 1 else ""),
        f"Token sum (loss / {n:,}): every token weighs 1/{n:,}",
        "Mean of micro-batch means: a token weighs 1/(micro-batches x its micro-batch's tokens):",
    ]
    for m in _shown(w["micro_batches"]):
        lines.append(
            f"  {_name(m, gpus)}: 1/{m['mean_of_means_denominator']:,}, "
            f"{m['weight_ratio']:.3g} x the token sum's weight"
        )
    lines.append(
        f"Under the mean of means a token of the shortest micro-batch weighs {w['spread']:.3g} "
        "times one of the longest."
    )
    if gpus > 1:
        lines.append(
            f"DDP: all-reduce the token count before the first backward; on each rank "
            f"loss = summed token loss x {gpus} / {n:,} (DDP averages over the GPUs). "
            f"no_sync on the first {k - 1} micro-batches: {w['all_reduces_with_no_sync']} "
            f"gradient all-reduce per update instead of {w['all_reduces_without_no_sync']}, "
            "same gradient."
        )
    return lines


def _weights_html(w: dict[str, Any]) -> str:
    gpus, n = w["gpus"], w["all_reduced_tokens"]
    shown_mbs = _shown(w["micro_batches"])
    labels: dict[float, str] = {}
    bars: list[tuple[str, float]] = []
    kinds = [("token sum", "token_sum"), ("mean of means", "mean_of_means")]
    if gpus > 1:
        kinds.append(("per-GPU sum", "rank_token_sum"))
    for m in shown_mbs:
        for label, key in kinds:
            weight = m[f"{key}_weight"]
            labels[weight] = f"1/{m[f'{key}_denominator']:,}"
            bars.append((f"{_name(m, gpus)}: {label}", weight))
    some = "" if len(shown_mbs) == len(w["micro_batches"]) else ", fewest and most tokens"
    chart = bar_chart_svg(
        bars,
        title=f"Weight of one token by micro-batch{some}",
        value_format=lambda v: labels[v],
        unit_label="weight of one token in the update's loss",
    )
    rows = [
        [
            _name(m, gpus),
            f"1/{m['token_sum_denominator']:,}",
            f"1/{m['mean_of_means_denominator']:,}",
            *([f"1/{m['rank_token_sum_denominator']:,}"] if gpus > 1 else []),
            f"{m['weight_ratio']:.3g}",
            f"{m['token_sum_share']:.1%}",
            f"{m['mean_of_means_share']:.1%}",
        ]
        for m in w["micro_batches"]
    ]
    head = [
        "micro-batch",
        "token sum",
        "mean of means",
        *(["per-GPU token sum"] if gpus > 1 else []),
        "bias (ratio)",
        "share, token sum",
        "share, mean of means",
    ]
    text = (
        f"Divide the update's summed token loss by its {n:,} tokens: every token then "
        f"weighs 1/{n:,}. Averaging each micro-batch's mean makes a token of the shortest "
        f"micro-batch weigh {w['spread']:.3g} times one of the longest."
    )
    if gpus > 1:
        text += (
            f" With {gpus} GPUs, all-reduce the token count, then scale each rank's summed "
            f"loss by {gpus} / {n:,} (DDP averages gradients over the GPUs). no_sync changes "
            f"when gradients are all-reduced ({w['all_reduces_with_no_sync']} per update "
            f"instead of {w['all_reduces_without_no_sync']}), not these weights."
        )
    return (
        summary(text)
        + chart
        + html_table(head, rows, caption="Weight of one token, per micro-batch")
    )


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
    if args.micro_batch_tokens:
        weights = accumulation_weights(
            UpdateTokens(
                micro_batch_tokens=_micro_batch_tokens(args.micro_batch_tokens),
                gpus=args.gpus,
                accumulation=accumulation,
                slots_per_micro_batch=args.micro_batch * args.seq_len,
            )
        )
        data["accumulation_weights"] = _weights_json(weights)
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
    if "accumulation_weights" in data:
        text += _weights_text(data["accumulation_weights"])
    return data, "\n".join(text)


def html(r: dict[str, Any]) -> str:
    rows = [
        [k.replace("_", " "), f"{v:,}" if isinstance(v, int) else str(v)]
        for k, v in r.items()
        if k != "accumulation_weights"
    ]
    out = summary(
        f"{r['sequences_per_update']:,} sequences and {r['tokens_per_update']:,} tokens per "
        "update; normalise the loss by the update's total token count."
    ) + html_table(["quantity", "value"], rows, caption="Effective batch")
    if "accumulation_weights" in r:
        out += _weights_html(r["accumulation_weights"])
    return out


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
        Input(
            name="micro_batch_tokens",
            label="Tokens per micro-batch",
            kind="lines",
            default=(),
            optional=True,
            unit="tokens",
            help="Optional: the loss-carrying (non-padding) tokens of each micro-batch of one "
            "update, one line per GPU, comma-separated in step order (e.g. 11,101); gives "
            "each token's weight under token-sum and mean-of-means normalisation.",
            metavar="N,N,...",
        ),
    ),
    run=run,
    html=html,
    renamed={"mean_sequence_tokens": "mean_tokens"},
    order=6,
)
