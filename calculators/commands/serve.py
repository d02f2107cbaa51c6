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
from calculators.errors import InputError
from calculators.limits import MAX_BLOCK_TOKENS, MAX_CONCURRENT_SEQUENCES, MAX_SEQUENCE_TOKENS
from calculators.model.spec import ModelSpec
from calculators.render import table
from calculators.serving.runtimes import ENGINES, RUNTIMES, VLLM_BIG_CARD_BYTES
from calculators.serving.sharding import SERVED_FORMATS
from calculators.serving.startup import (
    KV_DTYPES,
    MAX_TP,
    TP_SIZES,
    Card,
    ServeSettings,
    Startup,
    catalog_card,
    longest_model_len,
    smallest_tp,
    startup,
)
from calculators.units import format_gib
from calculators.web.render import html_table, stacked_bar_svg, summary, warnings_html

COMPUTED, MEASURED, INPUT = "computed", "measured constant", "input"


def startup_lines(s: Startup) -> list[dict[str, Any]]:
    """The accounting as the runtime prints it, each line with how it is known."""
    w = s.weights
    if s.engine == "sglang":
        fraction = INPUT if s.utilization_source == "input" else COMPUTED
        return [
            _line("total", "total_gpu_memory", s.total_bytes, INPUT),
            _line("non_torch", "in use before loading", s.non_torch.bytes, MEASURED),
            _line("free_before", "avail mem before loading", s.free_before_load_bytes, COMPUTED),
            _line("weights", "model weights", w.total_bytes, COMPUTED),
            _line(
                "reserve",
                f"left out of the static share (x {1 - s.utilization:.3f})",
                s.reserve_bytes,
                fraction,
            ),
            _line("kv_budget", "memory for the KV pool", s.kv_budget_bytes, COMPUTED),
            _line("kv_cache", "KV pool allocated (whole tokens)", s.kv_bytes, COMPUTED),
        ]
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
        "utilization_source": s.utilization_source,
        "cuda_graph_max_bs": s.cuda_graph_max_bs,
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
    return catalog_card(args.gpu)


def _fraction(args: Args) -> float | None:
    """--gpu-memory-utilization for vLLM, --mem-fraction-static for SGLang; the other
    runtime's flag is refused, naming it."""
    sglang = args.engine == "sglang"
    wrong = "gpu_memory_utilization" if sglang else "mem_fraction_static"
    if getattr(args, wrong) is not None:
        other = "mem_fraction_static" if sglang else "gpu_memory_utilization"
        raise InputError(wrong, f"{wrong} does not apply to engine {args.engine}; it takes {other}")
    return args.mem_fraction_static if sglang else args.gpu_memory_utilization


def launch_warnings(spec: ModelSpec, card: Card, settings: ServeSettings) -> list[str]:
    """What the prediction assumes for this launch that the runtime may not do."""
    notes = []
    sliding = any(layer.attention == "sliding" for layer in spec.layers)
    if sliding and settings.engine == "vllm":
        notes.append(
            "This model has sliding-window layers. They are sized like full layers, as "
            "vLLM sized them before its hybrid memory allocator (PR #17996, merged June "
            "2025); a release with that allocator gives them only their window, so it "
            "reports more KV tokens than predicted here."
        )
    if sliding and settings.engine == "sglang":
        notes.append(
            "This model has sliding-window layers, sized here like full layers; SGLang's "
            "separate pool for them (its hybrid sliding-window memory) is not modelled."
        )
    batch_given = settings.max_num_batched_tokens is not None and settings.max_num_seqs is not None
    # V1 gives a card of 70 GiB or more the larger batch defaults, except an A100, which
    # only the card's name tells (runtimes.vllm_batch_defaults); V0's follow the length
    big = card.total_bytes >= VLLM_BIG_CARD_BYTES
    if not card.name and settings.engine == "vllm" and big and not batch_given:
        notes.append(
            "The card is given by its memory, so vLLM's batch defaults are picked by memory "
            "alone: vLLM gives an A100 the smaller ones at any size. Give "
            "--max-num-batched-tokens and --max-num-seqs as you launch."
        )
    return notes


def run(args: Args) -> tuple[dict[str, Any], str]:
    spec = load_spec(args)
    settings = ServeSettings(
        engine=args.engine,
        format_id=args.format,
        tp=args.tp,
        utilization=_fraction(args),
        max_model_len=args.max_model_len,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
        kv_cache_dtype=args.kv_cache_dtype,
        block_size=args.block_size,
        cuda_graph_max_bs=args.cuda_graph_max_bs,
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
        "warnings": launch_warnings(spec, card, settings),
    }
    return data, "\n".join(_text(data) + assumption_lines(spec))


