"""The serving runtime versions the startup predictor knows, as data: their defaults, their
measured constants and where each comes from.

Every constant here is either read from the runtime's source (a default, a block size, a
padding) or measured: a figure the runtime prints at startup in public logs that no
formula gives (memory outside PyTorch's allocator). Measured constants name the
records of `docs/data/serving-logs/records.json` they are the median of; the validation
page shows their error on every record, these included.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Literal

EngineId = Literal["vllm", "vllm-v0", "sglang"]
ENGINES: tuple[EngineId, ...] = ("vllm", "vllm-v0", "sglang")
Entrypoint = Literal["serve", "llm"]

_GIB = 2**30

# Each rule's file at a release tag; docs/calculators/serve.md lists them, rule by rule.
SRC_VLLM = "https://github.com/vllm-project/vllm/blob/v0.9.2/"
SRC_VLLM_V0 = "https://github.com/vllm-project/vllm/blob/v0.7.3/"
SRC_SGLANG = "https://github.com/sgl-project/sglang/blob/v0.5.3/"


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """One runtime's rules.

    block_size:   tokens per KV block (vLLM's --block-size default; SGLang's --page-size).
    block_sizes:  the --block-size values the runtime accepts; None where any page size
                  is taken (SGLang's --page-size).
    versions:     the releases whose rules these are.
    default_utilization: --gpu-memory-utilization; None where the runtime computes its
                  default (SGLang's --mem-fraction-static, `serving.sglang_startup`).
    """

    id: EngineId
    name: str
    versions: str
    block_size: int
    block_sizes: tuple[int, ...] | None
    default_utilization: float | None
    source: str


RUNTIMES: dict[str, Runtime] = {
    "vllm": Runtime(
        id="vllm",
        name="vLLM, V1 engine",
        versions="0.9 to 0.10 (V1, the default engine since 0.8)",
        block_size=16,
        # vllm/config.py: BlockSize = Literal[1, 8, 16, 32, 64, 128]
        block_sizes=(1, 8, 16, 32, 64, 128),
        default_utilization=0.9,
        source=SRC_VLLM + "vllm/config.py (CacheConfig: block_size 16, gpu_memory_utilization 0.9)",
    ),
    "vllm-v0": Runtime(
        id="vllm-v0",
        name="vLLM, V0 engine",
        versions="0.6.5 to 0.8 with VLLM_USE_V1=0 (the memory profiling of PR #10511)",
        block_size=16,
        # vllm/engine/arg_utils.py: --block-size choices=[8, 16, 32, 64, 128]
        block_sizes=(8, 16, 32, 64, 128),
        default_utilization=0.9,
        source=SRC_VLLM_V0 + "vllm/worker/worker.py (determine_num_available_blocks)",
    ),
    "sglang": Runtime(
        id="sglang",
        name="SGLang",
        versions="0.5.3 and later, with the --mem-fraction-static rule of PR #10975",
        block_size=1,
        block_sizes=None,
        default_utilization=None,
        source=SRC_SGLANG + "python/sglang/srt/server_args.py (_handle_gpu_memory_settings, "
        "PR #10975)",
    ),
}


VLLM_BIG_CARD_BYTES = 70 * _GIB  # V1's larger batch defaults start here (not on an A100)


def vllm_batch_defaults(
    engine: EngineId, entrypoint: Entrypoint, total_bytes: int, gpu_name: str, max_model_len: int
) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) when the flags are not given.

    V1 (vllm/engine/arg_utils.py, EngineArgs._set_default_args_v1 / get_batch_defaults,
    0.9+): a card of at least 70 GiB that is not an A100 gets 8192 tokens for `vllm
    serve` and 16384 for the Python `LLM` class, and 1024 sequences; any other card
    2048 and 8192 tokens, 256 sequences. Chunked prefill is always on.
    V0 (vllm/config.py, SchedulerConfig, 0.6-0.8): without chunked prefill the batch
    must hold a whole prompt, max(max_model_len, 2048) tokens; 256 sequences. (V0 turns
    chunked prefill on by itself above 32K tokens of context: then 2048 tokens.)
    """
    if engine == "vllm":
        big = total_bytes >= VLLM_BIG_CARD_BYTES and "a100" not in gpu_name.lower()
        tokens = (
            (16384 if entrypoint == "llm" else 8192)
            if big
            else (8192 if entrypoint == "llm" else 2048)
        )
        return tokens, 1024 if big else 256
    if max_model_len > 32768:
        return 2048, 256
    return max(max_model_len, 2048), 256


# ---- bytes per logit the sampler's profiling run holds at its peak ---------------------
#
# vLLM profiles the sampler with a dummy batch of max_num_seqs rows that asks for top-k
# and top-p (v1/worker/gpu_model_runner.py, _dummy_sampler_run; V0: model_runner.py,
# profile_run with SamplingParams(top_p=0.99, top_k=vocab-1)). PyTorch's top-k/top-p
# path (v1/sample/ops/topk_topp_sampler.py, apply_top_k_top_p) holds at its peak, per
# row and vocabulary entry:
SAMPLER_TERMS: tuple[tuple[str, int], ...] = (
    ("logits from the head, model dtype", 2),
    ("logits as float32 (Sampler: logits.to(torch.float32))", 4),
    ("sorted logits, float32 (logits.sort)", 4),
    ("sort indices, int64", 8),
    ("softmax of the sorted logits, float32 (cumsum in place)", 4),
    ("logits scattered back to vocabulary order, float32", 4),
    # torch.sort on CUDA is a segmented radix sort (CUB) that ping-pongs between two
    # buffers: a second copy of the keys and of the indices while it runs
    ("the sort's alternate key and index buffers (CUB radix sort)", 4 + 8),
)
SAMPLER_BYTES_PER_LOGIT = sum(b for _, b in SAMPLER_TERMS)


# ---- memory outside PyTorch's allocator: measured ---------------------------------------
#
# vLLM's "non_torch_memory" is what the process holds beyond PyTorch's allocator after
# profiling, less what it held at the baseline (v1/utils/memory / vllm/utils.py,
# memory_profiling): NCCL's buffers and communicators, cuBLAS workspaces, the custom
# all-reduce's IPC buffers. No formula gives it; the constants below are the medians of
# the logged values, by tensor-parallel size, over the records named.
@dataclass(frozen=True, kw_only=True)
class Measured:
    """A constant measured in public logs: its value and the records it is the median of."""

    bytes: int
    values_gib: dict[str, float]
    note: str

    @property
    def records(self) -> tuple[str, ...]:
        return tuple(self.values_gib)


def measured(values_gib: dict[str, float], note: str) -> Measured:
    """The median of `values_gib` (record id -> GiB as logged), in bytes."""
    return Measured(
        bytes=int(median(values_gib.values()) * _GIB), values_gib=dict(values_gib), note=note
    )


# By TP size, pooled over V0 and V1 (both report the same measurement, vllm/utils.py
# memory_profiling, since 0.6.5); the values are the logs' as printed, in GiB, by record
# id of docs/data/serving-logs/records.json (tests/test_serving_records.py holds them to
# the file). A TP size without records takes the nearest smaller one's.
NON_TORCH: dict[int, Measured] = {
    1: measured(
        {
            "vllm-pr10511-llama3-8b-h100-tp1": 1.79,
            "vllm-10517-llama31-8b-rtx3090-mml20000": 0.35,
            "vllm-10360-qwen25-32b-awq-a6000": 0.44,
            "vllm-pr13109-deepseek-coder-v2-lite-awq-h100": 0.16,
        },
        "one card: cuBLAS workspaces and what the CUDA context grew by; 0.16 to 1.79 GiB",
    ),
    2: measured(
        {"vllm-pr10511-llama3-8b-h100-tp2": 3.58},
        "two cards: NCCL buffers and the custom all-reduce's IPC buffers (one record)",
    ),
    4: measured(
        {"vllm-pr21429-qwen3-235b-a22b-fp8-tp4-gmu05": 2.04},
        "four cards (one record)",
    ),
    16: measured(
        {"vllm-pr14447-deepseek-v3-0324-awq-rtx3090-tp16": 0.2},
        "sixteen cards over several nodes, where the custom all-reduce is off (one record)",
    ),
}


def at_tp(table: dict[int, Measured], tp: int) -> Measured:
    """A constant measured by TP size, at `tp` ranks: the nearest smaller TP size's (the
    smallest's below every measured size)."""
    sizes = sorted(t for t in table if t <= tp) or sorted(table)
    return table[sizes[-1]]


def non_torch_bytes(tp: int) -> Measured:
    """vLLM's measured non-torch memory at `tp` ranks (the nearest smaller TP size's)."""
    return at_tp(NON_TORCH, tp)
