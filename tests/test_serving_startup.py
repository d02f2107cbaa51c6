"""The serving startup predictor: per-rank weights, KV blocks and tokens, the verdict.

Hand-checked values come from the presets' public config.json files
(calculators/model/presets/index.json names each source) and the runtimes' rules as
their source states them (vllm/model_executor/layers/vocab_parallel_embedding.py for
the vocabulary padding, vllm/v1/core/kv_cache_utils.py for blocks and concurrency);
the arithmetic is in the comments. The public startup logs are held in
tests/test_serving_records.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.serving.runtimes import SAMPLER_BYTES_PER_LOGIT, vllm_batch_defaults
from calculators.serving.sharding import check_degree, padded_vocab, rank_weights
from calculators.serving.startup import (
    Card,
    ServeSettings,
    forward_peak_bytes,
    kv_bytes_per_token,
    longest_model_len,
    smallest_tp,
    startup,
)

GIB = 1 << 30
MIB = 1 << 20


def _preset(preset_id: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset_id), name=preset_id)


LLAMA8 = _preset("llama-3.1-8b")
LLAMA70 = _preset("llama-3.1-70b")
QWEN3_MOE = _preset("qwen3-30b-a3b")
DSV2_LITE = _preset("deepseek-v2-lite")
H100 = Card(total_bytes=85_045_477_376, name="NVIDIA H100 80GB HBM3")  # the catalog's visible


def test_llama_8b_weights_on_one_rank_are_the_published_parameters_plus_the_rope_table():
    # 8,030,261,248 parameters (HF safetensors metadata of meta-llama/Llama-3.1-8B) x 2
    # bytes, and the llama3 rope table: 131,072 positions x 128 x 2 bytes = 32 MiB.
    # vLLM logs "Model loading took 14.9889 GiB" for this model (PR #17122).
    w = rank_weights(LLAMA8, 1, "bf16")
    assert w.tensor_bytes == 8_030_261_248 * 2
    assert w.rotary_bytes == 32 * MIB
    assert round(w.total_bytes / GIB, 4) == pytest.approx(14.9889, abs=1e-4)


def test_tensor_parallel_splits_everything_but_norms_and_the_rope_table():
    # Llama 3.1 8B over 2 ranks: every matrix halves (vocab 128,256 is a multiple of 64,
    # 8 KV heads split 4 + 4); the 65 norm vectors of 4,096 and the rope table do not.
    norms = (2 * 32 + 1) * 4096 * 2
    one, two = rank_weights(LLAMA8, 1, "bf16"), rank_weights(LLAMA8, 2, "bf16")
    assert two.tensor_bytes == (one.tensor_bytes - norms) // 2 + norms
    assert two.rotary_bytes == one.rotary_bytes


def test_kv_heads_are_replicated_past_their_count():
    # 8 KV heads over 8 ranks: one head each; Llama 70B has 8 KV heads too, so tp 8 keeps
    # 1 head: 80 layers x 2 x 1 x 128 x 2 bytes = 40,960 bytes per token per rank.
    assert kv_bytes_per_token(LLAMA70, 8, "auto") == 80 * 2 * 1 * 128 * 2
    assert kv_bytes_per_token(LLAMA70, 4, "auto") == 80 * 2 * 2 * 128 * 2
    assert kv_bytes_per_token(LLAMA70, 4, "fp8") == 80 * 2 * 2 * 128 * 1


def test_an_mla_cache_is_whole_on_every_rank():
    # DeepSeek-V2-Lite: 27 layers x (kv_lora_rank 512 + rope 64) x 2 bytes, any tp.
    per_token = 27 * (512 + 64) * 2
    assert kv_bytes_per_token(DSV2_LITE, 1, "auto") == per_token
    assert kv_bytes_per_token(DSV2_LITE, 4, "auto") == per_token


def test_the_vocabulary_is_padded_to_64_rows():
    # vLLM pad_vocab_size: ceil(32,001 / 64) x 64 = 32,064; Qwen2.5's 152,064 stays.
    assert padded_vocab(32_001) == 32_064
    assert padded_vocab(152_064) == 152_064
    config = dict(load_preset("llama-3.1-8b"), vocab_size=128_257)
    spec = ModelSpec.from_hf_config(config, name="padded")
    grown = (
        rank_weights(spec, 1, "bf16").tensor_bytes - rank_weights(LLAMA8, 1, "bf16").tensor_bytes
    )
    assert grown == 2 * 64 * 4096 * 2  # embedding and head gain 64 rows each


def test_vllm_v1_blocks_tokens_and_concurrency_by_hand():
    # Llama 3.1 8B on an H100 with every line pinned: usable 0.9 x total; weights as
    # above; the KV budget is what is left; blocks of 16 tokens x 131,072 bytes = 2 MiB.
    s = startup(
        LLAMA8,
        H100,
        ServeSettings(max_model_len=32_768, max_num_batched_tokens=8192, max_num_seqs=256),
    )
    usable = int(85_045_477_376 * 0.9)
    assert s.usable_bytes == usable
    budget = usable - s.weights.total_bytes - s.non_torch.bytes - s.activation_bytes
    assert s.kv_budget_bytes == budget
    assert s.blocks == budget // (2 * MIB)
    assert s.kv_tokens == s.blocks * 16
    assert s.max_concurrency == s.blocks / (32_768 // 16)
    assert s.starts


def test_the_sampler_profile_grows_with_the_sequences():
    # 1,024 rows x 128,256 vocabulary x the sampler's bytes per logit, plus the hidden
    # states of 8,192 tokens x 4,096 x 2 bytes; the forward pass of 8,192 tokens is
    # smaller: 8,192 x (2 x 4,096 + 3 x 14,336) x 2 bytes.
    settings = ServeSettings(max_model_len=8192, max_num_batched_tokens=8192, max_num_seqs=1024)
    s = startup(LLAMA8, H100, settings)
    assert s.sampler_bytes == 1024 * 128_256 * SAMPLER_BYTES_PER_LOGIT + 8192 * 4096 * 2
    assert s.forward_bytes == 8192 * (2 * 4096 + 3 * 14_336) * 2
    assert s.activation_bytes == max(s.sampler_bytes, s.forward_bytes)


def test_batch_defaults_follow_the_card_and_entrypoint():
    # vllm/engine/arg_utils.py get_batch_defaults: >= 70 GiB and not an A100: 8192 tokens
    # (serve), 16384 (LLM class), 1024 sequences; otherwise 2048 / 8192 and 256.
    assert vllm_batch_defaults("vllm", "serve", 80 * GIB, "NVIDIA H100", 8192) == (8192, 1024)
    assert vllm_batch_defaults("vllm", "llm", 80 * GIB, "NVIDIA H100", 8192) == (16384, 1024)
    assert vllm_batch_defaults("vllm", "serve", 80 * GIB, "NVIDIA A100-SXM4-80GB", 8192) == (
        2048,
        256,
    )
    assert vllm_batch_defaults("vllm", "llm", 44 * GIB, "NVIDIA L40S", 8192) == (8192, 256)
    # V0 without chunked prefill holds a whole prompt: max(max_model_len, 2048)
    assert vllm_batch_defaults("vllm-v0", "serve", 80 * GIB, "x", 8192) == (8192, 256)
    assert vllm_batch_defaults("vllm-v0", "serve", 80 * GIB, "x", 1024) == (2048, 256)
    assert vllm_batch_defaults("vllm-v0", "serve", 80 * GIB, "x", 65_536) == (2048, 256)


def test_seventy_b_does_not_load_on_one_h100_and_needs_four():
    # 70.6 B parameters x 2 bytes = 131 GiB > 79.2 GiB; over 2 ranks 65.7 GiB of weights
    # leave less than the KV cache of one 131,072-token request at 0.9 utilization.
    s = startup(LLAMA70, H100, ServeSettings())
    assert not s.starts and "out of memory" in s.error
    assert smallest_tp(LLAMA70, H100, ServeSettings()) == 4


def test_the_longest_model_len_is_the_edge_of_starting():
    from dataclasses import replace

    # 70B over two H100s starts only with a smaller profiling batch than the H100
    # defaults (1,024 sampler rows of 128,256 logits are 4.6 GiB on their own)
    assert longest_model_len(LLAMA70, H100, ServeSettings(tp=2)) is None
    settings = ServeSettings(tp=2, max_num_batched_tokens=2048, max_num_seqs=256)
    longest = longest_model_len(LLAMA70, H100, settings)
    assert longest is not None

    assert startup(LLAMA70, H100, replace(settings, max_model_len=longest)).starts
    assert not startup(LLAMA70, H100, replace(settings, max_model_len=longest + 1)).starts


def test_v0_refuses_a_model_len_past_its_tokens_with_its_own_words():
    from dataclasses import replace

    settings = ServeSettings(engine="vllm-v0", tp=2, max_model_len=131_072)
    s = startup(LLAMA70, H100, settings)
    assert not s.starts
    assert s.error.startswith("The model's max seq len (131072) is larger than the maximum")
    assert startup(LLAMA70, H100, replace(settings, max_model_len=4096)).starts


@pytest.mark.parametrize(
    ("spec", "tp", "fmt", "words"),
    [
        (LLAMA8, 3, "bf16", "tp must divide the attention heads (32); got 3"),
        (LLAMA70, 128, "bf16", "tp must be at most 64"),
        # Qwen3-30B-A3B: expert intermediate 768 over 8 ranks = 96 rows, not whole
        # 128-row AWQ groups
        (QWEN3_MOE, 8, "awq-int4", "not whole 128-row quantization groups"),
    ],
)
def test_degrees_the_runtimes_refuse_name_tp(spec, tp, fmt, words):
    with pytest.raises(InputError) as e:
        if tp > 64:
            ServeSettings(tp=tp)
        check_degree(spec, tp, fmt)
    assert e.value.field == "tp"
    assert words.split("(")[0].strip() in str(e.value) or "at most 64" in str(e.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"utilization": 1.5}, "utilization"),
        ({"utilization": 0}, "utilization"),
        ({"max_model_len": 0}, "max_model_len"),
        ({"engine": "tgi"}, "engine"),  # a runtime not modelled: refused, not guessed
        ({"engine": "sglang", "max_num_seqs": 64}, "max_num_seqs"),  # vLLM's flag
        ({"cuda_graph_max_bs": 64}, "cuda_graph_max_bs"),  # SGLang's flag under vLLM
        ({"engine": "sglang", "entrypoint": "llm"}, "entrypoint"),
        ({"engine": "sglang", "cuda_graph_max_bs": 0}, "cuda_graph_max_bs"),
        ({"kv_cache_dtype": "int4"}, "kv_cache_dtype"),
        ({"format_id": "gguf-q4_k_m"}, "format"),
        # vllm/config.py (0.9-0.10): BlockSize = Literal[1, 8, 16, 32, 64, 128]
        ({"block_size": 7}, "block_size"),
        # vllm/engine/arg_utils.py (0.6-0.8): --block-size choices=[8, 16, 32, 64, 128]
        ({"engine": "vllm-v0", "block_size": 1}, "block_size"),
    ],
)
def test_bad_settings_name_their_field(kwargs, field):
    with pytest.raises(InputError) as e:
        ServeSettings(**kwargs)
    assert e.value.field == field


def test_block_sizes_are_the_runtimes_own():
    """vLLM V1 takes 1 to 128 in powers of two from 8 (and 1); SGLang any page size."""
    for size in (1, 8, 16, 32, 64, 128):
        assert ServeSettings(block_size=size).block_size == size
    with pytest.raises(InputError, match="one of 1, 8, 16, 32, 64, 128 for engine vllm; got 7"):
        ServeSettings(block_size=7)
    assert ServeSettings(engine="sglang", block_size=7).block_size == 7


PRESETS = st.sampled_from([LLAMA8, LLAMA70, QWEN3_MOE, DSV2_LITE, _preset("qwen2.5-7b")])
ENGINES = st.sampled_from(["vllm", "vllm-v0"])


@given(PRESETS, ENGINES, st.floats(0.3, 0.95), st.floats(0.3, 0.95), st.sampled_from([1, 2, 4]))
def test_more_utilization_never_fewer_tokens(spec, engine, u1, u2, tp):
    try:
        check_degree(spec, tp)
    except InputError:
        return
    lo, hi = sorted((u1, u2))
    a = startup(spec, H100, ServeSettings(engine=engine, tp=tp, utilization=lo, max_model_len=4096))
    b = startup(spec, H100, ServeSettings(engine=engine, tp=tp, utilization=hi, max_model_len=4096))
    assert b.kv_tokens >= a.kv_tokens
    assert b.kv_budget_bytes >= a.kv_budget_bytes


@given(PRESETS, st.sampled_from(["bf16", "fp8-e4m3", "awq-int4"]))
def test_more_ranks_never_more_weights_per_rank(spec, fmt):
    sizes = []
    for tp in (1, 2, 4, 8):
        try:
            sizes.append(rank_weights(spec, tp, fmt).total_bytes)
        except InputError:
            continue
    assert sizes == sorted(sizes, reverse=True)
    assert len(set(sizes)) == len(sizes)


@given(PRESETS, ENGINES, st.floats(0.5, 0.95), st.integers(1, 131_072))
def test_the_cache_is_whole_blocks_inside_the_budget(spec, engine, u, length):
    s = startup(
        spec,
        H100,
        ServeSettings(
            engine=engine, tp=4 if spec is LLAMA70 else 1, utilization=u, max_model_len=length
        ),
    )
    assert s.kv_tokens % s.block_size == 0
    assert s.kv_bytes <= max(s.kv_budget_bytes, 0)
    assert max(s.kv_budget_bytes, 0) - s.kv_bytes < s.block_size * s.bytes_per_token


@given(st.integers(1, 1_000_000))
def test_forward_peak_is_linear_in_tokens(tokens):
    assert forward_peak_bytes(LLAMA8, 1, tokens) == tokens * forward_peak_bytes(LLAMA8, 1, 1)
