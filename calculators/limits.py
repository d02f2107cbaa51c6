"""Bounds on what the calculators accept, so that no input can hang them or exhaust memory.

Two tables:

- `CONFIG_MAX`: plausibility bounds on the sizes a config.json gives, checked as each
  key is read, before anything is allocated. Each bound is far above the largest public
  model (named in the comment, from its config.json on the Hugging Face Hub) and low
  enough that building the tensor inventory stays fast (1,024 layers: a few tens of ms).
  A config past a bound is refused with the key, the value and the bound.
- The `MAX_*` constants: upper bounds on the inputs a reader types (the CLI's flags and
  the pages' fields share them). They sit beyond any real campaign, and keep every
  figure an exact integer or a finite float.
"""

from __future__ import annotations

# Integer keys of a config.json not listed here are bounded by this (int32's maximum).
CONFIG_DEFAULT_MAX = 2**31 - 1

CONFIG_MAX: dict[str, int] = {
    # Llama 3.1 405B: 126 layers, hidden 16,384, 128 heads, 8 KV heads, MLP 53,248
    "num_hidden_layers": 1_024,
    "hidden_size": 131_072,
    "num_attention_heads": 4_096,
    "num_key_value_heads": 4_096,
    "intermediate_size": 1_048_576,
    # Gemma 2: head_dim 256; DeepSeek-V3 MLA: 128 + 64 per query head, latent 512
    "head_dim": 8_192,
    "qk_nope_head_dim": 8_192,
    "qk_rope_head_dim": 8_192,
    "v_head_dim": 8_192,
    "kv_lora_rank": 131_072,
    "q_lora_rank": 131_072,
    # Gemma 3: 262,208 tokens
    "vocab_size": 16_777_216,
    # Kimi K2: 384 routed experts, 8 per token; DeepSeek-V3: 256, 1 shared, MTP 1 layer
    "num_local_experts": 16_384,
    "num_experts": 16_384,
    "n_routed_experts": 16_384,
    "num_experts_per_tok": 16_384,
    "n_shared_experts": 16_384,
    "moe_intermediate_size": 1_048_576,
    "shared_expert_intermediate_size": 1_048_576,
    "num_nextn_predict_layers": 1_024,
    "first_k_dense_replace": 1_024,
    "max_window_layers": 1_024,
    "moe_layer_freq": 1_024,
    "decoder_sparse_step": 1_024,
    "sliding_window_pattern": 1_024,
    # Llama 4 Scout: 10,485,760 positions; Mistral 7B v0.1: a 4,096 window
    "max_position_embeddings": 2**30,
    "sliding_window": 2**30,
}


def config_max(key: str) -> int:
    """The plausibility bound on config key `key`."""
    return CONFIG_MAX.get(key, CONFIG_DEFAULT_MAX)


# ---- inputs a reader types -------------------------------------------------------------

# Tokens in one sequence (context, training sequence, static cache, prefill chunk): the
# bound on max_position_embeddings, a hundred times Llama 4 Scout's 10,485,760 positions.
MAX_SEQUENCE_TOKENS = CONFIG_MAX["max_position_embeddings"]
# Concurrent sequences holding a KV cache.
MAX_CONCURRENT_SEQUENCES = 1_000_000
# Sequences per GPU per step (micro-batch), GPUs, accumulation steps.
MAX_MICRO_BATCH = 1_000_000
MAX_GPUS = 1_000_000
MAX_ACCUMULATION = 1_000_000
# Sequences per optimizer update.
MAX_GLOBAL_BATCH = 10**9
# Training tokens: Llama 3 trained on about 1.5e13; 10^16 leaves three orders of margin.
MAX_TRAINING_TOKENS = 10**16
# Memory of one card, or free memory, in GiB: 2^20 GiB is one PiB.
MAX_MEMORY_GIB = 2**20
# Tokens in a paged-cache block (vLLM's default is 16).
MAX_BLOCK_TOKENS = 65_536
# LoRA rank.
MAX_LORA_RANK = 65_536

# Campaign budget: runs in a phase, GPU-hours of one run (Llama 3.1 405B's pre-training
# took 30.84M H100-hours, its model card says; 10^9 is thirty times that), USD per
# GPU-hour, decisions, rental packages.
MAX_RUNS = 1_000_000
MAX_GPU_HOURS_PER_RUN = 10**9
MAX_PRICE_PER_GPU_HOUR = 1_000_000
MAX_DECISIONS = 1_000_000
MAX_PACKAGE_DAYS = 36_500
MAX_PACKAGE_USD = 10**15
# Share of runs budgeted again: 10 is every run redone ten times.
MAX_MARGIN = 10.0

# Next-token sampling: logits of one step (2^18, a whole vocabulary of most models; Gemma
# 3's 262,208 tokens are just past it, so give its most probable ones), and the previous
# token ids the repetition penalty reads (2^20, past any context a reader pastes).
MAX_SAMPLING_LOGITS = 262_144
MAX_PREVIOUS_TOKENS = 1_048_576
