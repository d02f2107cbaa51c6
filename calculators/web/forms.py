"""The inputs each calculator declares: label, unit, default, bounds, choices and help.

A field's `name` is the CLI flag in snake_case (`--kv-format` is `kv_format`), so a form,
a shared link and the command line all speak the same names. The page forms are generated
from these declarations at build time; the browser validates against the same bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from calculators.limits import (
    MAX_ACCUMULATION,
    MAX_BLOCK_TOKENS,
    MAX_CONCURRENT_SEQUENCES,
    MAX_DECISIONS,
    MAX_GLOBAL_BATCH,
    MAX_GPUS,
    MAX_LORA_RANK,
    MAX_MARGIN,
    MAX_MEMORY_GIB,
    MAX_MICRO_BATCH,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_SEQUENCE_TOKENS,
    MAX_TRAINING_TOKENS,
)
from calculators.memory.formats import FORMATS
from calculators.memory.gpus import GPUS
from calculators.memory.kv_formats import KV_FORMATS
from calculators.model.presets import preset_ids
from calculators.statistics.seeds import (
    ALPHA_RANGE,
    CONFIDENCE_RANGE,
    EFFECT_RANGE,
    MAX_SEEDS,
    POWER_MAX,
    SD_RANGE,
)
from calculators.training.states import OPTIMIZERS, PRECISIONS
from calculators.training.step import DEFAULT_LORA_TARGETS

Kind = Literal["int", "float", "choice", "text", "lines", "bool"]


@dataclass(frozen=True, kw_only=True)
class Field:
    """One input. `default` None with `optional` means the flag is left out when empty.

    kind "lines" is a repeated flag: one value per line (`--phase` given once per line).
    """

    name: str
    label: str
    kind: Kind
    default: int | float | str | bool | None = None
    unit: str = ""
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str, ...] = ()
    help: str = ""
    optional: bool = False

    @property
    def flag(self) -> str:
        """The CLI flag: `kv_format` -> `--kv-format`."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True, kw_only=True)
class Calculator:
    """A calculator as the site shows it: the CLI subcommand and its fields."""

    name: str
    title: str
    command: str
    fields: tuple[Field, ...]
    summary: str

    def field(self, name: str) -> Field:
        """The field `name`; KeyError if the calculator has none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def defaults(self) -> dict[str, int | float | str | bool | None]:
        """Every field's default, by name."""
        return {f.name: f.default for f in self.fields}


_MODEL = Field(
    name="model",
    label="Model preset",
    kind="choice",
    default="llama-3.1-8b",
    choices=preset_ids(),
    help="A public config.json shipped with the calculators (Reference: presets).",
)
_FORMAT = Field(
    name="format",
    label="Weights format",
    kind="choice",
    default="bf16",
    choices=tuple(FORMATS),
    help="Number format of the weights (Reference: formats).",
)
_KEEP = Field(
    name="keep_unquantized",
    label="GGUF roles kept in float",
    kind="text",
    optional=True,
    help="Comma-separated GGUF tensor roles left unquantized, e.g. token_embd,output.",
)
_CONTEXT = Field(
    name="context",
    label="Context",
    kind="int",
    default=8192,
    unit="tokens",
    minimum=1,
    maximum=MAX_SEQUENCE_TOKENS,
    help="Tokens per sequence: prompt plus generated tokens.",
)
_BATCH = Field(
    name="batch",
    label="Concurrent sequences",
    kind="int",
    default=1,
    unit="sequences",
    minimum=1,
    maximum=MAX_CONCURRENT_SEQUENCES,
    help="Sequences whose cache is held at the same time.",
)
_KV = (
    Field(
        name="kv_format",
        label="KV cache format",
        kind="choice",
        default="bf16",
        choices=tuple(KV_FORMATS),
        help="Number format of the cached keys and values.",
    ),
    Field(
        name="allocation",
        label="Cache allocation",
        kind="choice",
        default="dynamic",
        choices=("dynamic", "paged", "static"),
        help="dynamic grows with the tokens; paged rounds up to blocks; static holds the "
        "maximum length from the start.",
    ),
    Field(
        name="block_size",
        label="Paged block",
        kind="int",
        default=16,
        unit="tokens",
        minimum=1,
        maximum=MAX_BLOCK_TOKENS,
        help="Tokens per block of a paged cache (vLLM's default is 16).",
    ),
    Field(
        name="max_length",
        label="Static cache length",
        kind="int",
        optional=True,
        unit="tokens",
        minimum=1,
        maximum=MAX_SEQUENCE_TOKENS,
        help="Length a static cache is allocated for; empty: the context.",
    ),
    Field(
        name="mla_layout",
        label="MLA cache layout",
        kind="choice",
        default="latent",
        choices=("latent", "expanded"),
        help="For MLA models (DeepSeek): the compressed latent, or full keys and values.",
    ),
)
_GPU = Field(
    name="gpu",
    label="GPU",
    kind="choice",
    default="h100-sxm",
    choices=tuple(g.id for g in GPUS),
    help="A card from the catalog (Reference: GPUs).",
)

