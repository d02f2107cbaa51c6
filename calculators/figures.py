"""Named figures for the guides: computed by the calculators, drawn by `render` as SVG.

A guide asks for one with `[[figure NAME key=value ...]]` (docs/hooks/kernodeck.py), so
every argument arrives as the text the page wrote; each figure reads its own, and a bad
one raises an InputError (a ValueError) naming that argument. The figures are drawn when
the site is built: the pages' worker never imports this module (`calculators.web` exports
lazily and names none of it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

from calculators.checks import positive_int
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_CONCURRENT_SEQUENCES,
    MAX_LORA_RANK,
    MAX_MICRO_BATCH,
    MAX_SEQUENCE_TOKENS,
)
from calculators.memory.envelope import EnvelopeQuery, memory_envelope
from calculators.memory.formats import FORMATS
from calculators.memory.gpus import get_gpu
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.kv_formats import KV_FORMATS
from calculators.memory.weights import weight_bytes
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.parsing import parse_float, parse_int
from calculators.training.step import TrainingQuery, training_fit
from calculators.units import GIB, format_count, format_gib
from calculators.web.render import (
    bar_chart_svg,
    labelled_points_svg,
    line_chart_svg,
    phase_bars_svg,
)

# Contexts a context figure draws unless told: 1K to 128K tokens, doubling (the log2 axis
# puts them evenly apart).
DEFAULT_CONTEXTS = ",".join(str(2**k) for k in range(10, 18))
CONTEXT_LABEL = "context (tokens)"
# A mean KL divergence past this many nats per token is not a quantization worth drawing
# (llama.cpp's worst 1-bit rows stay near 2.3); the bound keeps a typo off the chart.
MAX_KL_NATS = 100.0
KL_LABEL = "mean KL divergence from the reference (nats per token)"


# ---- reading the arguments ----------------------------------------------------------


def _spec(model: str) -> ModelSpec:
    """The preset `model` (InputError naming `model` for an unknown one)."""
    return ModelSpec.from_hf_config(load_preset(model), name=model)


def _count(argument: str, text: str, maximum: int) -> int:
    """A whole number in [1, maximum] from `text`."""
    value = parse_int(argument, text)
    positive_int(argument, value, maximum=maximum)
    return value


def _ids(argument: str, text: str, known: Mapping[str, object]) -> list[str]:
    """Comma-separated ids, each one of `known`, at least one."""
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise InputError(argument, f"{argument} must name at least one, got {shown(text)}")
    for i in ids:
        if i not in known:
            raise InputError(
                argument, f"{argument} must be among {', '.join(known)}; got {shown(i)}"
            )
    return ids


def _contexts(text: str) -> list[int]:
    """Comma-separated context lengths, each in [1, MAX_SEQUENCE_TOKENS], at least one."""
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise InputError("contexts", f"contexts must name at least one, got {shown(text)}")
    return [_count("contexts", part, MAX_SEQUENCE_TOKENS) for part in parts]


def _kl_points(text: str) -> list[tuple[str, float]]:
    """`FORMAT:KL,FORMAT:KL,...`: weights format ids, each once, with a mean KL divergence
    in [0, MAX_KL_NATS] nats per token; at least one pair."""
    pairs = [part.strip() for part in text.split(",") if part.strip()]
    if not pairs:
        raise InputError("points", f"points must name at least one, got {shown(text)}")
    out: list[tuple[str, float]] = []
    for pair in pairs:
        fid, sep, value = pair.partition(":")
        if not sep:
            raise InputError("points", f"points must be FORMAT:KL pairs; got {shown(pair)}")
        fid = _ids("points", fid, FORMATS)[0]
        if fid in dict(out):
            raise InputError("points", f"points names {fid} twice")
        kl = parse_float("points", value)
        if not 0 <= kl <= MAX_KL_NATS:
            raise InputError(
                "points",
                f"points: the KL divergence of {fid} must be in [0, {MAX_KL_NATS:g}]; "
                f"got {shown(value)}",
            )
        out.append((fid, kl))
    return out


def _gib(n_bytes: int) -> float:
    """Bytes in GiB, as the charts plot them (exact: GIB is a power of two)."""
    return n_bytes / GIB


def _gib_text(value: float) -> str:
    """A plotted GiB value in the calculators' own words: `format_gib` of its bytes."""
    return format_gib(round(value * GIB))


# ---- the figures ----------------------------------------------------------------------


def weights_by_format(*, model: str, formats: str) -> str:
    """Weights memory of the model in each number format, GiB.

    model: a preset id; formats: comma-separated weights formats (Reference: formats).
    Each bar is `weight_bytes(...).main_bytes`: the main model, without the
    multi-token-prediction modules that serving does not load by default.
    """
    spec = _spec(model)
    bars = [(f, weight_bytes(spec, f).main_bytes) for f in _ids("formats", formats, FORMATS)]
    return bar_chart_svg(
        bars,
        title=f"{model}: weights by number format, GiB",
        unit_label="weights of the main model, GiB (2^30 bytes)",
    )


