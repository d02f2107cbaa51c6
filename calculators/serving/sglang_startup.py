"""What SGLang allocates when it starts, predicted for one GPU.

SGLang does not profile a forward pass. It measures the free memory before it loads
the weights (`pre`, logged as "Load weight begin. avail mem=... GB") and after
(`post`, "Load weight end. ... avail mem=... GB"), and gives the KV pool what is left of
the static share `mem_fraction_static` (f) of `pre`
(python/sglang/srt/model_executor/model_runner.py, profile_max_num_token; from 0.5 in
model_runner_kv_cache_mixin.py, _profile_available_bytes):

  rest   = post - pre x (1 - f)          (GiB as SGLang measures them)
  tokens = floor(rest x 2^30 / cell) // page_size x page_size
  cell   = bytes one token adds to one rank's pool over all its layers
           (2 x kv_heads_per_rank x head_dim x dtype bytes per layer; MLA: the latent
           (kv_lora_rank + qk_rope_head_dim) x dtype bytes per layer, whole on a rank)

and refuses to start when the pool holds no token: "Not enough memory. Please try to
increase --mem-fraction-static." The share left out, pre x (1 - f), is the room for the
activations of a prefill chunk and the CUDA graphs captured after the pool.

Here `post = pre - weights` (weights per rank as `calculators.serving.sharding` counts
them: SGLang reuses vLLM's layers and their sharding), and `pre = total - in use before
loading`, where `total` is torch's total memory (the catalog's visible bytes) and the
memory in use before loading (the CUDA context, and at TP > 1 NCCL's and the custom
all-reduce's buffers) is a measured constant by TP size, `IN_USE_BEFORE_LOAD`.

The default f (when --mem-fraction-static is not given) follows the rule SGLang adopted
in PR #10975 (merged 2025-09-28, releases 0.5.3 and later), server_args.py
`_handle_gpu_memory_settings`: by the card's total memory in MiB as nvidia-smi reports
it, a prefill chunk and a CUDA-graph batch size (`sglang_batch_defaults`), then

  reserved_MiB = 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs
                 + 1024 x tp / 8           (at least 10,240 on a card above 60 GiB)
  f = round((gpu_MiB - reserved_MiB) / gpu_MiB, 3)

Not modelled: the rule's multimodal reduction (`adjust_mem_fraction_for_vlm`), DP
attention, speculative decoding and pipeline parallelism (each adds to the reserve),
AMD cards (SGLang reads their total from rocm-smi: give --mem-fraction-static), the
hybrid pools of sliding-window and linear-attention models, --max-total-tokens, and
SGLang's rules before 0.5.3 (0.4's table by TP size, `SGLANG_04_FRACTION`, is kept for
the logs of those versions; give the value the launch logs in its ServerArgs line), and
the reserve for piecewise CUDA graphs that 2026 builds capture by default.
"""

from __future__ import annotations

from calculators.errors import InputError
from calculators.serving.runtimes import Measured, at_tp, measured

SRC_SGLANG_RULE = "https://github.com/sgl-project/sglang/pull/10975"
NOT_ENOUGH_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."

# nvidia-smi's memory.total (MiB) of the catalog's NVIDIA cards, which SGLang reads
# (utils.get_nvgpu_memory_capacity) to pick its defaults; each figure is quoted, with
# its public source, in the card's `visible_source` in calculators/memory/gpus.py
# (tests/test_sglang_startup.py checks that it is).
NVIDIA_SMI_TOTAL_MIB: dict[str, int] = {
    "h100-sxm": 81559,
    "h100-pcie": 81559,
    "h100-nvl": 95830,
    "h200": 143771,
    "a100-40gb": 40960,
    "a100-80gb": 81920,
    "l40s": 46068,
    "l4": 23034,
    "a10g": 23028,
    "rtx-4090": 24564,
    "rtx-3090": 24576,
    "b200": 183359,
}

