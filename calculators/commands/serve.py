"""serve: will vLLM start, and with how many KV tokens, predicted line by line
as the runtime prints it (`calculators.serving.startup`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import (
    GPU,
    MODEL_SOURCE,
    assumption_lines,
    gib_or_none,
    load_spec,
)
from calculators.limits import MAX_BLOCK_TOKENS, MAX_CONCURRENT_SEQUENCES, MAX_SEQUENCE_TOKENS
from calculators.memory.gpus import get_gpu
from calculators.render import table
from calculators.serving.runtimes import ENGINES, RUNTIMES
from calculators.serving.sharding import SERVED_FORMATS
from calculators.serving.startup import (
    KV_DTYPES,
    TP_SIZES,
    Card,
    ServeSettings,
    Startup,
    longest_model_len,
    smallest_tp,
    startup,
)
from calculators.units import format_gib
from calculators.web.render import html_table, stacked_bar_svg, summary

COMPUTED, MEASURED, INPUT = "computed", "measured constant", "input"


def startup_lines(s: Startup) -> list[dict[str, Any]]:
    """The accounting as the runtime prints it, each line with how it is known."""
    w = s.weights
    return [
        _line("total", "total_gpu_memory", s.total_bytes, INPUT),
        _line(
            "usable",
            f"the instance can use (x {s.utilization:g})",
            s.usable_bytes,
            COMPUTED,
        ),
        _line("weights", "model weights", w.total_bytes, COMPUTED),
        _line("non_torch", "non_torch_memory", s.non_torch.bytes, MEASURED),
        _line("activation", "PyTorch activation peak", s.activation_bytes, COMPUTED),
        _line("kv_budget", "available KV cache memory", s.kv_budget_bytes, COMPUTED),
        _line("kv_cache", "KV cache allocated (whole blocks)", s.kv_bytes, COMPUTED),
    ]


def _line(lid: str, label: str, n_bytes: int, kind: str) -> dict[str, Any]:
    return {"id": lid, "label": label, "bytes": n_bytes, "kind": kind}


def startup_json(s: Startup) -> dict[str, Any]:
    return {
        "engine": s.engine,
        "tp": s.tp,
        "utilization": s.utilization,
        "max_model_len": s.max_model_len,
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "max_num_seqs": s.max_num_seqs,
        "weights_tensor_bytes": s.weights.tensor_bytes,
        "weights_rotary_bytes": s.weights.rotary_bytes,
        "forward_bytes": s.forward_bytes,
        "sampler_bytes": s.sampler_bytes,
        "bytes_per_token": s.bytes_per_token,
        "block_size": s.block_size,
        "blocks": s.blocks,
        "kv_tokens": s.kv_tokens,
        "max_concurrency": s.max_concurrency,
        "starts": s.starts,
        "error": s.error,
        "non_torch_records": list(s.non_torch.records),
        "lines": startup_lines(s),
    }


def _card(args: Args) -> Card:
    visible = gib_or_none("memory_gib", args.memory_gib)
    if visible is not None:
        return Card(total_bytes=visible, name="")
    gpu = get_gpu(args.gpu)
    return Card(total_bytes=gpu.visible_bytes, name=gpu.name)


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    settings = ServeSettings(
        engine=args.engine,
        format_id=args.format,
        tp=args.tp,
        utilization=args.gpu_memory_utilization,
        max_model_len=args.max_model_len,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
        kv_cache_dtype=args.kv_cache_dtype,
        block_size=args.block_size,
        entrypoint=args.entrypoint,
    )
    card = _card(args)
    s = startup(spec, card, settings)
    longest = longest_model_len(spec, card, settings)
    fewest = smallest_tp(spec, card, settings)
    data = {
        "model": spec.name,
        "gpu": card.name or None,
        "runtime": RUNTIMES[s.engine].name,
        "runtime_versions": RUNTIMES[s.engine].versions,
        **startup_json(s),
        "longest_model_len": longest,
        "smallest_tp": fewest,
    }
    return data, "\n".join(_text(data) + assumption_lines(spec))


def _verdict(r: dict[str, Any]) -> str:
    if r["starts"]:
        concurrency = f"{r['max_concurrency']:.2f}x"
        return (
            f"starts: {r['kv_tokens']:,} tokens of KV cache per rank; maximum concurrency "
            f"for {r['max_model_len']:,} tokens per request: {concurrency}"
        )
    return f"does NOT start: {r['error']}"


def _alternatives(r: dict[str, Any]) -> str:
    longest = r["longest_model_len"]
    fewest = r["smallest_tp"]
    parts = [
        "longest max_model_len that starts: "
        + ("none" if longest is None else f"{longest:,} tokens"),
        "smallest TP that starts: "
        + (f"more than {max(TP_SIZES)} (or none)" if fewest is None else str(fewest)),
    ]
    return "; ".join(parts)


def _rows(r: dict[str, Any]) -> list[list[str]]:
    return [[line["label"], format_gib(line["bytes"]), line["kind"]] for line in r["lines"]]


def _text(r: dict[str, Any]) -> list[str]:
    card = r["gpu"] or "the card"
    return [
        f"{r['model']} on {card}, {r['runtime']} ({r['runtime_versions']}), TP {r['tp']}, per rank",
        table(["line", "GiB", "how"], _rows(r)),
        f"\n{_verdict(r)}",
        _alternatives(r),
        f"batch profiled: {r['max_num_batched_tokens']:,} tokens, {r['max_num_seqs']:,} "
        f"sequences; {r['bytes_per_token']:,} KV bytes per token per rank",
    ]


def html(r: dict[str, Any]) -> str:
    lines = {line["id"]: line["bytes"] for line in r["lines"]}
    segments = [
        ("weights", lines["weights"]),
        ("non-torch", lines["non_torch"]),
        ("activation peak", lines["activation"]),
        ("KV cache", lines["kv_cache"]),
    ]
    return "".join(
        [
            summary(f"{r['model']}, TP {r['tp']}: {_verdict(r)}. {_alternatives(r)}."),
            stacked_bar_svg(
                segments,
                capacity=lines["total"],
                capacity_label="total on the card",
                title="one rank's memory at startup, GiB",
            ),
            html_table(
                ["line", "GiB", "how"],
                _rows(r),
                caption=f"{r['runtime']} startup accounting, per rank",
            ),
        ]
    )


CALCULATOR = Calculator(
    name="serve",
    title="Will the server start? vLLM startup",
    summary="Each line of vLLM's startup memory accounting, the KV tokens "
    "and the concurrency it reports, and whether it starts.",
    help="predict vLLM startup: weights, activation peak, KV tokens, concurrency",
    inputs=(
        *MODEL_SOURCE,
        Input(
            name="format",
            label="Weights format",
            kind="choice",
            default="bf16",
            choices=SERVED_FORMATS,
            help="How the checkpoint stores its weights (AWQ/GPTQ int4 with group 128).",
        ),
        GPU,
        Input(
            name="memory_gib",
            label="Total memory (card not listed)",
            kind="float",
            optional=True,
            unit="GiB",
            minimum=0,
            maximum=2**20,
            help="Instead of a catalog card: the total memory torch reports.",
        ),
        Input(
            name="engine",
            label="Runtime",
            kind="choice",
            default="vllm",
            choices=ENGINES,
            help="vllm (V1 engine, 0.9-0.10) or vllm-v0 (the V0 engine, 0.6.5-0.8).",
        ),
        Input(
            name="tp",
            label="Tensor parallel size",
            kind="int",
            default=1,
            minimum=1,
            maximum=max(TP_SIZES),
            help="--tensor-parallel-size / --tp: the cards one copy is split over.",
        ),
        Input(
            name="gpu_memory_utilization",
            label="GPU memory utilization",
            kind="float",
            optional=True,
            minimum=0,
            maximum=1,
            help="--gpu-memory-utilization: the share of the card vLLM may use; empty: 0.9.",
        ),
        Input(
            name="max_model_len",
            label="Max model length",
            kind="int",
            optional=True,
            example=32768,
            unit="tokens",
            minimum=1,
            maximum=MAX_SEQUENCE_TOKENS,
            help="--max-model-len; empty: the model's max_position_embeddings.",
        ),
        Input(
            name="max_num_batched_tokens",
            label="Max batched tokens",
            kind="int",
            optional=True,
            unit="tokens",
            minimum=1,
            maximum=MAX_SEQUENCE_TOKENS,
            help="Tokens one step may process (the prefill chunk); empty: vLLM's default "
            "for the card.",
        ),
        Input(
            name="max_num_seqs",
            label="Max sequences",
            kind="int",
            optional=True,
            unit="sequences",
            minimum=1,
            maximum=MAX_CONCURRENT_SEQUENCES,
            help="Sequences one step may hold (the sampler's rows); empty: vLLM's default.",
        ),
        Input(
            name="kv_cache_dtype",
            label="KV cache dtype",
            kind="choice",
            default="auto",
            choices=KV_DTYPES,
            help="auto: the model's 16-bit dtype; fp8: one byte per value.",
        ),
        Input(
            name="block_size",
            label="Block size",
            kind="int",
            optional=True,
            unit="tokens",
            minimum=1,
            maximum=MAX_BLOCK_TOKENS,
            help="vLLM's --block-size (16).",
        ),
        Input(
            name="entrypoint",
            label="vLLM entry point",
            kind="choice",
            default="serve",
            choices=("serve", "llm"),
            help="`vllm serve` or the Python LLM class: their batch defaults differ.",
        ),
    ),
    run=run,
    html=html,
    renamed={"utilization": "gpu_memory_utilization", "format_id": "format"},
    order=20,
)
