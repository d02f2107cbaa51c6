"""Check 4, merging keeps the outputs: the logits of the merged model (PEFT's
`merge_and_unload`, W + (alpha / r) B A written into each wrapped weight) against the
unmerged adapter's on the same fixed batch: the largest absolute difference, and the KL
divergence of the merged model's next-token distribution from the adapter's, averaged
over positions, in nats.

In exact arithmetic the two are equal (Hu et al. 2021, arXiv:2106.09685, section 4.1:
"no additional inference latency"); what differs is rounding. Writing W + s B A back
into the base's dtype rounds each weight once, to half a unit in the last place, and the
two orders of summation differ. So the thresholds scale with the dtype's machine epsilon
and the logits' size:

  max |diff|  <= MERGE_ULPS x eps x max |logit|
  mean KL     <= MERGE_KL_EPS2 x eps^2

A perturbation d of the logits changes the softmax by KL ~ Var_p(d) / 2 to second
order, so rounding of relative size eps gives KL of order eps^2 x (logit scale)^2; the
constants leave room for the logits' growth through the layers.

A quantized base cannot hold W + s B A: PEFT dequantizes, adds and quantizes again
(huggingface/peft PR #851), so the merged weights carry a fresh quantization error and
the outputs change (huggingface/peft issue #2321, whose warning PEFT still prints). The
check measures it and warns; merge into a 16-bit copy of the original base instead.

The comparison means something only if the adapter moves the logits by more than the
limit: otherwise a merge that lost the adapter would pass too. The check measures that
effect (logits with the adapter against logits with it disabled) and, when it is within
the limit, reports the check as skipped rather than passed.

The merge runs on the model itself, as the last check: a copy would double the memory of
a large base, and the adapter was saved before (check 3).
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from probes.adapter.base import logits, quiet
from probes.adapter.settings import TITLES, AdapterSettings
from probes.preflight.outcome import CheckOutcome

# 16 units in the last place of the largest logit. Measured on the tiny configs on CPU
# (rank 4 and 8, all-attention, the default --lr): 1 unit in bf16 and fp16 (the final
# rounding of the logits dominates), 3 to 5 in fp32, and 7 once in bf16 on tiny-mixtral,
# where a merged weight's rounding can tip a token's expert choice. 16 leaves a factor
# of 2 above the largest and stays below what the probe's own two-step adapter moves
# the logits by (see below). Not yet measured on a full-size checkpoint.
MERGE_ULPS = 16
# KL / eps^2: measured 0.02 (bf16, fp16) to 0.4 (fp32) on the tiny configs; 4 leaves a
# factor of 10 for logits larger than theirs (KL grows with the logits' square).
MERGE_KL_EPS2 = 4
QUANTIZED_WARNING = (
    "the base is quantized: merging dequantizes, adds B A and quantizes again, so the "
    "merged model's outputs differ from the adapter's (huggingface/peft issue #2321, PR "
    "#851); merge into a 16-bit copy of the original base instead"
)


def kl_mean(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """Mean over positions of KL(P || Q) = sum_v P(v) (ln P(v) - ln Q(v)), in nats, in
    float64, P the adapter's softmax and Q the merged model's."""
    lp = torch.log_softmax(p_logits.double(), dim=-1)
    lq = torch.log_softmax(q_logits.double(), dim=-1)
    kl = (lp.exp() * (lp - lq)).sum(dim=-1)
    return float(kl.mean())


def merge(
    model: nn.Module, s: AdapterSettings, device: str, ids: torch.Tensor
) -> tuple[CheckOutcome, nn.Module]:
    """Merge and compare; returns the outcome and the merged model."""
    out = CheckOutcome(number=4, id="merge", title=TITLES["merge"])
    unmerged = logits(model, ids, device)
    with model.disable_adapter():
        bare = logits(model, ids, device)
    effect = float((unmerged - bare).abs().max())
    dtype = next(p for p in model.parameters() if p.dtype.is_floating_point).dtype
    if s.quantized:
        dtype = torch.bfloat16  # the compute dtype of the probe's bitsandbytes bases
    with quiet(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        merged_model = model.merge_and_unload()
    merged = logits(merged_model, ids, device)
    eps = torch.finfo(dtype).eps
    scale = float(unmerged.abs().max())
    diff = float((unmerged - merged).abs().max())
    kl = kl_mean(unmerged, merged)
    max_diff = MERGE_ULPS * eps * scale
    max_kl = MERGE_KL_EPS2 * eps * eps
    out.measured = {"max_abs_diff": diff, "kl_mean": kl, "adapter_effect": effect}
    out.threshold = {"max_abs_diff": max_diff, "kl_mean": max_kl}
    out.units = {"max_abs_diff": "logit", "kl_mean": "nats"}
    out.details = {
        "dtype": str(dtype).removeprefix("torch."),
        "eps": eps,
        "max_abs_logit": scale,
        "rule": f"max |diff| <= {MERGE_ULPS} eps max|logit|; mean KL <= {MERGE_KL_EPS2} eps^2",
        "adapter_effect": "max |logits with the adapter - logits with it disabled|",
        "peft_warnings": sorted({str(w.message) for w in caught}),
        "quantized_base": s.quantized,
    }
    ok = diff <= max_diff and kl <= max_kl
    out.status = "pass" if ok else "fail"
    out.summary = (
        f"merged vs adapter: max |diff| {diff:.3g} (limit {max_diff:.3g}), "
        f"mean KL {kl:.3g} nats (limit {max_kl:.3g}); the adapter moves the logits by "
        f"up to {effect:.3g}"
    )
    if ok and effect <= max_diff:
        # a merge that dropped the adapter would pass as well: nothing was shown
        out.status = "skipped"
        out.look_at = (
            f"the adapter changes the logits by at most {effect:.3g}, within the limit "
            f"{max_diff:.3g}: a merge that lost it would pass too; raise --lr or check a "
            "trained adapter (--adapter DIR)"
        )
    if s.quantized:
        out.details["warning"] = QUANTIZED_WARNING
        out.summary += "; WARNING: quantized base"
        out.look_at = QUANTIZED_WARNING
    elif not ok:
        out.look_at = (
            "a merge into the wrong weights (a target wrapped twice, fan_in_fan_out on a "
            "Conv1D layer), an adapter scale that differs between forward and merge "
            "(rslora, alpha_pattern), or logits so large that the limits need a wider dtype"
        )
    return out, merged_model