# Memory in use before the weights load, by TP size: the card's visible total less the
# free memory the launch logs before loading ("Load weight begin. avail mem", or "Load
# weight end" avail + mem usage), in GiB, by record id of
# docs/data/serving-logs/records.json (tests/test_sglang_startup.py derives each value
# from the file). A TP size without records takes the nearest smaller one's.
IN_USE_BEFORE_LOAD: dict[int, Measured] = {
    1: measured(
        {
            "sglang-pr13023-llama31-8b-l40s-tp1": 0.52,
            "sglang-pr4826-gemma3-4b-it-h200-tp1": 0.59,
            "sglang-pr4760-llama31-8b-h100-tp1": 0.61,
        },
        "one card: the CUDA context and the allocator's first blocks (three records)",
    ),
    2: measured(
        {"sglang-4257-ds-r1-distill-qwen-14b-a100-40gb-tp2": 0.68},
        "two cards: the context and NCCL's buffers (one record)",
    ),
    4: measured(
        {"sglang-llms-in-clouds-qwq-32b-l4-tp4": 0.32},
        "four PCIe cards, the custom all-reduce off (one record)",
    ),
    8: measured(
        {"sglang-pr11716-llama33-70b-h200-tp8": 2.46},
        "eight cards: the context, NCCL and the custom all-reduce's buffers (one record)",
    ),
}


# SGLang 0.4's default --mem-fraction-static by TP size, before the rules by card memory
# (server_args.py of 0.4.x, ServerArgs.__post_init__, "Set mem fraction static, which
# depends on the tensor parallelism size"; replaced for the H200 by PR #5893 and for all
# cards by PR #7054, June 2025). Used for the logs of those versions; the serve
# calculator models 0.5.3 and later.
SGLANG_04_FRACTION: dict[int, float] = {16: 0.79, 8: 0.81, 4: 0.85, 2: 0.87, 1: 0.88}


def sglang_04_fraction(tp: int) -> float:
    """SGLang 0.4's default fraction at `tp` ranks (the largest TP threshold reached)."""
    return SGLANG_04_FRACTION[max(t for t in SGLANG_04_FRACTION if t <= tp)]


def in_use_before_load(tp: int) -> Measured:
    """SGLang's measured memory in use before loading at `tp` ranks (nearest smaller TP)."""
    return at_tp(IN_USE_BEFORE_LOAD, tp)


def sglang_batch_defaults(gpu_mib: int, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks by the card's nvidia-smi total.

    server_args.py `_handle_gpu_memory_settings` (PR #10975, 0.5.3+), NVIDIA tiers:
    under 20 GiB 2048 and 8; under 35 GiB 2048 and 24 (80 at TP >= 4); under 60 GiB 4096
    and 32 (160); under 160 GiB 8192 and 256 (512); larger 16384 and 512.
    """
    small_tp = tp < 4
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        return 2048, 24 if small_tp else 80
    if gpu_mib < 60 * 1024:
        return 4096, 32 if small_tp else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if small_tp else 512
    return 16384, 512


def reserved_mib(gpu_mib: int, tp: int, chunked_prefill_size: int, cuda_graph_max_bs: int) -> float:
    """MiB SGLang's default rule keeps out of the static share (module docstring)."""
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return reserved


def default_mem_fraction_static(
    gpu_mib: int | None, tp: int, chunked_prefill_size: int, cuda_graph_max_bs: int
) -> float:
    """SGLang's default --mem-fraction-static: round((gpu - reserved) / gpu, 3).

    Needs the nvidia-smi total of the card; a card outside the catalog's NVIDIA cards has
    none here, and the value must be given.
    """
    if gpu_mib is None:
        raise InputError(
            "mem_fraction_static",
            "mem_fraction_static is required for SGLang on this card: SGLang's default is "
            "computed from nvidia-smi's total memory, which the catalog gives only for its "
            f"NVIDIA cards ({', '.join(NVIDIA_SMI_TOTAL_MIB)})",
        )
    reserved = reserved_mib(gpu_mib, tp, chunked_prefill_size, cuda_graph_max_bs)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def pool_tokens(rest_bytes: int, bytes_per_token: int, page_size: int) -> int:
    """Tokens the pool holds: whole cells, rounded down to whole pages; 0 if none fit."""
    if rest_bytes <= 0:
        return 0
    return rest_bytes // bytes_per_token // page_size * page_size


def reserve_bytes(free_before_load: int, fraction: float) -> int:
    """The part of the free memory before loading left out of the static share:
    pre x (1 - f), rounded down to a byte."""
    return int(free_before_load * (1 - fraction))


__all__ = [
    "IN_USE_BEFORE_LOAD",
    "NOT_ENOUGH_MEMORY",
    "NVIDIA_SMI_TOTAL_MIB",
    "SGLANG_04_FRACTION",
    "SRC_SGLANG_RULE",
    "default_mem_fraction_static",
    "in_use_before_load",
    "pool_tokens",
    "reserve_bytes",
    "reserved_mib",
    "sglang_04_fraction",
    "sglang_batch_defaults",
]
