"""A reference decoder in torch, built from the same `ModelSpec` the calculators read.

Its state-dict names and shapes are those of `calculators.model.tensors.model_tensors(spec)`
(routed experts are stored stacked, one (E, out, in) parameter per projection, as
transformers' recent MoE modules and MegaBlocks do; `inventory_of` maps them back to
the inventory's `experts.*.NAME.weight`). So `sum(p.numel())` equals
`calculators.model.params.parameter_counts(spec).total` by construction, and a test checks it
for every preset on the meta device.

The forward pass follows the transformers modules named in `calculators.model.families`
closely enough that the saved activations are the ones a training step keeps:
RMSNorm (Gemma: 1 + weight) or LayerNorm, RoPE (learned positions for GPT-2), SDPA or
eager attention with GQA, causal and sliding-window masks, q/k norms, gated or plain
MLPs, dropless top-k MoE with shared experts, and DeepSeek's multi-head latent
attention. Numerics that do not change memory (Gemma 2's logit soft-capping, RoPE
scaling variants, partial rotary factors) are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from calculators.model.spec import LayerSpec, ModelSpec

AttentionImpl = Literal["sdpa", "eager"]
Checkpointing = Literal["none", "full", "selective"]
ROPE_THETA = 10_000.0  # RoPE base (Su et al. 2021, arXiv:2104.09864); memory does not depend on it


class RMSNorm(nn.Module):
    """RMSNorm written op for op as transformers writes it, so autograd saves the same.

    LlamaRMSNorm (and the Qwen, Mistral, Phi-3 copies): normalise in fp32, cast back,
    then multiply by the weight. GemmaRMSNorm: multiply by (1 + w) in fp32, then cast.
    Olmo2RMSNorm: multiply by w in fp32, then cast. F.rms_norm is not used: its CUDA
    kernel saves fewer tensors than these modules, and it is these modules users train.
    """

    def __init__(
        self, size: int, *, offset: bool = False, weight_in_fp32: bool = False, eps: float = 1e-6
    ) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size) if not offset else torch.zeros(size))
        self.offset = offset
        self.weight_in_fp32 = weight_in_fp32 or offset
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.offset:  # Gemma
            return (x32 * (1.0 + self.weight.float())).to(dtype)
        if self.weight_in_fp32:  # OLMo 2
            return (self.weight * x32).to(dtype)
        return self.weight * x32.to(dtype)


def _norm(spec: ModelSpec, size: int | None = None) -> nn.Module:
    size = size or spec.hidden_size
    if spec.norm == "layernorm":
        return nn.LayerNorm(size, eps=1e-5)
    return RMSNorm(
        size,
        offset=spec.model_type.startswith("gemma"),
        weight_in_fp32=spec.model_type == "olmo2",
    )


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE on the last dimension (transformers' apply_rotary_pos_emb)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def rope_tables(
    seq_len: int, dim: int, device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (ROPE_THETA ** (torch.arange(0, dim, 2, device=device).float() / dim))
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _mask(seq_len: int, window: int | None, device: torch.device) -> torch.Tensor | None:
    """Boolean keep-mask for a sliding window (None: plain causal, left to the kernel)."""
    if window is None or window >= seq_len:
        return None
    i = torch.arange(seq_len, device=device)
    d = i[:, None] - i[None, :]
    return (d >= 0) & (d < window)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int | None,
    impl: AttentionImpl,
    recompute: bool = False,
) -> torch.Tensor:
    """Causal attention of q (b, H, s, d) on k, v (b, K, s, d): SDPA or eager, GQA by repeat.

    SDPA repeats K/V heads itself on kernels with native GQA (`enable_gqa`, torch >= 2.5).
    Eager follows transformers' eager_attention_forward: repeat_kv, scores, fp32 softmax,
    cast back, matmul with v.
    """
    s = q.shape[-2]
    mask = _mask(s, window, q.device)
    group = q.shape[1] // k.shape[1]
    if impl == "sdpa":
        kwargs = {}
        if group > 1:
            if "enable_gqa" in F.scaled_dot_product_attention.__doc__:
                kwargs["enable_gqa"] = True
            else:
                k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, **kwargs)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)
    if recompute and torch.is_grad_enabled():
        # selective checkpointing (Korthikanti et al. 2022, section 4.3): the s x s core
        # is recomputed in backward, only q, k, v are kept
        return checkpoint(attend, q, k, v, window, impl, False, use_reentrant=False)
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    keep = mask if mask is not None else torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~keep, float("-inf"))
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return probs @ v


def _extend(
    cache: list[torch.Tensor], k: torch.Tensor, v: torch.Tensor, window: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    q_len = k.shape[2]
    """Append k, v to a decode cache [K, V] (expanded heads; the window's tokens kept)."""
    if cache:
        k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
    if window is not None:
        cache[:] = [k[:, :, -window:], v[:, :, -window:]]
        if q_len == 1:  # the new token sees itself and the window - 1 before it
            return cache[0], cache[1]
    else:
        cache[:] = [k, v]
    return k, v


def _attend_all(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    return F.scaled_dot_product_attention(q, k, v)


class Attention(nn.Module):
    """GQA/MQA/MHA attention with optional fused qkv, biases and q/k norms."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        h, d = spec.hidden_size, spec.head_dim
        self.heads, self.kv_heads, self.head_dim = spec.num_heads, spec.num_kv_heads, d
        q, kv = self.heads * d, self.kv_heads * d
        self.fused = spec.fused_qkv
        if self.fused:
            self.qkv_proj = nn.Linear(h, q + 2 * kv, bias=spec.qkv_bias)
        else:
            self.q_proj = nn.Linear(h, q, bias=spec.qkv_bias)
            self.k_proj = nn.Linear(h, kv, bias=spec.qkv_bias)
            self.v_proj = nn.Linear(h, kv, bias=spec.qkv_bias)
        self.o_proj = nn.Linear(q, h, bias=spec.o_bias)
        self.kv_sink: list[torch.Tensor] | None = None
        self.decode_cache: list[torch.Tensor] | None = None
        self.selective = False  # recompute the eager s x s core in backward
        self.qk_norm = spec.qk_norm
        if spec.qk_norm == "per_head":
            self.q_norm, self.k_norm = _norm(spec, d), _norm(spec, d)
        elif spec.qk_norm == "full":
            self.q_norm, self.k_norm = _norm(spec, q), _norm(spec, kv)

    def forward(self, x, rope, window, impl):  # type: ignore[no-untyped-def]
        b, s, _ = x.shape
        d = self.head_dim
        if self.fused:
            q, k, v = self.qkv_proj(x).split(
                [self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1
            )
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.qk_norm == "full":
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.view(b, s, self.heads, d)
        k = k.view(b, s, self.kv_heads, d)
        if self.qk_norm == "per_head":
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = v.view(b, s, self.kv_heads, d).transpose(1, 2)
        if rope is not None:
            q, k = _rope(q, *rope), _rope(k, *rope)
        if self.kv_sink is not None:  # a DynamicCache's layer: K and V, the window's tokens
            keep = s if window is None else min(s, window)
            self.kv_sink += [k[:, :, s - keep :].clone(), v[:, :, s - keep :].clone()]
        if self.decode_cache is not None:
            k, v = _extend(self.decode_cache, k, v, window)
            if s == 1:  # one new token attends to everything cached: no mask
                return self.o_proj(_attend_all(q, k, v).transpose(1, 2).reshape(b, s, -1))
        out = attend(q, k, v, window, impl, self.selective and self.training)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, self.heads * d))


class MLAttention(nn.Module):
    """DeepSeek multi-head latent attention (DeepseekV3Attention in transformers)."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        m = spec.mla
        assert m is not None
        h, n = spec.hidden_size, spec.num_heads
        self.m, self.heads = m, n
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank is None:
            self.q_proj = nn.Linear(h, n * qk, bias=False)
        else:
            self.q_a_proj = nn.Linear(h, m.q_lora_rank, bias=False)
            self.q_a_layernorm = _norm(spec, m.q_lora_rank)
            self.q_b_proj = nn.Linear(m.q_lora_rank, n * qk, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(h, m.kv_lora_rank + m.qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = _norm(spec, m.kv_lora_rank)
        self.kv_b_proj = nn.Linear(
            m.kv_lora_rank, n * (m.qk_nope_head_dim + m.v_head_dim), bias=False
        )
        self.o_proj = nn.Linear(n * m.v_head_dim, h, bias=False)
        self.kv_sink: list[torch.Tensor] | None = None
        self.decode_cache: list[torch.Tensor] | None = None
        self.selective = False  # recompute the eager s x s core in backward

    def forward(self, x, rope, window, impl):  # type: ignore[no-untyped-def]
        b, s, _ = x.shape
        m, n = self.m, self.heads
        if m.q_lora_rank is None:
            q = self.q_proj(x)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(b, s, n, -1).transpose(1, 2)
        q_nope, q_rope = q.split([m.qk_nope_head_dim, m.qk_rope_head_dim], dim=-1)
        latent, k_rope = self.kv_a_proj_with_mqa(x).split(
            [m.kv_lora_rank, m.qk_rope_head_dim], dim=-1
        )
        kv = self.kv_b_proj(self.kv_a_layernorm(latent)).view(b, s, n, -1).transpose(1, 2)
        k_nope, v = kv.split([m.qk_nope_head_dim, m.v_head_dim], dim=-1)
        k_rope = k_rope.view(b, 1, s, m.qk_rope_head_dim)
        q_rope, k_rope = _rope(q_rope, *rope), _rope(k_rope, *rope)
        if self.kv_sink is not None:  # latent layout: c_kv and the shared rope key
            self.kv_sink.append(torch.cat((latent, k_rope.view(b, s, -1)), dim=-1).clone())
        q = torch.cat((q_nope, q_rope), dim=-1)
        k = torch.cat((k_nope, k_rope.expand(b, n, s, m.qk_rope_head_dim)), dim=-1)
        if self.decode_cache is not None:
            k, v = _extend(self.decode_cache, k, v, window)
            if s == 1:
                return self.o_proj(_attend_all(q, k, v).transpose(1, 2).reshape(b, s, -1))
        out = attend(q, k, v, window, impl, self.selective and self.training)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, n * m.v_head_dim))


class MLP(nn.Module):
    """Gated (gate, up, down; Phi-3's fused gate_up) with SiLU, or plain (c_fc, c_proj) GeLU."""

    def __init__(self, spec: ModelSpec, size: int) -> None:
        super().__init__()
        h, b = spec.hidden_size, spec.mlp_bias
        self.kind = spec.mlp
        self.fused = spec.fused_gate_up
        # Gemma uses GeLU (tanh) in the gate; Llama-likes SiLU.
        self.act = (
            (lambda t: F.gelu(t, approximate="tanh"))
            if spec.model_type.startswith("gemma") or spec.mlp == "plain"
            else F.silu
        )
        if spec.mlp == "plain":
            self.c_fc = nn.Linear(h, size, bias=b)
            self.c_proj = nn.Linear(size, h, bias=b)
            return
        if self.fused:
            self.gate_up_proj = nn.Linear(h, 2 * size, bias=b)
        else:
            self.gate_proj = nn.Linear(h, size, bias=b)
            self.up_proj = nn.Linear(h, size, bias=b)
        self.down_proj = nn.Linear(size, h, bias=b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "plain":
            return self.c_proj(self.act(self.c_fc(x)))
        if self.fused:
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(self.act(gate) * up)


class Experts(nn.Module):
    """E routed experts, each projection stacked as one (E, out, in) parameter."""

    def __init__(self, spec: ModelSpec, n: int, size: int) -> None:
        super().__init__()
        h, self.n = spec.hidden_size, n
        self.plain = spec.mlp == "plain"
        self.act = F.gelu if self.plain else F.silu
        shapes: dict[str, tuple[int, int]] = (
            {"c_fc": (size, h), "c_proj": (h, size)}
            if self.plain
            else (
                {"gate_up_proj": (2 * size, h), "down_proj": (h, size)}
                if spec.fused_gate_up
                else {"gate_proj": (size, h), "up_proj": (size, h), "down_proj": (h, size)}
            )
        )
        self.names = tuple(shapes)
        for name, (o, i) in shapes.items():
            self.register_parameter(name, nn.Parameter(torch.empty(n, o, i)))
            if spec.mlp_bias:
                self.register_parameter(name + "_bias", nn.Parameter(torch.zeros(n, o)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name in self.names:
            w = getattr(self, name)
            if w.device.type != "meta":
                nn.init.normal_(w, std=0.02)

    def add_lora(self, name: str, rank: int) -> None:
        """LoRA on every expert's `name` projection: A (E, r, in), B (E, out, r) zeros."""
        w = getattr(self, name)
        w.requires_grad_(False)
        n, out_f, in_f = w.shape
        a = torch.empty(n, rank, in_f, device=w.device, dtype=w.dtype)
        for i in range(n):
            nn.init.kaiming_uniform_(a[i], a=math.sqrt(5))
        self.register_parameter(name + "_lora_A", nn.Parameter(a))
        b = torch.zeros(n, out_f, rank, device=w.device, dtype=w.dtype)
        self.register_parameter(name + "_lora_B", nn.Parameter(b))

    def _lin(self, name: str, e: int, x: torch.Tensor) -> torch.Tensor:
        bias = getattr(self, name + "_bias", None)
        y = F.linear(x, getattr(self, name)[e], None if bias is None else bias[e])
        lora_a = getattr(self, name + "_lora_A", None)
        if lora_a is not None:
            y = y + F.linear(F.linear(x, lora_a[e]), getattr(self, name + "_lora_B")[e])
        return y

    def expert(self, e: int, x: torch.Tensor) -> torch.Tensor:
        if self.plain:
            return self._lin("c_proj", e, self.act(self._lin("c_fc", e, x)))
        if "gate_up_proj" in self.names:
            gate, up = self._lin("gate_up_proj", e, x).chunk(2, dim=-1)
        else:
            gate, up = self._lin("gate_proj", e, x), self._lin("up_proj", e, x)
        return self._lin("down_proj", e, self.act(gate) * up)


class MoE(nn.Module):
    """Router (softmax top-k, fp32), dropless routed experts, shared experts and gate."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        moe = spec.moe
        assert moe is not None
        h = spec.hidden_size
        self.k = moe.experts_per_token
        self.gate = nn.Linear(h, moe.n_routed_experts, bias=False)
        if moe.router_score_bias:
            # a buffer in transformers; a frozen parameter here so the count includes it
            self.gate.e_score_correction_bias = nn.Parameter(
                torch.zeros(moe.n_routed_experts), requires_grad=False
            )
        self.experts = Experts(spec, moe.n_routed_experts, moe.expert_intermediate_size)
        self.shared_experts = (
            MLP(spec, moe.shared_intermediate_size) if moe.shared_intermediate_size else None
        )
        self.shared_expert_gate = nn.Linear(h, 1, bias=False) if moe.shared_expert_gate else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        probs = torch.softmax(self.gate(flat), dim=-1, dtype=torch.float32)
        weights, chosen = probs.topk(self.k, dim=-1)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(flat)
        for e in range(self.experts.n):
            rows, slot = torch.where(chosen == e)
            if rows.numel() == 0:
                continue
            y = self.experts.expert(e, flat[rows]) * weights[rows, slot, None]
            out = out.index_add(0, rows, y)
        if self.shared_experts is not None:
            shared = self.shared_experts(flat)
            if self.shared_expert_gate is not None:
                shared = torch.sigmoid(self.shared_expert_gate(flat)) * shared
            out = out + shared
        return out.view(shape)


class DecoderLayer(nn.Module):
    """Pre-norm block; Gemma 2/3 add post-norms, OLMo 2 uses post-norms only."""

    def __init__(self, spec: ModelSpec, layer: LayerSpec) -> None:
        super().__init__()
        for name in spec.norm_names:
            self.add_module(name, _norm(spec))
        self.norm_names = spec.norm_names
        self.self_attn = MLAttention(spec) if layer.attention == "mla" else Attention(spec)
        self.mlp = MoE(spec) if layer.moe else MLP(spec, spec.intermediate_size)
        self.window = layer.window

    def _n(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, name)(x) if name in self.norm_names else x

    def forward(self, x, rope, impl):  # type: ignore[no-untyped-def]
        pre = "input_layernorm" in self.norm_names
        if pre:
            a = self.self_attn(self.input_layernorm(x), rope, self.window, impl)
            a = self._n("post_attention_layernorm", a) if len(self.norm_names) == 4 else a
        else:  # OLMo 2: post-norm on each branch
            a = self.post_attention_layernorm(self.self_attn(x, rope, self.window, impl))
        x = x + a
        if len(self.norm_names) == 4:
            m = self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        elif pre:
            m = self.mlp(self.post_attention_layernorm(x))
        else:
            m = self.post_feedforward_layernorm(self.mlp(x))
        return x + m


class Decoder(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.hidden_size)
        if spec.learned_positions:
            assert spec.max_position_embeddings is not None
            self.embed_positions = nn.Embedding(spec.max_position_embeddings, spec.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(spec, layer) for layer in spec.layers)
        self.norm = _norm(spec)


class ReferenceDecoder(nn.Module):
    """Causal LM: `model.*` and `lm_head` as in transformers' *ForCausalLM.

    forward(input_ids) returns logits; `loss(input_ids, labels, reduction)` adds the
    fp32 cross-entropy of transformers' ForCausalLMLoss (labels already shifted; -100
    is ignored).
    """

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        self.model = Decoder(spec)
        if not spec.tie_word_embeddings:
            self.lm_head = nn.Linear(spec.hidden_size, spec.vocab_size, bias=False)
        self.attention: AttentionImpl = "sdpa"
        self.checkpointing: Checkpointing = "none"
        if spec.mla is not None:
            self.rope_dim: int | None = spec.mla.qk_rope_head_dim
        else:
            self.rope_dim = None if spec.learned_positions else spec.head_dim

    def output_weight(self) -> torch.Tensor:
        if self.spec.tie_word_embeddings:
            return self.model.embed_tokens.weight
        return self.lm_head.weight

    def hidden(self, input_ids: torch.Tensor, past: int = 0) -> torch.Tensor:
        """Final hidden states; `past` tokens are already in the decode caches."""
        s = input_ids.shape[1]
        x = self.model.embed_tokens(input_ids)
        if self.spec.learned_positions:
            pos = torch.arange(past, past + s, device=input_ids.device)
            x = x + self.model.embed_positions(pos)
        if self.spec.model_type.startswith("gemma"):
            x = x * torch.tensor(self.spec.hidden_size**0.5, dtype=x.dtype)
        rope = None
        if self.rope_dim is not None:
            dtype = (
                torch.get_autocast_dtype(x.device.type)
                if torch.is_autocast_enabled(x.device.type)
                else x.dtype
            )
            cos, sin = rope_tables(past + s, self.rope_dim, x.device, dtype)
            rope = (cos[past:], sin[past:])
        for layer in self.model.layers:
            if self.checkpointing == "full" and self.training:
                x = checkpoint(layer, x, rope, self.attention, use_reentrant=False)
            else:
                x = layer(x, rope, self.attention)
        return self.model.norm(x)

    def forward(self, input_ids: torch.Tensor, past: int = 0) -> torch.Tensor:
        return F.linear(self.hidden(input_ids, past), self.output_weight())

    def start_decoding(self) -> None:
        """Give every attention module an empty decode cache (`forward(ids, past)` fills it)."""
        for layer in self.model.layers:
            layer.self_attn.decode_cache = []

    def stop_decoding(self) -> None:
        for layer in self.model.layers:
            layer.self_attn.decode_cache = None

    def loss(
        self, input_ids: torch.Tensor, labels: torch.Tensor, reduction: str = "mean"
    ) -> torch.Tensor:
        logits = self(input_ids)
        return F.cross_entropy(
            logits.float().view(-1, logits.shape[-1]),
            labels.reshape(-1),
            ignore_index=-100,
            reduction=reduction,
        )


def build_model(
    spec: ModelSpec,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> ReferenceDecoder:
    """Build on the meta device, then materialise on `device` with random weights.

    Embeddings and linears get N(0, 0.02) (GPT-2's initializer_range), norms ones
    (zeros for Gemma's 1 + w); tied embeddings share one tensor again afterwards
    (`to_empty` unties them).
    """
    with torch.device("meta"):
        model = ReferenceDecoder(spec)
    if str(device) == "meta":
        return model
    model = model.to_empty(device=device)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            owner = _owner(model, name)
            if isinstance(owner, RMSNorm):
                p.fill_(0.0 if owner.offset else 1.0)
            elif isinstance(owner, nn.LayerNorm):
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
    model = model.to(dtype)
    return model


def _owner(model: nn.Module, name: str) -> nn.Module:
    return model.get_submodule(name.rsplit(".", 1)[0])


def inventory_of(model: nn.Module) -> Iterator[tuple[str, tuple[int, ...], int]]:
    """(inventory name, shape of one tensor, count) per parameter, stacked experts unstacked."""
    for name, p in model.named_parameters():
        prefix, _, leaf = name.rpartition(".")
        if prefix.endswith(".experts"):
            kind = "bias" if leaf.endswith("_bias") else "weight"
            leaf = leaf.removesuffix("_bias")
            yield f"{prefix}.*.{leaf}.{kind}", tuple(p.shape[1:]), p.shape[0]
        else:
            yield name, tuple(p.shape), 1


def parameter_count(model: nn.Module) -> int:
    """sum(p.numel()) over unique parameters (a tied embedding counts once)."""
    return sum(p.numel() for p in model.parameters())


def autocast_context(device: str, dtype: torch.dtype | None):  # type: ignore[no-untyped-def]
    return nullcontext() if dtype is None else torch.autocast(device, dtype=dtype)
