"""What vLLM prints when it starts, predicted line by line for one GPU.

vLLM (V1, vllm/v1/worker/gpu_worker.py determine_available_memory; V0,
vllm/worker/worker.py determine_num_available_blocks, 0.6.5+) loads the weights,
profiles one forward pass of `max_num_batched_tokens` tokens and one sampler pass of
`max_num_seqs` rows, and gives the KV cache what is left of its share of the card:

  usable    = total x gpu_memory_utilization              (total: torch's total_memory)
  KV budget = usable - weights - non_torch - activation_peak
  blocks    = floor(KV budget / (block_size x bytes_per_token))
  tokens    = blocks x block_size                         ("GPU KV cache size")
  max concurrency = blocks / ceil(max_model_len / block_size)   (V1)
                  = tokens / max_model_len                      (V0)

where bytes_per_token is summed over the layers one rank holds: 2 x kv_heads_per_rank x
head_dim x dtype bytes for GQA layers, (kv_lora_rank + qk_rope_head_dim) x dtype bytes
for an MLA layer, the same on every rank (vllm/v1/kv_cache_interface.py,
FullAttentionSpec.page_size_bytes and MLAAttentionSpec). Sliding-window layers are sized
like full ones, as V0 and V1 before its hybrid memory allocator (PR #17996, merged June
2025, in the releases after it) do.

The activation peak is computed, not measured: the larger of
  forward = T x (2 h + max(attention width, MLP width)) x 2 bytes
      (the residual stream and the normed hidden state, plus the widest intermediate of
      a layer on one rank: q, k, v and the attention output; or gate_up and the
      activated half of a gated MLP, or a routed MoE's top-k copies of them)
  sampler = S x vocab x SAMPLER_BYTES_PER_LOGIT + T x h x 2 bytes
      (`calculators.serving.runtimes.SAMPLER_TERMS`, while the hidden states live)
with T = max_num_batched_tokens and S = min(max_num_seqs, T).
Non-torch memory is a measured constant by TP size (`runtimes.NON_TORCH`).

Errors are the runtime's own: vLLM refuses to start when the KV budget is not positive
("No available memory for the cache blocks") or holds fewer tokens than max_model_len
("To serve at least one request with the models's max seq len ...").

SGLang (a static --mem-fraction-static share, no profiling run) has its own accounting,
`calculators.serving.sglang_startup`; `startup` returns it in the same result, with the
lines that SGLang does not have (the activation peak) at zero.

Not modelled: CUDA graphs (captured after the KV cache is sized in these versions, so
they need the room `1 - utilization` leaves), the V1 hybrid allocator for
sliding-window models (PR #17996), pipeline and expert parallelism, LoRA, speculative
decoding, multimodal encoders, and other processes on the card.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from calculators.checks import one_of, positive_int
from calculators.errors import InputError, shown
from calculators.limits import MAX_BLOCK_TOKENS, MAX_CONCURRENT_SEQUENCES, MAX_SEQUENCE_TOKENS
from calculators.memory.gpus import get_gpu
from calculators.memory.kv_cache import KVSettings
from calculators.memory.kv_cache import kv_bytes_per_token as model_kv_bytes_per_token
from calculators.model.spec import ModelSpec
from calculators.serving.runtimes import (
    ENGINES,
    RUNTIMES,
    SAMPLER_BYTES_PER_LOGIT,
    EngineId,
    Entrypoint,
    Measured,
    non_torch_bytes,
    vllm_batch_defaults,
)
from calculators.serving.sglang_startup import (
    NOT_ENOUGH_MEMORY,
    NVIDIA_SMI_TOTAL_MIB,
    default_mem_fraction_static,
    in_use_before_load,
    pool_tokens,
    reserve_bytes,
    sglang_batch_defaults,
)
from calculators.serving.sharding import (
    SERVED_FORMATS,
    RankWeights,
    check_degree,
    kv_heads_per_rank,
    rank_weights,
)

ACTIVATION_BYTES = 2  # bf16/fp16 activations; AWQ/GPTQ/FP8 layers compute in 16-bit too
KV_DTYPES = ("auto", "fp8")
TP_SIZES = (1, 2, 4, 8)  # one node's worth of cards: the sizes `smallest_tp` tries
MAX_TP = 64  # across nodes (DeepSeek-V3 is served at 16)


@dataclass(frozen=True, kw_only=True)
class ServeSettings:
    """The launch: the flags that set memory (None: the runtime's default).

    utilization: --gpu-memory-utilization (SGLang: --mem-fraction-static).
    max_model_len: --max-model-len (SGLang: --context-length); None: max_position_embeddings.
    max_num_batched_tokens: the prefill chunk (SGLang: --chunked-prefill-size).
    max_num_seqs: the sampler's profiled rows (vLLM only).
    block_size: tokens per KV block (SGLang: --page-size, 1).
    cuda_graph_max_bs: SGLang's --cuda-graph-max-bs (its default share reserves for it).
    entrypoint: `vllm serve` or the Python `LLM` class (their batch defaults differ).
    """

    engine: EngineId = "vllm"
    format_id: str = "bf16"
    tp: int = 1
    utilization: float | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    cuda_graph_max_bs: int | None = None
    entrypoint: Entrypoint = "serve"

    def __post_init__(self) -> None:
        one_of("engine", self.engine, ENGINES)
        one_of("format", self.format_id, SERVED_FORMATS)
        one_of("kv_cache_dtype", self.kv_cache_dtype, KV_DTYPES)
        one_of("entrypoint", self.entrypoint, ("serve", "llm"))
        positive_int("tp", self.tp, maximum=MAX_TP)
        if self.utilization is not None:
            u = self.utilization
            ok = isinstance(u, int | float) and not isinstance(u, bool) and 0 < u <= 1
            if not ok:
                raise InputError(
                    "utilization", f"utilization must be a fraction in (0, 1], got {shown(u)}"
                )
        for name, bound in (
            ("max_model_len", MAX_SEQUENCE_TOKENS),
            ("max_num_batched_tokens", MAX_SEQUENCE_TOKENS),
            ("max_num_seqs", MAX_CONCURRENT_SEQUENCES),
            ("block_size", MAX_BLOCK_TOKENS),
        ):
            if getattr(self, name) is not None:
                positive_int(name, getattr(self, name), maximum=bound)
        if self.cuda_graph_max_bs is not None:
            positive_int(
                "cuda_graph_max_bs", self.cuda_graph_max_bs, maximum=MAX_CONCURRENT_SEQUENCES
            )
        allowed = RUNTIMES[self.engine].block_sizes
        if self.block_size is not None and allowed is not None and self.block_size not in allowed:
            raise InputError(
                "block_size",
                f"block_size must be one of {', '.join(map(str, allowed))} for engine "
                f"{self.engine}; got {shown(self.block_size)}",
            )
        sglang = self.engine == "sglang"
        for name, applies in (
            ("cuda_graph_max_bs", sglang),
            ("max_num_seqs", not sglang),
        ):
            if getattr(self, name) is not None and not applies:
                raise InputError(
                    name,
                    f"{name} does not apply to engine {self.engine}: "
                    + (
                        "it is SGLang's (engine sglang)"
                        if name == "cuda_graph_max_bs"
                        else "SGLang profiles no sampler; its pool does not depend on it"
                    ),
                )
        if sglang and self.entrypoint != "serve":
            raise InputError(
                "entrypoint",
                f"entrypoint applies to vLLM only; got {self.entrypoint!r} with sglang",
            )


@dataclass(frozen=True, kw_only=True)
class Card:
    """The GPU as the runtime sees it: torch's total_memory and the device name, and
    nvidia-smi's total in MiB where known (SGLang picks its defaults by it)."""

    total_bytes: int
    name: str
    smi_total_mib: int | None = None

    def __post_init__(self) -> None:
        positive_int("total_bytes", self.total_bytes)


def catalog_card(gpu_id: str) -> Card:
    """A catalog card as the runtimes see it: torch's total, its name, nvidia-smi's total."""
    gpu = get_gpu(gpu_id)
    return Card(
        total_bytes=gpu.visible_bytes, name=gpu.name, smi_total_mib=NVIDIA_SMI_TOTAL_MIB.get(gpu.id)
    )


@dataclass(frozen=True, kw_only=True)
class Startup:
    """Each line of the runtime's startup accounting, for one rank.

    kv_budget_bytes may be negative (the runtime then refuses to start); blocks and
    kv_tokens are 0 then.

    SGLang: utilization is --mem-fraction-static (utilization_source says whether given or
    by SGLang's rule); non_torch is the memory in use before loading; free_before_load_bytes
    is `pre`, reserve_bytes what the static share leaves out, usable_bytes the static
    share (weights + pool), kv_budget_bytes the pool `rest`; the activation lines are 0 and
    max_num_batched_tokens is --chunked-prefill-size; max_concurrency is tokens over the
    context length.
    """

    engine: EngineId
    tp: int
    total_bytes: int
    utilization: float
    usable_bytes: int
    weights: RankWeights
    non_torch: Measured
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    forward_bytes: int
    sampler_bytes: int
    activation_bytes: int
    kv_budget_bytes: int
    bytes_per_token: int
    block_size: int
    blocks: int
    kv_tokens: int
    max_concurrency: float
    error: str | None
    free_before_load_bytes: int | None = None
    reserve_bytes: int | None = None
    cuda_graph_max_bs: int | None = None
    utilization_source: str = "input"

    @property
    def starts(self) -> bool:
        return self.error is None

    @property
    def kv_bytes(self) -> int:
        """Bytes the KV cache allocates: whole blocks."""
        return self.blocks * self.block_size * self.bytes_per_token


MLA_V0_ALIGN = 256  # bytes: V0 pads each MLA cache entry (vllm/worker/cache_engine.py, 0.7)


def kv_bytes_per_token(
    spec: ModelSpec, tp: int, kv_cache_dtype: str, engine: EngineId = "vllm"
) -> int:
    """Bytes one token adds to one rank's cache over all its layers (module docstring).

    The whole model's bytes per token (`calculators.memory.kv_cache.kv_bytes_per_token`,
    in bf16 or fp8), times the share of the KV heads one rank holds; an MLA latent cache
    is whole on every rank. vLLM's V0 engine aligns an MLA layer's entry (kv_lora_rank +
    rope values) to 256 bytes (cache_engine.py, `align_cache` for the MLA backends,
    0.7-0.8): DeepSeek's 576 values of 2 bytes take 1,280 bytes, not 1,152.
    """
    whole = model_kv_bytes_per_token(
        spec, KVSettings(kv_format="fp8" if kv_cache_dtype == "fp8" else "bf16")
    )
    if spec.mla is None:
        return whole * kv_heads_per_rank(spec, tp) // spec.num_kv_heads
    if engine == "vllm-v0":
        entry = whole // spec.num_layers
        return spec.num_layers * (-(-entry // MLA_V0_ALIGN) * MLA_V0_ALIGN)
    return whole


def forward_peak_bytes(spec: ModelSpec, tp: int, tokens: int) -> int:
    """Activation peak of one rank's forward pass over `tokens` (module docstring)."""
    h, hd = spec.hidden_size, spec.head_dim
    q = spec.num_heads // tp * hd
    kv = 0 if spec.mla is not None else kv_heads_per_rank(spec, tp) * hd
    attention = 2 * q + 2 * kv
    gated = 3 if spec.mlp == "gated" else 2
    mlp = gated * spec.intermediate_size // tp
    if spec.moe is not None:
        m = spec.moe
        routed = m.experts_per_token * (gated * m.expert_intermediate_size // tp + h)
        mlp = max(mlp, routed + gated * m.shared_intermediate_size // tp)
    return tokens * (2 * h + max(attention, mlp)) * ACTIVATION_BYTES


def sampler_peak_bytes(spec: ModelSpec, tokens: int, seqs: int) -> int:
    """The sampler's profiling peak over `seqs` rows, with the hidden states alive."""
    rows = min(seqs, tokens)
    return (
        rows * spec.vocab_size * SAMPLER_BYTES_PER_LOGIT
        + tokens * spec.hidden_size * ACTIVATION_BYTES
    )


@lru_cache(maxsize=256)
def _weights(spec: ModelSpec, tp: int, format_id: str) -> RankWeights:
    return rank_weights(spec, tp, format_id)


def _model_len(spec: ModelSpec, settings: ServeSettings) -> int:
    if settings.max_model_len is not None:
        return settings.max_model_len
    if spec.max_position_embeddings is None:
        raise InputError(
            "max_model_len",
            "max_model_len is required: the config gives no max_position_embeddings",
        )
    return spec.max_position_embeddings


def _vllm_error(engine: EngineId, budget: int, tokens: int, needed: int, length: int) -> str | None:
    if budget <= 0:
        return (
            "No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine."
        )
    if engine == "vllm" and needed > budget:
        return (
            f"To serve at least one request with the models's max seq len ({length}), "
            f"({needed / 2**30:.2f} GiB KV cache is needed, which is larger than the "
            f"available KV cache memory ({budget / 2**30:.2f} GiB)."
        )
    if engine == "vllm-v0" and tokens < length:
        return (
            f"The model's max seq len ({length}) is larger than the maximum number of "
            f"tokens that can be stored in KV cache ({tokens}). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing "
            "the engine."
        )
    return None


def sglang_startup(spec: ModelSpec, card: Card, settings: ServeSettings) -> Startup:
    """SGLang's static pool for one rank (`calculators.serving.sglang_startup`):

    pre = total - in use before loading (measured); post = pre - weights;
    rest = post - pre x (1 - f); tokens = floor(rest / cell) // page x page.
    """
    tp = settings.tp
    weights = _weights(spec, tp, settings.format_id)
    length = _model_len(spec, settings)
    page = settings.block_size or RUNTIMES["sglang"].block_size
    per_token = kv_bytes_per_token(spec, tp, settings.kv_cache_dtype, "sglang")
    in_use = in_use_before_load(tp)
    smi = card.smi_total_mib
    # SGLang picks its tiers by nvidia-smi's total; a card given by its memory has only
    # torch's, a little smaller, so a card just above a tier's edge may land one below
    chunked, graph_bs = sglang_batch_defaults(smi or card.total_bytes // 2**20, tp)
    chunked = settings.max_num_batched_tokens or chunked
    graph_bs = settings.cuda_graph_max_bs or graph_bs
    if settings.utilization is not None:
        fraction, source = settings.utilization, "input"
    else:
        fraction = default_mem_fraction_static(smi, tp, chunked, graph_bs)
        source = "SGLang's rule for the card"
    pre = card.total_bytes - in_use.bytes
    reserve = reserve_bytes(pre, fraction)
    rest = pre - weights.total_bytes - reserve
    tokens = pool_tokens(rest, per_token, page)
    error = None if tokens > 0 else NOT_ENOUGH_MEMORY
    if weights.total_bytes > pre:
        error = "CUDA out of memory while loading the weights"
    return Startup(
        engine="sglang",
        tp=tp,
        total_bytes=card.total_bytes,
        utilization=fraction,
        usable_bytes=pre - reserve,
        weights=weights,
        non_torch=in_use,
        max_model_len=length,
        max_num_batched_tokens=chunked,
        max_num_seqs=0,
        forward_bytes=0,
        sampler_bytes=0,
        activation_bytes=0,
        kv_budget_bytes=rest,
        bytes_per_token=per_token,
        block_size=page,
        blocks=tokens // page,
        kv_tokens=tokens,
        max_concurrency=tokens / length,
        error=error,
        free_before_load_bytes=pre,
        reserve_bytes=reserve,
        cuda_graph_max_bs=graph_bs,
        utilization_source=source,
    )


def startup(spec: ModelSpec, card: Card, settings: ServeSettings) -> Startup:
    """The runtime's startup accounting for one rank (module docstring for each line)."""
    engine, tp = settings.engine, settings.tp
    check_degree(spec, tp, settings.format_id)
    if engine == "sglang":
        return sglang_startup(spec, card, settings)
    runtime = RUNTIMES[engine]
    weights = _weights(spec, tp, settings.format_id)
    length = _model_len(spec, settings)
    block = settings.block_size or runtime.block_size
    per_token = kv_bytes_per_token(spec, tp, settings.kv_cache_dtype, engine)
    non_torch = non_torch_bytes(tp)
    assert runtime.default_utilization is not None  # vLLM's engines all have one (0.9)
    util = settings.utilization or runtime.default_utilization
    usable = int(card.total_bytes * util)
    default_tokens, default_seqs = vllm_batch_defaults(
        engine, settings.entrypoint, card.total_bytes, card.name, length
    )
    batched = settings.max_num_batched_tokens or default_tokens
    seqs = settings.max_num_seqs or default_seqs
    forward = forward_peak_bytes(spec, tp, batched)
    sampler = sampler_peak_bytes(spec, batched, seqs)
    activation = max(forward, sampler)
    budget = usable - weights.total_bytes - non_torch.bytes - activation
    blocks = max(budget, 0) // (block * per_token)
    tokens = blocks * block
    blocks_per_request = -(-length // block)
    concurrency = blocks / blocks_per_request if engine == "vllm" else tokens / length
    needed = blocks_per_request * block * per_token
    error = _vllm_error(engine, budget, tokens, needed, length)
    if weights.total_bytes > card.total_bytes:
        error = "CUDA out of memory while loading the weights"
    return Startup(
        engine=engine,
        tp=tp,
        total_bytes=card.total_bytes,
        utilization=util,
        usable_bytes=usable,
        weights=weights,
        non_torch=non_torch,
        max_model_len=length,
        max_num_batched_tokens=batched,
        max_num_seqs=seqs,
        forward_bytes=forward,
        sampler_bytes=sampler,
        activation_bytes=activation,
        kv_budget_bytes=budget,
        bytes_per_token=per_token,
        block_size=block,
        blocks=blocks,
        kv_tokens=tokens,
        max_concurrency=concurrency,
        error=error,
    )


def longest_model_len(spec: ModelSpec, card: Card, settings: ServeSettings) -> int | None:
    """The largest max_model_len (up to the model's max_position_embeddings, or the one
    asked for if larger) at which the launch starts; None if none does.

    Starting is monotone in the length (a longer length never frees memory: V0's default
    batch grows with it), so a bisection over [1, limit] finds it in about 30 steps.
    """
    limit = max(_model_len(spec, settings), spec.max_position_embeddings or 0)

    def starts(length: int) -> bool:
        return startup(spec, card, replace(settings, max_model_len=length)).starts

    if not starts(1):
        return None
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def smallest_tp(spec: ModelSpec, card: Card, settings: ServeSettings) -> int | None:
    """The smallest TP size of one node (1, 2, 4, 8) the model splits over and starts at."""
    for tp in TP_SIZES:
        try:
            check_degree(spec, tp, settings.format_id)
        except InputError:
            continue
        if startup(spec, card, replace(settings, tp=tp)).starts:
            return tp
    return None
