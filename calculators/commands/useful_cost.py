"""useful-cost: per weights format, KV format and card, the memory, the fit, the decode bound
and the cost per million generated tokens (`calculators.planning.useful_cost`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import CONTEXT, MODEL_SOURCE, load_spec, warning_lines
from calculators.limits import MAX_CONCURRENT_SEQUENCES, MAX_SEQUENCE_TOKENS
from calculators.planning.useful_cost import (
    ANY_CARD,
    MAX_CARDS,
    UsefulCostQuery,
    UsefulCostResult,
    parse_card_prices,
    parse_quality,
    reserve_descriptions,
    useful_cost,
)
from calculators.render import table
from calculators.units import format_gib
from calculators.web.render import bar_chart_svg, html_table, summary
from calculators.web.text import csv_row

# The page's example: illustrative hourly prices, not quotes; put your offer's.
EXAMPLE_PRICES = "l40s=1.00\nh100-sxm=2.50\nh200=3.50"
DEFAULT_FORMATS = "bf16,fp8-e4m3,int8,nf4,gptq-int4"

NOTE = (
    "Upper bounds on tokens per second, so lower bounds on cost: every decode step reads "
    "its bytes once at the datasheet bandwidth, tensor-parallel all-reduces and prefill "
    "time cost nothing, every sequence decodes on every step and the cards are rented "
    "fully used. Cards: tensor parallelism over 2, 4 or 8 cards of one kind, weights and "
    "KV heads split evenly, the activation workspace and the reserve lines on every card."
)


def _ids(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in str(text).split(",") if part.strip())


def result_json(spec_name: str, q: UsefulCostQuery, r: UsefulCostResult) -> dict[str, Any]:
    rows = [{**vars(row), "fits": row.fits} for row in r.rows]
    by_id = {row["id"]: row for row in rows}
    unpriced = [g for g in q.gpus if g not in q.prices and ANY_CARD not in q.prices]
    return {
        "model": spec_name,
        "context": q.context,
        "sequences": q.sequences,
        "gpus": list(q.gpus),
        "formats": list(q.formats),
        "kv_formats": list(q.kv_formats),
        "max_cards": q.max_cards,
        "prefill_chunk": q.prefill_chunk,
        "vllm_chunk": q.vllm_chunk,
        "prices": dict(q.prices),
        "quality_better": q.quality_better,
        "rows": rows,
        "cheapest": [
            {
                "id": fmt,
                "row": row_id,
                "gpu": by_id[row_id]["gpu"],
                "kv_format": by_id[row_id]["kv_format"],
                "cards": by_id[row_id]["cards"],
                "decode_tokens_per_second": by_id[row_id]["decode_tokens_per_second"],
                "cost_per_million_tokens": by_id[row_id]["cost_per_million_tokens"],
            }
            for fmt, row_id in r.cheapest.items()
        ],
        "reserves": reserve_descriptions(row["runtime"] for row in rows),
        "warnings": list(r.warnings),
        "notes": [f"No price for {', '.join(unpriced)}: no cost in its rows."] if unpriced else [],
    }


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _cards(row: dict[str, Any], max_cards: int) -> str:
    return f"more than {max_cards}" if row["cards"] is None else str(row["cards"])


def _head(r: dict[str, Any]) -> list[str]:
    better = "lower" if r["quality_better"] == "lower" else "higher"
    return [
        "weights",
        "KV cache",
        "card",
        "weights GiB",
        f"KV GiB, {r['sequences']:,} seq.",
        "cards",
        "GiB per card",
        f"max seq. at {r['context']:,}",
        "tokens/s (upper bound)",
        "USD per hour",
        "USD per 1M tokens (lower bound)",
        "USD per 1M at max seq.",
        f"quality ({better} is better)",
        "frontier",
    ]


def _cells(row: dict[str, Any], max_cards: int) -> list[str]:
    return [
        row["format"],
        row["kv_format"],
        row["gpu"],
        format_gib(row["weights_bytes"]),
        format_gib(row["kv_bytes"]),
        _cards(row, max_cards),
        format_gib(row["per_card_bytes"]),
        f"{row['max_sequences']:,}",
        _num(row["decode_tokens_per_second"]),
        _num(row["usd_per_hour"], 2),
        _num(row["cost_per_million_tokens"], 3),
        _num(row["full_cost_per_million_tokens"], 3),
        "-" if row["quality"] is None else f"{row['quality']:.4g}",
        "yes" if row["frontier"] else "",
    ]


def _by_cost(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cheapest first; rows without a cost last, in their order."""
    return sorted(
        rows,
        key=lambda row: (
            row["cost_per_million_tokens"] is None,
            row["cost_per_million_tokens"] or 0.0,
        ),
    )


