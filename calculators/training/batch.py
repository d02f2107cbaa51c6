"""Effective batch: sequences and tokens per optimizer update, and how to normalise the loss.

One optimizer update sees
  sequences_per_update = micro_batch x accumulation x gpus
(data parallel: each of `gpus` ranks runs `accumulation` forward/backward passes of
`micro_batch` sequences before the gradients are all-reduced and the optimizer steps;
PyTorch DistributedDataParallel docs, "gradients are averaged across processes", and
torch.nn.parallel.DistributedDataParallel.no_sync for accumulation).

Tokens per update:
  packed:  sequences x seq_len (every row filled with concatenated documents);
  padded:  real tokens = sequences x mean_sequence_tokens, slots = sequences x seq_len,
           padding_fraction = 1 - mean_sequence_tokens / seq_len.

Loss normalisation: accumulation equals one large batch only if the summed per-token
loss of the whole update is divided by the update's total token count N. Averaging each
micro-batch's own token mean and then averaging over the K micro-batches weights a token
of micro-batch k by 1 / (K n_k) instead of 1 / N, which differs whenever the n_k differ
(Unsloth and Hugging Face, "Fixing Gradient Accumulation", Oct 2024, huggingface.co/blog/
gradient_accumulation; transformers 4.46 passes num_items_in_batch to the loss for this;
the same holds for the mean over DDP ranks).

Learning-rate scaling with batch size is given as heuristics with their sources, not as
laws: see LR_SCALING_RULES.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from calculators.checks import non_negative_int, one_of, positive_int, positive_number
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_ACCUMULATION,
    MAX_GLOBAL_BATCH,
    MAX_GPUS,
    MAX_MICRO_BATCH,
    MAX_SEQUENCE_TOKENS,
)

ScalingRule = Literal["linear", "sqrt"]


def _boolean(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InputError(name, f"{name} must be True or False, got {shown(value)}")


def _finite_real(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(name, f"{name} must be a finite number, got {shown(value)}")


# --- sequences and tokens per update --------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BatchQuery:
    """One data-parallel training step.

    micro_batch:          sequences per forward/backward pass on one GPU;
    accumulation:         passes per GPU before the optimizer steps;
    gpus:                 data-parallel ranks (tensor/pipeline ranks of one replica count once);
    seq_len:              tokens per row (the padded or packed length);
    packing:              True: rows are filled with concatenated documents;
                          False: one document per row, padded to seq_len;
    mean_sequence_tokens: mean real tokens per row; required when packing is False,
                          at most seq_len, and not given when packing is True.
    """

    micro_batch: int
    accumulation: int = 1
    gpus: int = 1
    seq_len: int
    packing: bool = True
    mean_sequence_tokens: int | None = None

    def __post_init__(self) -> None:
        positive_int("micro_batch", self.micro_batch, maximum=MAX_MICRO_BATCH)
        positive_int("accumulation", self.accumulation, maximum=MAX_ACCUMULATION)
        positive_int("gpus", self.gpus, maximum=MAX_GPUS)
        positive_int("seq_len", self.seq_len, maximum=MAX_SEQUENCE_TOKENS)
        _boolean("packing", self.packing)
        if self.packing:
            if self.mean_sequence_tokens is not None:
                raise InputError(
                    "mean_sequence_tokens",
                    "mean_sequence_tokens applies only when packing is False, "
                    f"got {shown(self.mean_sequence_tokens)}",
                )
            return
        if self.mean_sequence_tokens is None:
            raise InputError(
                "mean_sequence_tokens",
                "mean_sequence_tokens is required when packing is False, got None",
            )
        positive_int("mean_sequence_tokens", self.mean_sequence_tokens)
        if self.mean_sequence_tokens > self.seq_len:
            raise InputError(
                "mean_sequence_tokens",
                f"mean_sequence_tokens must be at most seq_len ({self.seq_len:,}), "
                f"got {self.mean_sequence_tokens:,}",
            )


@dataclass(frozen=True, kw_only=True)
class BatchResult:
    """What one optimizer update sees.

    sequences_per_update: micro_batch x accumulation x gpus;
    tokens_per_update:    real (non-padding) tokens;
    slots_per_update:     sequences x seq_len, the token positions computed on;
    padding_per_update:   slots - tokens;
    padding_fraction:     padding / slots (0.0 when packed).
    """

    sequences_per_update: int
    sequences_per_gpu: int
    tokens_per_update: int
    slots_per_update: int
    padding_per_update: int
    padding_fraction: float
    packing: bool


def effective_batch(q: BatchQuery) -> BatchResult:
    """Sequences and tokens per optimizer update.

    sequences = micro_batch x accumulation x gpus;
    packed:  tokens = slots = sequences x seq_len (assumes packing fills every row);
    padded:  tokens = sequences x mean_sequence_tokens, slots = sequences x seq_len,
             padding_fraction = 1 - mean_sequence_tokens / seq_len.
    """
    per_gpu = q.micro_batch * q.accumulation
    sequences = per_gpu * q.gpus
    slots = sequences * q.seq_len
    tokens = slots if q.packing else sequences * q.mean_sequence_tokens
    return BatchResult(
        sequences_per_update=sequences,
        sequences_per_gpu=per_gpu,
        tokens_per_update=tokens,
        slots_per_update=slots,
        padding_per_update=slots - tokens,
        padding_fraction=(slots - tokens) / slots,
        packing=q.packing,
    )


def accumulation_for(global_batch: int, micro_batch: int, gpus: int) -> int:
    """Accumulation steps that give `global_batch` sequences per update.

    accumulation = global_batch / (micro_batch x gpus), which must divide exactly; the
    error names the nearest global batches that do.
    """
    positive_int("global_batch", global_batch, maximum=MAX_GLOBAL_BATCH)
    positive_int("micro_batch", micro_batch, maximum=MAX_MICRO_BATCH)
    positive_int("gpus", gpus, maximum=MAX_GPUS)
    unit = micro_batch * gpus
    below, remainder = divmod(global_batch, unit)
    if remainder:
        lower, upper = below * unit, (below + 1) * unit
        nearest = f"{lower} or {upper}" if lower else f"{upper}"
        raise InputError(
            "global_batch",
            f"global_batch {global_batch} is not a multiple of micro_batch x gpus = "
            f"{micro_batch} x {gpus} = {unit}; nearest: {nearest}",
        )
    return below


def steps_per_epoch(
    dataset_sequences: int, sequences_per_update: int, drop_last: bool = True
) -> int:
    """Optimizer updates in one pass over `dataset_sequences`.

    floor(dataset / per_update) with drop_last (the partial last batch is dropped, as
    torch.utils.data.DataLoader(drop_last=True)); ceil(dataset / per_update) without.
    """
    positive_int("dataset_sequences", dataset_sequences)
    positive_int("sequences_per_update", sequences_per_update)
    _boolean("drop_last", drop_last)
    if drop_last:
        return dataset_sequences // sequences_per_update
    return -(-dataset_sequences // sequences_per_update)


def updates_for_tokens(total_tokens: int, tokens_per_update: int) -> int:
    """Optimizer updates to train on `total_tokens`: ceil(total / per_update)."""
    non_negative_int("total_tokens", total_tokens)
    positive_int("tokens_per_update", tokens_per_update)
    return -(-total_tokens // tokens_per_update)


# --- loss normalisation under accumulation --------------------------------------------


def _micro_batch_tokens(token_counts: Sequence[int | Sequence[int]]) -> tuple[int, ...]:
    """n_k per micro-batch: an int is the micro-batch's token count, a sequence of ints
    its per-sequence lengths (summed)."""
    if isinstance(token_counts, str | bytes) or not isinstance(token_counts, Sequence):
        raise ValueError(f"token_counts must be a sequence of micro-batches, got {token_counts!r}")
    if not token_counts:
        raise ValueError("token_counts must hold at least one micro-batch, got []")
    counts = []
    for k, entry in enumerate(token_counts):
        if isinstance(entry, Sequence) and not isinstance(entry, str | bytes):
            for i, length in enumerate(entry):
                non_negative_int(f"token_counts[{k}][{i}]", length)
            total = sum(entry)
        else:
            total = entry
        positive_int(f"token_counts[{k}]", total)
        counts.append(total)
    return tuple(counts)


@dataclass(frozen=True, kw_only=True)
class MicroBatchWeights:
    """Loss weights of K micro-batches holding n_k tokens, N = sum n_k.

    token_mean:     weight of one token of micro-batch k, 1 / N (equals one large batch);
    mean_of_means:  1 / (K n_k) (each micro-batch averages its own tokens, then the K
                    micro-batch losses are averaged);
    *_share:        the micro-batch's total weight, n_k x per-token weight: n_k / N and 1 / K.
    Both shares sum to 1.
    """

    tokens: tuple[int, ...]
    token_mean: tuple[float, ...]
    mean_of_means: tuple[float, ...]
    token_mean_share: tuple[float, ...]
    mean_of_means_share: tuple[float, ...]


def micro_batch_weights(token_counts: Sequence[int | Sequence[int]]) -> MicroBatchWeights:
    """Per-token and per-micro-batch loss weights under both normalisations.

    token_counts: one entry per micro-batch (over accumulation steps and ranks), either
    its token count n_k or its per-sequence lengths. Weights: 1 / N versus 1 / (K n_k)
    (Unsloth / Hugging Face, "Fixing Gradient Accumulation", Oct 2024).
    """
    counts = _micro_batch_tokens(token_counts)
    total, k = sum(counts), len(counts)
    return MicroBatchWeights(
        tokens=counts,
        token_mean=tuple(1 / total for _ in counts),
        mean_of_means=tuple(1 / (k * n) for n in counts),
        token_mean_share=tuple(n / total for n in counts),
        mean_of_means_share=tuple(1 / k for _ in counts),
    )


@dataclass(frozen=True, kw_only=True)
class LossBias:
    """The two normalisations of the same per-token losses, and their difference.

    token_mean_loss:    sum_k n_k m_k / N (what one large batch reports);
    mean_of_means_loss: (1 / K) sum_k m_k;
    bias:               mean_of_means_loss - token_mean_loss.
    """

    token_mean_loss: float
    mean_of_means_loss: float
    bias: float


def mean_of_means_bias(
    token_counts: Sequence[int | Sequence[int]], mean_losses: Sequence[float]
) -> LossBias:
    """How far the mean of micro-batch mean losses lies from the true token mean.

    m_k is micro-batch k's mean per-token loss over its n_k tokens:
      token mean    = sum_k n_k m_k / sum_k n_k,
      mean of means = sum_k m_k / K,
      bias          = mean of means - token mean,
    zero when all n_k are equal or all m_k are equal. Example: 100 and 300 tokens with
    mean losses 2.0 and 1.0: token mean (200 + 300) / 400 = 1.25, mean of means 1.5,
    bias +0.25: short micro-batches are over-weighted. The gradients differ the same way.
    Source: Unsloth / Hugging Face, "Fixing Gradient Accumulation" (Oct 2024).
    """
    counts = _micro_batch_tokens(token_counts)
    if isinstance(mean_losses, str | bytes) or not isinstance(mean_losses, Sequence):
        raise ValueError(f"mean_losses must be a sequence of numbers, got {mean_losses!r}")
    if len(mean_losses) != len(counts):
        raise ValueError(
            f"mean_losses must have one entry per micro-batch ({len(counts)}), "
            f"got {len(mean_losses)}"
        )
    for k, loss in enumerate(mean_losses):
        _finite_real(f"mean_losses[{k}]", loss)
    token_mean = math.fsum(n * m for n, m in zip(counts, mean_losses, strict=True)) / sum(counts)
    mean_of_means = math.fsum(mean_losses) / len(counts)
    return LossBias(
        token_mean_loss=token_mean,
        mean_of_means_loss=mean_of_means,
        bias=mean_of_means - token_mean,
    )


# --- learning-rate scaling heuristics -------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LRScalingRule:
    """lr_new = lr_base x (batch_new / batch_base) ** exponent. A heuristic, not a law."""

    name: ScalingRule
    exponent: float
    label: str
    source: str
    note: str


LR_SCALING_RULES: dict[str, LRScalingRule] = {
    "linear": LRScalingRule(
        name="linear",
        exponent=1.0,
        label="heuristic",
        source="Goyal et al. 2017, 'Accurate, Large Minibatch SGD: Training ImageNet in "
        "1 Hour', arXiv:1706.02677",
        note="SGD with momentum; lr = 0.1 x batch / 256 for ResNet-50, with gradual "
        "warmup; reported to break down past about 8k images per batch.",
    ),
    "sqrt": LRScalingRule(
        name="sqrt",
        exponent=0.5,
        label="heuristic",
        source="Krizhevsky 2014, 'One weird trick for parallelizing convolutional neural "
        "networks', arXiv:1404.5997; Malladi et al. 2022, 'On the SDEs and Scaling Rules "
        "for Adaptive Gradient Algorithms', arXiv:2205.10287",
        note="Keeps the gradient-noise variance constant; Malladi et al. derive it for "
        "Adam and RMSprop, together with scaling 1 - beta and epsilon.",
    ),
}


@dataclass(frozen=True, kw_only=True)
class ScaledLearningRate:
    """A learning rate moved to a new batch size by one heuristic rule."""

    learning_rate: float
    factor: float
    rule: ScalingRule
    label: str
    source: str


def scaled_learning_rate(
    base_lr: float, base_batch: int, new_batch: int, rule: ScalingRule
) -> ScaledLearningRate:
    """lr_new = base_lr x (new_batch / base_batch) ** exponent (1 linear, 0.5 sqrt).

    A starting point to tune from, not a guarantee (see LR_SCALING_RULES for sources).
    Goyal et al.: base 0.1 at 256, batch 8192 -> 0.1 x 32 = 3.2.
    """
    positive_number("base_lr", base_lr)
    positive_int("base_batch", base_batch)
    positive_int("new_batch", new_batch)
    one_of("rule", rule, tuple(LR_SCALING_RULES))
    spec = LR_SCALING_RULES[rule]
    factor = (new_batch / base_batch) ** spec.exponent
    return ScaledLearningRate(
        learning_rate=base_lr * factor,
        factor=factor,
        rule=spec.name,
        label=spec.label,
        source=spec.source,
    )


# --- where accumulation is not a large batch ------------------------------------------

LIMITS: tuple[str, ...] = (
    "Batch norm computes its statistics per micro-batch (and per GPU unless SyncBatchNorm), "
    "so accumulating K micro-batches is not one batch of K x micro_batch for batch norm; "
    "layer norm and RMS norm are per token and unaffected.",
    "Dropout and other random layers draw from the RNG stream step by step, so the masks "
    "differ from one large batch's; the result is equal in distribution, not bit for bit.",
    "Data order and shuffling: which sequences share an update depends on the sampler, "
    "the number of ranks and drop_last; changing gpus or accumulation changes the batches "
    "even at the same global batch.",
    "Loss normalisation: accumulation equals one large batch only when the summed token "
    "loss is divided by the update's total token count; averaging per-micro-batch (or "
    "per-rank) means over-weights short micro-batches (see mean_of_means_bias).",
    "Floating-point summation order differs, so even an exact normalisation matches one "
    "large batch only to rounding.",
    "Packed tokens_per_update assumes every row is filled; the last, partly filled row of "
    "a packed dataset and any cross-document attention masking are not modelled.",
)
