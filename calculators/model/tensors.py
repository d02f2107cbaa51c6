"""The tensors a model stores, as data: the one inventory that parameter counts,
weights memory and the probes all read.

Each `Tensor` names one stored tensor (or `count` identical ones, such as the
routed experts of a layer) with the role llama.cpp's GGUF writer gives it, so a
quantisation recipe can choose its format per role and per layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from calculators.model.spec import LayerSpec, ModelSpec

Category = Literal[
    "embedding",
    "position_embedding",
    "lm_head",
    "attention",
    "mlp",
    "experts",
    "shared_experts",
    "router",
    "norms",
    "mtp",
]

# GGUF tensor names from llama.cpp's gguf-py/gguf/constants.py (MODEL_TENSOR),
# used here as roles so quantisation rules can be written the way llama.cpp writes them.
Role = Literal[
    "token_embd",
    "position_embd",
    "output",
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_qkv",
    "attn_output",
    "attn_q_a",
    "attn_q_b",
    "attn_kv_a_mqa",
    "attn_kv_b",
    "ffn_gate",
    "ffn_up",
    "ffn_gate_up",
    "ffn_down",
    "ffn_gate_exps",
    "ffn_up_exps",
    "ffn_down_exps",
    "ffn_gate_shexp",
    "ffn_up_shexp",
    "ffn_down_shexp",
    "ffn_gate_inp",
    "ffn_gate_inp_shexp",
    "exp_probs_b",
    "nextn_eh_proj",
    "norm",
    "bias",
]


@dataclass(frozen=True, kw_only=True)
class Tensor:
    """One stored tensor, or `count` tensors of the same shape and role.

    name:   Hugging Face state-dict name; for a stacked group (experts) the
            index is written `*`, e.g. `model.layers.3.mlp.experts.*.down_proj.weight`.
    role:   GGUF role (see `Role`); 1-D tensors are `norm` or `bias`.
    shape:  PyTorch shape; for a linear weight `(out_features, in_features)`.
    layer:  decoder layer index, or None for embeddings, lm_head, final norm.
    count:  how many tensors of this shape the name stands for.
    active: how many of those one token reads (experts_per_token for routed experts).
    category: the line of the parameter breakdown it is counted in.
    mtp:    True for multi-token-prediction modules, reported apart from the main model.
    """

    name: str
    role: Role
    shape: tuple[int, ...]
    category: Category
    layer: int | None = None
    count: int = 1
    active: int | None = None
    mtp: bool = False

    def __post_init__(self) -> None:
        if not self.shape or any(d <= 0 for d in self.shape):
            raise ValueError(f"tensor {self.name}: shape must be positive, got {self.shape}")
        if self.count <= 0:
            raise ValueError(f"tensor {self.name}: count must be positive, got {self.count}")
        if self.active is not None and not 0 <= self.active <= self.count:
            raise ValueError(
                f"tensor {self.name}: active must be in [0, {self.count}], got {self.active}"
            )

    @property
    def numel(self) -> int:
        """Elements of one tensor of the group."""
        return prod(self.shape)

    @property
    def parameters(self) -> int:
        """Elements of the whole group: numel x count."""
        return self.numel * self.count

    @property
    def active_parameters(self) -> int:
        """Elements one token reads: numel x active (all of them unless routed)."""
        return self.numel * (self.count if self.active is None else self.active)

    @property
    def is_matrix(self) -> bool:
        """2-D or more: the tensors quantisation methods quantise; 1-D ones stay in float."""
        return len(self.shape) >= 2


# A spec is frozen and hashable, and its inventory is immutable: every calculator on a
# page (and each bisection step of a search) reads the same tuple instead of rebuilding it.
@lru_cache(maxsize=64)
def model_tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """Every tensor the model stores, in state-dict order.

    Names follow the Llama layout of transformers (`model.layers.N.self_attn.q_proj`);
    families with other names (GPT-2's `transformer.h.N.attn.c_attn`, whose Conv1D
    stores the transpose) map one to one, and shapes are written (out, in) for all.
    Multi-token-prediction modules (DeepSeek-V3 `num_nextn_predict_layers`) come last
    with `mtp=True`: eh_proj, enorm, hnorm, one decoder layer and the shared head's
    norm; their embedding and head are the main model's and are not counted twice
    (DeepSeek-V3 report, arXiv:2412.19437, section 2.2).
    """
    h = spec.hidden_size
    tensors = [
        Tensor(
            name="model.embed_tokens.weight",
            role="token_embd",
            shape=(spec.vocab_size, h),
            category="embedding",
        )
    ]
    if spec.learned_positions:
        if spec.max_position_embeddings is None:
            raise ValueError("max_position_embeddings is required for learned positions")
        tensors.append(
            Tensor(
                name="model.embed_positions.weight",
                role="position_embd",
                shape=(spec.max_position_embeddings, h),
                category="position_embedding",
            )
        )
    for i, layer in enumerate(spec.layers):
        tensors += _layer_tensors(spec, i, layer)
    tensors += _norm(spec, "model.norm", None)
    if not spec.tie_word_embeddings:
        tensors.append(
            Tensor(
                name="lm_head.weight", role="output", shape=(spec.vocab_size, h), category="lm_head"
            )
        )
    for j in range(spec.mtp_layers):
        i = spec.num_layers + j
        p = f"model.layers.{i}"
        mtp = [
            *_norm(spec, f"{p}.enorm", i, category="mtp"),
            *_norm(spec, f"{p}.hnorm", i, category="mtp"),
            Tensor(
                name=f"{p}.eh_proj.weight",
                role="nextn_eh_proj",
                shape=(h, 2 * h),
                category="mtp",
                layer=i,
            ),
            *_layer_tensors(spec, i, spec.layers[-1]),
            *_norm(spec, f"{p}.shared_head.norm", i, category="mtp"),
        ]
        tensors += [_as_mtp(t) for t in mtp]
    return tuple(tensors)


def _as_mtp(t: Tensor) -> Tensor:
    return Tensor(
        name=t.name,
        role=t.role,
        shape=t.shape,
        category=t.category,
        layer=t.layer,
        count=t.count,
        active=t.active,
        mtp=True,
    )


def _norm(
    spec: ModelSpec,
    prefix: str,
    layer: int | None,
    size: int | None = None,
    category: Category = "norms",
) -> list[Tensor]:
    """A norm's weight, and its bias for LayerNorm."""
    shape = (size or spec.hidden_size,)
    out = [
        Tensor(name=f"{prefix}.weight", role="norm", shape=shape, category=category, layer=layer)
    ]
    if spec.norm == "layernorm":
        out.append(
            Tensor(name=f"{prefix}.bias", role="bias", shape=shape, category=category, layer=layer)
        )
    return out


