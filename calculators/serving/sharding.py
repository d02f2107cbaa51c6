"""The weights one tensor-parallel rank holds, as vLLM (and SGLang, which reuses its
layers) load them.

Both shard a checkpoint the Megatron way (Shoeybi et al. 2019, arXiv:1909.08053,
section 3) with layers of their own; per stored tensor (roles of
`calculators.model.tensors`, shapes written (out, in)):

  column-parallel (out / tp): q, k, v, gate, up, fused qkv and gate_up, MLA q_b and kv_b,
      every routed and shared expert's gate and up, and the biases of these;
  row-parallel (in / tp): o, down (and the experts' down); their biases are replicated;
  vocabulary-parallel (vocab_padded / tp rows): the embedding and an untied lm_head,
      vocab_padded = ceil(vocab / 64) x 64
      (vllm/model_executor/layers/vocab_parallel_embedding.py, v0.6-v0.11:
      DEFAULT_VOCAB_PADDING_SIZE = 64, pad_vocab_size, VocabParallelEmbedding);
  replicated: norms, the MoE router, DeepSeek's score bias, MLA q_a and kv_a (vLLM
      deepseek_v2.py: ReplicatedLinear), learned position embeddings.
K and V heads: with tp <= n_kv each rank holds n_kv / tp of them; with tp > n_kv each
holds one, replicated tp / n_kv times (vllm/model_executor/layers/linear.py,
QKVParallelLinear: num_kv_heads = max(1, total_num_kv_heads // tp_size)).

The rotary cos/sin table is a buffer, not a checkpoint tensor, and is counted as
weights by both runtimes' "weights" line (the memory measured across model loading):
max_position x rotary_dim values in the model's dtype, one table shared by all layers
(vllm/model_executor/layers/rotary_embedding.py: RotaryEmbedding._compute_cos_sin_cache,
get_rope caches instances by their arguments), one more for a second rope base (Gemma 3's
local layers).

Multi-token-prediction modules are not loaded for plain serving (vLLM loads them only
as a speculative draft). Quantized formats keep the checkpoint's layout, sharded like
their weight: Marlin repacking (AWQ/GPTQ on Ampere and newer) keeps the byte count of
the packed weights and scales up to alignment padding, which is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calculators.errors import InputError
from calculators.memory.tensor_parallel import tp_refusal
from calculators.memory.weights import quant_context, weight_bytes_of
from calculators.model.spec import ModelSpec
from calculators.model.tensors import Tensor, model_tensors

VOCAB_PADDING = 64  # vLLM DEFAULT_VOCAB_PADDING_SIZE

_COLUMN = frozenset(
    {
        "attn_q",
        "attn_q_b",
        "attn_kv_b",
        "ffn_gate",
        "ffn_up",
        "ffn_gate_up",
        "ffn_gate_exps",
        "ffn_up_exps",
        "ffn_gate_shexp",
        "ffn_up_shexp",
    }
)
_ROW = frozenset({"attn_output", "ffn_down", "ffn_down_exps", "ffn_down_shexp"})
_KV = frozenset({"attn_k", "attn_v"})
_VOCAB = frozenset({"token_embd", "output"})
# Biases are stored under role "bias": the layer they belong to is read from the name.
_BIAS_OF = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "qkv_proj": "attn_qkv",
    "c_attn": "attn_qkv",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "c_fc": "ffn_up",
    "gate_up_proj": "ffn_gate_up",
}

# Formats whose per-rank layout is modelled (the float formats, FP8 as served, AWQ/GPTQ).
SERVED_FORMATS = ("bf16", "fp16", "fp8-e4m3", "fp8-e4m3-block128", "awq-int4", "gptq-int4")


def padded_vocab(vocab_size: int) -> int:
    """The embedding's rows after vLLM's padding: ceil(vocab / 64) x 64."""
    return -(-vocab_size // VOCAB_PADDING) * VOCAB_PADDING


def kv_heads_per_rank(spec: ModelSpec, tp: int) -> int:
    """K/V heads one rank holds (replicated when tp exceeds them)."""
    return max(1, spec.num_kv_heads // tp)


def check_degree(spec: ModelSpec, tp: int, format_id: str = "bf16") -> None:
    """InputError naming `tp` when vLLM refuses to split `spec` over `tp` ranks (the rules
    and their sources: `calculators.memory.tensor_parallel.tp_refusal`)."""
    if not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
        raise InputError("tp", f"tp must be a positive whole number; got {tp!r}")
    refusal = tp_refusal(spec, tp, format_id)
    if refusal is not None:
        raise InputError("tp", refusal)


def _bias_target(t: Tensor) -> str | None:
    parts = t.name.split(".")
    return _BIAS_OF.get(parts[-2]) if len(parts) >= 2 else None


def rank_tensor(spec: ModelSpec, t: Tensor, tp: int) -> Tensor:
    """`t` as one of `tp` ranks holds it (see the module docstring)."""
    out_f = t.shape[0]
    role = t.role
    if role == "bias":
        target = _bias_target(t)
        if target is None:
            return t  # o_proj, down_proj and norm biases: replicated
        role = target
    hd = spec.head_dim
    if role in _VOCAB:
        shape = (padded_vocab(out_f) // tp, *t.shape[1:])
    elif role in _KV:
        shape = (kv_heads_per_rank(spec, tp) * hd, *t.shape[1:])
    elif role == "attn_qkv":
        q = spec.num_heads // tp * hd
        shape = (q + 2 * kv_heads_per_rank(spec, tp) * hd, *t.shape[1:])
    elif role in _COLUMN:
        shape = (out_f // tp, *t.shape[1:])
    elif role in _ROW and len(t.shape) == 2:
        shape = (out_f, t.shape[1] // tp)
    else:
        return t
    return replace(t, shape=shape)


def rank_tensors(spec: ModelSpec, tp: int) -> tuple[Tensor, ...]:
    """Every tensor one of `tp` ranks loads (multi-token-prediction modules left out)."""
    return tuple(rank_tensor(spec, t, tp) for t in model_tensors(spec) if not t.mtp)


def rotary_dim(spec: ModelSpec) -> int:
    """Width of the cos/sin table: the rope part of an MLA head, else the partial
    rotary factor of the head (Phi-3 and GPT-NeoX families set partial_rotary_factor;
    the calculators' spec carries none, so the whole head)."""
    return spec.mla.qk_rope_head_dim if spec.mla is not None else spec.head_dim


@dataclass(frozen=True, kw_only=True)
class RankWeights:
    """What one rank loads: checkpoint tensors in their format and the rotary table(s).

    tensor_bytes: the sharded checkpoint tensors (`rank_tensors`) in `format_id`;
    rotary_bytes: max_position x rotary_dim x 2 bytes per rope table (0 for learned
                  positions);
    by_category:  tensor bytes per `Tensor.category`.
    """

    format_id: str
    tp: int
    tensor_bytes: int
    rotary_bytes: int
    by_category: dict[str, int]

    @property
    def total_bytes(self) -> int:
        return self.tensor_bytes + self.rotary_bytes


def rope_tables(spec: ModelSpec) -> int:
    """Rope tables a runtime builds: two where local (sliding) layers use their own base
    (Gemma 3: rope_local_base_freq), else one; none for learned positions."""
    if spec.learned_positions:
        return 0
    kinds = {layer.attention for layer in spec.layers}
    return 2 if spec.model_type.startswith("gemma3") and "sliding" in kinds else 1


def rank_weights(spec: ModelSpec, tp: int, format_id: str) -> RankWeights:
    """Weights one of `tp` ranks holds in `format_id` (the module docstring's rules).

    Formula: sum over rank_tensors of the format's storage bytes, plus
    rope_tables x max_position_embeddings x rotary_dim x 2 bytes (bf16/fp16 table).
    """
    if format_id not in SERVED_FORMATS:
        raise InputError(
            "format", f"format must be one of {', '.join(SERVED_FORMATS)}; got {format_id!r}"
        )
    check_degree(spec, tp, format_id)
    tensors = rank_tensors(spec, tp)
    result = weight_bytes_of(tensors, quant_context(spec, tensors), format_id)
    positions = spec.max_position_embeddings or 0
    rotary = rope_tables(spec) * positions * rotary_dim(spec) * 2
    return RankWeights(
        format_id=format_id,
        tp=tp,
        tensor_bytes=result.total_bytes,
        rotary_bytes=rotary,
        by_category=dict(result.by_category),
    )
