"""Reading a Hugging Face config.json into a `ModelSpec`.

The reading follows the config classes and modeling code of huggingface/transformers
(cited per family in `calculators.model.families`). Keys are read under their standard
names and the aliases some families use (GPT-2's n_embd, n_layer, n_head, n_inner,
n_positions, as in GPT2Config.attribute_map).

A model_type not in the family table is read as Llama-like: a gated MLP (gate, up,
down), RMSNorm before attention and before the MLP, no biases unless
`attention_bias`/`mlp_bias` say so, untied unless `tie_word_embeddings` says so,
head_dim = hidden_size // num_attention_heads unless `head_dim` is given, full
attention on every layer unless `layer_types` says otherwise, and Mixtral-style
experts when `num_local_experts` is set. Each of these readings is listed in
`ModelSpec.assumptions`.
"""

from __future__ import annotations

from typing import Any

from calculators.errors import shown
from calculators.limits import config_max
from calculators.model.families import LLAMA_LIKE, Family, family_of
from calculators.model.spec import LayerSpec, MLASpec, ModelSpec, MoESpec

_ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "intermediate_size": ("intermediate_size", "n_inner"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions"),
}


def _plausible(key: str, value: int) -> int:
    """`value`, unless it is past the plausibility bound of `key` (calculators.limits)."""
    bound = config_max(key)
    if value > bound:
        raise ValueError(
            f"config key '{key}' must be at most {bound:,} (a plausibility bound far above "
            f"any public model), got {value:,}"
        )
    return value


class _Reader:
    """Key access that names the key in every error and records the defaults used."""

    def __init__(self, config: dict[str, Any], notes: list[str], family: Family) -> None:
        self.config = config
        self.notes = notes
        self.family = family

    def raw(self, key: str) -> Any:
        for alias in _ALIASES.get(key, (key,)):
            if self.config.get(alias) is not None:
                return self.config[alias]
        return None

    def has(self, key: str) -> bool:
        return self.raw(key) is not None

    def int(self, key: str, default: int | None = None, *, note: str | None = None) -> int:
        value = self.raw(key)
        if value is None and key in self.family.config_defaults:
            value = self.family.config_defaults[key]
            self.note(f"{key} absent: {value}, the {self.family.model_type} config default")
            return value
        if value is None:
            if default is None:
                raise ValueError(f"config key '{key}' is missing")
            if note:
                self.note(note)
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"config key '{key}' must be a positive integer, got {shown(value)}")
        return _plausible(key, value)

    def optional_int(self, key: str) -> int | None:
        absent = self.raw(key) is None and key not in self.family.config_defaults
        return None if absent else self.int(key)

    def note(self, text: str) -> None:
        """Record an assumption once, however many layers it applies to."""
        if text not in self.notes:
            self.notes.append(text)

    def count(self, key: str, default: int = 0) -> int:
        """A non-negative integer (0 allowed), such as first_k_dense_replace."""
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(
                f"config key '{key}' must be a non-negative integer, got {shown(value)}"
            )
        return _plausible(key, value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.config.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"config key '{key}' must be true or false, got {shown(value)}")
        return value