def prefill_line(r: dict[str, Any]) -> str:
    """How the rows count the prefill's activations: the chunk on each card, or one pass."""
    by_chunk: dict[int | None, list[str]] = {}
    for row in r["rows"]:
        cards = by_chunk.setdefault(row["prefill_chunk"], [])
        if row["gpu"] not in cards:
            cards.append(row["gpu"])
    if list(by_chunk) == [None]:
        return (
            "Prefill: every prompt of the workload in one forward pass, as transformers' "
            "generate() does (a server that prefills in chunks needs less)."
        )
    parts = [f"{chunk:,} tokens on {', '.join(cards)}" for chunk, cards in by_chunk.items()]
    where = " (vllm serve's default on each card)" if r["vllm_chunk"] else ""
    return f"Prefill in chunks of {'; '.join(parts)}{where}."


def _cheapest_line(r: dict[str, Any]) -> str:
    if not r["cheapest"]:
        return "No row both fits and has a price."
    return "Cheapest per weights format: " + "; ".join(
        f"{c['id']} on {c['cards']} x {c['gpu']} with {c['kv_format']} KV, "
        f"{c['cost_per_million_tokens']:,.3f} USD per 1M tokens"
        for c in r["cheapest"]
    )


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    q = UsefulCostQuery(
        context=args.context,
        sequences=args.sequences,
        gpus=_ids(args.gpus),
        formats=_ids(args.formats),
        kv_formats=_ids(args.kv_formats),
        prices=parse_card_prices(args.price or ()),
        max_cards=args.max_cards,
        prefill_chunk=args.prefill_chunk,
        vllm_chunk=args.vllm_chunk,
        quality=parse_quality(args.quality or ()),
        quality_better=args.quality_better,
    )
    data = result_json(spec.name, q, useful_cost(spec, q))
    text = [
        f"{spec.name}: {q.sequences:,} sequences x {q.context:,} tokens",
        *warning_lines(tuple(data["warnings"])),
        table(_head(data), [_cells(row, q.max_cards) for row in _by_cost(data["rows"])]),
        "",
        _cheapest_line(data),
        prefill_line(data),
        *data["notes"],
        NOTE,
    ]
    return data, "\n".join(text)


def rows_csv(r: dict[str, Any]) -> str:
    """Every row as one CSV line, the per-card lines as columns: a table to add measured
    quality to."""
    keys = [k for k in r["rows"][0] if k != "per_card"] if r["rows"] else []
    lines = list(r["rows"][0]["per_card"]) if r["rows"] else []
    out = csv_row([*keys, *(f"per_card_{k}_bytes" for k in lines)])
    for row in r["rows"]:
        out += csv_row([*(row[k] for k in keys), *(row["per_card"][k] for k in lines)])
    return out


def html(r: dict[str, Any]) -> str:
    priced = [row for row in _by_cost(r["rows"]) if row["cost_per_million_tokens"] is not None]
    chart = (
        bar_chart_svg(
            [
                (
                    f"{row['format']}, {row['kv_format']} KV, {row['cards']} x {row['gpu']}",
                    row["cost_per_million_tokens"],
                )
                for row in priced
            ],
            title="Cost per million generated tokens (lower bound) by format and card",
            value_format=lambda v: f"{v:,.3f} USD",
            unit_label="USD per 1M tokens = price x cards / (decode tokens/s x 3600) x 10^6",
        )
        if priced
        else ""
    )
    max_cards = r["max_cards"]
    return "".join(
        [
            summary(
                f"{r['model']}, {r['sequences']:,} sequences x {r['context']:,} tokens. "
                + _cheapest_line(r)
                + " "
                + prefill_line(r)
            ),
            chart,
            html_table(
                _head(r),
                [_cells(row, max_cards) for row in _by_cost(r["rows"])],
                caption="Every weights format, KV format and card, cheapest first",
            ),
            f'<p class="kd-note">{NOTE}</p>',
        ]
    )


