"""Published checkpoint sizes the weights calculator is checked against, as data.

Each entry is a file (or a repository's weight files together) as published. Sizes in
bytes are the Hugging Face file listing (exact sizes were corroborated in public
listings that quote them, e.g. `ls -l` outputs and download manifests); sizes written
as 4.37e9 are the README's or listing's rounded decimal GB. Published GGUF sizes
include the file's metadata (vocabulary, ~0.7 MB for 32k tokens, ~7.8 MB for
Llama 3), which the calculator does not count, so GGUF results sit slightly below the
file. Instruct models share their base model's shapes, so the base presets are used.
Read by tests/test_reference_sizes.py and benchmarks/accuracy_weights.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class PublishedSize:
    preset: str
    format_id: str
    bytes: int
    what: str
    source: str


def _p(preset: str, format_id: str, size: float, what: str, source: str) -> PublishedSize:
    return PublishedSize(
        preset=preset, format_id=format_id, bytes=int(size), what=what, source=source
    )


HF = "https://huggingface.co"
PUBLISHED_SIZES: list[PublishedSize] = [
    # --- GGUF, exact file bytes -----------------------------------------------------------
    _p(
        "mistral-7b-v0.1",
        "gguf-q4_k_m",
        4_368_438_944,
        "mistral-7b-v0.1.Q4_K_M.gguf",
        f"{HF}/TheBloke/Mistral-7B-v0.1-GGUF/blob/main/mistral-7b-v0.1.Q4_K_M.gguf",
    ),
    _p(
        "mistral-7b-v0.1",
        "gguf-q5_k_m",
        5_131_409_056,
        "mistral-7b-v0.1.Q5_K_M.gguf",
        f"{HF}/TheBloke/Mistral-7B-v0.1-GGUF/blob/main/mistral-7b-v0.1.Q5_K_M.gguf",
    ),
    _p(
        "mistral-7b-v0.1",
        "gguf-q6_k",
        5_942_064_800,
        "mistral-7b-v0.1.Q6_K.gguf",
        f"{HF}/TheBloke/Mistral-7B-v0.1-GGUF/blob/main/mistral-7b-v0.1.Q6_K.gguf",
    ),
    _p(
        "mistral-7b-v0.1",
        "gguf-q8_0",
        7_695_857_312,
        "mistral-7b-v0.1.Q8_0.gguf",
        f"{HF}/TheBloke/Mistral-7B-v0.1-GGUF/blob/main/mistral-7b-v0.1.Q8_0.gguf",
    ),
    _p(
        "mistral-7b-v0.1",
        "gguf-q4_0",
        4_108_916_384,
        "mistral-7b-v0.1.Q4_0.gguf",
        f"{HF}/TheBloke/Mistral-7B-v0.1-GGUF/blob/main/mistral-7b-v0.1.Q4_0.gguf",
    ),
    _p(
        "llama-2-7b",
        "gguf-q4_k_m",
        4_081_004_224,
        "llama-2-7b.Q4_K_M.gguf",
        f"{HF}/TheBloke/Llama-2-7B-GGUF/blob/main/llama-2-7b.Q4_K_M.gguf",
    ),
    _p(
        "llama-2-7b",
        "gguf-q4_0",
        3_825_807_040,
        "llama-2-7b.Q4_0.gguf",
        f"{HF}/TheBloke/Llama-2-7B-GGUF/blob/main/llama-2-7b.Q4_0.gguf",
    ),
    _p(
        "llama-2-7b",
        "gguf-q8_0",
        7_161_089_728,
        "llama-2-7b.Q8_0.gguf",
        f"{HF}/TheBloke/Llama-2-7B-GGUF/blob/main/llama-2-7b.Q8_0.gguf",
    ),
    _p(
        "llama-3.1-8b",
        "gguf-q4_k_m",
        4_920_739_232,
        "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
        f"{HF}/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
    ),
    _p(
        "llama-3.1-8b",
        "gguf-q8_0",
        8_540_775_840,
        "Meta-Llama-3.1-8B-Instruct-Q8_0.gguf",
        f"{HF}/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
    ),
    _p(
        "phi-3-mini-4k",
        "gguf-q4_k_m",
        2_393_231_072,
        "Phi-3-mini-4k-instruct-q4.gguf (Q4_K_M)",
        f"{HF}/microsoft/Phi-3-mini-4k-instruct-gguf",
    ),
    # --- GGUF, README sizes (decimal GB) ---------------------------------------------------
    _p(
        "llama-3.2-1b",
        "gguf-q4_k_m",
        0.81e9,
        "Llama-3.2-1B-Instruct-Q4_K_M.gguf, 0.81GB",
        f"{HF}/bartowski/Llama-3.2-1B-Instruct-GGUF",
    ),
    _p(
        "llama-3.2-1b",
        "gguf-q8_0",
        1.32e9,
        "Llama-3.2-1B-Instruct-Q8_0.gguf, 1.32GB",
        f"{HF}/bartowski/Llama-3.2-1B-Instruct-GGUF",
    ),
    _p(
        "qwen2.5-0.5b",
        "gguf-q4_k_m",
        398e6,
        "qwen2.5:0.5b (0.5b-instruct-q4_K_M), 398MB",
        "https://ollama.com/library/qwen2.5:0.5b",
    ),
    _p(
        "qwen2.5-7b",
        "gguf-q4_k_m",
        4.68e9,
        "Qwen2.5-7B-Instruct-Q4_K_M.gguf, 4.68GB",
        f"{HF}/bartowski/Qwen2.5-7B-Instruct-GGUF",
    ),
    _p(
        "gemma-2-2b",
        "gguf-q4_k_m",
        1.71e9,
        "gemma-2-2b-it-Q4_K_M.gguf, 1.71GB",
        f"{HF}/bartowski/gemma-2-2b-it-GGUF",
    ),
    _p(
        "qwen3-30b-a3b",
        "gguf-q4_k_m",
        18.6e9,
        "Qwen3-30B-A3B-Q4_K_M.gguf, 18.6 GB",
        f"{HF}/Qwen/Qwen3-30B-A3B-GGUF",
    ),
    _p(
        "mixtral-8x7b",
        "gguf-q4_0",
        26.44e9,
        "mixtral-8x7b-v0.1.Q4_0.gguf, 26.44 GB",
        f"{HF}/TheBloke/Mixtral-8x7B-v0.1-GGUF",
    ),
    _p(
        "mixtral-8x7b",
        "gguf-q8_0",
        49.62e9,
        "mixtral-8x7b-v0.1.Q8_0.gguf, 49.62 GB",
        f"{HF}/TheBloke/Mixtral-8x7B-v0.1-GGUF",
    ),
    # --- safetensors checkpoints -----------------------------------------------------------
    _p(
        "llama-2-7b",
        "gptq-int4",
        3.90e9,
        "main branch model.safetensors (4-bit, 128g), 3.90 GB",
        f"{HF}/TheBloke/Llama-2-7B-GPTQ",
    ),
    _p(
        "mistral-7b-v0.1",
        "awq-int4",
        4.15e9,
        "model.safetensors (4-bit, 128g GEMM), 4.15 GB",
        f"{HF}/TheBloke/Mistral-7B-v0.1-AWQ",
    ),
    _p(
        "llama-3.1-8b",
        "nf4-dq",
        5.70e9,
        "unsloth/llama-3-8b-bnb-4bit model.safetensors (nf4, double quant), 5.7 GB; "
        "Llama 3 8B has Llama 3.1 8B's shapes",
        f"{HF}/unsloth/llama-3-8b-bnb-4bit",
    ),
    _p(
        "llama-3.1-8b",
        "fp8-e4m3",
        9.08e9,
        "two safetensors shards, 9.08 GB",
        f"{HF}/neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8",
    ),
    _p(
        "deepseek-v3",
        "fp8-e4m3-block128",
        688_574_839_360,
        "sum of tensor bytes in the safetensors headers of deepseek-ai/DeepSeek-V3 "
        "(includes the MTP layer's own copies of embed_tokens and shared_head.head, "
        "3.7 GB, which model_tensors does not count twice)",
        "https://github.com/simpx/model-inspect (README, DeepSeek-V3 example output)",
    ),
]
