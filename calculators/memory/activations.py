"""Activation workspace of one inference forward pass (prefill), in bytes.

Inference frees each layer's temporaries before the next layer starts, so the
workspace is the peak of one decoder layer plus what outlives the layers:

  residual stream and normed input:   2 x T x h x a
  attention (GQA):                    T x (2 x H x d + 2 x K x d) x a
                                      (q, attention output, k and v)
  attention (MLA prefill):            T x (H x (d_nope + d_rope) x 2 + H x d_v x 2) x a
                                      (q, k and v rebuilt from the latent, output)
  gated MLP:                          3 x T x I x a (gate, up and their product)
  MoE MLP:                            3 x T x k x I_e x a + T x E x 4 (router logits fp32)
  eager attention scores:             H x T x L x (a + 4)
                                      (the bf16 scores and their fp32 softmax,
                                      transformers' eager_attention_forward); SDPA and
                                      flash kernels never hold them
  logits of the last position:        B x V x (a + 4)
                                      (generate keeps one position, logits_to_keep=1,
                                      and copies it to fp32)

with T tokens in the step (B x L for a whole-prompt prefill, or the chunk of a
chunked prefill), h hidden size, H/K query/KV heads, d head_dim, I intermediate
size, a = 2 bytes (bf16/fp16 activations). It is an estimate of the working set,
not an exact count: kernels add their own scratch (counted in the reserve lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from calculators.checks import positive_int
from calculators.errors import InputError, shown
from calculators.limits import MAX_CONCURRENT_SEQUENCES, MAX_SEQUENCE_TOKENS
from calculators.model.spec import ModelSpec

ACTIVATION_BYTES = 2  # bf16 or fp16 activations


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """The parts of the activation workspace, in bytes."""

    step_tokens: int
    residual: int
    attention: int
    mlp: int
    scores: int
    logits: int

    @property
    def total(self) -> int:
        """residual + the larger of attention and MLP (never live together) + scores + logits."""
        return self.residual + max(self.attention, self.mlp) + self.scores + self.logits


def inference_workspace(
    spec: ModelSpec,
    *,
    context: int,
    batch: int,
    prefill_chunk: int | None = None,
    attention: Literal["sdpa", "eager"] = "sdpa",
) -> Workspace:
    """Peak activation workspace of a prefill of `batch` prompts of `context` tokens.

    prefill_chunk: tokens per forward step when prefill is chunked (vLLM's
    max_num_batched_tokens); None prefills the whole batch at once (transformers'
    generate).
    """
    positive_int("context", context, maximum=MAX_SEQUENCE_TOKENS)
    positive_int("batch", batch, maximum=MAX_CONCURRENT_SEQUENCES)
    if prefill_chunk is not None:
        positive_int("prefill_chunk", prefill_chunk, maximum=MAX_SEQUENCE_TOKENS)
    if attention not in ("sdpa", "eager"):
        raise InputError("attention", f"attention must be sdpa or eager; got {shown(attention)}")
    a = ACTIVATION_BYTES
    t = batch * context if prefill_chunk is None else min(prefill_chunk, batch * context)
    h, heads = spec.hidden_size, spec.num_heads
    if spec.mla is not None:
        m = spec.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        attn = t * heads * (2 * qk + 2 * m.v_head_dim) * a
    else:
        attn = t * (2 * heads + 2 * spec.num_kv_heads) * spec.head_dim * a
    mlp = 3 * t * spec.intermediate_size * a
    if spec.moe is not None and any(layer.moe for layer in spec.layers):
        moe = spec.moe
        routed = 3 * t * moe.experts_per_token * moe.expert_intermediate_size * a
        shared = 3 * t * moe.shared_intermediate_size * a
        mlp = max(mlp, routed + shared + t * moe.n_routed_experts * 4)
    scores = heads * t * context * (a + 4) if attention == "eager" else 0
    return Workspace(
        step_tokens=t,
        residual=2 * t * h * a,
        attention=attn,
        mlp=mlp,
        scores=scores,
        logits=batch * spec.vocab_size * (a + 4),
    )