def _linear(
    name: str,
    role: Role,
    out_f: int,
    in_f: int,
    category: Category,
    layer: int,
    bias: bool = False,
    count: int = 1,
    active: int | None = None,
) -> list[Tensor]:
    out = [
        Tensor(
            name=f"{name}.weight",
            role=role,
            shape=(out_f, in_f),
            category=category,
            layer=layer,
            count=count,
            active=active,
        )
    ]
    if bias:
        out.append(
            Tensor(
                name=f"{name}.bias",
                role="bias",
                shape=(out_f,),
                category=category,
                layer=layer,
                count=count,
                active=active,
            )
        )
    return out


def _layer_tensors(spec: ModelSpec, i: int, layer: LayerSpec) -> list[Tensor]:
    p = f"model.layers.{i}"
    out: list[Tensor] = []
    for norm_name in spec.norm_names:
        out += _norm(spec, f"{p}.{norm_name}", i)
    out += _mla_tensors(spec, i) if layer.attention == "mla" else _gqa_tensors(spec, i)
    out += (
        _moe_tensors(spec, i)
        if layer.moe
        else _mlp_tensors(
            spec, f"{p}.mlp", i, spec.intermediate_size, "mlp", ("ffn_gate", "ffn_up", "ffn_down")
        )
    )
    return out


def _gqa_tensors(spec: ModelSpec, i: int) -> list[Tensor]:
    """q, k, v, o projections (fused qkv for Phi-3 and GPT-2) and q/k norms."""
    p = f"model.layers.{i}.self_attn"
    h, hd = spec.hidden_size, spec.head_dim
    q, kv = spec.num_heads * hd, spec.num_kv_heads * hd
    b = spec.qkv_bias
    if spec.fused_qkv:
        out = _linear(f"{p}.qkv_proj", "attn_qkv", q + 2 * kv, h, "attention", i, b)
    else:
        out = [
            *_linear(f"{p}.q_proj", "attn_q", q, h, "attention", i, b),
            *_linear(f"{p}.k_proj", "attn_k", kv, h, "attention", i, b),
            *_linear(f"{p}.v_proj", "attn_v", kv, h, "attention", i, b),
        ]
    out += _linear(f"{p}.o_proj", "attn_output", h, q, "attention", i, spec.o_bias)
    if spec.qk_norm == "per_head":
        out += _norm(spec, f"{p}.q_norm", i, hd) + _norm(spec, f"{p}.k_norm", i, hd)
    elif spec.qk_norm == "full":
        out += _norm(spec, f"{p}.q_norm", i, q) + _norm(spec, f"{p}.k_norm", i, kv)
    return out


