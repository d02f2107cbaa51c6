"""SGLang's public startup logs against its pool rule, two ways.

1. From logged memory: the rule of `calculators.serving.sglang_startup`,

       tokens = floor((post - pre x (1 - f)) x 2^30 / cell) // page x page,

   with pre and post the free memory the launch logs before and after loading
   ("Load weight begin. avail mem", "Load weight end. ... avail mem"; pre may be read
   as post + the logged "mem usage"), f the fraction it logs in its ServerArgs line or,
   for a launch that gives none, the default of its version (`default_rule`: SGLang's
   rule for the card from 0.5.3, or 0.4's table by TP size). Every input is logged to
   two decimals of a GiB, so the check allows what that rounding leaves open: 0.005 GiB
   on post and 0.005 x (1 - f) on pre, in tokens, plus a page.
2. End to end: the serve calculator's prediction from the model, the catalog card, the
   TP size and the flags alone (`calculators.serving.startup.startup`, engine sglang),
   against the logged pool, within the KV-budget tolerance the vLLM records use
   (`calculators.serving.logs.TOLERANCES`: 5% or 0.3 GiB, whichever is larger).

The records are the `sglang` launches of docs/data/serving-logs/records.json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calculators.serving.logs import LOG_ROUNDING_GIB, TOLERANCES, load_records, record_spec
from calculators.serving.sglang_pool import layout_bytes_per_token
from calculators.serving.sglang_startup import (
    NVIDIA_SMI_TOTAL_MIB,
    default_mem_fraction_static,
    pool_tokens,
    reserve_bytes,
    sglang_04_fraction,
    sglang_batch_defaults,
)
from calculators.serving.startup import ServeSettings, catalog_card, startup

_GIB = 2**30


@dataclass(frozen=True, kw_only=True)
class SGLangCheck:
    """One launch's logged pool against a prediction (tokens, and GiB at the layout)."""

    id: str
    source: str
    model: str
    kind: str  # "logged memory" or "end to end"
    tp: int
    fraction: float
    fraction_source: str  # "logged", "SGLang's rule" or "SGLang 0.4's default"
    bytes_per_token: int
    logged_tokens: int
    predicted_tokens: int
    allowed_tokens: int  # the tolerance, in tokens

    @property
    def error_tokens(self) -> int:
        return self.predicted_tokens - self.logged_tokens

    @property
    def error_gib(self) -> float:
        return self.error_tokens * self.bytes_per_token / _GIB

    @property
    def relative(self) -> float:
        return self.error_tokens / self.logged_tokens

    @property
    def within(self) -> bool:
        return abs(self.error_tokens) <= self.allowed_tokens


def _fraction(record: dict[str, Any]) -> tuple[float, str] | None:
    """The launch's --mem-fraction-static: logged, or the default of its version where
    the record names it (`default_rule`: "pr10975" for 0.5.3 and later, "0.4")."""
    flags = record.get("flags", {})
    if flags.get("mem_fraction_static") is not None:
        return flags["mem_fraction_static"], "logged"
    rule = record.get("default_rule")
    tp = record["tensor_parallel_size"]
    if rule == "0.4":
        return sglang_04_fraction(tp), "SGLang 0.4's default"
    card = record.get("gpu_catalog")
    if rule != "pr10975" or card not in NVIDIA_SMI_TOTAL_MIB:
        return None
    gpu_mib = NVIDIA_SMI_TOTAL_MIB[card]
    fraction = default_mem_fraction_static(gpu_mib, tp, *sglang_batch_defaults(gpu_mib, tp))
    return fraction, "SGLang's rule"


def free_before_load_gib(logged: dict[str, Any]) -> float | None:
    """The free memory a launch logs before loading, or its after-load free memory plus
    the logged "mem usage" (SGLang takes both from the same two readings)."""
    if logged.get("avail_mem_before_load_gb") is not None:
        return logged["avail_mem_before_load_gb"]
    if logged.get("avail_mem_after_load_gb") is not None and logged.get("weight_mem_usage_gb"):
        return round(logged["avail_mem_after_load_gb"] + logged["weight_mem_usage_gb"], 2)
    return None


def memory_check(record: dict[str, Any], folder: str) -> SGLangCheck | None:
    """Check 1 (module docstring), or None where the record lacks an input."""
    logged = record["logged"]
    fraction = _fraction(record)
    pre, post = free_before_load_gib(logged), logged.get("avail_mem_after_load_gb")
    if fraction is None or pre is None or post is None or "kv_config" not in record:
        return None
    if record.get("flags", {}).get("max_total_tokens") is not None:
        return None  # the cap, not memory, sets the pool
    f, source = fraction
    cell = layout_bytes_per_token(record, folder)
    # the pool from the logged readings, by the same rule the serve calculator applies
    rest = int(post * _GIB) - reserve_bytes(int(pre * _GIB), f)
    predicted = pool_tokens(rest, cell, page_size=1)
    slack = LOG_ROUNDING_GIB * (1 + (1 - f)) * _GIB / cell
    return SGLangCheck(
        id=record["id"],
        source=record["source"],
        model=record["model"],
        kind="logged memory",
        tp=record["tensor_parallel_size"],
        fraction=f,
        fraction_source=source,
        bytes_per_token=cell,
        logged_tokens=logged["kv_tokens"],
        predicted_tokens=predicted,
        allowed_tokens=math.ceil(slack) + 1,
    )


def end_to_end_check(record: dict[str, Any], folder: str) -> SGLangCheck | None:
    """Check 2 (module docstring), or None where the record is not predictable."""
    fraction = _fraction(record)
    if fraction is None or "config" not in record or record.get("gpu_catalog") is None:
        return None
    card = catalog_card(record["gpu_catalog"])
    spec = record_spec(record, folder)
    settings = ServeSettings(
        engine="sglang",
        format_id=record.get("format", "bf16"),
        tp=record["tensor_parallel_size"],
        utilization=None if fraction[1] == "SGLang's rule" else fraction[0],
    )
    s = startup(spec, card, settings)
    logged_tokens = record["logged"]["kv_tokens"]
    relative, floor_gib = TOLERANCES["kv_budget"]
    allowed_gib = max(relative * logged_tokens * s.bytes_per_token / _GIB, floor_gib)
    return SGLangCheck(
        id=record["id"],
        source=record["source"],
        model=record["model"],
        kind="end to end",
        tp=s.tp,
        fraction=s.utilization,
        fraction_source=fraction[1],
        bytes_per_token=s.bytes_per_token,
        logged_tokens=logged_tokens,
        predicted_tokens=s.kv_tokens,
        allowed_tokens=int(allowed_gib * _GIB // s.bytes_per_token),
    )


def sglang_checks(path: str) -> list[SGLangCheck]:
    """Every check the `sglang` records allow, in file order (memory check first)."""
    data = load_records(path)
    out = []
    for r in data.get("sglang", []):
        for check in (memory_check, end_to_end_check):
            c = check(r, data["folder"])
            if c is not None:
                out.append(c)
    return out
