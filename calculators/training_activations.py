"""Activations a training forward pass keeps for backward, tensor by tensor, in bytes.

Training keeps, until backward reaches it, every tensor an autograd node saved. This
module lists those tensors for one decoder layer as named terms (bytes per token of the
micro-batch), so each can be checked against a measurement, and sums them:

  per layer, no checkpointing (T = micro_batch x seq_len tokens, a = activation bytes):
    norm inputs        n_norms x h x a  (+ fp32 statistics: rstd, and mean for LayerNorm)
    norm outputs       2 x h x a        (the inputs of the q/k/v and of the MLP matmuls)
    q, k, v            (H d + 2 K d) x a  (SDPA/flash save them; GQA: K heads, not
                                          repeated, as flash-attention's native GQA)
    q/k norm inputs    (H d + K d) x a  (Qwen3, OLMo 2, Gemma 3)
    attention output   H d x a          (o_proj's input) and, for SDPA/flash, the kernel's
                                         own saved output H d x a and logsumexp H x 4
    eager scores       H x s x (a_softmax + a)  softmax output and its cast for the
                                         matmul with v (one copy when both are the
                                         same dtype), + dropout mask H s x 1 and output
                                         H s x a when attention dropout is on
    gated MLP          4 x I x a        (gate out, act(gate), up out, the product)
    plain MLP          2 x I x a        (fc out and act(fc out))
    MoE MLP            per routed assignment: h x a (the gathered input) + 4 x I_e x a;
                       + router logits E x 4 (fp32 softmax) and shared experts 4 x I_s x a
    dropout masks      h x 1 after attention and after the MLP (when dropout is on)

For GPT-style blocks with dropout in 16-bit this is 34 s b h + 5 a s^2 b bytes a layer,
Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", arXiv:2205.05198, section 4.1 equation (1) (tests pin it). Outside the layers:
the embedding's indices (8 bytes a token), the final norm's input and output, the logits
in the activation dtype (the model's output holds them) and the fp32 log-softmax that
cross-entropy saves (transformers' ForCausalLMLoss calls `logits.float()` first, a no-op
in fp32; the fp32 copy itself is not saved). Backward through the loss then holds two
fp32 tensors of the logits' size at once (nll_loss's gradient and log_softmax's), the
`loss_backward` transient.

Checkpointing (`torch.utils.checkpoint` on each decoder layer):
  full:       a layer keeps only its input, h x a a token (Korthikanti eq. 6's 2 s b h);
              backward recomputes one layer at a time;
  selective:  Korthikanti section 4.3: recompute only the attention core (the s^2 terms:
              scores, softmax, attention dropout); with SDPA/flash nothing s^2 is kept
              in the first place, so selective equals none there.

Kernel workspaces (cuBLAS, flash) are not saved tensors; they belong to the reserve lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from calculators.spec import LayerSpec, ModelSpec

Checkpointing = Literal["none", "full", "selective"]
Attention = Literal["sdpa", "eager"]

# Per norm and token, the fp32 statistics the norm's backward reads: RMSNorm saves rstd,
# LayerNorm mean and rstd (aten native_layer_norm / _fused_rms_norm outputs).
NORM_STAT_BYTES = {"rmsnorm": 4, "layernorm": 8}
INDEX_BYTES = 8  # int64 token ids saved by the embedding's backward
MASK_BYTES = 1  # torch.bool dropout mask (aten native_dropout)
LOSS_BYTES = 4  # cross-entropy runs in fp32 (autocast's fp32 op list; HF's logits.float())


@dataclass(frozen=True, kw_only=True)
class ActivationTerm:
    """One saved tensor (or group) of a layer: bytes per token, and which scale with s."""

    id: str
    label: str
    bytes_per_token: int


@dataclass(frozen=True, kw_only=True)
class ActivationSettings:
    """What shapes the saved tensors: dtypes, attention kernel, dropout, MoE capacity.

    act_bytes:      bytes per element of activations (2 under bf16/fp16 autocast or pure
                    16-bit, 4 in fp32);
    softmax_bytes:  dtype of the eager softmax output (4: transformers' Llama-style eager
                    attention and autocast run softmax in fp32; pure 16-bit GPT-2: 2);
    capacity_factor: MoE expert capacity as in GShard/Switch (tokens an expert takes =
                    capacity_factor x T x k / E, padded); None is dropless, every
                    assignment computed once (transformers, MegaBlocks).
    """

    act_bytes: int
    softmax_bytes: int
    attention: Attention
    dropout: bool
    capacity_factor: float | None = None


def _attention_terms(
    spec: ModelSpec, layer: LayerSpec, s: int, st: ActivationSettings
) -> list[ActivationTerm]:
    a, heads = st.act_bytes, spec.num_heads
    if layer.attention == "mla":
        m = spec.mla
        assert m is not None
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q_path = 0 if m.q_lora_rank is None else 2 * m.q_lora_rank * a  # q_a out, its norm
        q_bytes, kv_bytes = heads * qk * a, heads * (qk + m.v_head_dim) * a
        latent = (m.kv_lora_rank + m.qk_rope_head_dim + m.kv_lora_rank) * a  # kv_a out, norm
        out_per_head = m.v_head_dim
        terms = [
            ActivationTerm(id="mla_latents", label="MLA latents", bytes_per_token=q_path + latent),
            ActivationTerm(id="qkv", label="q, k, v", bytes_per_token=q_bytes + kv_bytes),
        ]
    else:
        d = spec.head_dim
        terms = [
            ActivationTerm(
                id="qkv",
                label="q, k, v",
                bytes_per_token=(heads + 2 * spec.num_kv_heads) * d * a,
            )
        ]
        if spec.qk_norm is not None:
            terms.append(
                ActivationTerm(
                    id="qk_norm",
                    label="q/k norm inputs",
                    bytes_per_token=(heads + spec.num_kv_heads) * d * a,
                )
            )
        out_per_head = d
    out = heads * out_per_head * a
    if st.attention == "sdpa":
        terms.append(
            ActivationTerm(
                id="attention_out",
                label="attention output (kernel's saved copy, o_proj input), logsumexp",
                bytes_per_token=2 * out + heads * 4,
            )
        )
    else:
        terms.append(ActivationTerm(id="attention_out", label="o_proj input", bytes_per_token=out))
        # a window caps the keys each query attends to, but eager still materialises s x s
        probs = st.softmax_bytes + (a if a != st.softmax_bytes else 0)
        scores = heads * s * probs
        if st.dropout:
            scores += heads * s * (MASK_BYTES + a)
        terms.append(
            ActivationTerm(
                id="scores",
                label="eager attention scores (softmax" + (", dropout)" if st.dropout else ")"),
                bytes_per_token=scores,
            )
        )
    return terms


def _mlp_terms(spec: ModelSpec, layer: LayerSpec, st: ActivationSettings) -> list[ActivationTerm]:
    a, h = st.act_bytes, spec.hidden_size
    per_mlp = 4 if spec.mlp == "gated" else 2
    if not layer.moe:
        return [
            ActivationTerm(
                id="mlp",
                label="MLP intermediates",
                bytes_per_token=per_mlp * spec.intermediate_size * a,
            )
        ]
    moe = spec.moe
    assert moe is not None
    k, e = moe.experts_per_token, moe.n_routed_experts
    # Assignments per token: k (dropless) or the padded capacity per token.
    slots = k if st.capacity_factor is None else st.capacity_factor * k
    routed = round(slots * (h + per_mlp * moe.expert_intermediate_size) * a)
    terms = [
        ActivationTerm(
            id="experts",
            label="routed experts (gathered inputs, intermediates)",
            bytes_per_token=routed,
        ),
        ActivationTerm(id="router", label="router probabilities (fp32)", bytes_per_token=e * 4),
    ]
    if moe.shared_intermediate_size:
        terms.append(
            ActivationTerm(
                id="shared_experts",
                label="shared experts",
                bytes_per_token=per_mlp * moe.shared_intermediate_size * a,
            )
        )
    return terms


def layer_terms(
    spec: ModelSpec, layer: LayerSpec, seq_len: int, st: ActivationSettings
) -> tuple[ActivationTerm, ...]:
    """Saved tensors of one decoder layer with no checkpointing, bytes per token."""
    a, h = st.act_bytes, spec.hidden_size
    terms = [
        ActivationTerm(
            id="norms",
            label="norm inputs and rstd",
            bytes_per_token=spec.norms_per_layer * (h * a + NORM_STAT_BYTES[spec.norm]),
        ),
        ActivationTerm(id="matmul_inputs", label="normed matmul inputs", bytes_per_token=2 * h * a),
        *_attention_terms(spec, layer, seq_len, st),
        *_mlp_terms(spec, layer, st),
    ]
    if st.dropout:
        terms.append(
            ActivationTerm(
                id="dropout_masks",
                label="residual dropout masks",
                bytes_per_token=2 * h * MASK_BYTES,
            )
        )
    return tuple(terms)


def layer_bytes_per_token(
    spec: ModelSpec, layer: LayerSpec, seq_len: int, st: ActivationSettings
) -> int:
    """Sum of `layer_terms`: bytes one token keeps in one layer, no checkpointing."""
    return sum(t.bytes_per_token for t in layer_terms(spec, layer, seq_len, st))


def kept_layer_bytes_per_token(
    spec: ModelSpec,
    layer: LayerSpec,
    seq_len: int,
    st: ActivationSettings,
    checkpointing: Checkpointing,
) -> int:
    """What a layer keeps between its forward and its backward, per token."""
    if checkpointing == "full":
        return spec.hidden_size * st.act_bytes
    terms = layer_terms(spec, layer, seq_len, st)
    if checkpointing == "selective":
        terms = tuple(t for t in terms if t.id != "scores")
    return sum(t.bytes_per_token for t in terms)


def outside_layers_bytes_per_token(spec: ModelSpec, st: ActivationSettings) -> dict[str, int]:
    """Embedding indices, final norm, logits and the loss's fp32 tensors, per token."""
    a, h, v = st.act_bytes, spec.hidden_size, spec.vocab_size
    return {
        "embedding": INDEX_BYTES + (h * MASK_BYTES if st.dropout else 0),
        "final_norm": 2 * h * a + NORM_STAT_BYTES[spec.norm],
        "logits": v * a,
        "loss": v * LOSS_BYTES,
    }


def loss_backward_bytes_per_token(spec: ModelSpec) -> int:
    """Transient of backward through cross-entropy: two fp32 tensors of vocab size a token."""
    return 2 * spec.vocab_size * LOSS_BYTES


def layer_backward_transient_per_token(spec: ModelSpec, st: ActivationSettings) -> int:
    """Gradients of one layer's activations alive at once during its backward (estimate).

    The MLP's backward holds the gradients of its two widest intermediates (gate and up,
    or fc out) and of the residual stream twice (incoming and outgoing): (2 I + 2 h) x a.
    For MoE the routed width is k x I_e. An estimate of the working set, checked by the
    probes, not a count of saved tensors.
    """
    width = spec.intermediate_size
    if spec.moe is not None and any(layer.moe for layer in spec.layers):
        moe = spec.moe
        routed = moe.experts_per_token * moe.expert_intermediate_size
        width = max(width, routed + moe.shared_intermediate_size)
    return (2 * width + 2 * spec.hidden_size) * st.act_bytes