def _mla_tensors(spec: ModelSpec, i: int) -> list[Tensor]:
    """DeepSeek MLA projections (DeepseekV3Attention in transformers)."""
    assert spec.mla is not None
    m, p, h, n = spec.mla, f"model.layers.{i}.self_attn", spec.hidden_size, spec.num_heads
    q_out = n * (m.qk_nope_head_dim + m.qk_rope_head_dim)
    if m.q_lora_rank is None:
        out = _linear(f"{p}.q_proj", "attn_q", q_out, h, "attention", i)
    else:
        out = [
            *_linear(f"{p}.q_a_proj", "attn_q_a", m.q_lora_rank, h, "attention", i),
            *_norm(spec, f"{p}.q_a_layernorm", i, m.q_lora_rank),
            *_linear(f"{p}.q_b_proj", "attn_q_b", q_out, m.q_lora_rank, "attention", i),
        ]
    return [
        *out,
        *_linear(
            f"{p}.kv_a_proj_with_mqa",
            "attn_kv_a_mqa",
            m.kv_lora_rank + m.qk_rope_head_dim,
            h,
            "attention",
            i,
        ),
        *_norm(spec, f"{p}.kv_a_layernorm", i, m.kv_lora_rank),
        *_linear(
            f"{p}.kv_b_proj",
            "attn_kv_b",
            n * (m.qk_nope_head_dim + m.v_head_dim),
            m.kv_lora_rank,
            "attention",
            i,
        ),
        *_linear(f"{p}.o_proj", "attn_output", h, n * m.v_head_dim, "attention", i),
    ]


def _mlp_tensors(
    spec: ModelSpec,
    p: str,
    i: int,
    size: int,
    category: Category,
    roles: tuple[Role, Role, Role],
    count: int = 1,
    active: int | None = None,
) -> list[Tensor]:
    """A gated (gate, up, down) or plain (fc, proj) MLP of intermediate `size`."""
    h, b = spec.hidden_size, spec.mlp_bias
    gate, up, down = roles
    if spec.mlp == "plain":
        return [
            *_linear(f"{p}.c_fc", up, size, h, category, i, b, count, active),
            *_linear(f"{p}.c_proj", down, h, size, category, i, b, count, active),
        ]
    if spec.fused_gate_up:
        first = _linear(
            f"{p}.gate_up_proj", "ffn_gate_up", 2 * size, h, category, i, b, count, active
        )
    else:
        first = [
            *_linear(f"{p}.gate_proj", gate, size, h, category, i, b, count, active),
            *_linear(f"{p}.up_proj", up, size, h, category, i, b, count, active),
        ]
    return first + _linear(f"{p}.down_proj", down, h, size, category, i, b, count, active)


def _moe_tensors(spec: ModelSpec, i: int) -> list[Tensor]:
    """Router, routed experts (stacked, `active` of them per token) and shared experts."""
    assert spec.moe is not None
    moe, p, h = spec.moe, f"model.layers.{i}.mlp", spec.hidden_size
    out = _linear(f"{p}.gate", "ffn_gate_inp", moe.n_routed_experts, h, "router", i)
    if moe.router_score_bias:
        out.append(
            Tensor(
                name=f"{p}.gate.e_score_correction_bias",
                role="exp_probs_b",
                shape=(moe.n_routed_experts,),
                category="router",
                layer=i,
            )
        )
    out += _mlp_tensors(
        spec,
        f"{p}.experts.*",
        i,
        moe.expert_intermediate_size,
        "experts",
        ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"),
        count=moe.n_routed_experts,
        active=moe.experts_per_token,
    )
    if moe.shared_intermediate_size:
        out += _mlp_tensors(
            spec,
            f"{p}.shared_experts",
            i,
            moe.shared_intermediate_size,
            "shared_experts",
            ("ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"),
        )
    if moe.shared_expert_gate:
        out += _linear(f"{p}.shared_expert_gate", "ffn_gate_inp_shexp", 1, h, "router", i)
    return out