def memory_vs_context(
    *,
    model: str,
    batch: str,
    formats: str,
    kv_format: str = "bf16",
    gpu: str = "h100-sxm",
    contexts: str = DEFAULT_CONTEXTS,
    prefill_chunk: str = "",
) -> str:
    """Memory to serve the model against context, one line per weights format, GiB.

    model: a preset id; batch: concurrent sequences; formats: comma-separated weights
    formats; kv_format: the KV cache's format; gpu: the catalog card whose visible memory
    is drawn across; contexts: comma-separated lengths in tokens (1K to 128K unless given);
    prefill_chunk: tokens per prefill step, as vLLM's max_num_batched_tokens (empty: the
    whole batch in one pass, as transformers' generate()). Each point is
    `memory_envelope(...).total_bytes`: weights, KV cache, activations and the card's
    runtime reserves.
    """
    spec = _spec(model)
    n = _count("batch", batch, MAX_CONCURRENT_SEQUENCES)
    weights = _ids("formats", formats, FORMATS)
    kv = KVSettings(kv_format=_ids("kv_format", kv_format, KV_FORMATS)[0])
    card = get_gpu(gpu)
    lengths = _contexts(contexts)
    chunk = _count("prefill_chunk", prefill_chunk, MAX_SEQUENCE_TOKENS) if prefill_chunk else None
    prefill = "one-pass prefill" if chunk is None else f"prefill in {chunk:,}-token chunks"
    series = [
        (
            f,
            [
                (
                    c,
                    _gib(
                        memory_envelope(
                            spec,
                            EnvelopeQuery(
                                context=c, batch=n, weights_format=f, kv=kv, prefill_chunk=chunk
                            ),
                            gpu=card.id,
                            select_cards=False,
                        ).total_bytes
                    ),
                )
                for c in lengths
            ],
        )
        for f in weights
    ]
    return line_chart_svg(
        series,
        x_label=CONTEXT_LABEL,
        y_label=f"memory on one GPU (GiB), {n:,} sequence(s), KV cache in {kv.kv_format}, "
        f"{prefill}",
        title=f"{model}: serving memory against context, by weights format, GiB",
        x_log2=True,
        hlines=[(f"visible on {card.id}", _gib(card.visible_bytes))],
        y_format=_gib_text,
    )


def kv_vs_context(
    *, model: str, batch: str, kv_formats: str, contexts: str = DEFAULT_CONTEXTS
) -> str:
    """KV cache against context, one line per KV cache format, GiB.

    model: a preset id; batch: concurrent sequences; kv_formats: comma-separated KV cache
    formats; contexts: comma-separated lengths in tokens (1K to 128K unless given). Each
    point is `kv_cache_bytes(...).total_bytes` (dynamic allocation, windows honoured).
    """
    spec = _spec(model)
    n = _count("batch", batch, MAX_CONCURRENT_SEQUENCES)
    lengths = _contexts(contexts)
    series = [
        (
            k,
            [
                (
                    c,
                    _gib(
                        kv_cache_bytes(
                            spec, context=c, batch=n, settings=KVSettings(kv_format=k)
                        ).total_bytes
                    ),
                )
                for c in lengths
            ],
        )
        for k in _ids("kv_formats", kv_formats, KV_FORMATS)
    ]
    return line_chart_svg(
        series,
        x_label=CONTEXT_LABEL,
        y_label=f"KV cache (GiB), {n:,} sequence(s)",
        title=f"{model}: KV cache against context, by KV cache format, GiB",
        x_log2=True,
        y_format=_gib_text,
    )


def training_phases(
    *, model: str, micro_batch: str, seq_len: str, precision: str, gpu: str = "h100-sxm"
) -> str:
    """Memory of each phase of a training step, reserves included, against the card, GiB.

    model: a preset id; micro_batch: sequences per GPU; seq_len: tokens per sequence;
    precision: the precision policy (e.g. bf16-fp32-master); gpu: the catalog card. The bars
    are the training calculator's: each phase of `training_fit(...)` plus its reserve
    lines, with AdamW, no checkpointing, one GPU.
    """
    spec = _spec(model)
    query = TrainingQuery(
        micro_batch=_count("micro_batch", micro_batch, MAX_MICRO_BATCH),
        seq_len=_count("seq_len", seq_len, MAX_SEQUENCE_TOKENS),
        precision=precision,
    )
    fit = training_fit(spec, query, gpu=get_gpu(gpu).id)
    reserves = sum(r.bytes for r in fit.reserves)
    return phase_bars_svg(
        [(p.label + " + reserves", p.bytes + reserves) for p in fit.memory.phases],
        fit.visible_bytes,
        f"visible on {gpu}",
    )


