"""Useful cost of serving a model: for each weights format, KV cache format and card, the
memory, the fit, the decode bound and the cost per million generated tokens.

A workload is S concurrent sequences of T tokens each (prompt plus generated). For one row
(weights format w, KV format k, catalog card g) and n cards of g serving with tensor
parallelism:

  on each card  M(n, S) = D(n, S) + R_context + R_framework + ceil(f x D(n, S))
                D(n, S) = ceil(W / n) + ceil(KV(S) x h_n / n_kv) + A(S)

with W the weights in format w (`calculators.memory.weights.weight_bytes`), KV(S) the
cache of S sequences of T tokens in format k (`calculators.memory.kv_cache`), A(S) the
activation workspace of their prefill (`calculators.memory.activations`: one step of at
most the prefill chunk's tokens, or of every prompt at once without a chunk; with
`vllm_chunk` each card's chunk is what `vllm serve` takes on it when max_num_batched_tokens
is not given, `calculators.serving.runtimes.vllm_batch_defaults`), h_n the KV heads
each card holds (`calculators.memory.tensor_parallel`), and R, f the runtime's reserve
lines (`calculators.memory.reserves`): the envelope calculator's total, line for line, so
that at n = 1 M is `memory_envelope`'s total.

  cards         = the least n in {1} and the valid tensor-parallel degrees up to
                  max_cards with M(n, S) <= visible memory of g; none: does not fit
  max sequences = the largest S' with M(cards, S') <= visible memory (doubling, then
                  bisection: M grows with S'); where no count holds the workload, on the
                  largest count tried
  decode step  >= max(B_card / bandwidth, F / (n x peak))
  tokens/s     <= S / step
  cost per 10^6 generated tokens >= price x n / (tokens/s x 3600) x 10^6

and the same bound and cost with max sequences in place of S, on the same cards: what
those cards reach when the server fills them.

B_card is the bytes one card reads per decode step: its share of the weights the batch
touches and of the KV cache of the S sequences; F the step's FLOPs. Both come from
`calculators.training.throughput.inference_bounds` (the decode roofline of Kaplan et al.
2020, arXiv:2001.08361, table 1, and Pope et al. 2022, arXiv:2211.05102, section 2), split
over n cards as tensor parallelism splits the weights and KV heads. The peak is the card's
highest dense tensor peak in the catalog (FP8 where it has FP8 tensor cores, else BF16),
whatever kernels the format runs: the compute term stays an upper bound.

Assumptions, each making the throughput an upper bound and the cost a lower bound: every
step reads each byte once at the datasheet bandwidth (`calculators.memory.gpus`); the
all-reduces of tensor parallelism cost nothing; prefill time is not counted (only decode
steps); every sequence of the workload decodes on every step; the card rents by the hour
at the given price, used fully. Weights and KV heads split evenly over the cards
(`calculators.memory.tensor_parallel`: its valid degrees and what it does not model).

Quality is the reader's: a value per weights format (and optionally per KV format) they
measured, such as the KL divergence of `python -m probes quant-compare` (lower is better)
or a task score (higher is better). A row is on the frontier when no other priced row
costs at most as much with quality at least as good, and is strictly better in one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from math import isfinite
from typing import Literal

from calculators.checks import positive_int
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_CONCURRENT_SEQUENCES,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_SEQUENCE_TOKENS,
)
from calculators.memory.activations import inference_workspace
from calculators.memory.formats import FORMATS
from calculators.memory.gpus import GPU, GPUS, get_gpu
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.kv_formats import KV_FORMATS
from calculators.memory.reserves import default_reserves, reserve_lines
from calculators.memory.tensor_parallel import DEGREES, card_share, valid_degrees
from calculators.memory.weights import weight_bytes
from calculators.model.spec import ModelSpec, position_warnings
from calculators.serving.runtimes import vllm_batch_defaults
from calculators.training.throughput import inference_bounds

QualityBetter = Literal["lower", "higher"]

# Rows one request computes (weights formats x KV formats x cards): each costs a bisection
# of a few dozen memory totals, so 120 rows stay well under a second in CPython and a few
# seconds in the browser's Pyodide.
MAX_ROWS = 120
# The largest tensor-parallel group considered: the largest of `DEGREES`, one node's cards.
MAX_CARDS = max(DEGREES)
# Lines of measured quality one request may give: one per (format, KV format) pair at most.
MAX_QUALITY_LINES = MAX_ROWS
# The price key that prices every card without its own line (a bare number on the input).
ANY_CARD = "*"
# Seconds per hour and generated tokens per quoted cost.
_HOUR = 3600
_PER = 10**6


@dataclass(frozen=True, kw_only=True)
class UsefulCostQuery:
    """What is served, on what, at what price.

    context:    tokens per sequence (prompt plus generated).
    sequences:  concurrent sequences of the workload.
    gpus:       catalog card ids, each a row group.
    formats:    weights formats (`calculators.memory.formats.FORMATS`).
    kv_formats: KV cache formats (`calculators.memory.kv_formats.KV_FORMATS`).
    prices:     USD per GPU-hour by card id; a card without one has no cost (None).
    max_cards:  the largest tensor-parallel group tried (1 to 8).
    prefill_chunk: tokens per prefill step (a server's max_num_batched_tokens); None: the
                whole workload's prompts in one step, as the envelope calculator counts it.
    vllm_chunk: each card's prefill chunk is `vllm serve`'s default on it (2048 tokens
                below 70 GiB or on an A100, 8192 above); prefill_chunk must then be None.
    quality:    the reader's measurement by (format, KV format); a KV format of None
                applies to every KV format of that weights format.
    quality_better: whether a lower or a higher quality value is better.
    """

    context: int
    sequences: int = 1
    gpus: tuple[str, ...]
    formats: tuple[str, ...]
    kv_formats: tuple[str, ...] = ("bf16",)
    prices: Mapping[str, float] = field(default_factory=dict)
    max_cards: int = MAX_CARDS
    prefill_chunk: int | None = None
    vllm_chunk: bool = False
    quality: Mapping[tuple[str, str | None], float] = field(default_factory=dict)
    quality_better: QualityBetter = "lower"

    def __post_init__(self) -> None:
        positive_int("context", self.context, maximum=MAX_SEQUENCE_TOKENS)
        positive_int("sequences", self.sequences, maximum=MAX_CONCURRENT_SEQUENCES)
        positive_int("max_cards", self.max_cards, maximum=MAX_CARDS)
        if self.prefill_chunk is not None:
            positive_int("prefill_chunk", self.prefill_chunk, maximum=MAX_SEQUENCE_TOKENS)
            if self.vllm_chunk:
                raise InputError(
                    "prefill_chunk",
                    "prefill_chunk must be empty when vllm_chunk is set (each card then "
                    f"prefills in vLLM's default chunk), got {self.prefill_chunk}",
                )
        _ids("gpus", self.gpus, (g.id for g in GPUS))
        _ids("formats", self.formats, FORMATS)
        _ids("kv_formats", self.kv_formats, KV_FORMATS)
        rows = len(self.formats) * len(self.kv_formats) * len(self.gpus)
        if rows > MAX_ROWS:
            raise InputError(
                "gpus",
                f"gpus x formats x kv_formats must be at most {MAX_ROWS} rows, got "
                f"{len(self.gpus)} x {len(self.formats)} x {len(self.kv_formats)} = {rows}",
            )
        for gpu, price in self.prices.items():
            if gpu != ANY_CARD:
                get_gpu_or_error("price", gpu)
            check_price(price, "" if gpu == ANY_CARD else gpu)
        if self.quality_better not in ("lower", "higher"):
            raise InputError(
                "quality_better",
                f"quality_better must be lower or higher; got {shown(self.quality_better)}",
            )
        for (fmt, kv), value in self.quality.items():
            if fmt not in self.formats or (kv is not None and kv not in self.kv_formats):
                name = fmt if kv is None else f"{fmt}/{kv}"
                raise InputError(
                    "quality",
                    f"quality names {shown(name)}, which is not one of the rows' formats "
                    f"({', '.join(self.formats)}) and KV formats ({', '.join(self.kv_formats)})",
                )
            if isinstance(value, bool) or not isinstance(value, int | float) or not isfinite(value):
                raise InputError("quality", f"quality of {fmt} must be a finite number")


def _ids(name: str, values: tuple[str, ...], known: Iterable[str]) -> None:
    """InputError naming `name` unless `values` is a non-empty tuple of known, distinct ids."""
    if not isinstance(values, tuple) or not values:
        raise InputError(name, f"{name} must list at least one id, got {shown(values)}")
    known = tuple(known)
    seen: set[str] = set()
    for v in values:
        if v not in known:
            raise InputError(name, f"{name}: {shown(v)} is not one of {', '.join(known)}")
        if v in seen:
            raise InputError(name, f"{name} lists {shown(v)} twice")
        seen.add(v)


def get_gpu_or_error(field_name: str, gpu: str) -> GPU:
    """The catalog card `gpu`, its error blamed on `field_name`."""
    try:
        return get_gpu(gpu)
    except InputError as e:
        raise InputError(field_name, f"{field_name}: {e}") from None


def check_price(price: object, gpu: str = "") -> float:
    """`price` (USD per GPU-hour) if finite, at least 0 and at most the bound."""
    what = f"price for {gpu}" if gpu else "price"
    if isinstance(price, bool) or not isinstance(price, int | float) or not isfinite(price):
        raise InputError("price", f"{what} must be a finite number, got {shown(price)}")
    if not 0 <= price <= MAX_PRICE_PER_GPU_HOUR:
        raise InputError(
            "price", f"{what} must be in [0, {MAX_PRICE_PER_GPU_HOUR:,}] USD, got {price!r}"
        )
    return float(price)


@dataclass(frozen=True, kw_only=True)
class CostRow:
    """One weights format, KV format and card.

    id:            "FORMAT/KV_FORMAT/GPU", the row's name in references.
    weights_bytes: the whole model's weights (main model: MTP modules not loaded).
    kv_bytes_per_sequence, kv_bytes: one sequence of `context` tokens; the workload.
    activations_bytes: the prefill workspace of the workload (on every card).
    prefill_chunk: the prefill chunk counted on this card (None: every prompt at once).
    cards:         the fewest cards that hold the workload; None: max_cards do not.
    split_cards:   the card count the per-card figures are for: `cards`, or when none
                   holds the workload the largest count tried.
    per_card:      each memory line on one of `split_cards` cards, by id (weights,
                   kv_cache, activations and the reserve lines); sums to per_card_bytes.
    max_sequences: the most sequences of `context` tokens that fit on `split_cards` cards.
    bytes_read_per_card: what one card reads per decode step of the workload.
    decode_tokens_per_second: the upper bound on `cards` cards; None when it does not fit.
    cost_per_million_tokens: the lower bound in USD; None without a fit or a price.
    full_tokens_per_second, full_cost_per_million_tokens: the same with `max_sequences`
                   sequences on `split_cards` cards (None when not one fits, or no price):
                   what the cards could reach with more concurrent sequences.
    frontier:      no other priced row is as cheap and as good (needs quality and cost).
    """

    id: str
    format: str
    kv_format: str
    gpu: str
    runtime: str
    visible_bytes: int
    bandwidth_gb_s: float
    weights_bytes: int
    kv_bytes_per_sequence: int
    kv_bytes: int
    activations_bytes: int
    prefill_chunk: int | None
    cards: int | None
    split_cards: int
    per_card: dict[str, int]
    per_card_bytes: int
    headroom_bytes: int
    max_sequences: int
    bytes_read_per_card: int
    decode_tokens_per_second: float | None
    decode_bound: Literal["bandwidth", "compute"] | None
    price_per_gpu_hour: float | None
    usd_per_hour: float | None
    cost_per_million_tokens: float | None
    full_tokens_per_second: float | None
    full_cost_per_million_tokens: float | None
    quality: float | None
    frontier: bool = False

    @property
    def fits(self) -> bool:
        return self.cards is not None


@dataclass(frozen=True, kw_only=True)
class UsefulCostResult:
    """Every row, in the query's order (formats, then KV formats, then cards).

    cheapest: per weights format, the row id of its lowest cost (formats with no priced
              row that fits are left out).
    """

    rows: tuple[CostRow, ...]
    cheapest: dict[str, str]
    warnings: tuple[str, ...] = ()

    def row(self, row_id: str) -> CostRow:
        for r in self.rows:
            if r.id == row_id:
                return r
        raise KeyError(row_id)


def card_counts(spec: ModelSpec, max_cards: int) -> tuple[int, ...]:
    """The card counts tried: 1, then the tensor-parallel degrees valid for `spec`
    (`calculators.memory.tensor_parallel.valid_degrees`) up to `max_cards`."""
    return (1, *(d for d in valid_degrees(spec) if d <= max_cards))


class _Pair:
    """One (weights format, KV format): its per-card memory at any sequences and card count
    (the envelope's lines, `calculators.memory.envelope`, split as tensor parallelism
    splits them) and the bytes and FLOPs of one decode step of the workload, which do not
    depend on the card."""

    def __init__(self, spec: ModelSpec, q: UsefulCostQuery, fmt: str, kv_format: str) -> None:
        self.spec, self.q, self.fmt, self.kv_format = spec, q, fmt, kv_format
        self.settings = KVSettings(kv_format=kv_format)
        self.weights = weight_bytes(spec, fmt).main_bytes
        self.kv_per_sequence = kv_cache_bytes(
            spec, context=q.context, batch=1, settings=self.settings
        ).per_sequence_bytes
        self.kv_workload = self.kv_bytes(q.sequences)
        self._steps: dict[int, tuple[int, int, int]] = {}

    def step(self, sequences: int) -> tuple[int, int, int]:
        """Weights bytes read, KV bytes read and FLOPs of one decode step of `sequences`
        sequences at the context, on all cards together: they do not depend on the card
        (`inference_bounds`; for MoE the weights read are the experts the batch touches)."""
        if sequences not in self._steps:
            bound = inference_bounds(
                self.spec,
                gpu=self.q.gpus[0],  # any card: only its bytes and FLOPs per step are used
                context=self.q.context,
                batch=sequences,
                weights_format=self.fmt,
                kv=self.settings,
            )
            kv = self.kv_bytes(sequences)
            self._steps[sequences] = (bound.bytes_per_step - kv, kv, bound.flops_per_step)
        return self._steps[sequences]

    def kv_bytes(self, sequences: int) -> int:
        return kv_cache_bytes(
            self.spec, context=self.q.context, batch=sequences, settings=self.settings
        ).total_bytes

    def lines(self, runtime: str, sequences: int, cards: int, chunk: int | None) -> dict[str, int]:
        """Bytes on one of `cards` cards, by line id, reserves included, prefilling in
        chunks of `chunk` tokens (None: every prompt in one step)."""
        share = card_share(self.spec, cards)
        ws = inference_workspace(
            self.spec, context=self.q.context, batch=sequences, prefill_chunk=chunk
        ).total
        demand = {
            "weights": share.weights(self.weights),
            "kv_cache": share.kv_cache(self.kv_bytes(sequences), self.spec.num_kv_heads),
            "activations": ws,
        }
        reserves = reserve_lines(runtime, sum(demand.values()), {})  # type: ignore[arg-type]
        return {**demand, **{line.id: line.bytes for line in reserves}}

    def total(self, runtime: str, sequences: int, cards: int, chunk: int | None) -> int:
        return sum(self.lines(runtime, sequences, cards, chunk).values())

    def bytes_read_per_card(self, sequences: int, cards: int) -> int:
        """What one of `cards` cards reads per decode step of `sequences` sequences: its
        share of the weights read and of their KV cache."""
        weights, kv, _ = self.step(sequences)
        share = card_share(self.spec, cards)
        return share.weights(weights) + share.kv_cache(kv, self.spec.num_kv_heads)

    def decode(
        self, card: GPU, sequences: int, cards: int
    ) -> tuple[float, Literal["bandwidth", "compute"], int]:
        """Upper bound on decode tokens/s of `sequences` sequences on `cards` cards of
        `card`, the term that sets it, and the bytes one card reads per step."""
        read = self.bytes_read_per_card(sequences, cards)
        step, limit = decode_step(
            card=card, cards=cards, bytes_read_per_card=read, flops_per_step=self.step(sequences)[2]
        )
        return sequences / step, limit, read


def most_sequences(fits: Callable[[int], bool], known: int = 0) -> int:
    """The largest S in [1, MAX_CONCURRENT_SEQUENCES] with fits(S), 0 when not one;
    `fits` is true up to a point. From `known` (an S known to fit; 0: none) the search
    doubles until a value fails, then bisects."""
    if known < 1:
        if not fits(1):
            return 0
        known = 1
    low = known
    while low < MAX_CONCURRENT_SEQUENCES:
        probe = min(2 * low, MAX_CONCURRENT_SEQUENCES)
        if not fits(probe):
            high = probe - 1
            break
        low = probe
    else:
        return low
    while low < high:  # fits(low), not fits(high + 1)
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def peak_flops(card: GPU) -> float:
    """The card's highest dense tensor peak, FLOP/s: FP8 where it has FP8 tensor cores."""
    tflops = card.fp8_dense_tflops or card.bf16_dense_tflops
    return tflops * 1e12


def decode_step(
    *, card: GPU, cards: int, bytes_read_per_card: int, flops_per_step: int
) -> tuple[float, Literal["bandwidth", "compute"]]:
    """Seconds per decode step on `cards` cards of `card`, and which term sets it:
    max(bytes read per card / bandwidth, FLOPs / (cards x peak))."""
    t_bw = bytes_read_per_card / (card.bandwidth_gb_s * 1e9)
    t_compute = flops_per_step / (cards * peak_flops(card))
    return max(t_bw, t_compute), "bandwidth" if t_bw >= t_compute else "compute"


def cost_per_million_tokens(price: float, cards: int, tokens_per_second: float) -> float:
    """USD per 10^6 generated tokens: price x cards / (tokens/s x 3600) x 10^6."""
    return price * cards / (tokens_per_second * _HOUR) * _PER


def parse_quality(lines: Iterable[str]) -> dict[tuple[str, str | None], float]:
    """FORMAT=VALUE or FORMAT/KV_FORMAT=VALUE lines (blank ones skipped)."""
    out: dict[tuple[str, str | None], float] = {}
    for raw in lines:
        line = str(raw).strip()
        if not line:
            continue
        name, sep, value = line.partition("=")
        fmt, _, kv = name.strip().partition("/")
        if not sep or not fmt:
            raise InputError(
                "quality", f"quality line {shown(line)} is not FORMAT[/KV_FORMAT]=VALUE"
            )
        try:
            number = float(value.strip())
        except ValueError:
            raise InputError(
                "quality", f"quality line {shown(line)}: {shown(value.strip())} is not a number"
            ) from None
        if not isfinite(number):
            raise InputError("quality", f"quality line {shown(line)}: not a finite number")
        key = (fmt.strip(), kv.strip() or None)
        if key in out:
            raise InputError("quality", f"quality of {shown(name.strip())} is given twice")
        out[key] = number
        if len(out) > MAX_QUALITY_LINES:
            raise InputError("quality", f"quality: at most {MAX_QUALITY_LINES} lines")
    return out


def parse_card_prices(lines: Iterable[str]) -> dict[str, float]:
    """GPU=USD_PER_HOUR lines, or one bare USD_PER_HOUR for every card without its own
    line (stored under the key `ANY_CARD`)."""
    out: dict[str, float] = {}
    for raw in lines:
        line = str(raw).strip()
        if not line:
            continue
        gpu, sep, value = line.rpartition("=")
        gpu = gpu.strip() if sep else ANY_CARD
        if sep and not gpu:
            raise InputError("price", f"price line {shown(line)} is not GPU=USD_PER_HOUR")
        if gpu != ANY_CARD:
            get_gpu_or_error("price", gpu)
        try:
            price = float(value.strip())
        except ValueError:
            raise InputError(
                "price", f"price line {shown(line)}: {shown(value.strip())} is not a number"
            ) from None
        check_price(price, "" if gpu == ANY_CARD else gpu)
        if gpu in out:
            what = "a price for every card" if gpu == ANY_CARD else f"a price for {gpu}"
            raise InputError("price", f"price: {what} is given twice")
        out[gpu] = price
    return out


def _quality_of(q: UsefulCostQuery, fmt: str, kv: str) -> float | None:
    if (fmt, kv) in q.quality:
        return q.quality[(fmt, kv)]
    return q.quality.get((fmt, None))


def _frontier(rows: list[CostRow], better: QualityBetter) -> set[str]:
    """Ids of the priced rows with quality that no other such row dominates."""
    scored = [r for r in rows if r.cost_per_million_tokens is not None and r.quality is not None]
    sign = 1.0 if better == "lower" else -1.0  # compare "badness": lower is better

    def dominated(r: CostRow) -> bool:
        for o in scored:
            cheaper = o.cost_per_million_tokens <= r.cost_per_million_tokens  # type: ignore[operator]
            as_good = sign * o.quality <= sign * r.quality  # type: ignore[operator]
            strict = (
                o.cost_per_million_tokens < r.cost_per_million_tokens  # type: ignore[operator]
                or sign * o.quality < sign * r.quality  # type: ignore[operator]
            )
            if cheaper and as_good and strict:
                return True
        return False

    return {r.id for r in scored if not dominated(r)}


def useful_cost(spec: ModelSpec, q: UsefulCostQuery) -> UsefulCostResult:
    """Every row of `q` (see the module docstring for the formulas and assumptions)."""
    counts = card_counts(spec, q.max_cards)
    rows = [
        _row(pair, get_gpu(gpu), counts)
        for pair in (_Pair(spec, q, f, k) for f in q.formats for k in q.kv_formats)
        for gpu in q.gpus
    ]
    front = _frontier(rows, q.quality_better)
    rows = [replace(r, frontier=r.id in front) for r in rows]
    cheapest: dict[str, str] = {}
    for fmt in q.formats:
        priced = [r for r in rows if r.format == fmt and r.cost_per_million_tokens is not None]
        if priced:
            cheapest[fmt] = min(priced, key=_cost_key).id
    return UsefulCostResult(
        rows=tuple(rows),
        cheapest=cheapest,
        warnings=position_warnings(spec, context=q.context),
    )


def _cost_key(r: CostRow) -> float:
    return float("inf") if r.cost_per_million_tokens is None else r.cost_per_million_tokens


def prefill_chunk_on(q: UsefulCostQuery, card: GPU) -> int | None:
    """The prefill chunk a row of `card` counts: the query's, or with `vllm_chunk` what
    `vllm serve` takes on this card (its torch-visible memory and name decide)."""
    if not q.vllm_chunk:
        return q.prefill_chunk
    return vllm_batch_defaults("vllm", "serve", card.visible_bytes, card.name, q.context)[0]


def _row(pair: _Pair, card: GPU, counts: tuple[int, ...]) -> CostRow:
    q, rt, visible = pair.q, card.runtime, card.visible_bytes
    chunk = prefill_chunk_on(q, card)
    cards = next((n for n in counts if pair.total(rt, q.sequences, n, chunk) <= visible), None)
    split = counts[-1] if cards is None else cards
    lines = pair.lines(rt, q.sequences, split, chunk)
    max_seq = most_sequences(
        lambda s: pair.total(rt, s, split, chunk) <= visible, 0 if cards is None else q.sequences
    )
    tps: float | None = None
    limit: Literal["bandwidth", "compute"] | None = None
    read = pair.bytes_read_per_card(q.sequences, split)
    if cards is not None:
        tps, limit, read = pair.decode(card, q.sequences, cards)
    # the same cards filled with as many sequences as fit: what the workload could reach
    full_tps = pair.decode(card, max_seq, split)[0] if max_seq else None
    price = q.prices.get(card.id, q.prices.get(ANY_CARD))
    cost = None if price is None or tps is None else cost_per_million_tokens(price, split, tps)
    full_cost = (
        None
        if price is None or full_tps is None
        else cost_per_million_tokens(price, split, full_tps)
    )
    return CostRow(
        id=f"{pair.fmt}/{pair.kv_format}/{card.id}",
        format=pair.fmt,
        kv_format=pair.kv_format,
        gpu=card.id,
        runtime=rt,
        visible_bytes=visible,
        bandwidth_gb_s=card.bandwidth_gb_s,
        weights_bytes=pair.weights,
        kv_bytes_per_sequence=pair.kv_per_sequence,
        kv_bytes=pair.kv_workload,
        activations_bytes=lines["activations"],
        prefill_chunk=chunk,
        cards=cards,
        split_cards=split,
        per_card=lines,
        per_card_bytes=sum(lines.values()),
        headroom_bytes=visible - sum(lines.values()),
        max_sequences=max_seq,
        bytes_read_per_card=read,
        decode_tokens_per_second=tps,
        decode_bound=limit,
        price_per_gpu_hour=price,
        usd_per_hour=None if price is None or cards is None else price * cards,
        cost_per_million_tokens=cost,
        full_tokens_per_second=full_tps,
        full_cost_per_million_tokens=full_cost,
        quality=_quality_of(q, pair.fmt, pair.kv_format),
    )


def reserve_descriptions(runtimes: Iterable[str]) -> list[dict[str, object]]:
    """The default reserve lines of each runtime named, as data: id, label, kind, value,
    applies_to and source (the rows hold their bytes by id)."""
    return [
        {
            "runtime": rt,
            "id": r.id,
            "label": r.label,
            "kind": r.kind,
            "value": r.value,
            "applies_to": r.applies_to,
            "source": r.source,
        }
        for rt in dict.fromkeys(runtimes)
        for r in default_reserves(rt)  # type: ignore[arg-type]
    ]
