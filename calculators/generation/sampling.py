"""Next-token sampling: the distribution a decoding library draws the next token from, given
the model's logits for that token and the reader's settings, stage by stage.

Every stage rewrites the logits x (one per vocabulary token); a filter sets a token's logit
to -inf (transformers) or drops it from the candidates (llama.cpp), which is the same for
the distribution: the token's probability is exactly 0. The token is then drawn from

  p_i = exp(x_i - m) / Σ_j exp(x_j - m),    m = max_j x_j    (softmax; exp(-inf) = 0)

The stages, each with the value that disables it in both libraries:

- repetition penalty r (1.0 off), CTRL's penalised sampling (Keskar et al. 2019,
  arXiv:1909.05858, section 4.1) with the sign fix both libraries use: for every token of
  the previous ids, once, x_i <- x_i / r when x_i > 0 and x_i * r when x_i < 0 (a zero stays
  zero; llama.cpp writes the test as x_i <= 0, which gives the same result). transformers
  penalises every previous id (prompt and generated); llama.cpp only the last
  `penalty_last_n` tokens its sampler accepted (64 by default, 0 turns it off).
- temperature T (1.0 off): x_i <- x_i / T. transformers refuses T = 0 (greedy decoding is
  do_sample=False; here: top-k 1); llama.cpp reads T <= 0 as greedy.
- top-k k (0 off; Fan et al. 2018, "Hierarchical Neural Story Generation"): transformers
  keeps every token whose logit is at least the k-th largest, so tokens tied with the k-th
  are all kept; llama.cpp keeps exactly k candidates.
- top-p P (1.0 off; Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration",
  nucleus sampling), on the softmax of the logits at that stage: transformers sorts
  ascending, adds the probabilities up and removes every token whose running sum is
  <= 1 - P, keeping the most probable token always; llama.cpp sorts descending and keeps
  the shortest prefix whose running sum is >= P.
- min-p M (0.0 off; Nguyen et al. 2024, "Turning Up the Heat: Min-p Sampling",
  arXiv:2407.01082): a token is removed when p_i < M * max_j p_j, on the softmax at that
  stage; llama.cpp tests the same in logits, x_i < max_j x_j + ln M.

The orders (`ORDER_STAGES`):

- transformers: repetition penalty, temperature, top-k, top-p, min-p, as
  `GenerationMixin._get_logits_processor` appends `RepetitionPenaltyLogitsProcessor`,
  then, with do_sample, `TemperatureLogitsWarper`, `TopKLogitsWarper`, `TopPLogitsWarper`
  and `MinPLogitsWarper` (transformers 5.25.0, src/transformers/generation/utils.py;
  the processors in generation/logits_process.py). Top-p and min-p therefore see the
  temperature-scaled distribution.
- llama.cpp: repetition penalty, top-k, top-p, min-p, temperature: the default chain of
  `common_params_sampling::samplers` (penalties, dry, top_n_sigma, top_k, typ_p, top_p,
  min_p, xtc, temperature; common/common.h at 001d906a6d86e2490e394361e7cc6f478b100088),
  built in that order by `common_sampler_init` with `dist` last (common/sampling.cpp at
  00efb3e184262872916bf136b3df63c1822a19bd); the samplers are those of
  src/llama-sampling.cpp at 0344068cf112e524eb3fbdbd58c171870b63e56c. DRY, top-n-sigma,
  typical-p and XTC are off by default and not modelled. Top-p and min-p therefore see the
  distribution before temperature. (The three files are the versions of
  ggml-org/llama.cpp stored in the project's reference index, each at its own commit.)

Assumptions: arithmetic in float64 (the libraries work in the logits' dtype, float32 for
llama.cpp), sums with `math.fsum` or a compensated running sum, so a token that sits on a
threshold to the last bit may fall the other way in a library. Ties, which neither library
orders (torch.sort and std::partial_sort are not stable), are ranked by token id: among
equal logits the lower id counts as the more probable. min_tokens_to_keep / min_keep are
the libraries' defaults (1 and 0: at least the most probable token is always kept). A
token whose probability underflows to 0 without being filtered still counts as kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import exp, fsum, inf, isfinite, log, log2

from calculators.checks import is_real
from calculators.errors import InputError, shown
from calculators.limits import MAX_PREVIOUS_TOKENS, MAX_SAMPLING_LOGITS

__all__ = [
    "LLAMA_CPP",
    "ORDERS",
    "ORDER_STAGES",
    "STAGE_LABELS",
    "TRANSFORMERS",
    "NextTokenLogits",
    "SamplingResult",
    "SamplingSettings",
    "Stage",
    "entropy_bits",
    "min_p_filtered_logits",
    "penalized_tokens",
    "repetition_penalized_logits",
    "sampling_distribution",
    "softmax",
    "temperature_scaled_logits",
    "top_k_filtered_logits",
    "top_p_filtered_logits",
]

TRANSFORMERS = "transformers"
LLAMA_CPP = "llama.cpp"
ORDERS = (TRANSFORMERS, LLAMA_CPP)

# The stages each library applies, in its order (sources in the module's docstring).
ORDER_STAGES: dict[str, tuple[str, ...]] = {
    TRANSFORMERS: ("repetition_penalty", "temperature", "top_k", "top_p", "min_p"),
    LLAMA_CPP: ("repetition_penalty", "top_k", "top_p", "min_p", "temperature"),
}
STAGE_LABELS = {
    "input": "model logits",
    "repetition_penalty": "repetition penalty",
    "temperature": "temperature",
    "top_k": "top-k",
    "top_p": "top-p",
    "min_p": "min-p",
}

# Bounds that keep every stage finite in float64: a logit of magnitude 10^6 divided by a
# temperature and a penalty of 10^-6 each is 10^18. Real logits are within a few hundred.
LOGIT_LIMIT = 1e6
TEMPERATURE_RANGE = (1e-6, 1e6)
PENALTY_RANGE = (1e-6, 1e6)
# llama.cpp's penalty_last_n default (common_params_sampling in common/common.h).
LLAMA_CPP_PENALTY_LAST_N = 64


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _in_range(name: str, value: object, bounds: tuple[float, float], why: str = "") -> None:
    low, high = bounds
    if not (is_real(value) and isfinite(value) and low <= value <= high):  # type: ignore[arg-type,operator]
        raise InputError(name, f"{name} must be from {low:g} to {high:g}{why}, got {shown(value)}")


@dataclass(frozen=True, kw_only=True)
class SamplingSettings:
    """The reader's sampling settings; each default is the value that disables its stage.

    temperature:        > 0 (from 1e-6 to 1e6); 1.0 is off. transformers refuses 0: for
                        greedy decoding set top_k to 1.
    top_k:              whole number >= 0; 0 is off.
    top_p:              in (0, 1]; 1.0 is off.
    min_p:              in [0, 1]; 0.0 is off.
    repetition_penalty: > 0 (from 1e-6 to 1e6); 1.0 is off; above 1 penalises repeats.
    penalty_last_n:     llama.cpp only: how many of the last previous ids are penalised
                        (its default 64); 0 turns the penalty off.
    order:              'transformers' or 'llama.cpp'.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    penalty_last_n: int = LLAMA_CPP_PENALTY_LAST_N
    order: str = TRANSFORMERS

    def __post_init__(self) -> None:
        t = self.temperature
        if is_real(t) and isfinite(t) and t <= 0:  # type: ignore[arg-type,operator]
            raise InputError(
                "temperature",
                f"temperature must be above 0 (transformers refuses 0; for greedy decoding "
                f"set top_k to 1), got {shown(t)}",
            )
        _in_range("temperature", t, TEMPERATURE_RANGE)
        if not _is_int(self.top_k) or not 0 <= self.top_k <= MAX_SAMPLING_LOGITS:
            raise InputError(
                "top_k",
                f"top_k must be a whole number from 0 (off) to {MAX_SAMPLING_LOGITS:,}, "
                f"got {shown(self.top_k)}",
            )
        p = self.top_p
        if not (is_real(p) and 0 < p <= 1):  # type: ignore[operator]
            raise InputError("top_p", f"top_p must be above 0 and at most 1, got {shown(p)}")
        m = self.min_p
        if not (is_real(m) and 0 <= m <= 1):  # type: ignore[operator]
            raise InputError("min_p", f"min_p must be from 0 to 1, got {shown(m)}")
        _in_range("repetition_penalty", self.repetition_penalty, PENALTY_RANGE)
        n = self.penalty_last_n
        if not _is_int(n) or not 0 <= n <= MAX_PREVIOUS_TOKENS:
            raise InputError(
                "penalty_last_n",
                f"penalty_last_n must be a whole number from 0 to {MAX_PREVIOUS_TOKENS:,}, "
                f"got {shown(n)}",
            )
        if self.order not in ORDERS:
            raise InputError(
                "order", f"order must be one of {', '.join(ORDERS)}; got {shown(self.order)}"
            )


