"""kv-cache: KV cache bytes by context, batch and format, and what fits in free memory
(`calculators.memory.kv_cache`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import (
    BATCH,
    CONTEXT,
    KV,
    MODEL_SOURCE,
    assumption_lines,
    gib_or_none,
    kv_settings,
    load_spec,
    warning_lines,
)
from calculators.limits import MAX_MEMORY_GIB
from calculators.memory.kv_cache import KVCacheResult, kv_cache_bytes, max_context, max_sequences
from calculators.render import table
from calculators.units import format_gib
from calculators.web.render import html_table, stacked_bar_svg, summary


def kv_json(r: KVCacheResult) -> dict[str, Any]:
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


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    settings = kv_settings(args)
    r = kv_cache_bytes(
        spec, context=args.context, batch=args.batch, settings=settings, max_length=args.max_length
    )
    data = {"model": spec.name, **kv_json(r)}
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
        *warning_lines(r.warnings),
        table(["layers", "bytes/token", "tokens held", "GiB"], rows),
    ]
    free = gib_or_none("free_gib", args.free_gib, allow_zero=True)
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
    return data, "\n".join(text + assumption_lines(spec))


def html(r: dict[str, Any]) -> str:
    rows = [
        [
            f"{line['layers']} x {line['attention']}"
            + (f" (window {line['window']:,})" if line["window"] else ""),
            f"{line['bytes_per_token']:,}",
            f"{line['tokens_held']:,}",
            format_gib(line["bytes"]),
        ]
        for line in r["lines"]
    ]
    if r["scale_bytes"]:
        rows.append(["per-layer scales", "", "", format_gib(r["scale_bytes"])])
    rows.append(["total", f"{r['bytes_per_token']:,}", "", format_gib(r["total_bytes"])])
    segments = [
        (
            f"{line['layers']} {line['attention']} layers"
            + (f" (window {line['window']:,})" if line["window"] else ""),
            line["bytes"],
        )
        for line in r["lines"]
    ]
    if r["scale_bytes"]:
        segments.append(("scales", r["scale_bytes"]))
    parts = [
        summary(
            f"{r['model']}: {format_gib(r['total_bytes'])} of KV cache for {r['batch']:,} x "
            f"{r['context']:,} tokens in {r['kv_format']} ({r['allocation']}); "
            f"{r['bytes_per_token']:,} bytes per token."
        ),
        stacked_bar_svg(
            segments,
            capacity=r.get("free_bytes"),
            capacity_label="free memory",
            title="KV cache by layer kind, GiB",
        ),
        html_table(["layers", "bytes/token", "tokens held", "GiB"], rows, caption="KV cache"),
    ]
    if "max_context" in r:
        parts.append(
            summary(
                f"In {format_gib(r['free_bytes'])} free: longest context "
                f"{r['max_context']:,} tokens for {r['batch']:,} sequence(s) (limited by "
                f"{r['max_context_limited_by']}); at most {r['max_sequences']:,} sequences of "
                f"{r['context']:,} tokens."
            )
        )
    return "".join(parts)


CALCULATOR = Calculator(
    name="kv-cache",
    title="KV cache",
    summary="KV cache bytes by context, batch and format, and what fits in free memory.",
    help="KV cache memory, and what fits in free memory",
    inputs=(
        *MODEL_SOURCE,
        CONTEXT,
        BATCH,
        *KV,
        Input(
            name="free_gib",
            label="Free memory for the cache",
            kind="float",
            optional=True,
            unit="GiB",
            minimum=0,
            maximum=MAX_MEMORY_GIB,
            help="Memory left after weights and reserves; gives the longest context "
            "and the most sequences that fit.",
        ),
    ),
    run=run,
    html=html,
    renamed={"free_bytes": "free_gib"},
    order=2,
)
