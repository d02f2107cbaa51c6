"""How each Hugging Face `model_type` lays out its tensors, as data.

A config.json only carries what its model class does not hardcode. The facts a
config leaves out (a bias the attention module always has, a `head_dim` default,
whether embeddings are tied when the key is absent, norms the decoder layer adds)
live here, one entry per `model_type`, each with the code path in
huggingface/transformers it was read from.

Model types missing from the table are read as `LLAMA_LIKE`, and the spec lists
that as an assumption.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, kw_only=True)
class Family:
    """Per-model-type defaults and hardcoded structure.

    tie_default:      tie_word_embeddings when config.json omits the key (the
                      config class's default).
    config_defaults:  values the config class uses for keys config.json may omit
                      (Qwen3Config head_dim=128; Gemma3TextConfig's sizes, which the
                      text_config of gemma-3-4b leaves out); without a head_dim entry,
                      head_dim = hidden_size // num_attention_heads.
    qkv_bias:         q/k/v projections carry a bias whatever the config says.
    linear_biases:    every linear layer carries a bias (GPT-2's Conv1D layers).
    bias_key:         config key that switches q/k/v/o biases on, if any.
    qk_norm:          "per_head": RMSNorm of size head_dim on q and k (Qwen3, Gemma 3);
                      "full": RMSNorm over all heads (OLMo 2); None: no q/k norm.
    norm_names:       the norm weight vectors of size hidden_size in each decoder layer.
    norm:             "rmsnorm" (weight only) or "layernorm" (weight and bias).
    mlp:              "gated" (gate, up, down) or "plain" (fc, proj with GeLU).
    fused_qkv / fused_gate_up: one stored matrix instead of three / two (Phi-3, GPT-2).
    sliding:          how the config's window applies: "none", "all" (every layer when
                      sliding_window is set), "qwen2" (use_sliding_window and layers
                      >= max_window_layers), "alternate" (even layers, Gemma 2),
                      "pattern" (every layer but each sliding_window_pattern-th, Gemma 3).
    attention:        "gqa" or "mla" (DeepSeek multi-head latent attention).
    moe:              which MoE reading applies: None, "mixtral", "qwen2_moe", "qwen3_moe",
                      "deepseek".
    source:           code path the entry was read from.
    """

    model_type: str
    tie_default: bool
    config_defaults: dict[str, int] = field(default_factory=dict)
    qkv_bias: bool = False
    linear_biases: bool = False
    bias_key: str | None = "attention_bias"
    qk_norm: Literal["per_head", "full"] | None = None
    norm_names: tuple[str, ...] = ("input_layernorm", "post_attention_layernorm")
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    mlp: Literal["gated", "plain"] = "gated"
    fused_qkv: bool = False
    fused_gate_up: bool = False
    sliding: Literal["none", "all", "qwen2", "alternate", "pattern"] = "none"
    attention: Literal["gqa", "mla"] = "gqa"
    moe: Literal["mixtral", "qwen2_moe", "qwen3_moe", "deepseek"] | None = None
    learned_positions: bool = False
    source: str


_FOUR_NORMS = (
    "input_layernorm",
    "post_attention_layernorm",
    "pre_feedforward_layernorm",
    "post_feedforward_layernorm",
)
_TF = "huggingface/transformers src/transformers/models/"

LLAMA_LIKE = Family(
    model_type="llama",
    tie_default=False,
    source=_TF + "llama/configuration_llama.py (tie_word_embeddings=False, "
    "head_dim=hidden_size//num_attention_heads); llama/modeling_llama.py LlamaDecoderLayer",
)

FAMILIES: dict[str, Family] = {
    f.model_type: f
    for f in (
        LLAMA_LIKE,
        Family(
            model_type="mistral",
            tie_default=False,
            bias_key=None,
            sliding="all",
            source=_TF + "mistral/modeling_mistral.py MistralAttention (no biases, "
            "sliding_window on every layer when set)",
        ),
        Family(
            model_type="mixtral",
            tie_default=False,
            bias_key=None,
            sliding="all",
            moe="mixtral",
            source=_TF + "mixtral/modeling_mixtral.py MixtralSparseMoeBlock (gate without bias, "
            "num_local_experts w1/w2/w3)",
        ),
        Family(
            model_type="qwen2",
            tie_default=False,
            qkv_bias=True,
            bias_key=None,
            sliding="qwen2",
            source=_TF + "qwen2/modeling_qwen2.py Qwen2Attention (q/k/v bias=True, o_proj "
            "bias=False); configuration_qwen2.py layer_types from use_sliding_window and "
            "max_window_layers",
        ),
        Family(
            model_type="qwen2_moe",
            tie_default=False,
            qkv_bias=True,
            bias_key=None,
            sliding="qwen2",
            moe="qwen2_moe",
            source=_TF + "qwen2_moe/modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock (shared_expert "
            "and shared_expert_gate Linear(hidden, 1))",
        ),
        Family(
            model_type="qwen3",
            tie_default=False,
            config_defaults={"head_dim": 128},
            qk_norm="per_head",
            sliding="qwen2",
            source=_TF + "qwen3/configuration_qwen3.py (head_dim=128); modeling_qwen3.py "
            "Qwen3Attention q_norm/k_norm RMSNorm(head_dim)",
        ),
        Family(
            model_type="qwen3_moe",
            tie_default=False,
            config_defaults={"head_dim": 128},
            qk_norm="per_head",
            sliding="qwen2",
            moe="qwen3_moe",
            source=_TF + "qwen3_moe/modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock (no shared "
            "expert)",
        ),
        Family(
            model_type="gemma",
            tie_default=True,
            config_defaults={"head_dim": 256},
            source=_TF + "gemma/configuration_gemma.py (head_dim=256, tie_word_embeddings=True)",
        ),
        Family(
            model_type="gemma2",
            tie_default=True,
            config_defaults={"head_dim": 256, "sliding_window": 4096},
            norm_names=_FOUR_NORMS,
            sliding="alternate",
            source=_TF + "gemma2/modeling_gemma2.py Gemma2DecoderLayer (input, post_attention, "
            "pre_feedforward, post_feedforward norms); sliding on even layers",
        ),
        Family(
            model_type="gemma3_text",
            tie_default=True,
            # Gemma3TextConfig.__init__ defaults (configuration_gemma3.py)
            config_defaults={
                "vocab_size": 262_208,
                "num_attention_heads": 8,
                "num_key_value_heads": 4,
                "head_dim": 256,
                "sliding_window": 4096,
                "max_position_embeddings": 131_072,
            },
            qk_norm="per_head",
            norm_names=_FOUR_NORMS,
            sliding="pattern",
            source=_TF + "gemma3/modeling_gemma3.py Gemma3DecoderLayer; configuration_gemma3.py "
            "layer_types from sliding_window_pattern",
        ),
        Family(
            model_type="phi3",
            tie_default=False,
            bias_key=None,
            fused_qkv=True,
            fused_gate_up=True,
            sliding="all",
            source=_TF + "phi3/modeling_phi3.py Phi3Attention qkv_proj, Phi3MLP gate_up_proj "
            "(no biases); sliding_window passed to attention",
        ),
        Family(
            model_type="gpt2",
            tie_default=True,
            qkv_bias=True,
            linear_biases=True,
            bias_key=None,
            norm="layernorm",
            mlp="plain",
            fused_qkv=True,
            learned_positions=True,
            source=_TF + "gpt2/modeling_gpt2.py GPT2Block (Conv1D c_attn/c_proj/c_fc with "
            "biases, LayerNorm ln_1/ln_2/ln_f, wpe position embeddings)",
        ),
        Family(
            model_type="olmo2",
            tie_default=False,
            qk_norm="full",
            norm_names=("post_attention_layernorm", "post_feedforward_layernorm"),
            source=_TF + "olmo2/modeling_olmo2.py Olmo2Attention q_norm RMSNorm(heads*head_dim), "
            "k_norm RMSNorm(kv_heads*head_dim); Olmo2DecoderLayer post_attention and "
            "post_feedforward norms only",
        ),
        Family(
            model_type="deepseek_v2",
            tie_default=False,
            bias_key=None,
            attention="mla",
            moe="deepseek",
            source=_TF + "deepseek_v2/modeling_deepseek_v2.py DeepseekV2Attention (MLA), "
            "DeepseekV2MoE",
        ),
        Family(
            model_type="deepseek_v3",
            tie_default=False,
            bias_key=None,
            attention="mla",
            moe="deepseek",
            source=_TF + "deepseek_v3/modeling_deepseek_v3.py DeepseekV3Attention (MLA), "
            "DeepseekV3TopkRouter e_score_correction_bias",
        ),
    )
}

# gemma3 configs nest the language model under text_config; the text part reads as gemma3_text.
ALIASES: dict[str, str] = {"gemma3": "gemma3_text"}


def family_of(model_type: str) -> Family | None:
    """The table entry for `model_type`, or None when it is not in the table."""
    return FAMILIES.get(ALIASES.get(model_type, model_type))
