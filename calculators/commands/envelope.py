"""envelope: weights, KV cache, activations and reserves against a card's memory
(`calculators.memory.envelope`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import (
    ATTENTION,
    BATCH,
    CARD,
    CONTEXT,
    FORMAT,
    KEEP_UNQUANTIZED,
    KV,
    MODEL_SOURCE,
    RESERVE,
    assumption_lines,
    gib_or_none,
    keep_unquantized,
    kv_settings,
    load_spec,
    reserves,
    warning_lines,
)
from calculators.limits import MAX_SEQUENCE_TOKENS
from calculators.memory.envelope import EnvelopeQuery, EnvelopeResult, memory_envelope
from calculators.render import table
from calculators.units import format_gib, format_headroom
from calculators.web.render import html_table, stacked_bar_svg, summary

# Tokens per prefill step: the activation line depends on it (envelope, gap).
PREFILL_CHUNK = Input(
    name="prefill_chunk",
    label="Prefill chunk",
    kind="int",
    optional=True,
    unit="tokens",
    minimum=1,
    maximum=MAX_SEQUENCE_TOKENS,
    help="Tokens per prefill step: your server's max_num_batched_tokens (vLLM) or "
    "chunked_prefill_size (SGLang); vLLM's defaults by card are on the serve "
    "calculator's page. Empty: the whole batch in one pass, as transformers' "
    "generate() does.",
)


def envelope_json(r: EnvelopeResult) -> dict[str, Any]:
    return {
        "lines": [vars(line) for line in r.lines],
        "total_bytes": r.total_bytes,
        "gpu": r.gpu,
        "visible_bytes": r.visible_bytes,
        "headroom_bytes": r.headroom_bytes,
        "fits": r.fits,
        "cards": [{**vars(c), "fits": c.fits} for c in r.cards],
        "context_limit": r.context_limit,
        "warnings": list(r.warnings),
    }


TENSOR_PARALLEL_NOTE = (
    "Cards needed: tensor parallelism over 2, 4 or 8 cards of one kind, splitting weights "
    "and KV heads; norms replicated, activation workspace kept whole on each card, one "
    "NCCL communicator in the framework reserve; pipeline and expert parallelism not "
    "modelled."
)


def _card_head(batch: int, context: int) -> list[str]:
    return [
        "card",
        "visible",
        "needed",
        "headroom",
        f"longest context, {batch} seq.",
        f"sequences at {context:,} tokens",
        "cards needed",
        "each card holds",
    ]


def _card_row(c: dict[str, Any], context_limit: int) -> list[str]:
    """One card: the verdict and what fits on it; the model's own limit is marked."""
    longest = f"{c['max_context']:,}"
    if c["max_context"] == context_limit:
        longest += " (model limit)"
    each = "" if c["per_card_bytes"] is None else format_gib(c["per_card_bytes"])
    return [
        c["gpu"],
        format_gib(c["visible_bytes"]),
        format_gib(c["total_bytes"]),
        format_headroom(c["headroom_bytes"]),
        longest,
        f"{c['max_sequences']:,}",
        "more than 8" if c["cards_needed"] is None else str(c["cards_needed"]),
        each,
    ]


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    query = EnvelopeQuery(
        context=args.context,
        batch=args.batch,
        weights_format=args.format,
        kv=kv_settings(args),
        max_length=args.max_length,
        prefill_chunk=args.prefill_chunk,
        attention=args.attention,
        include_mtp=args.include_mtp,
        keep_unquantized=keep_unquantized(args),
        reserves=reserves(args.reserve),
    )
    visible = gib_or_none("memory_gib", args.memory_gib)
    gpu = None if visible is not None else args.gpu
    r = memory_envelope(spec, query, gpu=gpu, visible_bytes=visible, runtime=args.runtime)
    card = gpu or f"a card with {format_gib(r.visible_bytes)} visible"
    verdict = "fits" if r.fits else "does NOT fit"
    text = [
        f"{spec.name}: {args.batch} x {args.context} tokens on {card}",
        *warning_lines(r.warnings),
        table(
            ["line", "GiB", "basis"],
            [[line.label, format_gib(line.bytes), line.basis] for line in r.lines]
            + [["total", format_gib(r.total_bytes), ""]],
        ),
        f"\nVisible memory {format_gib(r.visible_bytes)}: {verdict}, "
        f"headroom {format_headroom(r.headroom_bytes)}",
        "Cards that fit: " + (", ".join(c.gpu for c in r.cards if c.fits) or "none"),
        "",
        table(
            _card_head(args.batch, args.context),
            [_card_row(vars(c), r.context_limit) for c in r.cards],
        ),
        TENSOR_PARALLEL_NOTE,
    ]
    return {
        "model": spec.name,
        "context": args.context,
        "batch": args.batch,
        # None: the whole batch prefilled in one pass (the activation line's basis says so)
        "prefill_chunk": args.prefill_chunk,
        **envelope_json(r),
    }, "\n".join(text + assumption_lines(spec))


def html(r: dict[str, Any]) -> str:
    verdict = "fits" if r["fits"] else "does not fit"
    card = r["gpu"] or "the card"
    return "".join(
        [
            summary(
                f"{r['model']}: {format_gib(r['total_bytes'])} in total against "
                f"{format_gib(r['visible_bytes'])} visible on {card}: {verdict}, headroom "
                f"{format_headroom(r['headroom_bytes'])}."
            ),
            stacked_bar_svg(
                [(line["label"], line["bytes"]) for line in r["lines"]],
                capacity=r["visible_bytes"],
                capacity_label=f"visible on {card}",
                title="memory envelope against the card, GiB",
            ),
            html_table(
                ["line", "GiB", "basis"],
                [[line["label"], format_gib(line["bytes"]), line["basis"]] for line in r["lines"]]
                + [["total", format_gib(r["total_bytes"]), ""]],
                caption="Memory envelope",
            ),
            html_table(
                _card_head(r["batch"], r["context"]),
                [_card_row(c, r["context_limit"]) for c in r["cards"]],
                caption="Every catalog card: fit, what fits, and the cards needed",
            ),
            f'<p class="kd-note">{TENSOR_PARALLEL_NOTE}</p>',
        ]
    )


CALCULATOR = Calculator(
    name="envelope",
    title="Memory envelope and card fit",
    summary="Weights, KV cache, activations and reserves against a card's memory.",
    help="inference memory envelope against a card",
    inputs=(
        *MODEL_SOURCE,
        FORMAT,
        CONTEXT,
        BATCH,
        *KV,
        *CARD,
        RESERVE,
        PREFILL_CHUNK,
        ATTENTION,
        Input(
            name="include_mtp",
            label="Load MTP modules",
            kind="bool",
            default=False,
            help="Also load multi-token-prediction layers (DeepSeek-V3).",
        ),
        KEEP_UNQUANTIZED,
    ),
    run=run,
    html=html,
    renamed={
        "weights_format": "format",
        "visible_bytes": "memory_gib",
        "reserves": "reserve",
        "kv": "kv_format",
    },
    order=3,
)