def memory_vs_quality(*, model: str, points: str) -> str:
    """Weights memory against mean KL divergence from the reference, one point per format.

    model: a preset id; points: comma-separated FORMAT:KL pairs, FORMAT a weights format
    id and KL a published mean KL divergence of that format from the unquantized model,
    in nats per token, quoted on the page from a committed file
    (`gguf-q4_k_m:[[data:adaptation/llama3-8b-scoreboard.json:rows.q4_K_M.kld_mean]]`), so
    that no figure is retyped. x is `weight_bytes(spec, FORMAT).main_bytes` in GiB: the
    calculators' own bytes for the preset, not the file size a publisher reports. The
    quality of a point is only as transferable as its source: the same model, text and
    context as the reader's, or it is an indication.
    """
    spec = _spec(model)
    drawn = [(fid, _gib(weight_bytes(spec, fid).main_bytes), kl) for fid, kl in _kl_points(points)]
    return labelled_points_svg(
        drawn,
        x_label="weights of the main model, GiB (2^30 bytes), from the calculators",
        y_label=KL_LABEL,
        title=f"{model}: weights memory against mean KL divergence, by format",
        x_format=_gib_text,
        y_format=lambda v: f"{v:.4g}",
    )


def training_by_method(
    *, model: str, micro_batch: str, seq_len: str, rank: str = "16", gpu: str = "h100-sxm"
) -> str:
    """Memory of a whole training step by adaptation method, against the card, GiB.

    model: a preset id; micro_batch: sequences per GPU; seq_len: tokens per sequence;
    rank: the LoRA rank; gpu: the catalog card. One bar per method: full fine-tuning,
    LoRA on the attention projections, LoRA on every linear layer, and QLoRA (LoRA on
    every linear layer of an nf4-dq base). Each bar is the training calculator's
    `training_fit(...).total_bytes` (the step's peak phase plus its reserve lines) in
    bf16-fp32-master with AdamW, full activation checkpointing and one GPU; its label gives the
    parameters the method trains (`trainable_parameters`).
    """
    spec = _spec(model)
    r = _count("rank", rank, MAX_LORA_RANK)
    common = {
        "micro_batch": _count("micro_batch", micro_batch, MAX_MICRO_BATCH),
        "seq_len": _count("seq_len", seq_len, MAX_SEQUENCE_TOKENS),
        "precision": "bf16-fp32-master",
        "checkpointing": "full",
    }
    methods = [
        ("full fine-tuning", {}),
        (f"LoRA r{r}, attention", {"lora_rank": r, "lora_targets": ("all-attention",)}),
        (f"LoRA r{r}, all linear", {"lora_rank": r, "lora_targets": ("all-linear",)}),
        (
            f"QLoRA r{r}, nf4-dq base",
            {"lora_rank": r, "lora_targets": ("all-linear",), "base_format": "nf4-dq"},
        ),
    ]
    card = get_gpu(gpu).id
    bars = []
    visible = 0
    for label, extra in methods:
        fit = training_fit(spec, TrainingQuery(**common, **extra), gpu=card)
        trained = format_count(fit.memory.trainable_parameters)
        bars.append((f"{label} ({trained} trained)", fit.total_bytes))
        visible = fit.visible_bytes
    return phase_bars_svg(bars, visible, f"visible on {gpu}")


FIGURES: dict[str, Callable[..., str]] = {
    "weights-by-format": weights_by_format,
    "memory-vs-context": memory_vs_context,
    "kv-vs-context": kv_vs_context,
    "training-phases": training_phases,
    "memory-vs-quality": memory_vs_quality,
    "training-by-method": training_by_method,
}


def figure_caption(name: str) -> str:
    """The figure's default caption: the first line of its docstring."""
    return (inspect.getdoc(_figure(name)) or name).splitlines()[0]


def _figure(name: str) -> Callable[..., str]:
    if name not in FIGURES:
        raise InputError("figure", f"figure must be one of {', '.join(FIGURES)}; got {shown(name)}")
    return FIGURES[name]


def figure_svg(name: str, arguments: Mapping[str, str]) -> str:
    """The SVG of figure `name` drawn from `arguments` (text, as a page writes them).

    InputError naming the figure when it is unknown, else the argument to blame: one the
    figure does not take, one it needs and was not given, or one whose value it refuses.
    """
    draw = _figure(name)
    taken = inspect.signature(draw).parameters
    for key in arguments:
        if key not in taken:
            raise InputError(
                key, f"{key} is not an argument of {name}; it takes {', '.join(taken)}"
            )
    for key, parameter in taken.items():
        if parameter.default is inspect.Parameter.empty and key not in arguments:
            raise InputError(key, f"{key} is needed by {name}, and was not given")
    return draw(**arguments)
