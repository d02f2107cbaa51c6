"""Inputs several calculators share (the model, its weights format, the KV cache, the card),
and how the inputs are read into the calculators' own types."""

from __future__ import annotations

import json

from calculators.commands.declaration import Args, Input
from calculators.errors import InputError, shown
from calculators.limits import (
    MAX_BLOCK_TOKENS,
    MAX_CONCURRENT_SEQUENCES,
    MAX_MEMORY_GIB,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_SEQUENCE_TOKENS,
)
from calculators.memory.formats import FORMATS
from calculators.memory.gpus import GPUS
from calculators.memory.kv_cache import KVSettings
from calculators.memory.kv_formats import KV_FORMATS
from calculators.model.presets import get_preset, load_preset, preset_ids
from calculators.model.spec import ModelSpec
from calculators.parsing import parse_number
from calculators.units import gib_to_bytes


class UsageError(InputError):
    """A bad command line as a whole (flags that do not go together), in one line;
    `field` is the input to fix, '' when no single one is to blame."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(field, message, subject="")


# ---- the model: a config.json or a preset, one of them required -----------------------

CONFIG = Input(
    name="config",
    label="config.json",
    kind="text",
    help="a Hugging Face config.json",
    group="model",
    required=True,
    page=False,
    metavar="PATH",
)
MODEL = Input(
    name="model",
    label="Model preset",
    kind="choice",
    example="llama-3.1-8b",
    choices=preset_ids(),
    help="A public config.json shipped with the calculators (Reference: presets).",
    group="model",
    required=True,
    metavar="PRESET",
)
MODEL_SOURCE = (CONFIG, MODEL)

FORMAT = Input(
    name="format",
    label="Weights format",
    kind="choice",
    default="bf16",
    choices=tuple(FORMATS),
    help="Number format of the weights (Reference: formats).",
)
KEEP_UNQUANTIZED = Input(
    name="keep_unquantized",
    label="GGUF roles kept in float",
    kind="text",
    optional=True,
    help="Comma-separated GGUF tensor roles left unquantized, e.g. token_embd,output.",
    metavar="ROLES",
)

# ---- what is served: tokens, sequences and the KV cache --------------------------------

CONTEXT = Input(
    name="context",
    label="Context",
    kind="int",
    example=8192,
    unit="tokens",
    minimum=1,
    maximum=MAX_SEQUENCE_TOKENS,
    required=True,
    help="Tokens per sequence: prompt plus generated tokens.",
)
BATCH = Input(
    name="batch",
    label="Concurrent sequences",
    kind="int",
    default=1,
    unit="sequences",
    minimum=1,
    maximum=MAX_CONCURRENT_SEQUENCES,
    help="Sequences whose cache is held at the same time.",
)
KV = (
    Input(
        name="kv_format",
        label="KV cache format",
        kind="choice",
        default="bf16",
        choices=tuple(KV_FORMATS),
        help="Number format of the cached keys and values.",
    ),
    Input(
        name="allocation",
        label="Cache allocation",
        kind="choice",
        default="dynamic",
        choices=("dynamic", "paged", "static"),
        help="dynamic grows with the tokens; paged rounds up to blocks; static holds the "
        "maximum length from the start.",
    ),
    Input(
        name="block_size",
        label="Paged block",
        kind="int",
        default=16,
        unit="tokens",
        minimum=1,
        maximum=MAX_BLOCK_TOKENS,
        help="Tokens per block of a paged cache (vLLM's default is 16).",
    ),
    Input(
        name="max_length",
        label="Static cache length",
        kind="int",
        optional=True,
        unit="tokens",
        minimum=1,
        maximum=MAX_SEQUENCE_TOKENS,
        help="Length a static cache is allocated for; empty: the context.",
    ),
    Input(
        name="mla_layout",
        label="MLA cache layout",
        kind="choice",
        default="latent",
        choices=("latent", "expanded"),
        help="For MLA models (DeepSeek): the compressed latent, or full keys and values.",
    ),
)
ATTENTION = Input(
    name="attention",
    label="Attention kernel",
    kind="choice",
    default="sdpa",
    choices=("sdpa", "eager"),
    help="sdpa (flash) does not keep the score matrix; eager does.",
)

# ---- the card: a catalog GPU, or one given by the memory torch reports -----------------

GPU = Input(
    name="gpu",
    label="GPU",
    kind="choice",
    default="h100-sxm",
    choices=tuple(g.id for g in GPUS),
    help="A card from the catalog (Reference: GPUs).",
)
CARD = (
    GPU,
    Input(
        name="memory_gib",
        label="Visible memory (card not listed)",
        kind="float",
        optional=True,
        unit="GiB",
        minimum=0,
        maximum=MAX_MEMORY_GIB,
        help="Instead of a catalog card: the memory torch reports as total.",
    ),
    Input(
        name="runtime",
        label="Runtime (with visible memory)",
        kind="choice",
        default="cuda",
        choices=("cuda", "hip"),
        help="Which runtime's reserves apply to a card given by its memory.",
    ),
)
RESERVE = Input(
    name="reserve",
    label="Reserve overrides",
    kind="lines",
    default=(),
    page=False,
    help="override a reserve line, e.g. runtime_context=536870912",
    metavar="ID=VALUE",
)

# ---- what it costs ---------------------------------------------------------------------

PRICE = Input(
    name="price",
    label="Price",
    kind="float",
    example=2.5,
    unit="USD per GPU-hour",
    minimum=0,
    maximum=MAX_PRICE_PER_GPU_HOUR,
    required=True,
    help="An example hourly price; put your offer's.",
)


# ---- reading the inputs ----------------------------------------------------------------


def load_spec(args: Args) -> ModelSpec:
    """The model of `--config` (a file) or `--model` (a preset)."""
    if args.config is not None:
        try:
            with open(args.config, encoding="utf-8") as f:
                config = json.load(f)
        except OSError as e:
            raise UsageError(
                f"config {shown(args.config)} cannot be read: {e.strerror}", "config"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UsageError(
                f"config {shown(args.config)} is not valid JSON: {e}", "config"
            ) from None
        try:
            return ModelSpec.from_hf_config(config, name=args.config)
        except ValueError as e:  # a config's keys are one input: the file
            raise UsageError(str(e), "config") from None
    get_preset(args.model)
    return ModelSpec.from_hf_config(load_preset(args.model), name=args.model)


def gib_or_none(field: str, value: float | None, *, allow_zero: bool = False) -> int | None:
    """GiB as bytes (`calculators.units.gib_to_bytes`), None left out."""
    return None if value is None else gib_to_bytes(field, value, allow_zero=allow_zero)


def kv_settings(args: Args) -> KVSettings:
    return KVSettings(
        kv_format=args.kv_format,
        allocation=args.allocation,
        block_size=args.block_size,
        mla_layout=args.mla_layout,
    )


def keep_unquantized(args: Args) -> frozenset[str] | None:
    if args.keep_unquantized is None:
        return None
    return frozenset(r for r in args.keep_unquantized.split(",") if r)


def reserves(pairs: list[str]) -> dict[str, int | float]:
    """ID=VALUE pairs: bytes as whole numbers (536870912 or 5.12e8), fractions as 0.1."""
    out: dict[str, int | float] = {}
    for pair in pairs:
        rid, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--reserve must be ID=VALUE, got {shown(pair)}", "reserve")
        try:
            out[rid] = parse_number("reserve", value)
        except InputError:
            raise UsageError(
                f"--reserve {shown(rid)} must be a number, got {shown(value)}", "reserve"
            ) from None
    return out


def warning_lines(warnings: tuple[str, ...]) -> list[str]:
    return [f"WARNING: {w}" for w in warnings]


def assumption_lines(spec: ModelSpec) -> list[str]:
    return (
        ["", "Read from config.json:", *(f"  - {a}" for a in spec.assumptions)]
        if spec.assumptions
        else []
    )
