"""The model as the calculators see it: `ModelSpec`, read from a Hugging Face config.json.

`ModelSpec.from_hf_config(config)` turns the dict of a config.json into the
structure that determines memory: sizes, attention kind per layer, MoE and MLA
shapes, biases and norms. Facts the config leaves to the model class come from
`calculators.model.families`; anything the reading had to assume is listed in
`ModelSpec.assumptions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from calculators.checks import non_negative_int, one_of, positive_int

AttentionKind = Literal["full", "sliding", "mla"]


@dataclass(frozen=True, kw_only=True)
class LayerSpec:
    """One decoder layer: its attention kind, window, and whether its MLP is MoE."""

    attention: AttentionKind
    window: int | None = None
    moe: bool = False

    def __post_init__(self) -> None:
        one_of("attention", self.attention, ("full", "sliding", "mla"))
        if self.attention == "sliding":
            positive_int("window", self.window)
        elif self.window is not None:
            raise ValueError(f"window is only for sliding layers, got {self.window!r}")


@dataclass(frozen=True, kw_only=True)
class MoESpec:
    """Mixture-of-experts MLP shapes.

    n_routed_experts:   experts the router chooses from (Mixtral num_local_experts,
                        Qwen num_experts, DeepSeek n_routed_experts).
    experts_per_token:  top-k routed experts each token uses.
    expert_intermediate_size: intermediate size of one routed expert.
    n_shared_experts:   always-on experts (DeepSeek: fused into one MLP of
                        n_shared x moe_intermediate_size; Qwen2-MoE: one shared MLP).
    shared_intermediate_size: intermediate size of the fused shared MLP (0 if none).
    shared_expert_gate: Qwen2-MoE's sigmoid gate Linear(hidden, 1) on the shared expert.
    router_score_bias:  DeepSeek-V3's e_score_correction_bias (one per routed expert).
    """

    n_routed_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    n_shared_experts: int = 0
    shared_intermediate_size: int = 0
    shared_expert_gate: bool = False
    router_score_bias: bool = False

    def __post_init__(self) -> None:
        positive_int("n_routed_experts", self.n_routed_experts)
        positive_int("experts_per_token", self.experts_per_token)
        positive_int("expert_intermediate_size", self.expert_intermediate_size)
        if self.experts_per_token > self.n_routed_experts:
            raise ValueError(
                f"experts_per_token must be at most n_routed_experts ({self.n_routed_experts}), "
                f"got {self.experts_per_token}"
            )
        non_negative_int("n_shared_experts", self.n_shared_experts)
        non_negative_int("shared_intermediate_size", self.shared_intermediate_size)


@dataclass(frozen=True, kw_only=True)
class MLASpec:
    """Multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1).

    q_lora_rank: rank of the query compression, None when q is projected directly
                 (DeepSeek-V2-Lite).
    kv_lora_rank: d_c, the compressed KV latent the cache holds.
    qk_nope_head_dim / qk_rope_head_dim: per-head query/key parts without and with RoPE;
                 the rope part of the key is shared across heads and cached (d_h^R).
    v_head_dim:  per-head value size.
    """

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    def __post_init__(self) -> None:
        if self.q_lora_rank is not None:
            positive_int("q_lora_rank", self.q_lora_rank)
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            positive_int(name, getattr(self, name))


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Everything about a decoder-only transformer that sets its memory.

    head_dim is the per-head size of q and k (for MLA: nope + rope); it is read
    from config.json when present, never assumed to be hidden_size / heads when the
    family's model class says otherwise (Qwen3, Gemma).
    """

    name: str
    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    layers: tuple[LayerSpec, ...]
    tie_word_embeddings: bool
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: Literal["per_head", "full"] | None = None
    norm_names: tuple[str, ...] = ("input_layernorm", "post_attention_layernorm")
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    mlp: Literal["gated", "plain"] = "gated"
    fused_qkv: bool = False
    fused_gate_up: bool = False
    max_position_embeddings: int | None = None
    learned_positions: bool = False
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    mtp_layers: int = 0
    family_source: str = ""
    assumptions: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "intermediate_size",
        ):
            positive_int(name, getattr(self, name))
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_heads}) must be a multiple of "
                f"num_key_value_heads, got {self.num_kv_heads}"
            )
        if len(self.layers) != self.num_layers:
            raise ValueError(
                f"layers must list num_hidden_layers ({self.num_layers}) entries, "
                f"got {len(self.layers)}"
            )
        if (self.mla is None) != all(layer.attention != "mla" for layer in self.layers):
            raise ValueError("mla must be set exactly when layers use MLA attention")
        if any(layer.moe for layer in self.layers) and self.moe is None:
            raise ValueError("moe must be set when a layer is MoE")
        if self.max_position_embeddings is not None:
            positive_int("max_position_embeddings", self.max_position_embeddings)
        non_negative_int("mtp_layers", self.mtp_layers)
        one_of("qk_norm", self.qk_norm, ("per_head", "full", None))
        one_of("norm", self.norm, ("rmsnorm", "layernorm"))
        one_of("mlp", self.mlp, ("gated", "plain"))

    @property
    def norms_per_layer(self) -> int:
        """Norm weight vectors of size hidden_size in each decoder layer."""
        return len(self.norm_names)

    @property
    def gqa_group(self) -> int:
        """Query heads per KV head: 1 is MHA, num_heads is MQA."""
        return self.num_heads // self.num_kv_heads

    @classmethod
    def from_hf_config(cls, config: dict[str, Any], *, name: str | None = None) -> ModelSpec:
        """Read a Hugging Face config.json (as a dict); see `read_hf_config`."""
        from calculators.model.hf_config import read_hf_config

        return read_hf_config(config, name=name)


def position_warnings(spec: ModelSpec, **lengths: int | None) -> tuple[str, ...]:
    """A warning for each length past the model's max_position_embeddings.

    `lengths` names each length as its input (context=100_000, seq_len=...). The figures
    are still computed for it: a reader may plan RoPE scaling or continued pre-training
    at a longer length; the warning says the model was not trained there.
    """
    limit = spec.max_position_embeddings
    if limit is None:
        return ()
    return tuple(
        f"{name} {tokens:,} tokens is past the model's max_position_embeddings "
        f"({limit:,}): the memory is computed, but the model was trained for at most "
        f"{limit:,} positions (plan RoPE scaling or longer training for this length)"
        for name, tokens in lengths.items()
        if tokens is not None and tokens > limit
    )


__all__ = ["AttentionKind", "LayerSpec", "MLASpec", "MoESpec", "ModelSpec", "position_warnings"]
