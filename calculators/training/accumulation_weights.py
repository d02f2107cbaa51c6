"""How much one token counts in an update, micro-batch by micro-batch, under two loss
normalisations, and what data parallelism adds.

An update of G data-parallel ranks, each running k micro-batches, where micro-batch
(g, i) holds n_gi tokens that carry a loss (not padding, not masked), N = sum n_gi:

  token sum      every token weighs 1 / N: the summed token loss of the whole update
                 divided by the update's token count, what one batch of all G k
                 micro-batches gives;
  mean of means  a token of micro-batch (g, i) weighs 1 / (G k n_gi): each micro-batch
                 takes the mean over its own tokens, the k means are averaged (the loss
                 divided by k before each backward) and DDP averages the G ranks;
  rank token sum a token on rank g weighs 1 / (G N_g), N_g = sum_i n_gi: each rank divides
                 by its own token count and DDP averages the ranks (the count was not
                 all-reduced).

Sources: Hugging Face, "Fixing Gradient Accumulation" (blog, 2024-10-16,
huggingface.co/blog/gradient_accumulation): "the correct loss should be computed by the
total loss across all batches in a gradient accumulation step divided by the total
number of all non padding tokens in those batches", not the average of the per-batch
losses; transformers issue #24725 (2023-07-10): two samples of 11 and 101 tokens whose
first token carries no loss, so that under per-sample means a token of the short one
weighs ten times one of the long one (10 and 100 loss-carrying tokens); transformers
`TrainingArguments.average_tokens_across_devices` ("use all_reduce to synchronize
num_tokens_in_batch", transformers issue #34242) for the rank token sum; PyTorch
`DistributedDataParallel` (gradients averaged across processes) and its `no_sync()`
context manager, under which "gradients will be accumulated on module variables, which
will later be synchronized in the first forward-backward pass exiting the context".

Every weight is 1 / (an integer), so each is returned with its exact denominator; the
floats are for charts and the JSON. `calculators.training.batch.micro_batch_weights`
gives the same token-sum and mean-of-means weights for one flat list of micro-batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from calculators.checks import positive_int
from calculators.errors import InputError, shown

__all__ = [
    "MAX_LISTED_MICRO_BATCHES",
    "AccumulationWeights",
    "MicroBatchWeight",
    "UpdateTokens",
    "accumulation_weights",
    "all_reduced_tokens",
    "gradient_all_reduces",
]

# Micro-batches listed in one update (G ranks x k steps): the result holds a line per
# micro-batch, so the count is bounded; 4,096 is 64 ranks x 64 steps, far more than a
# reader types by hand or a page shows.
MAX_LISTED_MICRO_BATCHES = 4_096

_FIELD = "micro_batch_tokens"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, kw_only=True)
class UpdateTokens:
    """The loss-carrying token counts of one update's micro-batches.

    micro_batch_tokens: one tuple per data-parallel rank, each holding its micro-batches'
                        token counts in order (the rank's k accumulation steps);
    gpus, accumulation: the update's ranks and steps, which the counts must match (DDP
                        ranks step together, so every rank runs k micro-batches);
    slots_per_micro_batch: micro_batch x seq_len, the most tokens a micro-batch holds.
    """

    micro_batch_tokens: tuple[tuple[int, ...], ...]
    gpus: int
    accumulation: int
    slots_per_micro_batch: int

    def __post_init__(self) -> None:
        positive_int("gpus", self.gpus)
        positive_int("accumulation", self.accumulation)
        positive_int("slots_per_micro_batch", self.slots_per_micro_batch)
        rows = self.micro_batch_tokens
        if not isinstance(rows, tuple) or not all(isinstance(r, tuple) for r in rows):
            raise InputError(
                _FIELD, f"{_FIELD} must be a tuple of tuples, one per GPU, got {shown(rows)}"
            )
        listed = sum(len(r) for r in rows)
        if listed > MAX_LISTED_MICRO_BATCHES:
            raise InputError(
                _FIELD,
                f"{_FIELD} must list at most {MAX_LISTED_MICRO_BATCHES:,} micro-batches in "
                f"all, got {listed:,}",
            )
        if len(rows) != self.gpus:
            raise InputError(
                _FIELD,
                f"{_FIELD} must hold one line per GPU (gpus = {self.gpus:,}), "
                f"got {len(rows):,} line{'s' if len(rows) != 1 else ''}: "
                + shown(" | ".join(_joined(r) for r in rows)),
            )
        for g, row in enumerate(rows):
            if len(row) != self.accumulation:
                raise InputError(
                    _FIELD,
                    f"{_FIELD} must list one micro-batch per accumulation step "
                    f"(accumulation = {self.accumulation:,}) on each GPU, got "
                    f"{len(row):,} on GPU {g}: {shown(_joined(row))}",
                )
            for i, n in enumerate(row):
                if not _is_int(n) or n < 1:
                    raise InputError(
                        _FIELD,
                        f"{_FIELD} must be at least 1 token per micro-batch (a mean over no "
                        f"tokens is undefined), got {shown(n)} on GPU {g}, step {i}",
                    )
                if n > self.slots_per_micro_batch:
                    raise InputError(
                        _FIELD,
                        f"{_FIELD} must be at most micro_batch x seq_len = "
                        f"{self.slots_per_micro_batch:,} tokens per micro-batch, got {n:,} "
                        f"on GPU {g}, step {i}",
                    )


def _joined(row: Sequence[object]) -> str:
    return ",".join(str(n) for n in row)


def all_reduced_tokens(u: UpdateTokens) -> int:
    """N = sum over ranks g and steps i of n_gi: the update's loss-carrying tokens.

    Under DDP each rank counts only its own micro-batches; one all-reduce (sum) of that
    count gives every rank N before its first backward (transformers gathers and sums
    `num_items_in_batch` when `average_tokens_across_devices` is set).
    """
    return sum(sum(row) for row in u.micro_batch_tokens)


def gradient_all_reduces(gpus: int, accumulation: int, *, no_sync: bool) -> int:
    """Gradient all-reduces per update.

    DDP all-reduces the gradient buckets in every backward, unless the backward runs
    inside `no_sync()`, where gradients accumulate locally and are reduced in the first
    backward after it (PyTorch `DistributedDataParallel.no_sync`). So k per update
    without it, 1 with the first k - 1 micro-batches under it, 0 on one rank. Sums
    commute with the all-reduce, so the accumulated gradient is the same either way
    (up to floating-point order): `no_sync` changes when the reduction happens and what
    it costs, not the weights.
    """
    positive_int("gpus", gpus)
    positive_int("accumulation", accumulation)
    if gpus == 1:
        return 0
    return 1 if no_sync else accumulation


@dataclass(frozen=True, kw_only=True)
class MicroBatchWeight:
    """One micro-batch's tokens and the weight of each of its tokens in the update's loss.

    rank, step:  its data-parallel rank g and accumulation step i;
    tokens:      n_gi;
    *_denominator: the per-token weight is 1 / denominator, exactly:
        token_sum N, mean_of_means G k n_gi, rank_token_sum G N_g.
    """

    rank: int
    step: int
    tokens: int
    token_sum_denominator: int
    mean_of_means_denominator: int
    rank_token_sum_denominator: int

    @property
    def id(self) -> str:
        """'gpu0-step1': how a page names it."""
        return f"gpu{self.rank}-step{self.step}"

    @property
    def token_sum_weight(self) -> float:
        """1 / N."""
        return 1 / self.token_sum_denominator

    @property
    def mean_of_means_weight(self) -> float:
        """1 / (G k n_gi)."""
        return 1 / self.mean_of_means_denominator

    @property
    def rank_token_sum_weight(self) -> float:
        """1 / (G N_g)."""
        return 1 / self.rank_token_sum_denominator

    @property
    def token_sum_share(self) -> float:
        """n_gi / N: the micro-batch's part of the update's loss under the token sum."""
        return self.tokens / self.token_sum_denominator

    @property
    def mean_of_means_share(self) -> float:
        """n_gi / (G k n_gi) = 1 / (G k): every micro-batch counts the same, whatever it
        holds."""
        return self.tokens / self.mean_of_means_denominator

    @property
    def rank_token_sum_share(self) -> float:
        """n_gi / (G N_g)."""
        return self.tokens / self.rank_token_sum_denominator

    @property
    def weight_ratio(self) -> float:
        """The bias of a token here: its mean-of-means weight over its token-sum weight,
        N / (G k n_gi); above 1 a token counts more than in one large batch, below 1 less,
        1 for every micro-batch only when all hold the same number of tokens."""
        return self.token_sum_denominator / self.mean_of_means_denominator


@dataclass(frozen=True, kw_only=True)
class AccumulationWeights:
    """The weights of every micro-batch of one update.

    gpus, accumulation: G and k;
    tokens_per_gpu:     N_g per rank, what each rank counts on its own;
    all_reduced_tokens: N, the sum over ranks, by which the token sum divides;
    micro_batches:      one MicroBatchWeight per micro-batch, rank by rank, step by step;
    spread:             the largest mean-of-means token weight over the smallest,
                        max n / min n (1 when every micro-batch holds as many tokens);
    all_reduces_with_no_sync, all_reduces_without_no_sync: gradient all-reduces per
                        update (`gradient_all_reduces`).
    """

    gpus: int
    accumulation: int
    tokens_per_gpu: tuple[int, ...]
    all_reduced_tokens: int
    micro_batches: tuple[MicroBatchWeight, ...]
    spread: float
    all_reduces_with_no_sync: int
    all_reduces_without_no_sync: int


def accumulation_weights(u: UpdateTokens) -> AccumulationWeights:
    """Per-token weights of each micro-batch under the token sum, the mean of means and the
    rank token sum.

    For micro-batch (g, i) with n_gi tokens, N = sum n_gi, N_g = sum_i n_gi:
      token sum:       w = 1 / N,            share n_gi / N;
      mean of means:   w = 1 / (G k n_gi),   share 1 / (G k);
      rank token sum:  w = 1 / (G N_g),      share n_gi / (G N_g);
      bias:            mean of means / token sum = N / (G k n_gi).
    Each normalisation's shares sum to 1 over the update (the weights times the token
    counts), so they differ only in how the update's loss is spread over its tokens.
    With one rank the rank token sum is the token sum.

    Worked example: micro-batches of 11 and 101 loss-carrying tokens (the sample lengths
    of transformers issue #24725) on one GPU, k = 2: token sum 1/112 for every token;
    mean of means 1/22 for a token of the short one and 1/202 for one of the long one, a
    ratio of 101/11; bias 112/22 and 112/202. Sources: see the module's docstring.
    """
    rows = u.micro_batch_tokens
    g_count, k = u.gpus, u.accumulation
    total = all_reduced_tokens(u)
    per_gpu = tuple(sum(row) for row in rows)
    entries = tuple(
        MicroBatchWeight(
            rank=g,
            step=i,
            tokens=n,
            token_sum_denominator=total,
            mean_of_means_denominator=g_count * k * n,
            rank_token_sum_denominator=g_count * per_gpu[g],
        )
        for g, row in enumerate(rows)
        for i, n in enumerate(row)
    )
    counts = [n for row in rows for n in row]
    return AccumulationWeights(
        gpus=g_count,
        accumulation=k,
        tokens_per_gpu=per_gpu,
        all_reduced_tokens=total,
        micro_batches=entries,
        spread=max(counts) / min(counts),
        all_reduces_with_no_sync=gradient_all_reduces(g_count, k, no_sync=True),
        all_reduces_without_no_sync=gradient_all_reduces(g_count, k, no_sync=False),
    )