@dataclass(frozen=True, kw_only=True)
class NextTokenLogits:
    """The model's logits for the next token and the ids the repetition penalty looks at.

    logits:   1 to MAX_SAMPLING_LOGITS finite numbers, each of magnitude at most 1e6, one
              per vocabulary token (token id = position).
    previous: token ids already in the sequence, oldest first, each a position in `logits`;
              at most MAX_PREVIOUS_TOKENS.
    """

    logits: tuple[float, ...]
    previous: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        x = self.logits
        if not isinstance(x, tuple | list) or not 1 <= len(x) <= MAX_SAMPLING_LOGITS:
            count = f"{len(x):,}" if isinstance(x, tuple | list) else shown(x)
            raise InputError(
                "logits",
                f"logits must be 1 to {MAX_SAMPLING_LOGITS:,} numbers, one per token, got {count}",
            )
        for i, v in enumerate(x):
            if not (is_real(v) and isfinite(v) and abs(v) <= LOGIT_LIMIT):
                raise InputError(
                    "logits",
                    f"logits must be finite numbers of magnitude at most {LOGIT_LIMIT:g}; "
                    f"token {i} is {shown(v)}",
                )
        ids = self.previous
        if not isinstance(ids, tuple | list) or len(ids) > MAX_PREVIOUS_TOKENS:
            count = f"{len(ids):,}" if isinstance(ids, tuple | list) else shown(ids)
            raise InputError(
                "previous", f"previous must be at most {MAX_PREVIOUS_TOKENS:,} ids, got {count}"
            )
        for t in ids:
            if not _is_int(t) or not 0 <= t < len(x):
                raise InputError(
                    "previous",
                    f"previous must hold token ids from 0 to {len(x) - 1:,} (one per "
                    f"logit), got {shown(t)}",
                )


