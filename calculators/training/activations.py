"""Activations a training forward pass keeps for backward, tensor by tensor, in bytes.

Training keeps, until backward reaches it, every tensor an autograd node saved. This
module lists those tensors for one decoder layer as named terms, for a micro-batch of
b sequences of s tokens (T = b x s), and sums them. With a the bytes of matmul
activations (2 under autocast or in bf16, 4 in fp32) and r those of the residual stream
(4 in fp32 and under autocast, whose parameters and residual stay fp32; 2 in bf16):

  norms             RMSNorm: T x (4 n + 4 + r n)  the input in fp32 (transformers'
                    LlamaRMSNorm upcasts; in fp32 it is the input itself), rstd, and the
                    normalised value cast back, which the weight's multiply saves (Gemma
                    and OLMo 2 multiply in fp32 first: 4 n instead of r n);
                    LayerNorm: T x (r n + 8), input plus mean and rstd (native_layer_norm)
  matmul inputs     T x 2 h x a     (the normed inputs of attention and MLP); under
                    autocast each linear casts its fp32 input on its own (the cast cache
                    holds only leaf weights), so separate q, k, v keep 3 copies and gate,
                    up 2
  q, k, v           T x (H + 2 K) d x a with SDPA/flash (GQA kernels read K heads; a
                    fused qkv keeps its whole output, plus RoPE's new q and k);
                    eager attention repeats k and v to H heads (repeat_kv) and its
                    matmuls copy non-contiguous views: T x 3 H d x a
  q/k norm inputs   as norms, on the q and k heads (Qwen3, OLMo 2, Gemma 3)
  attention output  T x H d x a (o_proj's input; the SDPA kernel's saved output is the
                    same storage), + logsumexp T x H x 4 for SDPA
  eager scores      b x H x s x s x (a_softmax + a): fp32 softmax and its cast for the
                    matmul with v (one copy when the dtypes agree), + a dropout mask
                    (1 byte) and output when attention dropout is on
  gated MLP         T x 4 I x a     (gate out, act(gate), up out, their product)
  plain MLP         T x 2 I x a     (fc out and act(fc out))
  MoE               per routed assignment: (3 h + 4 I_e) x a, the gathered input, the
                    expert's intermediates, its output and its weighted output
                    (transformers' Mixtral: `expert(x) * routing_weight`, then index_add_,
                    which saves its source) + 8 bytes of index; per token the router's
                    fp32 softmax (E x 4), top-k indices and weights (k x 12 + 4); shared
                    experts T x 4 I_s x a (+ h a + a with Qwen2-MoE's sigmoid gate)
  residual dropout  T x 2 h bytes of masks when dropout is on

For GPT-style blocks in 16-bit with dropout and eager attention this is
34 s b h + 5 a s^2 b bytes a layer, Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", arXiv:2205.05198, section 4.1 equation (1)
(the tests pin it; LayerNorm's fp32 mean and rstd come on top).

LoRA (frozen base): a frozen linear does not save its input (autograd saves a matmul
input only to compute its weight's gradient), so the matmul inputs, o_proj's input, the
MLP product (down_proj's input) and the gathered expert inputs are kept only where an
adapter wraps the layer that reads them; frozen norm weights keep no normalised value;
the first layer's first norm keeps nothing (the frozen embedding's output needs no
gradient); the adapters add T x r x a per wrapped matrix (lora_A's output) and
lora_dropout is taken as 0 (peft's default).

Outside the layers: token ids (8 bytes a token), the RoPE cos/sin tables (2 s d_rope a),
the final norm and lm_head's input, and the fp32 log-softmax that cross-entropy saves
(transformers' ForCausalLMLoss upcasts the logits; neither the logits nor their fp32 copy
are saved, and a training loop that returns only the loss frees them).

Checkpointing (`torch.utils.checkpoint` on each decoder layer): `full` keeps only each
layer's input, T x h x r (Korthikanti eq. 6's 2 s b h in 16-bit), and backward recomputes
one layer at a time; `selective` (Korthikanti section 4.3) recomputes only the s^2
attention terms, so with SDPA/flash it equals `none`.

Kernel workspaces (cuBLAS, flash) are not saved tensors; they belong to the reserve lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from calculators.model.spec import LayerSpec, ModelSpec

Checkpointing = Literal["none", "full", "selective"]
Attention = Literal["sdpa", "eager"]

RSTD_BYTES = 4  # fp32 rstd a row (RMSNorm); LayerNorm keeps mean and rstd, 8
INDEX_BYTES = 8  # int64 token ids and expert indices
MASK_BYTES = 1  # torch.bool dropout mask (aten native_dropout)
LOSS_BYTES = 4  # cross-entropy runs in fp32 (autocast's fp32 op list; HF's logits.float())
FLOAT_MASK_BYTES = 4  # an explicit boolean attention mask, converted to float by SDPA
# SDPA's math kernel computes 16-bit inputs in fp32 (torch.backends.cuda.
# allow_fp16_bf16_reduction_math_sdp is False by default), so what it saves is fp32.
MATH_KERNEL_BYTES = 4

_ATTENTION_INPUT = ("q_proj", "k_proj", "v_proj", "qkv_proj", "q_a_proj", "kv_a_proj_with_mqa")
_MLP_INPUT = ("gate_proj", "up_proj", "gate_up_proj", "c_fc")


@dataclass(frozen=True, kw_only=True)
class ActivationTerm:
    """One saved tensor (or group) of a layer, in bytes for the whole micro-batch."""

    id: str
    label: str
    bytes: int


@dataclass(frozen=True, kw_only=True)
class ActivationSettings:
    """What shapes the saved tensors.

    act_bytes:      matmul activations (2 under autocast or in bf16, 4 in fp32);
    residual_bytes: the residual stream (4 in fp32 and under autocast, 2 in bf16);
    softmax_bytes:  the eager softmax output (4: transformers' Llama-style eager
                    attention and autocast run softmax in fp32; pure 16-bit GPT-2: 2);
    capacity_factor: MoE expert capacity as in GShard/Switch (an expert takes
                    capacity_factor x T x k / E tokens, padded); None is dropless;
    lora_targets:   module names wrapped by adapters (None: full fine-tuning);
    lora_rank:      their rank;
    lora_matrices:  wrapped module names present in a layer (each adds lora_A's output).
    """

    act_bytes: int
    residual_bytes: int
    softmax_bytes: int
    attention: Attention
    dropout: bool
    capacity_factor: float | None = None
    lora_targets: frozenset[str] | None = None
    lora_rank: int = 0
    lora_matrices: int = 0

    def trains(self, *modules: str) -> bool:
        """True when one of `modules` has a trainable weight (always without LoRA)."""
        return self.lora_targets is None or any(m in self.lora_targets for m in modules)


# RMSNorm classes that multiply by the weight in fp32 and cast afterwards, so the fp32
# normalised value is what the multiply saves: GemmaRMSNorm (`output * (1.0 +
# self.weight.float())`, then `type_as(x)`) and Olmo2RMSNorm (`(self.weight *
# hidden_states).to(input_dtype)`), transformers/models/{gemma,gemma2,gemma3,olmo2}.
# LlamaRMSNorm and the Qwen, Mistral and Phi-3 copies cast first, then multiply.
_WEIGHT_IN_FP32 = ("gemma", "gemma2", "gemma3", "gemma3_text", "olmo2")


def norm_bytes(
    spec: ModelSpec, rows: int, size: int, in_bytes: int, *, weight_trains: bool = True
) -> int:
    """What one norm over `rows` rows of `size` keeps (see the module docstring).

    A frozen weight (LoRA) needs no normalised value for its gradient, so only the
    input and rstd stay.
    """
    if spec.norm == "layernorm":
        return rows * (in_bytes * size + 2 * RSTD_BYTES)
    normalised = 4 if spec.model_type in _WEIGHT_IN_FP32 else in_bytes
    return rows * (4 * size + RSTD_BYTES + (normalised * size if weight_trains else 0))


def _layer_norm_terms(
    spec: ModelSpec, t: int, st: ActivationSettings, input_requires_grad: bool
) -> int:
    """Decoder-layer norms: pre-norms read the residual (r), post-norms a branch output (a).

    When nothing before the layer trains (LoRA's first layer), the first pre-norm's
    input needs no gradient and the norm keeps nothing.
    """
    post = sum(1 for n in spec.norm_names if n.startswith("post_"))
    if spec.norm_names == ("input_layernorm", "post_attention_layernorm"):
        post = 0  # Llama's post_attention_layernorm is the MLP's pre-norm
    pre = spec.norms_per_layer - post
    if not input_requires_grad and pre:
        pre -= 1
    h, trains = spec.hidden_size, st.lora_targets is None
    return pre * norm_bytes(spec, t, h, st.residual_bytes, weight_trains=trains) + post * (
        norm_bytes(spec, t, h, st.act_bytes, weight_trains=trains)
    )


def _qkv_bytes(spec: ModelSpec, t: int, st: ActivationSettings) -> int:
    a, heads, kv, d = st.act_bytes, spec.num_heads, spec.num_kv_heads, spec.head_dim
    if st.attention == "eager":
        # repeat_kv makes k and v of H heads, and matmul copies non-contiguous views:
        # q, k and v are kept as three tensors of H heads whatever the projection layout
        return t * 3 * heads * d * a
    if not spec.fused_qkv:
        return t * (heads + 2 * kv) * d * a
    # SDPA keeps views of a fused output as the whole output; RoPE makes q and k new
    fused = (heads + 2 * kv) * d
    rope = (heads + kv) * d if not spec.learned_positions else 0
    return t * a * (fused + rope)


def _mla_terms(
    spec: ModelSpec, t: int, st: ActivationSettings, math_kernel: bool
) -> list[ActivationTerm]:
    m = spec.mla
    assert m is not None
    a, heads = st.act_bytes, spec.num_heads
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    w = st.lora_targets is None
    latents = norm_bytes(spec, t, m.kv_lora_rank, a, weight_trains=w) + t * m.kv_lora_rank * a
    if m.q_lora_rank is not None:
        latents += norm_bytes(spec, t, m.q_lora_rank, a, weight_trains=w)
        latents += t * m.q_lora_rank * a
    if math_kernel:  # SDPA's math kernel keeps fp32 k and v (q goes in scaled)
        qkv = t * heads * (qk + m.v_head_dim) * MATH_KERNEL_BYTES
    else:  # q (rope'd, concatenated), k, and kv_b's output, of which v is a view
        qkv = t * heads * (2 * qk + m.qk_nope_head_dim + m.v_head_dim) * a
    return [
        ActivationTerm(id="mla_latents", label="MLA latents and their norms", bytes=latents),
        ActivationTerm(id="qkv", label="q, k, v", bytes=qkv),
    ]


def _attention_terms(
    spec: ModelSpec, layer: LayerSpec, b: int, s: int, st: ActivationSettings
) -> list[ActivationTerm]:
    a, heads, t = st.act_bytes, spec.num_heads, b * s
    if layer.attention == "mla":
        m = spec.mla
        assert m is not None
        v_dim = m.v_head_dim
        # SDPA's flash kernels need one head size for q, k and v; otherwise the math
        # kernel runs and keeps the scores as eager attention does (q scaled, then probs),
        # in fp32.
        math_kernel = st.attention == "sdpa" and m.qk_nope_head_dim + m.qk_rope_head_dim != v_dim
        terms = _mla_terms(spec, t, st, math_kernel)
    else:
        terms = [ActivationTerm(id="qkv", label="q, k, v", bytes=_qkv_bytes(spec, t, st))]
        if spec.qk_norm is not None:
            d, kv, w = spec.head_dim, spec.num_kv_heads, st.lora_targets is None
            qk_norm = (
                norm_bytes(spec, t * (heads + kv), d, a, weight_trains=w)
                if spec.qk_norm == "per_head"
                else norm_bytes(spec, t, heads * d, a, weight_trains=w)
                + norm_bytes(spec, t, kv * d, a, weight_trains=w)
            )
            terms.append(ActivationTerm(id="qk_norm", label="q/k norms", bytes=qk_norm))
        v_dim, math_kernel = spec.head_dim, False
    out = t * heads * v_dim * a if st.trains("o_proj") else 0
    if st.attention == "sdpa" and not math_kernel:
        terms.append(
            ActivationTerm(
                id="attention_out",
                label="attention output (o_proj input), logsumexp",
                bytes=out + t * heads * 4,
            )
        )
        if layer.attention == "sliding" and layer.window is not None and layer.window < s:
            terms.append(
                ActivationTerm(
                    id="window_mask",
                    label="sliding-window mask (explicit, float)",
                    bytes=s * s * FLOAT_MASK_BYTES,
                )
            )
        return terms
    terms.append(ActivationTerm(id="attention_out", label="o_proj input", bytes=out))
    if math_kernel and st.attention == "sdpa":
        m = spec.mla
        assert m is not None
        scaled_q = t * heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) * MATH_KERNEL_BYTES
        scores = scaled_q + b * heads * s * s * MATH_KERNEL_BYTES
    else:
        probs = st.softmax_bytes + (a if a != st.softmax_bytes else 0)
        scores = b * heads * s * s * probs
    if st.dropout:
        scores += b * heads * s * s * (MASK_BYTES + a)
    terms.append(
        ActivationTerm(
            id="scores",
            label="attention scores (softmax" + (", dropout)" if st.dropout else ")"),
            bytes=scores,
        )
    )
    return terms


def _mlp_bytes(spec: ModelSpec, t: int, width: int, st: ActivationSettings) -> int:
    """An MLP of `width` on t tokens: what its activation and product keep."""
    a = st.act_bytes
    if spec.mlp == "plain":  # act input, and its output if c_proj trains
        return t * width * a * (1 + st.trains("c_proj"))
    return t * width * a * (3 + st.trains("down_proj"))


def _mlp_terms(
    spec: ModelSpec, layer: LayerSpec, t: int, st: ActivationSettings
) -> list[ActivationTerm]:
    a, h = st.act_bytes, spec.hidden_size
    if not layer.moe:
        return [
            ActivationTerm(
                id="mlp",
                label="MLP intermediates",
                bytes=_mlp_bytes(spec, t, spec.intermediate_size, st),
            )
        ]
    moe = spec.moe
    assert moe is not None
    k, e = moe.experts_per_token, moe.n_routed_experts
    assignments = t * k
    if st.capacity_factor is not None:
        per_expert = -(-int(st.capacity_factor * t * k) // e)
        assignments = per_expert * e
    readers = 1 if spec.mlp == "plain" or spec.fused_gate_up else 2
    if st.residual_bytes != a:  # autocast: each expert linear casts the fp32 gathered rows
        gathered = sum(st.trains(m) for m in _MLP_INPUT) and readers * h * a
    else:
        gathered = h * a if st.trains(*_MLP_INPUT) else 0
    # the expert's output is saved for the routing weight's gradient (a trainable router);
    # weighted by fp32 routing weights under autocast, what index_add_ keeps is fp32
    output = h * a if st.lora_targets is None else 0
    weighted = h * st.residual_bytes
    routed = assignments * (gathered + output + weighted + INDEX_BYTES) + _mlp_bytes(
        spec, assignments, moe.expert_intermediate_size, st
    )
    terms = [
        ActivationTerm(id="experts", label="routed experts", bytes=routed),
        ActivationTerm(
            id="router",
            label="router softmax (fp32), top-k indices and weights",
            bytes=t * (e * 4 + k * (INDEX_BYTES + 4) + 4),
        ),
    ]
    if moe.shared_intermediate_size:
        shared = _mlp_bytes(spec, t, moe.shared_intermediate_size, st)
        if moe.shared_expert_gate:
            shared += t * (h * a + a)
        terms.append(ActivationTerm(id="shared_experts", label="shared experts", bytes=shared))
    return terms


def _input_readers(spec: ModelSpec, layer: LayerSpec, st: ActivationSettings) -> tuple[int, int]:
    """Trainable linears reading the attention input and the MLP input (autocast copies)."""
    if layer.attention == "mla":
        m = spec.mla
        assert m is not None
        q_in = "q_proj" if m.q_lora_rank is None else "q_a_proj"
        attention: tuple[str, ...] = (q_in, "kv_a_proj_with_mqa")
    elif spec.fused_qkv:
        attention = ("qkv_proj",)
    else:
        attention = ("q_proj", "k_proj", "v_proj")
    if spec.mlp == "plain":
        mlp: tuple[str, ...] = ("c_fc",)
    elif spec.fused_gate_up:
        mlp = ("gate_up_proj",)
    else:
        mlp = ("gate_proj", "up_proj")
    n_attn = sum(st.trains(m) for m in attention)
    if layer.moe:
        moe = spec.moe
        assert moe is not None
        shared = sum(st.trains(m) for m in mlp) if moe.shared_intermediate_size else 0
        frozen = st.lora_targets is not None  # the router and Qwen2-MoE's shared gate train
        return n_attn, shared + (not frozen) * (1 + moe.shared_expert_gate)
    return n_attn, sum(st.trains(m) for m in mlp)


def layer_terms(
    spec: ModelSpec,
    layer: LayerSpec,
    micro_batch: int,
    seq_len: int,
    st: ActivationSettings,
    *,
    input_requires_grad: bool = True,
) -> tuple[ActivationTerm, ...]:
    """Saved tensors of one decoder layer with no checkpointing, bytes for the micro-batch.

    input_requires_grad: False for the first layer when the embedding is frozen (LoRA).
    """
    t, h, a = micro_batch * seq_len, spec.hidden_size, st.act_bytes
    mla = layer.attention == "mla"
    attention_in = st.trains(*_ATTENTION_INPUT) or (mla and st.trains("q_proj"))
    if layer.moe:  # the router reads it (trainable without LoRA), and shared experts may
        shared = spec.moe is not None and spec.moe.shared_intermediate_size > 0
        mlp_in = st.lora_targets is None or (shared and st.trains(*_MLP_INPUT))
    else:
        mlp_in = st.trains(*_MLP_INPUT)
    copies = 1, 1
    if st.residual_bytes != a:  # autocast: one bf16 copy per linear reading the input
        copies = _input_readers(spec, layer, st)
    terms = [
        ActivationTerm(
            id="norms", label="norms", bytes=_layer_norm_terms(spec, t, st, input_requires_grad)
        ),
        ActivationTerm(
            id="matmul_inputs",
            label="normed matmul inputs",
            bytes=t * h * a * (attention_in * copies[0] + mlp_in * copies[1]),
        ),
        *_attention_terms(spec, layer, micro_batch, seq_len, st),
        *_mlp_terms(spec, layer, t, st),
    ]
    if st.lora_matrices:
        terms.append(
            ActivationTerm(
                id="lora",
                label="LoRA A outputs",
                bytes=t * st.lora_rank * a * st.lora_matrices,
            )
        )
    if st.dropout:
        terms.append(
            ActivationTerm(
                id="dropout_masks", label="residual dropout masks", bytes=t * 2 * h * MASK_BYTES
            )
        )
    return tuple(terms)


def layer_bytes(
    spec: ModelSpec,
    layer: LayerSpec,
    micro_batch: int,
    seq_len: int,
    st: ActivationSettings,
    *,
    input_requires_grad: bool = True,
) -> int:
    """Sum of `layer_terms`: what one layer keeps for the micro-batch, no checkpointing."""
    terms = layer_terms(
        spec, layer, micro_batch, seq_len, st, input_requires_grad=input_requires_grad
    )
    return sum(t.bytes for t in terms)


def kept_layer_bytes(
    spec: ModelSpec,
    layer: LayerSpec,
    micro_batch: int,
    seq_len: int,
    st: ActivationSettings,
    checkpointing: Checkpointing,
    *,
    input_requires_grad: bool = True,
) -> int:
    """What a layer keeps between its forward and its backward."""
    if checkpointing == "full":
        return micro_batch * seq_len * spec.hidden_size * st.residual_bytes
    terms = layer_terms(
        spec, layer, micro_batch, seq_len, st, input_requires_grad=input_requires_grad
    )
    kept = sum(t.bytes for t in terms)
    if checkpointing == "selective" and st.attention == "eager":
        # the recomputed core starts from q and the unrepeated k and v (K heads)
        kept -= next(t.bytes for t in terms if t.id == "scores")
        if layer.attention != "mla":
            t_ = micro_batch * seq_len
            kept -= t_ * 2 * (spec.num_heads - spec.num_kv_heads) * spec.head_dim * st.act_bytes
    return kept


def rope_dim(spec: ModelSpec) -> int:
    """Width of the RoPE tables: head_dim, MLA's rope part, or 0 for learned positions."""
    if spec.learned_positions:
        return 0
    return spec.mla.qk_rope_head_dim if spec.mla is not None else spec.head_dim


def outside_layers_bytes(
    spec: ModelSpec, micro_batch: int, seq_len: int, st: ActivationSettings
) -> dict[str, int]:
    """Token ids, RoPE tables, final norm, lm_head's input and the loss's log-softmax."""
    t, a, h = micro_batch * seq_len, st.act_bytes, spec.hidden_size
    positions = seq_len * INDEX_BYTES if spec.learned_positions else 0
    head_input = t * h * a if st.lora_targets is None else 0
    return {
        "embedding": t * INDEX_BYTES
        + positions
        + 2 * seq_len * rope_dim(spec) * a
        + (t * h * MASK_BYTES if st.dropout else 0),
        "final_norm": norm_bytes(
            spec, t, h, st.residual_bytes, weight_trains=st.lora_targets is None
        )
        + head_input,
        "loss": t * spec.vocab_size * LOSS_BYTES,
    }


def loss_backward_bytes(spec: ModelSpec, micro_batch: int, seq_len: int) -> int:
    """Transient of backward through cross-entropy: two fp32 tensors of the logits' size."""
    return 2 * micro_batch * seq_len * spec.vocab_size * LOSS_BYTES


def layer_backward_transient(
    spec: ModelSpec, micro_batch: int, seq_len: int, st: ActivationSettings
) -> int:
    """Gradients of one layer's activations alive at once during its backward (estimate).

    A gated MLP's backward holds the gradient of one intermediate beside the incoming
    gradient of the residual stream, T x (I + h) x a; a plain MLP frees its activation's
    output before the activation's backward, T x (I / 2 + h) x a. For MoE the width is
    k x I_e plus the shared experts. Fitted to the CPU tracker's backward peaks with
    checkpointing (I from h to 8 h), where the layer stage is the step's peak; not a
    count of saved tensors.
    """
    width = spec.intermediate_size
    if spec.moe is not None and any(layer.moe for layer in spec.layers):
        moe = spec.moe
        routed = moe.experts_per_token * moe.expert_intermediate_size
        width = max(width, routed + moe.shared_intermediate_size)
    if spec.mlp == "plain":
        width //= 2
    return micro_batch * seq_len * (width + spec.hidden_size) * st.act_bytes