_ATTENTION = Field(
    name="attention",
    label="Attention kernel",
    kind="choice",
    default="sdpa",
    choices=("sdpa", "eager"),
    help="sdpa (flash) does not keep the score matrix; eager does.",
)
# A catalog card, or one given by the memory torch reports and its runtime (the CLI's
# --gpu, --memory-gib and --runtime), for every calculator that gives a card verdict.
_CARD = (
    _GPU,
    Field(
        name="memory_gib",
        label="Visible memory (card not listed)",
        kind="float",
        optional=True,
        unit="GiB",
        minimum=0,
        maximum=MAX_MEMORY_GIB,
        help="Instead of a catalog card: the memory torch reports as total.",
    ),
    Field(
        name="runtime",
        label="Runtime (with visible memory)",
        kind="choice",
        default="cuda",
        choices=("cuda", "hip"),
        help="Which runtime's reserves apply to a card given by its memory.",
    ),
)

CALCULATORS: dict[str, Calculator] = {
    c.name: c
    for c in (
        Calculator(
            name="weights",
            title="Weights memory",
            command="weights",
            summary="Parameter counts and the bytes of the weights in a number format.",
            fields=(_MODEL, _FORMAT, _KEEP),
        ),
        Calculator(
            name="kv-cache",
            title="KV cache",
            command="kv-cache",
            summary="KV cache bytes by context, batch and format, and what fits in free memory.",
            fields=(
                _MODEL,
                _CONTEXT,
                _BATCH,
                *_KV,
                Field(
                    name="free_gib",
                    label="Free memory for the cache",
                    kind="float",
                    optional=True,
                    unit="GiB",
                    minimum=0,
                    maximum=MAX_MEMORY_GIB,
                    help="Memory left after weights and reserves; gives the longest context "
                    "and the most sequences that fit.",
                ),
            ),
        ),
        Calculator(
            name="envelope",
            title="Memory envelope and card fit",
            command="envelope",
            summary="Weights, KV cache, activations and reserves against a card's memory.",
            fields=(
                _MODEL,
                _FORMAT,
                _CONTEXT,
                _BATCH,
                *_KV,
                *_CARD,
                Field(
                    name="prefill_chunk",
                    label="Prefill chunk",
                    kind="int",
                    optional=True,
                    unit="tokens",
                    minimum=1,
                    maximum=MAX_SEQUENCE_TOKENS,
                    help="Tokens per prefill step when the prompt is chunked; empty: whole.",
                ),
                _ATTENTION,
                Field(
                    name="include_mtp",
                    label="Load MTP modules",
                    kind="bool",
                    default=False,
                    help="Also load multi-token-prediction layers (DeepSeek-V3).",
                ),
                _KEEP,
            ),
        ),
        Calculator(
            name="training",
            title="Training-step memory",
            command="training",
            summary="Training-step memory per GPU, phase by phase, against a card.",
            fields=(
                _MODEL,
                Field(
                    name="micro_batch",
                    label="Micro-batch",
                    kind="int",
                    default=1,
                    unit="sequences",
                    minimum=1,
                    maximum=MAX_MICRO_BATCH,
                    help="Sequences per GPU per forward/backward pass.",
                ),
                Field(
                    name="seq_len",
                    label="Sequence length",
                    kind="int",
                    default=2048,
                    unit="tokens",
                    minimum=1,
                    maximum=MAX_SEQUENCE_TOKENS,
                    help="Tokens per sequence.",
                ),
                Field(
                    name="precision",
                    label="Precision",
                    kind="choice",
                    default="bf16-mixed",
                    choices=tuple(p.id for p in PRECISIONS),
                    help="Parameter, gradient and optimizer-state precision policy.",
                ),
                Field(
                    name="optimizer",
                    label="Optimizer",
                    kind="choice",
                    default="adamw",
                    choices=tuple(o.id for o in OPTIMIZERS),
                    help="Which optimizer's states are held.",
                ),
                Field(
                    name="optimizer_impl",
                    label="Optimizer implementation",
                    kind="choice",
                    default="foreach",
                    choices=("foreach", "for-loop", "fused"),
                    help="PyTorch's implementation: its temporaries during the step differ.",
                ),
                Field(
                    name="checkpointing",
                    label="Activation checkpointing",
                    kind="choice",
                    default="none",
                    choices=("none", "full", "selective"),
                    help="Recompute activations in backward instead of keeping them.",
                ),
                _ATTENTION,
                Field(
                    name="dropout",
                    label="Dropout on",
                    kind="bool",
                    default=False,
                    help="Attention and residual dropout keep their masks for backward.",
                ),
                Field(
                    name="lora_rank",
                    label="LoRA rank",
                    kind="int",
                    optional=True,
                    minimum=1,
                    maximum=MAX_LORA_RANK,
                    help="Empty: full fine-tuning.",
                ),
                Field(
                    name="lora_targets",
                    label="LoRA targets",
                    kind="text",
                    default=",".join(DEFAULT_LORA_TARGETS),
                    help="Comma-separated module names, or all-linear (with a LoRA rank).",
                ),
                Field(
                    name="base_format",
                    label="Frozen base format (LoRA)",
                    kind="text",
                    optional=True,
                    help="Format of the frozen base under LoRA, e.g. nf4-dq (QLoRA).",
                ),
                Field(
                    name="zero",
                    label="ZeRO stage",
                    kind="int",
                    optional=True,
                    minimum=0,
                    maximum=3,
                    help="0 to 3 (FSDP full-shard is 3, shard-grad-op is 2); empty: 0, DDP "
                    "when GPUs > 1.",
                ),
                Field(
                    name="gpus",
                    label="Data-parallel GPUs",
                    kind="int",
                    default=1,
                    unit="GPUs",
                    minimum=1,
                    maximum=MAX_GPUS,
                    help="GPUs the states are sharded over (ZeRO) or replicated on (DDP).",
                ),
                *_CARD,
            ),
        ),
        Calculator(
            name="throughput",
            title="Training time and decode bounds",
            command="throughput",
            summary="Training time at an MFU, and upper bounds for decoding and prefill.",
            fields=(
                _MODEL,
                _GPU,
                Field(
                    name="gpus",
                    label="GPUs",
                    kind="int",
                    default=1,
                    unit="GPUs",
                    minimum=1,
                    maximum=MAX_GPUS,
                    help="GPUs training together.",
                ),
                Field(
                    name="tokens",
                    label="Training tokens",
                    kind="int",
                    default=10**9,
                    unit="tokens",
                    minimum=1,
                    maximum=MAX_TRAINING_TOKENS,
                    help="Tokens the run trains on.",
                ),
                Field(
                    name="seq_len",
                    label="Training sequence length",
                    kind="int",
                    default=4096,
                    unit="tokens",
                    minimum=1,
                    maximum=MAX_SEQUENCE_TOKENS,
                    help="Sequence length in training (attention FLOPs grow with it).",
                ),
                Field(
                    name="mfu",
                    label="MFU",
                    kind="float",
                    default=0.3,
                    minimum=0,
                    maximum=1,
                    help="Model FLOPs utilisation in (0, 1]; measure yours.",
                ),
                Field(
                    name="precision",
                    label="Tensor precision",
                    kind="choice",
                    default="bf16",
                    choices=("bf16", "fp8"),
                    help="Which dense tensor peak the MFU is taken against.",
                ),
                _FORMAT,
                _CONTEXT,
                _BATCH,
                *_KV,
            ),
        ),
        Calculator(
            name="batch",
            title="Effective batch",
            command="batch",
            summary="Sequences and tokens per optimizer update, and accumulation steps.",
            fields=(
                Field(
                    name="micro_batch",
                    label="Micro-batch",
                    kind="int",
                    default=4,
                    unit="sequences",
                    minimum=1,
                    maximum=MAX_MICRO_BATCH,
                    help="Sequences per GPU per forward/backward pass.",
                ),
                Field(
                    name="accumulation",
                    label="Accumulation steps",
                    kind="int",
                    optional=True,
                    minimum=1,
                    maximum=MAX_ACCUMULATION,
                    help="Micro-batches per update; or give the global batch instead.",
                ),
                Field(
                    name="gpus",
                    label="Data-parallel GPUs",
                    kind="int",
                    default=8,
                    unit="GPUs",
                    minimum=1,
                    maximum=MAX_GPUS,
                    help="Data-parallel ranks (a tensor-parallel group counts once).",
                ),
                Field(
                    name="seq_len",
                    label="Sequence length",
                    kind="int",
                    default=4096,
                    unit="tokens",
                    minimum=1,
                    maximum=MAX_SEQUENCE_TOKENS,
                    help="Tokens per row, padded or packed.",
                ),
                Field(
                    name="global_batch",
                    label="Target global batch",
                    kind="int",
                    default=256,
                    optional=True,
                    unit="sequences",
                    minimum=1,
                    maximum=MAX_GLOBAL_BATCH,
                    help="Sequences per update; the accumulation steps are derived from it.",
                ),
                Field(
                    name="mean_tokens",
                    label="Mean real tokens per row",
                    kind="int",
                    optional=True,
                    unit="tokens",
                    minimum=1,
                    maximum=MAX_SEQUENCE_TOKENS,
                    help="Without packing: mean real tokens per padded row; empty: packed.",
                ),
            ),
        ),
        Calculator(
            name="budget",
            title="Campaign budget",
            command="budget",
            summary="GPU-hours, days, cost, rental packages and a schedule by period.",
            fields=(
                Field(
                    name="phase",
                    label="Phases",
                    kind="lines",
                    optional=True,
                    default="",
                    help="One per line, NAME:RUNS:GPU_HOURS[:GPUS], in order; empty: an "
                    "example campaign.",
                ),
                Field(
                    name="gpus",
                    label="GPUs rented",
                    kind="int",
                    default=4,
                    unit="GPUs",
                    minimum=1,
                    maximum=MAX_GPUS,
                    help="GPUs rented in parallel.",
                ),
                Field(
                    name="price",
                    label="Price",
                    kind="float",
                    default=2.5,
                    unit="USD per GPU-hour",
                    minimum=0,
                    maximum=MAX_PRICE_PER_GPU_HOUR,
                    help="An example hourly price; put your offer's.",
                ),
                Field(
                    name="margin",
                    label="Rerun margin",
                    kind="float",
                    default=0.2,
                    minimum=0,
                    maximum=MAX_MARGIN,
                    help="Share of runs budgeted again for interruptions, in [0, 10): 0.2 "
                    "redoes one run in five.",
                ),
                Field(
                    name="decisions",
                    label="Decisions",
                    kind="int",
                    optional=True,
                    minimum=1,
                    maximum=MAX_DECISIONS,
                    help="Useful results the campaign is for; gives the cost per decision.",
                ),
                Field(
                    name="package",
                    label="Rental offers",
                    kind="lines",
                    optional=True,
                    default="",
                    help="One per line, DAYS:GPUS:USD; empty: example 3/7/30-day packages.",
                ),
            ),
        ),
        Calculator(
            name="seeds",
            title="Seed statistics",
            command="seeds",
            summary="Paired seeds: interval of the difference, minimum detectable effect, "
            "seeds needed.",
            fields=(
                Field(
                    name="a",
                    label="Variant A scores",
                    kind="text",
                    default="0.80,0.82,0.79,0.81,0.80",
                    optional=True,
                    help="One score per seed, comma-separated.",
                ),
                Field(
                    name="b",
                    label="Variant B scores",
                    kind="text",
                    default="0.82,0.83,0.81,0.84,0.81",
                    optional=True,
                    help="Same seeds, same order as A.",
                ),
                Field(
                    name="confidence",
                    label="Interval level",
                    kind="float",
                    default=0.95,
                    minimum=CONFIDENCE_RANGE[0],
                    maximum=CONFIDENCE_RANGE[1],
                    help="Confidence level of the interval, from 0.5 to 1 - 1e-10.",
                ),
                Field(
                    name="sd_difference",
                    label="sd of the differences",
                    kind="float",
                    optional=True,
                    minimum=SD_RANGE[0],
                    maximum=SD_RANGE[1],
                    help="Instead of scores: the standard deviation of per-seed differences.",
                ),
                Field(
                    name="seeds",
                    label="Seeds",
                    kind="int",
                    optional=True,
                    minimum=2,
                    maximum=MAX_SEEDS,
                    help="Seeds for the minimum detectable effect; empty: as many as scores.",
                ),
                Field(
                    name="effect",
                    label="Gap to detect",
                    kind="float",
                    default=0.005,
                    optional=True,
                    minimum=EFFECT_RANGE[0],
                    maximum=EFFECT_RANGE[1],
                    help="The smallest difference worth detecting: how many seeds it needs.",
                ),
                Field(
                    name="alpha",
                    label="Test level alpha",
                    kind="float",
                    default=0.05,
                    minimum=ALPHA_RANGE[0],
                    maximum=ALPHA_RANGE[1],
                    help="Two-sided test level, from 1e-10 to 0.5; the interval has its own level.",
                ),
                Field(
                    name="power",
                    label="Power",
                    kind="float",
                    default=0.8,
                    minimum=0,
                    maximum=POWER_MAX,
                    help="Probability of detecting the gap when it is there: above alpha "
                    "(alpha itself is the chance of 'detecting' no gap at all).",
                ),
            ),
        ),
    )
}