@dataclass(frozen=True)
class Stage:
    """The distribution after one stage. `logits`: -inf for a filtered token;
    `probabilities`: their softmax; `kept`: tokens not filtered; `enabled`: whether the
    setting is on (a stage that is off passes the logits through unchanged)."""

    id: str
    label: str
    enabled: bool
    logits: tuple[float, ...]
    probabilities: tuple[float, ...]
    kept: int
    entropy_bits: float


@dataclass(frozen=True)
class SamplingResult:
    """Every stage in the library's order, the first being the model's logits as given;
    the distribution sampled from is the last stage's."""

    order: str
    stages: tuple[Stage, ...]
    penalized: tuple[int, ...]

    @property
    def probabilities(self) -> tuple[float, ...]:
        return self.stages[-1].probabilities

    @property
    def kept(self) -> int:
        return self.stages[-1].kept

    @property
    def entropy_bits(self) -> float:
        return self.stages[-1].entropy_bits

    def stage(self, stage_id: str) -> Stage:
        for s in self.stages:
            if s.id == stage_id:
                return s
        raise KeyError(stage_id)


# ---- the quantities ------------------------------------------------------------------


def softmax(logits: Sequence[float]) -> tuple[float, ...]:
    """p_i = exp(x_i - m) / Σ_j exp(x_j - m), m the largest logit: subtracting m keeps
    every exponent <= 0 (no overflow) and the sum >= 1; a -inf logit (a filtered token)
    has probability exactly 0. The sum is correctly rounded (`math.fsum`), so the
    probabilities add up to 1 within a few units in the last place. Needs one finite
    logit."""
    m = max(logits)
    weights = [exp(v - m) for v in logits]  # exp(-inf) is 0.0
    total = fsum(weights)
    return tuple(w / total for w in weights)


