"""SGLang's KV pool in public startup logs, against the per-token layout the serve
calculator counts.

The size of SGLang's pool is predicted by `calculators.serving.sglang_startup` and held
against the logs in `calculators.serving.sglang_logs`; this module checks the per-token
layout on its own, from the one line that states the pool. When SGLang allocates it, it
prints

    KV Cache is allocated. #tokens: N, K size: k GB, V size: v GB

with k and v in GiB (sglang/srt/mem_cache/memory_pool.py, MHATokenToKVPool: `k_size /
GB` with GB = 1024^3, to two decimals). For a model with grouped-query attention each
rank's K buffer holds, per token, layers x (KV heads on the rank) x head size values of
the cache's dtype, and V the same, so

    k = v = N x b / 2 / 2^30,   b = `calculators.serving.startup.kv_bytes_per_token`

(the whole per-token bytes of one rank, K and V together). The pool also holds one padding
slot per page (`size + page_size` rows), a few KiB: far inside the log's rounding. A
record is within the check when both k and v are within half a hundredth of a GiB of the
prediction. This holds the per-token layout (layers, KV heads per rank after tensor
parallelism, head size, dtype); the token count itself is read from the log.

The records are the `sglang` launches of docs/data/serving-logs/records.json
that print the line and name a config for their layers (`kv_config`, with
`kv_config_note` saying why that config is the model's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calculators.serving.logs import LOG_ROUNDING_GIB, load_records, record_spec
from calculators.serving.startup import kv_bytes_per_token

_GIB = 2**30


@dataclass(frozen=True, kw_only=True)
class PoolCheck:
    """One launch: the logged pool against tokens x the predicted bytes per token."""

    id: str
    source: str
    model: str
    config: str
    config_note: str
    tp: int
    tokens: int
    bytes_per_token: int  # one rank, K and V together
    logged_k_gib: float
    logged_v_gib: float
    predicted_gib: float  # each of K and V

    @property
    def error_gib(self) -> float:
        """The larger of the K and V errors, predicted - logged."""
        return max(
            self.predicted_gib - self.logged_k_gib,
            self.predicted_gib - self.logged_v_gib,
            key=abs,
        )

    @property
    def within(self) -> bool:
        return abs(self.error_gib) <= LOG_ROUNDING_GIB


def layout_bytes_per_token(record: dict[str, Any], folder: str) -> int:
    """One rank's KV bytes per token for a record, from the config its `kv_config` names."""
    spec = record_spec({**record, "config": record["kv_config"]}, folder)
    return kv_bytes_per_token(spec, record["tensor_parallel_size"], "auto", "sglang")


def pool_check(record: dict[str, Any], folder: str) -> PoolCheck:
    """The check of one record that logs its pool and names `kv_config`."""
    logged = record["logged"]
    tp = record["tensor_parallel_size"]
    per_token = layout_bytes_per_token(record, folder)
    return PoolCheck(
        id=record["id"],
        source=record["source"],
        model=record["model"],
        config=record["kv_config"],
        config_note=record["kv_config_note"],
        tp=tp,
        tokens=logged["kv_tokens"],
        bytes_per_token=per_token,
        logged_k_gib=logged["k_size_gb"],
        logged_v_gib=logged["v_size_gb"],
        predicted_gib=logged["kv_tokens"] * per_token / 2 / _GIB,
    )


def pool_checks(path: str) -> list[PoolCheck]:
    """Every SGLang record with a logged pool and a `kv_config`, in file order."""
    data = load_records(path)
    return [
        pool_check(r, data["folder"])
        for r in data.get("sglang", [])
        if "kv_config" in r and "k_size_gb" in r["logged"]
    ]
