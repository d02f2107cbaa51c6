"""The inference memory envelope: what one GPU must hold to serve a model, line by line.

  total = weights + KV cache + activation workspace
          + runtime context + framework overhead
          + allocator fragmentation x (weights + KV cache + activations)

Every term is a named line with its basis and source; the reserve lines come from
`calculators.memory.reserves` and can be overridden one by one. The total is compared with
the memory the card shows to software (torch's `total_memory`, from
`calculators.memory.gpus`), not the marketed capacity.

For every catalog card the result also answers the selection questions: the longest
context that fits at the query's batch, the most concurrent sequences that fit at its
context (both by bisection on the same total, which grows with either), and, where the
card cannot hold the model alone, the fewest cards that hold it with tensor parallelism
(`calculators.memory.tensor_parallel`: what that split does and does not model).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from calculators.checks import positive_int
from calculators.errors import InputError, shown
from calculators.limits import MAX_CONCURRENT_SEQUENCES, MAX_SEQUENCE_TOKENS
from calculators.memory.activations import inference_workspace
from calculators.memory.gpus import GPU, GPUS, get_gpu
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.reserves import Line as EnvelopeLine
from calculators.memory.reserves import check_reserve_overrides, reserve_lines
from calculators.memory.tensor_parallel import card_share, valid_degrees
from calculators.memory.weights import weight_bytes
from calculators.model.spec import ModelSpec

Runtime = Literal["cuda", "hip"]


@dataclass(frozen=True, kw_only=True)
class EnvelopeQuery:
    """What is served: the format of weights and cache, the context and the batch.

    reserves: overrides of the default reserve lines by id (bytes for fixed lines,
    a fraction in [0, 1) for the fragmentation margin).
    """

    context: int
    batch: int = 1
    weights_format: str = "bf16"
    kv: KVSettings = field(default_factory=KVSettings)
    max_length: int | None = None
    prefill_chunk: int | None = None
    attention: Literal["sdpa", "eager"] = "sdpa"
    include_mtp: bool = False
    keep_unquantized: frozenset[str] | None = None
    reserves: dict[str, int | float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        positive_int("context", self.context, maximum=MAX_SEQUENCE_TOKENS)
        positive_int("batch", self.batch, maximum=MAX_CONCURRENT_SEQUENCES)
        if self.prefill_chunk is not None:
            positive_int("prefill_chunk", self.prefill_chunk, maximum=MAX_SEQUENCE_TOKENS)
        if self.attention not in ("sdpa", "eager"):
            raise InputError(
                "attention", f"attention must be sdpa or eager; got {shown(self.attention)}"
            )
        check_reserve_overrides(self.reserves)


@dataclass(frozen=True, kw_only=True)
class CardFit:
    """The envelope against one catalog card.

    max_context:   the longest context that fits at the query's batch, up to the model's
                   max_position_embeddings (0: not even one token fits).
    max_sequences: the most concurrent sequences of the query's context that fit
                   (0: not one).
    cards_needed:  1 when the card holds the envelope; else the fewest cards of this kind
                   that hold it with tensor parallelism (2, 4 or 8); None when 8 do not.
    per_card_bytes: the total on each card at `cards_needed` (None with it).
    """

    gpu: str
    name: str
    visible_bytes: int
    total_bytes: int
    headroom_bytes: int
    max_context: int = 0
    max_sequences: int = 0
    cards_needed: int | None = None
    per_card_bytes: int | None = None

    @property
    def fits(self) -> bool:
        return self.headroom_bytes >= 0


@dataclass(frozen=True, kw_only=True)
class EnvelopeResult:
    """Envelope lines, total, and the verdict against the chosen card.

    headroom_bytes = visible_bytes - total_bytes; negative means it does not fit.
    cards: every catalog card, each with its own runtime's reserves.
    context_limit: the longest context the card searches try: the model's
        max_position_embeddings (or a static cache's max_length).
    warnings: lengths past the model's max_position_embeddings (computed anyway).
    """

    lines: tuple[EnvelopeLine, ...]
    total_bytes: int
    gpu: str | None
    visible_bytes: int
    headroom_bytes: int
    cards: tuple[CardFit, ...]
    context_limit: int = MAX_SEQUENCE_TOKENS
    warnings: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return self.headroom_bytes >= 0

    def line(self, line_id: str) -> EnvelopeLine:
        """The line called `line_id`."""
        for line in self.lines:
            if line.id == line_id:
                return line
        raise KeyError(line_id)


def _demand_lines(spec: ModelSpec, q: EnvelopeQuery) -> tuple[list[EnvelopeLine], tuple[str, ...]]:
    """Weights, KV cache and activations: the allocations the reserves are added to, and
    the KV cache's warnings."""
    w = weight_bytes(spec, q.weights_format, keep_unquantized=q.keep_unquantized)
    kv = kv_cache_bytes(
        spec, context=q.context, batch=q.batch, settings=q.kv, max_length=q.max_length
    )
    ws = inference_workspace(
        spec, context=q.context, batch=q.batch, prefill_chunk=q.prefill_chunk, attention=q.attention
    )
    weights = w.total_bytes if q.include_mtp else w.main_bytes
    lines = [
        EnvelopeLine(
            id="weights",
            label=f"Weights ({q.weights_format})",
            bytes=weights,
            basis="sum of every stored tensor in its format"
            + ("" if q.include_mtp or not w.mtp_bytes else ", MTP modules not loaded"),
            source="calculators.memory.weights.weight_bytes",
        ),
        EnvelopeLine(
            id="kv_cache",
            label=f"KV cache ({q.kv.kv_format}, {q.kv.allocation})",
            bytes=kv.total_bytes,
            basis=f"{q.batch} sequences x {kv.allocated_length} tokens, "
            f"{kv.bytes_per_token} bytes per token over all layers, windows honoured",
            source="calculators.memory.kv_cache.kv_cache_bytes",
        ),
        EnvelopeLine(
            id="activations",
            label="Activation workspace (estimate)",
            bytes=ws.total,
            basis=f"one layer's prefill working set for {ws.step_tokens} tokens "
            f"plus last-position logits{', eager scores' if ws.scores else ''}; "
            + _prefill_runtime(q.prefill_chunk),
            source="calculators.memory.activations.inference_workspace",
        ),
    ]
    return lines, kv.warnings


def _prefill_runtime(prefill_chunk: int | None) -> str:
    """Which runtimes prefill the way the activation line assumes: the line is one forward
    step's working set, and the step's size is the runtime's choice."""
    if prefill_chunk is None:
        return (
            "the whole batch in one forward pass, as transformers' generate() prefills; "
            "vLLM and SGLang prefill in chunks (set the prefill chunk)"
        )
    return (
        f"prompts prefilled in chunks of {prefill_chunk} tokens, as vLLM "
        "(max_num_batched_tokens) and SGLang (chunked_prefill_size) do"
    )


class _Demand:
    """The envelope's total for any context and batch, the weights computed once: the
    card-selection searches evaluate it a few hundred times."""

    def __init__(self, spec: ModelSpec, q: EnvelopeQuery) -> None:
        w = weight_bytes(spec, q.weights_format, keep_unquantized=q.keep_unquantized)
        self.spec, self.q = spec, q
        self.weights = w.total_bytes if q.include_mtp else w.main_bytes
        self.limit = spec.max_position_embeddings or MAX_SEQUENCE_TOKENS
        if q.kv.allocation == "static" and q.max_length is not None:
            # a static cache is as long as max_length whatever the context
            self.limit = min(self.limit, q.max_length)

    def parts(self, context: int, batch: int, degree: int = 1) -> int:
        """Weights + KV cache + activations on one of `degree` cards."""
        q, share = self.q, card_share(self.spec, degree)
        kv = kv_cache_bytes(
            self.spec, context=context, batch=batch, settings=q.kv, max_length=q.max_length
        ).total_bytes
        ws = inference_workspace(
            self.spec,
            context=context,
            batch=batch,
            prefill_chunk=q.prefill_chunk,
            attention=q.attention,
        ).total
        return share.weights(self.weights) + share.kv_cache(kv, self.spec.num_kv_heads) + ws

    def total(self, runtime: Runtime, context: int, batch: int, degree: int = 1) -> int:
        demand = self.parts(context, batch, degree)
        return demand + sum(line.bytes for line in reserve_lines(runtime, demand, self.q.reserves))


def _largest(fits: Callable[[int], bool], limit: int, known: int = 0) -> int:
    """The largest n in [1, limit] with fits(n), 0 if none; `fits` true up to a point.

    known: an n already known to fit (0: none). From it the search gallops up (n, 2n,
    4n, ...) until a value fails, then bisects: a card's answer is usually within a
    factor of a few of the next smaller card's, which is what `known` carries.
    """
    if known < 1:
        if not fits(1):
            return 0
        known = 1
    low, step = known, known
    while low < limit:
        probe = min(low + step, limit)
        if not fits(probe):
            high = probe - 1
            break
        low, step = probe, step * 2
    else:
        return low
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def _card_fit(
    card: GPU, demand: _Demand, total_bytes: int, known: tuple[int, int] = (0, 0)
) -> CardFit:
    """`card` against the envelope; `known`: a context and a number of sequences that a
    card of the same runtime with less visible memory holds (the searches start there)."""
    q, visible, rt = demand.q, card.visible_bytes, card.runtime
    max_context = _largest(
        lambda t: demand.total(rt, t, q.batch) <= visible, demand.limit, known[0]
    )
    max_sequences = _largest(
        lambda b: demand.total(rt, q.context, b) <= visible, MAX_CONCURRENT_SEQUENCES, known[1]
    )
    needed: int | None = None
    per_card: int | None = None
    if total_bytes <= visible:
        needed, per_card = 1, total_bytes
    else:
        for degree in valid_degrees(demand.spec, demand.q.weights_format):
            each = demand.total(rt, q.context, q.batch, degree)
            if each <= visible:
                needed, per_card = degree, each
                break
    return CardFit(
        gpu=card.id,
        name=card.name,
        visible_bytes=visible,
        total_bytes=total_bytes,
        headroom_bytes=visible - total_bytes,
        max_context=max_context,
        max_sequences=max_sequences,
        cards_needed=needed,
        per_card_bytes=per_card,
    )


def memory_envelope(
    spec: ModelSpec,
    query: EnvelopeQuery,
    *,
    gpu: str | None = "h100-sxm",
    visible_bytes: int | None = None,
    runtime: Runtime = "cuda",
    select_cards: bool = True,
) -> EnvelopeResult:
    """The inference envelope of `spec` for `query`, against a card.

    Either `gpu` (a catalog id; its visible memory and runtime are used) or, with
    gpu=None, `visible_bytes` and `runtime` for a card not in the catalog.
    select_cards=False leaves `cards` empty: the lines alone are a few hundred times
    cheaper than the searches over every catalog card.
    """
    if gpu is not None:
        card = get_gpu(gpu)
        visible, runtime = card.visible_bytes, card.runtime
    else:
        positive_int("visible_bytes", visible_bytes)
        assert visible_bytes is not None
        if runtime not in ("cuda", "hip"):
            raise InputError("runtime", f"runtime must be cuda or hip; got {shown(runtime)}")
        visible = visible_bytes
    demand, warnings = _demand_lines(spec, query)
    demand_bytes = sum(line.bytes for line in demand)

    def total(rt: Runtime) -> tuple[list[EnvelopeLine], int]:
        lines = demand + reserve_lines(rt, demand_bytes, query.reserves)
        return lines, sum(line.bytes for line in lines)

    lines, total_bytes = total(runtime)
    by_runtime = {rt: total(rt)[1] for rt in ("cuda", "hip")}
    fast = _Demand(spec, query)
    # smallest card first within a runtime, so that each search starts from what the
    # previous card held; the catalog's order is kept in the result
    fitted: dict[str, CardFit] = {}
    known: dict[str, tuple[int, int]] = {}
    for c in sorted(GPUS, key=lambda c: (c.runtime, c.visible_bytes)) if select_cards else ():
        fit = _card_fit(c, fast, by_runtime[c.runtime], known.get(c.runtime, (0, 0)))
        fitted[c.id] = fit
        known[c.runtime] = (fit.max_context, fit.max_sequences)
    cards = tuple(fitted[c.id] for c in GPUS if c.id in fitted)
    return EnvelopeResult(
        lines=tuple(lines),
        total_bytes=total_bytes,
        gpu=gpu,
        visible_bytes=visible,
        headroom_bytes=visible - total_bytes,
        cards=cards,
        context_limit=fast.limit,
        warnings=warnings,
    )