def entropy_bits(probabilities: Iterable[float]) -> float:
    """H = -Σ p_i log2 p_i over the tokens with p_i > 0, in bits: 0 when one token is
    certain, log2 n for n equally likely tokens."""
    h = -fsum(p * log2(p) for p in probabilities if p > 0)
    return max(h, 0.0)  # a certain token gives -0.0


def penalized_tokens(previous: Sequence[int], settings: SamplingSettings) -> tuple[int, ...]:
    """The distinct token ids the repetition penalty applies to, ascending: every previous
    id for transformers (`RepetitionPenaltyLogitsProcessor` gathers them all); the last
    `penalty_last_n` for llama.cpp (`llama_sampler_penalties` counts the tokens of its ring
    buffer of that length); none when the penalty is off."""
    if settings.repetition_penalty == 1.0:
        return ()
    if settings.order == LLAMA_CPP:
        n = settings.penalty_last_n
        previous = previous[len(previous) - n :] if n else ()
    return tuple(sorted(set(previous)))


def repetition_penalized_logits(
    logits: Sequence[float], penalized: Iterable[int], penalty: float
) -> tuple[float, ...]:
    """x_i / r for a penalised token with x_i > 0, x_i * r for one with x_i < 0 (a zero
    stays zero), once per token however often it occurred; other tokens unchanged."""
    out = list(logits)
    for i in set(penalized):
        out[i] = out[i] * penalty if out[i] < 0 else out[i] / penalty
    return tuple(out)


def temperature_scaled_logits(logits: Sequence[float], temperature: float) -> tuple[float, ...]:
    """x_i / T for every token (a filtered token stays -inf)."""
    return tuple(v / temperature for v in logits)


def _ranked(logits: Sequence[float], candidates: Iterable[int], count: int) -> list[int]:
    """The `count` most probable candidates, most probable first; among equal logits the
    lower id first."""
    return heapq.nsmallest(count, candidates, key=lambda i: (-logits[i], i))


def _filtered(logits: Sequence[float], keep: Iterable[int]) -> tuple[float, ...]:
    kept = set(keep)
    return tuple(v if i in kept else -inf for i, v in enumerate(logits))


def _candidates(logits: Sequence[float]) -> list[int]:
    return [i for i, v in enumerate(logits) if v != -inf]


def top_k_filtered_logits(logits: Sequence[float], k: int, order: str) -> tuple[float, ...]:
    """Top-k. transformers (`TopKLogitsWarper`): v = the k-th largest logit (filtered tokens
    included), every token with x_i < v filtered, so tokens tied with the k-th all stay.
    llama.cpp (`llama_sampler_top_k_impl`): exactly min(k, candidates) candidates stay, the
    most probable (ties by lower id). k = 0 leaves the logits unchanged."""
    if k <= 0:
        return tuple(logits)
    if order == TRANSFORMERS:
        kth = heapq.nlargest(min(k, len(logits)), logits)[-1]
        return tuple(v if v >= kth else -inf for v in logits)
    candidates = _candidates(logits)
    if k >= len(candidates):
        return tuple(logits)
    return _filtered(logits, _ranked(logits, candidates, k))


def top_p_filtered_logits(logits: Sequence[float], top_p: float, order: str) -> tuple[float, ...]:
    """Top-p (nucleus) on p = softmax(x). transformers (`TopPLogitsWarper`): tokens sorted
    by ascending probability, c_j the running sum up to the j-th; a token with
    c_j <= 1 - P is filtered, the most probable never. llama.cpp (`llama_sampler_top_p`):
    candidates sorted by descending probability, the first j kept where j is the first
    index with c_j >= P (all of them if rounding never gets there). The running sums are
    compensated (Neumaier), and ties are ranked by lower id first. P = 1 leaves the
    logits unchanged."""
    if top_p >= 1.0:
        return tuple(logits)
    probabilities = softmax(logits)
    if order == TRANSFORMERS:
        ascending = sorted(range(len(logits)), key=lambda i: (logits[i], -i))
        threshold = 1.0 - top_p
        most_probable = ascending[-1]
        removed = set()
        for i, running in zip(ascending, _running_sums(probabilities, ascending), strict=True):
            if running > threshold or i == most_probable:
                break  # the sums only grow
            removed.add(i)
        return tuple(-inf if i in removed else v for i, v in enumerate(logits))
    candidates = _candidates(logits)
    descending = _ranked(logits, candidates, len(candidates))
    last = len(descending)
    for j, running in enumerate(_running_sums(probabilities, descending)):
        if running >= top_p:
            last = j + 1
            break
    return _filtered(logits, descending[:last])


