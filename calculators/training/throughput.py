"""Throughput and time: training FLOPs, time at a model FLOPs utilisation, and the
memory-bandwidth and compute bounds of decoding and prefill.

Training FLOPs per token (Chowdhery et al. 2022, PaLM, arXiv:2204.02311, appendix B):
  6 N + 12 L H Q T
with N the parameters a token's matmuls use (active parameters without the
embeddings, which are lookups, plus the output projection, a matmul even when
tied), L layers, H query heads, Q head size and T the sequence length (the
tokens each query attends to, capped at the window on sliding layers). For MLA
the key and value head sizes differ and 12 H Q becomes 6 H (Q_k + Q_v). The
attention term counts the full T x T product, as PaLM does; causal kernels skip
about half of it, which MFU then absorbs.

With the base frozen (LoRA, QLoRA) no weight gradient is computed for the base's
matrices: of the backward pass's 4 N (2 N for the gradients with respect to the inputs,
2 N with respect to the weights: the backward pass costs twice the forward for that
reason, Narayanan et al. 2021, arXiv:2104.04473, appendix) only the first 2 N remain,
while the adapter's N_a parameters train in full:
  4 N + 6 N_a + 12 L H Q T
(`frozen_base_training_flops_per_token`). The LoRA paper reports the same effect as a
25% faster training step on GPT-3 175B (Hu et al. 2021, arXiv:2106.09685, section 4.2).

Time = FLOPs / (GPUs x peak x MFU). MFU is an input; `MFU_REFERENCES` holds
published values to choose it from.

Decoding one step for B sequences reads every weight once and each sequence's KV
cache once, and does 2 N + attention FLOPs per token (Kaplan et al. 2020,
arXiv:2001.08361, table 1; Pope et al. 2022, arXiv:2211.05102, section 2):
  step time >= max(bytes read / bandwidth, FLOPs / peak)
  decode tokens/s <= B / step time
Prefill is compute-bound: tokens/s <= peak x MFU / (2 N + 4 L H Q T) per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from calculators.checks import positive_int
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_CONCURRENT_SEQUENCES,
    MAX_GPUS,
    MAX_SEQUENCE_TOKENS,
    MAX_TRAINING_TOKENS,
)
from calculators.memory.gpus import get_gpu
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.weights import weight_bytes
from calculators.model.params import parameter_counts
from calculators.model.spec import ModelSpec

Precision = Literal["bf16", "fp8"]


@dataclass(frozen=True, kw_only=True)
class MFUReference:
    """A published model FLOPs utilisation, to choose a planning MFU from."""

    value: float
    setting: str
    source: str


MFU_REFERENCES: tuple[MFUReference, ...] = (
    MFUReference(
        value=0.462,
        setting="PaLM 540B, 6144 TPU v4 chips",
        source="Chowdhery et al. 2022, arXiv:2204.02311, table 3",
    ),
    MFUReference(
        value=0.38,
        setting="Llama 3 405B, 16K H100, BF16, 8K sequence (38-43%)",
        source="Llama 3 Herd of Models, arXiv:2407.21783, table 4",
    ),
    MFUReference(
        value=0.552,
        setting="MegaScale, 175B on 12,288 GPUs",
        source="Jiang et al. 2024, arXiv:2402.15627, abstract",
    ),
    MFUReference(
        value=0.30,
        setting="a planning default for a first single-node run, "
        "below the published large-run figures above (an example, not a measurement)",
        source="chosen here; measure yours with the throughput probe",
    ),
)


def _mfu(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise InputError("mfu", f"mfu must be in (0, 1], got {shown(value)}")


def matmul_parameters(spec: ModelSpec) -> int:
    """N for FLOPs: active parameters without the embeddings (lookups), plus the
    vocab x hidden output projection, a matmul whether or not it is tied."""
    c = parameter_counts(spec)
    return c.active_non_embedding + spec.vocab_size * spec.hidden_size


def attention_flops_per_token(spec: ModelSpec, seq_len: int) -> int:
    """Forward attention FLOPs per token: 2 x 2 x H x (Q_k + Q_v) / 2 x T summed over layers.

    QKᵀ and AV are each 2 x H x Q x T multiply-adds per token (T capped by the window).
    """
    positive_int("seq_len", seq_len, maximum=MAX_SEQUENCE_TOKENS)
    if spec.mla is not None:
        qk = spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim
        qv = spec.mla.v_head_dim
    else:
        qk = qv = spec.head_dim
    total = 0
    for layer in spec.layers:
        t = min(seq_len, layer.window) if layer.attention == "sliding" else seq_len
        total += 2 * spec.num_heads * (qk + qv) * t
    return total


def training_flops_per_token(spec: ModelSpec, seq_len: int) -> int:
    """6 N + 3 x forward attention FLOPs (PaLM appendix B: 6N + 12 L H Q T)."""
    return 6 * matmul_parameters(spec) + 3 * attention_flops_per_token(spec, seq_len)


def frozen_base_training_flops_per_token(
    spec: ModelSpec, seq_len: int, adapter_parameters: int
) -> int:
    """4 N + 6 N_a + 3 x forward attention FLOPs: a training step with the base frozen.

    Forward: 2 N for the base and 2 N_a for the adapters (for LoRA, x -> A x -> B A x is
    2 r (d_in + d_out) per wrapped layer and token). Backward: the gradient with respect to
    each matmul's input, 2 N + 2 N_a, since it must reach the adapters of every layer below,
    and the gradient with respect to the adapters' weights, 2 N_a; the base's weight
    gradients, the other 2 N of a full step's 6 N, are never computed. Attention has no
    weights, so its forward-plus-backward factor of 3 is the full step's. Assumptions: the
    adapters sit on matmuls counted in N (LoRA's `all-linear` does not wrap lm_head, whose
    input gradient is still needed); a QLoRA base's dequantization is memory traffic, not
    matmul FLOPs, and lands in the MFU; recomputation under activation checkpointing is
    not counted, as in the full step's 6 N (MFU excludes it, PaLM appendix B).
    """
    positive_int("adapter_parameters", adapter_parameters)
    return (
        4 * matmul_parameters(spec)
        + 6 * adapter_parameters
        + 3 * attention_flops_per_token(spec, seq_len)
    )


def _peak_flops(gpu: str, precision: Precision) -> float:
    card = get_gpu(gpu)
    if precision == "fp8":
        if card.fp8_dense_tflops is None:
            raise InputError("precision", f"precision fp8: {gpu} has no FP8 tensor cores")
        return card.fp8_dense_tflops * 1e12
    if precision != "bf16":
        raise InputError("precision", f"precision must be bf16 or fp8; got {shown(precision)}")
    return card.bf16_dense_tflops * 1e12


@dataclass(frozen=True, kw_only=True)
class TrainingTime:
    """FLOPs and wall-clock time of training on `tokens` tokens."""

    tokens: int
    flops_per_token: int
    adapter_parameters: int | None
    total_flops: int
    gpus: int
    peak_flops_per_gpu: float
    mfu: float
    seconds: float
    tokens_per_second: float

    @property
    def gpu_hours(self) -> float:
        return self.seconds * self.gpus / 3600


def training_time(
    spec: ModelSpec,
    *,
    tokens: int,
    seq_len: int,
    gpu: str,
    gpus: int = 1,
    mfu: float = 0.3,
    precision: Precision = "bf16",
    adapter_parameters: int | None = None,
) -> TrainingTime:
    """time = tokens x flops_per_token / (gpus x peak x mfu).

    adapter_parameters: None trains every parameter (6 N per token,
    `training_flops_per_token`); a count trains only that many adapter parameters on a
    frozen base (4 N + 6 N_a, `frozen_base_training_flops_per_token`).
    """
    positive_int("tokens", tokens, maximum=MAX_TRAINING_TOKENS)
    positive_int("gpus", gpus, maximum=MAX_GPUS)
    _mfu(mfu)
    if adapter_parameters is None:
        per_token = training_flops_per_token(spec, seq_len)
    else:
        per_token = frozen_base_training_flops_per_token(spec, seq_len, adapter_parameters)
    peak = _peak_flops(gpu, precision)
    rate = gpus * peak * mfu / per_token
    return TrainingTime(
        tokens=tokens,
        flops_per_token=per_token,
        adapter_parameters=adapter_parameters,
        total_flops=tokens * per_token,
        gpus=gpus,
        peak_flops_per_gpu=peak,
        mfu=mfu,
        seconds=tokens / rate,
        tokens_per_second=rate,
    )


@dataclass(frozen=True, kw_only=True)
class InferenceBounds:
    """Upper bounds on serving speed for one GPU holding the whole model.

    decode_bound: "bandwidth" or "compute", whichever sets the step time.
    """

    batch: int
    context: int
    bytes_per_step: int
    flops_per_step: int
    decode_step_seconds: float
    decode_tokens_per_second: float
    decode_bound: Literal["bandwidth", "compute"]
    prefill_tokens_per_second: float


def inference_bounds(
    spec: ModelSpec,
    *,
    gpu: str,
    context: int,
    batch: int = 1,
    weights_format: str = "bf16",
    kv: KVSettings | None = None,
    precision: Precision = "bf16",
    mfu: float = 1.0,
) -> InferenceBounds:
    """Roofline bounds of decoding and prefill (see the module docstring).

    Bytes per decode step: the weights of the experts the batch can touch (all of them
    once batch x experts_per_token reaches the expert count, else that many experts)
    plus the KV cache of `batch` sequences at `context`. `mfu` scales the compute
    peak of both bounds (1.0: the hardware bound).
    """
    positive_int("context", context, maximum=MAX_SEQUENCE_TOKENS)
    positive_int("batch", batch, maximum=MAX_CONCURRENT_SEQUENCES)
    _mfu(mfu)
    card = get_gpu(gpu)
    w = weight_bytes(spec, weights_format)
    weights_read = w.main_bytes
    if spec.moe is not None:
        moe = spec.moe
        experts_bytes = w.main_by_category.get("experts", 0)
        touched = min(moe.n_routed_experts, batch * moe.experts_per_token)
        weights_read -= experts_bytes * (moe.n_routed_experts - touched) // moe.n_routed_experts
    kv_read = kv_cache_bytes(spec, context=context, batch=batch, settings=kv).total_bytes
    step_bytes = weights_read + kv_read
    flops = batch * (2 * matmul_parameters(spec) + attention_flops_per_token(spec, context))
    peak = _peak_flops(gpu, precision) * mfu
    t_bw = step_bytes / (card.bandwidth_gb_s * 1e9)
    t_compute = flops / peak
    step = max(t_bw, t_compute)
    prefill_per_token = 2 * matmul_parameters(spec) + attention_flops_per_token(spec, context)
    return InferenceBounds(
        batch=batch,
        context=context,
        bytes_per_step=step_bytes,
        flops_per_step=flops,
        decode_step_seconds=step,
        decode_tokens_per_second=batch / step,
        decode_bound="bandwidth" if t_bw >= t_compute else "compute",
        prefill_tokens_per_second=peak / prefill_per_token,
    )
