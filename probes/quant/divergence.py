"""The statistics of llama.cpp's `llama-perplexity --kl-divergence`, per scored position.

Source: ggml-org/llama.cpp tools/perplexity/perplexity.cpp (commit 050fc7f3), functions
`log_softmax(..., kl_divergence_result &)` and `kl_divergence`, and tools/perplexity/README.md.
With P the reference's next-token distribution and Q the quantized model's, at each position:

    KL(P || Q) = sum_v P(v) (ln P(v) - ln Q(v))              (nats)
    same top   = argmax_v Q(v) == argmax_v P(v)
    delta_p    = Q(t) - P(t), t the text's actual next token (a fraction; llama.cpp prints %)
    nll        = -ln Q(t), and nll_ref = -ln P(t)

Over all positions: the mean KL (and its standard error, `mean_and_uncertainty`), the share
of positions whose top token agrees, delta-p's mean, RMS and percentiles (maximum, 99.9,
99, 95, 90, 75, median, 25, 10, 5, 1, 0.1 %, minimum; linear interpolation between sorted
values at fraction x (n - 1), the median the mean of the middle two), and perplexity
exp(mean nll) of each model and their ratio exp(mean nll - mean nll_ref).

Differences from llama.cpp, on purpose: the reference distribution is kept in float32
and used whole, where llama.cpp stores it as 16-bit log-probabilities and drops terms
with ln P < -16 (so its KL can dip below zero by ~1e-4); no BOS token replaces a chunk's
first token (the byte-level models have none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

# (key, fraction) of the percentiles llama.cpp prints, highest first
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("max", 1.0),
    ("p99_9", 0.999),
    ("p99", 0.99),
    ("p95", 0.95),
    ("p90", 0.90),
    ("p75", 0.75),
    ("median", 0.5),
    ("p25", 0.25),
    ("p10", 0.10),
    ("p5", 0.05),
    ("p1", 0.01),
    ("p0_1", 0.001),
    ("min", 0.0),
)


@dataclass(frozen=True)
class PositionStats:
    """Per-position figures of one model against the reference (1-D float64 / bool tensors)."""

    kl: torch.Tensor
    same_top: torch.Tensor
    nll: torch.Tensor
    nll_ref: torch.Tensor
    delta_p: torch.Tensor


def position_stats(
    ref_logits: torch.Tensor, logits: torch.Tensor, targets: torch.Tensor
) -> PositionStats:
    """KL(P || Q), top-1 agreement, nll and delta-p at each position (see the module).

    ref_logits, logits: (positions, vocab); targets: (positions,) the next tokens.
    Computed in float64 so that KL of a model with itself is exactly 0.
    """
    if ref_logits.shape != logits.shape or ref_logits.dim() != 2:
        raise ValueError(
            f"logits must be two (positions, vocab) tensors of one shape; got "
            f"{tuple(ref_logits.shape)} and {tuple(logits.shape)}"
        )
    log_p = torch.log_softmax(ref_logits.double(), dim=-1)
    log_q = torch.log_softmax(logits.double(), dim=-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)
    same_top = ref_logits.argmax(-1) == logits.argmax(-1)
    t = targets.long().unsqueeze(-1)
    lp_t, lq_t = log_p.gather(-1, t).squeeze(-1), log_q.gather(-1, t).squeeze(-1)
    return PositionStats(kl, same_top, -lq_t, -lp_t, lq_t.exp() - lp_t.exp())


def concat(parts: Sequence[PositionStats]) -> PositionStats:
    """The positions of several chunks as one."""
    return PositionStats(
        *(torch.cat([getattr(p, f) for p in parts]) for f in PositionStats.__dataclass_fields__)
    )


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """llama.cpp's percentile: linear interpolation at fraction x (n - 1) of sorted values."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    if fraction <= 0:
        return float(sorted_values[0])
    if fraction >= 1:
        return float(sorted_values[-1])
    p = fraction * (len(sorted_values) - 1)
    i = int(p)
    p -= i
    j = min(i + 1, len(sorted_values) - 1)
    return float((1 - p) * sorted_values[i] + p * sorted_values[j])


def mean_and_stderr(values: torch.Tensor) -> tuple[float, float]:
    """Mean and its standard error sqrt((E[x^2] - E[x]^2) / (n - 1)), 0 for n <= 10
    (perplexity.cpp `mean_and_uncertainty`)."""
    n = values.numel()
    if n < 1:
        raise ValueError("mean of no values")
    v = values.double()
    mean = float(v.mean())
    var = float((v * v).mean()) - mean * mean
    return mean, math.sqrt(var / (n - 1)) if var > 0 and n > 10 else 0.0


def distribution(values: torch.Tensor) -> dict[str, float]:
    """Mean and the percentiles of `PERCENTILES` of 1-D values."""
    ordered = sorted(values.double().tolist())
    out = {"mean": float(values.double().mean())}
    out.update({key: percentile(ordered, f) for key, f in PERCENTILES})
    return out


def summarize(stats: PositionStats) -> dict[str, object]:
    """The run's figures for one format (names as the report's `formats` entries)."""
    kl_mean, kl_err = mean_and_stderr(stats.kl)
    n = stats.kl.numel()
    top = float(stats.same_top.double().mean())
    nll, nll_ref = float(stats.nll.mean()), float(stats.nll_ref.mean())
    return {
        "positions": n,
        "kl_mean": kl_mean,
        "kl_mean_stderr": kl_err,
        "kl": distribution(stats.kl),
        "top1_agreement": top,
        "top1_agreement_stderr": math.sqrt(top * (1 - top) / (n - 1)) if n > 1 else 0.0,
        "delta_p": distribution(stats.delta_p),
        "delta_p_rms": math.sqrt(float((stats.delta_p.double() ** 2).mean())),
        "ppl": math.exp(nll),
        "ppl_reference": math.exp(nll_ref),
        "ppl_ratio": math.exp(nll - nll_ref),
    }