def _running_sums(values: Sequence[float], order: Sequence[int]) -> Iterable[float]:
    """Σ values[order[0..j]] for each j, with Neumaier's compensation (each sum within a
    unit or two in the last place of the exact one)."""
    total = 0.0
    lost = 0.0
    for i in order:
        v = values[i]
        t = total + v
        lost += (total - t) + v if abs(total) >= abs(v) else (v - t) + total
        total = t
        yield total + lost


def min_p_filtered_logits(logits: Sequence[float], min_p: float, order: str) -> tuple[float, ...]:
    """Min-p. transformers (`MinPLogitsWarper`): p = softmax(x), a token with
    p_i < M * max_j p_j filtered, the most probable never. llama.cpp
    (`llama_sampler_min_p`): a candidate with x_i < max_j x_j + ln M filtered, the same
    test in logits (p_i / p_max = exp(x_i - x_max)). M = 0 leaves the logits unchanged."""
    if min_p <= 0:
        return tuple(logits)
    if order == TRANSFORMERS:
        probabilities = softmax(logits)
        top = max(range(len(logits)), key=lambda i: (probabilities[i], -i))
        bound = min_p * probabilities[top]
        return tuple(
            -inf if p < bound and i != top else v
            for i, (v, p) in enumerate(zip(logits, probabilities, strict=True))
        )
    lowest = max(logits) + log(min_p)
    return tuple(v if v >= lowest else -inf for v in logits)


# ---- the stages, in a library's order ------------------------------------------------


def _enabled(stage_id: str, s: SamplingSettings) -> bool:
    """Whether the library applies the stage: its setting is not the value that turns it
    off (llama.cpp also skips the penalty when penalty_last_n is 0)."""
    if stage_id == "repetition_penalty":
        return s.repetition_penalty != 1.0 and (s.order == TRANSFORMERS or s.penalty_last_n > 0)
    return {
        "temperature": s.temperature != 1.0,
        "top_k": s.top_k > 0,
        "top_p": s.top_p < 1.0,
        "min_p": s.min_p > 0,
    }[stage_id]


def _stage(stage_id: str, enabled: bool, logits: tuple[float, ...]) -> Stage:
    probabilities = softmax(logits)
    return Stage(
        id=stage_id,
        label=STAGE_LABELS[stage_id],
        enabled=enabled,
        logits=logits,
        probabilities=probabilities,
        kept=sum(1 for v in logits if v != -inf),
        entropy_bits=entropy_bits(probabilities),
    )


def sampling_distribution(inputs: NextTokenLogits, settings: SamplingSettings) -> SamplingResult:
    """The distribution the library samples the next token from, after each of its stages
    in its order (`ORDER_STAGES`); the first stage is the softmax of the logits as given."""
    order = settings.order
    x = tuple(float(v) for v in inputs.logits)
    penalized = penalized_tokens(inputs.previous, settings)
    stages = [_stage("input", True, x)]
    for stage_id in ORDER_STAGES[order]:
        enabled = _enabled(stage_id, settings)
        if enabled:
            if stage_id == "repetition_penalty":
                x = repetition_penalized_logits(x, penalized, settings.repetition_penalty)
            elif stage_id == "temperature":
                x = temperature_scaled_logits(x, settings.temperature)
            elif stage_id == "top_k":
                x = top_k_filtered_logits(x, settings.top_k, order)
            elif stage_id == "top_p":
                x = top_p_filtered_logits(x, settings.top_p, order)
            else:
                x = min_p_filtered_logits(x, settings.min_p, order)
        stages.append(_stage(stage_id, enabled, x))
    return SamplingResult(order=order, stages=tuple(stages), penalized=penalized)
