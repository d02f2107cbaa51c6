"""What one card holds when a model is served with tensor parallelism over `degree` cards.

Tensor parallelism (Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053, section 3) splits
every attention block by heads and every MLP by its intermediate columns; vLLM and
SGLang also split the embedding and the output head by vocabulary rows. Each card then
holds, per layer:

  weights   ~ weights / degree
  KV cache  = KV cache x kv_heads_per_card / n_kv, where
              kv_heads_per_card = n_kv / degree        when degree divides n_kv,
                                = 1 (replicated)        when n_kv divides degree
              (vLLM replicates a KV head on several cards when the degree exceeds the KV
              heads: vllm/model_executor/models/llama.py, LlamaAttention,
              `num_kv_heads = max(1, total_num_kv_heads // tp_size)`);
              an MLA latent cache (DeepSeek) has no heads to split: every card holds it
              whole.
  activation workspace: not divided here. The attention and MLP intermediates do split,
              but the residual stream and the prefill batch do not; keeping the whole
              workspace on each card is an upper bound.

What this does not model: norms replicated on every card (well under 0.1% of the weights
of the models here), the K/V projections replicated with the heads when the degree
exceeds n_kv, pipeline parallelism, expert parallelism for MoE (experts are split like
any MLP here) and the NCCL buffers of more than one communicator (the framework reserve
holds one). A degree is valid when it divides the attention heads and either divides the
KV heads or is a multiple of them, as vLLM requires, and splits every MLP into whole
rows (and whole quantization groups): `tp_refusal` gives vLLM's rules and sources. The
serve calculator (`calculators.serving.sharding`) refuses with the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculators.checks import positive_int
from calculators.memory.formats import get_format
from calculators.model.spec import ModelSpec

# Degrees tried for a card that does not hold the model alone: the sizes of the servers
# GPUs are rented in (1, 2, 4 or 8 cards per node). Beyond 8, serving crosses nodes.
DEGREES = (2, 4, 8)


@dataclass(frozen=True, kw_only=True)
class Share:
    """The part of each quantity that one of `degree` cards holds."""

    degree: int
    kv_heads_per_card: int | None  # None: an MLA latent cache, held whole on every card

    def weights(self, weights_bytes: int) -> int:
        """Bytes of weights on one card: an even split, rounded up."""
        return -(-weights_bytes // self.degree)  # integer ceiling: bytes stay exact

    def kv_cache(self, kv_bytes: int, num_kv_heads: int) -> int:
        """Bytes of KV cache on one card."""
        if self.kv_heads_per_card is None:
            return kv_bytes
        return -(-kv_bytes * self.kv_heads_per_card // num_kv_heads)


# Formats whose weights are stored in groups of input rows, which a rank must hold whole.
GROUPED_FORMATS = ("awq-int4", "gptq-int4")


def tp_refusal(spec: ModelSpec, tp: int, format_id: str = "bf16") -> str | None:
    """Why vLLM refuses to split `spec` over `tp` ranks, or None when it splits.

    vLLM (vllm/config.py ModelConfig.verify_with_parallel_config): the attention heads
    must divide by tp; QKVParallelLinear needs tp to divide n_kv or n_kv to divide tp;
    the MLP's (and each expert's) intermediate size must divide by tp (linear.py,
    `divide`); a grouped quantization needs each rank's input rows to be whole groups
    (vLLM: "The input size is not aligned with the quantized weight shape"), checked when
    the layer is split (tp > 1): an unsplit checkpoint's shapes are the quantizer's own.
    """
    if spec.num_heads % tp:
        return (
            f"tp must divide the attention heads ({spec.num_heads}); got {tp} "
            "(vLLM: 'Total number of attention heads must be divisible by tensor parallel size')"
        )
    n_kv = spec.num_kv_heads
    if spec.mla is None and n_kv % tp and tp % n_kv:
        return f"tp must divide the KV heads ({n_kv}) or be a multiple of them; got {tp}"
    sizes = {"intermediate_size": spec.intermediate_size}
    if spec.moe is not None:
        sizes["expert intermediate size"] = spec.moe.expert_intermediate_size
        if spec.moe.shared_intermediate_size:
            sizes["shared expert intermediate size"] = spec.moe.shared_intermediate_size
    group = get_format(format_id).group_size if format_id in GROUPED_FORMATS else None
    for name, size in sizes.items():
        if size % tp:
            return f"tp must divide the {name} ({size:,}); got {tp}"
        if group and tp > 1 and (size // tp) % group:
            return (
                f"tp {tp} leaves {size // tp:,} rows of the {name} per rank, not whole "
                f"{group}-row quantization groups (vLLM refuses: the input size is not "
                "aligned with the quantized weight shape)"
            )
    return None


def valid_degrees(spec: ModelSpec, format_id: str = "bf16") -> tuple[int, ...]:
    """The degrees of `DEGREES` that `spec` in `format_id` can be split over
    (`tp_refusal`)."""
    return tuple(d for d in DEGREES if tp_refusal(spec, d, format_id) is None)


def card_share(spec: ModelSpec, degree: int) -> Share:
    """What one of `degree` cards holds of `spec` (degree 1: everything)."""
    positive_int("degree", degree)
    if degree > 1 and degree not in valid_degrees(spec):
        raise ValueError(
            f"degree must be one of {list(valid_degrees(spec))} for this model, got {degree}"
        )
    if spec.mla is not None:
        return Share(degree=degree, kv_heads_per_card=None)
    return Share(degree=degree, kv_heads_per_card=max(1, spec.num_kv_heads // degree))