def _language_config(config: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The text model's config: the nested text_config of multimodal configs (Gemma 3)."""
    text = config.get("text_config")
    if text is None:
        return config
    if not isinstance(text, dict):
        raise ValueError(f"config key 'text_config' must be an object, got {type(text).__name__}")
    notes.append(
        f"read the language model from text_config of model_type "
        f"'{config.get('model_type')}'; vision tower and projector not counted"
    )
    merged = {k: v for k, v in config.items() if k not in ("text_config", "vision_config")}
    merged.update(text)
    if "model_type" not in text:
        merged["model_type"] = config.get("model_type")
    return merged


def _family(model_type: object, notes: list[str]) -> Family:
    if not isinstance(model_type, str) or not model_type:
        notes.append(f"model_type {shown(model_type)} missing or not a string: read as Llama-like")
        return LLAMA_LIKE
    family = family_of(model_type)
    if family is None:
        notes.append(
            f"model_type '{model_type}' is not in the family table: read as Llama-like "
            "(gated MLP, two RMSNorms per layer, no biases unless attention_bias/mlp_bias)"
        )
        return LLAMA_LIKE
    return family


def _head_dim(r: _Reader, family: Family, hidden: int, heads: int) -> int:
    if r.has("head_dim") or "head_dim" in family.config_defaults:
        return r.int("head_dim")
    if hidden % heads:
        raise ValueError(
            f"config key 'head_dim' is missing and hidden_size ({hidden}) is not divisible "
            f"by num_attention_heads ({heads})"
        )
    return hidden // heads


def _attention_kinds(r: _Reader, family: Family, n_layers: int) -> list[LayerSpec]:
    """Per-layer attention: explicit `layer_types` first, then the family's rule."""
    if family.attention == "mla":
        return [LayerSpec(attention="mla") for _ in range(n_layers)]
    if not r.bool("use_sliding_window", True):
        if r.has("sliding_window"):
            r.notes.append(
                f"sliding_window={r.raw('sliding_window')} is present but use_sliding_window "
                "is false: every layer uses full attention"
            )
        return [LayerSpec(attention="full") for _ in range(n_layers)]

    types = r.raw("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ValueError(
                f"config key 'layer_types' must list num_hidden_layers ({n_layers}) entries, "
                f"got {shown(types)}"
            )
        layers = []
        for kind in types:
            if kind == "full_attention":
                layers.append(LayerSpec(attention="full"))
            elif kind == "sliding_attention":
                layers.append(LayerSpec(attention="sliding", window=r.int("sliding_window")))
            else:
                raise ValueError(
                    "config key 'layer_types' entries must be 'full_attention' or "
                    f"'sliding_attention', got {shown(kind)}"
                )
        return layers

    rule = family.sliding
    if family is LLAMA_LIKE and r.has("sliding_window"):
        r.notes.append("sliding_window ignored: the Llama-like reading has no sliding window")
    if rule in ("all", "qwen2") and not r.has("sliding_window"):
        rule = "none"
    if rule == "qwen2" and not r.bool("use_sliding_window", False):
        rule = "none"

    pattern = 0
    if rule == "pattern":
        pattern = r.int(
            "sliding_window_pattern",
            6,
            note="sliding_window_pattern absent: 6 (five sliding layers, then one full), "
            "the Gemma3TextConfig default",
        )

    def sliding(i: int) -> bool:
        if rule == "all":
            return True
        if rule == "qwen2":
            return i >= r.count("max_window_layers", 0)
        if rule == "alternate":
            return i % 2 == 0
        if rule == "pattern":
            return (i + 1) % pattern != 0
        return False

    return [
        LayerSpec(attention="sliding", window=r.int("sliding_window"))
        if sliding(i)
        else LayerSpec(attention="full")
        for i in range(n_layers)
    ]


def _moe(r: _Reader, family: Family, n_layers: int) -> tuple[MoESpec | None, list[bool]]:
    """The MoE shapes and which layers are MoE."""
    dense = [False] * n_layers
    kind = family.moe
    if kind is None and family is LLAMA_LIKE and r.has("num_local_experts"):
        r.notes.append("num_local_experts set: experts read as Mixtral-style (w1, w2, w3)")
        kind = "mixtral"
    if kind is None:
        return None, dense
    if kind == "mixtral":
        moe = MoESpec(
            n_routed_experts=r.int("num_local_experts"),
            experts_per_token=r.int("num_experts_per_tok"),
            expert_intermediate_size=r.int("intermediate_size"),
        )
        return moe, [True] * n_layers
    if kind in ("qwen2_moe", "qwen3_moe"):
        if r.count("num_experts") == 0:
            return None, dense
        shared = r.count("shared_expert_intermediate_size") if kind == "qwen2_moe" else 0
        moe = MoESpec(
            n_routed_experts=r.int("num_experts"),
            experts_per_token=r.int("num_experts_per_tok"),
            expert_intermediate_size=r.int("moe_intermediate_size"),
            n_shared_experts=1 if shared else 0,
            shared_intermediate_size=shared,
            shared_expert_gate=bool(shared),
        )
        step = r.int("decoder_sparse_step", 1)
        only = r.raw("mlp_only_layers") or []
        if not isinstance(only, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in only
        ):
            raise ValueError(
                f"config key 'mlp_only_layers' must be a list of layer indices, got {shown(only)}"
            )
        dense_only = set(only)
        return moe, [i not in dense_only and (i + 1) % step == 0 for i in range(n_layers)]
    # DeepSeek-V2/V3: dense for the first first_k_dense_replace layers, then every
    # moe_layer_freq-th layer is MoE (DeepseekV3DecoderLayer).
    if r.count("n_routed_experts") == 0:
        return None, dense
    n_shared = r.count("n_shared_experts")
    expert_size = r.int("moe_intermediate_size")
    score_bias = family.model_type == "deepseek_v3" or r.raw("topk_method") == "noaux_tc"
    moe = MoESpec(
        n_routed_experts=r.int("n_routed_experts"),
        experts_per_token=r.int("num_experts_per_tok"),
        expert_intermediate_size=expert_size,
        n_shared_experts=n_shared,
        shared_intermediate_size=n_shared * expert_size,
        router_score_bias=score_bias,
    )
    first_dense = r.count("first_k_dense_replace")
    freq = r.int("moe_layer_freq", 1)
    return moe, [i >= first_dense and i % freq == 0 for i in range(n_layers)]


def _mla(r: _Reader) -> MLASpec:
    return MLASpec(
        q_lora_rank=r.optional_int("q_lora_rank"),
        kv_lora_rank=r.int("kv_lora_rank"),
        qk_nope_head_dim=r.int("qk_nope_head_dim"),
        qk_rope_head_dim=r.int("qk_rope_head_dim"),
        v_head_dim=r.int("v_head_dim"),
    )


def read_hf_config(config: dict[str, Any], *, name: str | None = None) -> ModelSpec:
    """Build a `ModelSpec` from a Hugging Face config.json dict.

    Raises ValueError naming the key when a required key is missing or has a bad value.
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a JSON object, got {type(config).__name__}")
    notes: list[str] = []
    config = _language_config(config, notes)
    family = _family(config.get("model_type"), notes)
    r = _Reader(config, notes, family)

    vocab = r.int("vocab_size")
    hidden = r.int("hidden_size")
    n_layers = r.int("num_hidden_layers")
    heads = r.int("num_attention_heads")
    kv_heads = r.int(
        "num_key_value_heads",
        heads,
        note="num_key_value_heads absent: multi-head attention (one KV head per query head)",
    )
    if family.mlp == "plain":
        intermediate = r.int(
            "intermediate_size", 4 * hidden, note="n_inner absent: 4 x hidden_size (GPT-2)"
        )
    else:
        intermediate = r.int("intermediate_size")

    mla = _mla(r) if family.attention == "mla" else None
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    else:
        head_dim = _head_dim(r, family, hidden, heads)

    moe, moe_layers = _moe(r, family, n_layers)
    attention = _attention_kinds(r, family, n_layers)
    layers = tuple(
        LayerSpec(attention=a.attention, window=a.window, moe=m)
        for a, m in zip(attention, moe_layers, strict=True)
    )

    tie_key = r.config.get("tie_word_embeddings")
    if tie_key is None:
        tie = family.tie_default
        notes.append(
            f"tie_word_embeddings absent: {str(tie).lower()}, the {family.model_type} default"
        )
    else:
        tie = r.bool("tie_word_embeddings", family.tie_default)

    biased = family.bias_key is not None and r.bool(family.bias_key, False)
    mtp = r.count("num_nextn_predict_layers")
    return ModelSpec(
        name=name or str(config.get("_name_or_path") or config.get("model_type") or "model"),
        model_type=str(config.get("model_type")),
        vocab_size=vocab,
        hidden_size=hidden,
        num_layers=n_layers,
        num_heads=heads,
        num_kv_heads=heads if mla is not None else kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        layers=layers,
        tie_word_embeddings=tie,
        qkv_bias=family.qkv_bias or biased,
        o_bias=biased or family.linear_biases,
        mlp_bias=family.linear_biases or r.bool("mlp_bias", False),
        qk_norm=family.qk_norm,
        norm_names=family.norm_names,
        norm=family.norm,
        mlp=family.mlp,
        fused_qkv=family.fused_qkv,
        fused_gate_up=family.fused_gate_up,
        max_position_embeddings=r.optional_int("max_position_embeddings"),
        learned_positions=family.learned_positions,
        moe=moe,
        mla=mla,
        mtp_layers=mtp,
        family_source=family.source,
        assumptions=tuple(notes),
    )