def _verdict(r: dict[str, Any]) -> str:
    if r["starts"] and r["engine"] == "sglang":
        return (
            f"starts: a pool of {r['kv_tokens']:,} tokens per rank (max_total_num_tokens), "
            f"{r['max_concurrency']:.2f} requests of {r['max_model_len']:,} tokens"
        )
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


def _settings_line(r: dict[str, Any]) -> str:
    per_token = f"{r['bytes_per_token']:,} KV bytes per token per rank"
    if r["engine"] == "sglang":
        how = "given" if r["utilization_source"] == "input" else "SGLang's rule for the card"
        return (
            f"mem_fraction_static {r['utilization']:.3f} ({how}); chunked prefill "
            f"{r['max_num_batched_tokens']:,} tokens, CUDA graphs up to batch "
            f"{r['cuda_graph_max_bs']:,}; {per_token}"
        )
    return (
        f"batch profiled: {r['max_num_batched_tokens']:,} tokens, {r['max_num_seqs']:,} "
        f"sequences; {per_token}"
    )


def _text(r: dict[str, Any]) -> list[str]:
    card = r["gpu"] or "the card"
    return [
        f"{r['model']} on {card}, {r['runtime']} ({r['runtime_versions']}), TP {r['tp']}, per rank",
        table(["line", "GiB", "how"], _rows(r)),
        f"\n{_verdict(r)}",
        _alternatives(r),
        _settings_line(r),
        *(f"Warning: {w}" for w in r["warnings"]),
    ]


def html(r: dict[str, Any]) -> str:
    lines = {line["id"]: line["bytes"] for line in r["lines"]}
    if r["engine"] == "sglang":
        segments = [
            ("in use before loading", lines["non_torch"]),
            ("weights", lines["weights"]),
            ("KV pool", lines["kv_cache"]),
            ("left out of the static share", lines["reserve"]),
        ]
    else:
        segments = [
            ("weights", lines["weights"]),
            ("non-torch", lines["non_torch"]),
            ("activation peak", lines["activation"]),
            ("KV cache", lines["kv_cache"]),
        ]
    return "".join(
        [
            summary(f"{r['model']}, TP {r['tp']}: {_verdict(r)}. {_alternatives(r)}."),
            warnings_html(r),
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
    title="Will the server start? vLLM and SGLang startup",
    summary="Each line of vLLM's or SGLang's startup memory accounting, the KV tokens "
    "and the concurrency, and whether it starts.",
    help="predict vLLM or SGLang startup: weights, activation peak, KV tokens, concurrency",
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
            help="vllm (V1 engine, 0.9-0.10), vllm-v0 (the V0 engine, 0.6.5-0.8) or "
            "sglang (0.5.3 and later).",
        ),
        Input(
            name="tp",
            label="Tensor parallel size",
            kind="int",
            default=1,
            minimum=1,
            maximum=MAX_TP,
            help="--tensor-parallel-size / --tp: the cards one copy is split over "
            "(across nodes above 8).",
        ),
        Input(
            name="gpu_memory_utilization",
            label="GPU memory utilization",
            kind="float",
            optional=True,
            minimum=0,
            maximum=1,
            help="vLLM's --gpu-memory-utilization: the share of the card vLLM may use; empty: 0.9.",
        ),
        Input(
            name="mem_fraction_static",
            label="SGLang mem fraction static",
            kind="float",
            optional=True,
            minimum=0,
            maximum=1,
            help="SGLang's --mem-fraction-static: the share of the free memory for weights "
            "and the KV pool; empty: SGLang's rule for the card.",
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
            help="--max-model-len (SGLang: --context-length); empty: the model's "
            "max_position_embeddings.",
        ),
        Input(
            name="max_num_batched_tokens",
            label="Max batched tokens",
            kind="int",
            optional=True,
            unit="tokens",
            minimum=1,
            maximum=MAX_SEQUENCE_TOKENS,
            help="Tokens one step may process (the prefill chunk; SGLang: "
            "--chunked-prefill-size); empty: the runtime's default for the card.",
        ),
        Input(
            name="max_num_seqs",
            label="Max sequences",
            kind="int",
            optional=True,
            unit="sequences",
            minimum=1,
            maximum=MAX_CONCURRENT_SEQUENCES,
            help="vLLM's --max-num-seqs, the sampler's rows; empty: vLLM's default.",
        ),
        Input(
            name="cuda_graph_max_bs",
            label="SGLang CUDA graph max batch",
            kind="int",
            optional=True,
            unit="sequences",
            minimum=1,
            maximum=MAX_CONCURRENT_SEQUENCES,
            help="SGLang's --cuda-graph-max-bs (its default fraction reserves for it); "
            "empty: SGLang's default for the card.",
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
            help="vLLM's --block-size (16); SGLang's --page-size (1).",
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