CALCULATOR = Calculator(
    name="useful-cost",
    title="Useful cost of a quantized model",
    summary="Per weights format, KV format and card: memory, fit and cards needed, the most "
    "concurrent sequences, the decode bound and the cost per million generated tokens at "
    "your prices, to set beside the quality you measured.",
    help="cost per million generated tokens per weights format, KV format and card",
    inputs=(
        *MODEL_SOURCE,
        CONTEXT,
        Input(
            name="sequences",
            label="Concurrent sequences",
            kind="int",
            default=1,
            example=16,
            unit="sequences",
            minimum=1,
            maximum=MAX_CONCURRENT_SEQUENCES,
            help="Sequences of the workload decoded together, each holding its KV cache.",
        ),
        Input(
            name="gpus",
            label="Cards",
            kind="text",
            default="h100-sxm",
            example="l40s,h100-sxm,h200",
            help="Comma-separated catalog card ids (Reference: GPUs).",
            metavar="GPU,GPU",
        ),
        Input(
            name="formats",
            label="Weights formats",
            kind="text",
            default=DEFAULT_FORMATS,
            help="Comma-separated weights formats (Reference: formats).",
            metavar="FORMAT,FORMAT",
        ),
        Input(
            name="kv_formats",
            label="KV cache formats",
            kind="text",
            default="bf16,fp8",
            help="Comma-separated KV cache formats (fp32, bf16, fp16, fp8, fp8-e5m2, int8).",
            metavar="KV,KV",
        ),
        Input(
            name="price",
            label="Prices",
            kind="lines",
            default=(),
            example=EXAMPLE_PRICES,
            optional=True,
            help="One per line, GPU=USD_PER_HOUR, or a bare USD_PER_HOUR for every card "
            "without its own line; a card without a price has no cost. The example prices "
            "are illustrative, not quotes: put your offer's.",
            metavar="GPU=USD_PER_HOUR",
        ),
        Input(
            name="max_cards",
            label="Most cards",
            kind="int",
            default=MAX_CARDS,
            unit="cards",
            minimum=1,
            maximum=MAX_CARDS,
            help="The largest tensor-parallel group tried (2, 4 or 8 cards of one kind).",
        ),
        Input(
            name="prefill_chunk",
            label="Prefill chunk",
            kind="int",
            optional=True,
            unit="tokens",
            minimum=1,
            maximum=MAX_SEQUENCE_TOKENS,
            help="Tokens per prefill step (your server's max_num_batched_tokens); empty: "
            "every prompt of the workload prefilled in one step.",
        ),
        Input(
            name="vllm_chunk",
            label="vLLM's chunk per card",
            kind="bool",
            default=False,
            example=True,
            help="Each card prefills in the chunk vllm serve takes on it by default "
            "(2048 tokens below 70 GiB or on an A100, 8192 above); leave the prefill "
            "chunk empty.",
        ),
        Input(
            name="quality",
            label="Measured quality",
            kind="lines",
            default=(),
            optional=True,
            help="One per line, FORMAT=VALUE or FORMAT/KV_FORMAT=VALUE: what you measured "
            "for that format, e.g. the KL divergence from python -m probes quant-compare.",
            metavar="FORMAT[/KV]=VALUE",
        ),
        Input(
            name="quality_better",
            label="Better quality is",
            kind="choice",
            default="lower",
            choices=("lower", "higher"),
            help="lower for a divergence or an error rate, higher for a task score.",
        ),
    ),
    run=run,
    html=html,
    csv=rows_csv,
    order=17,
)
