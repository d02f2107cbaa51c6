"""How far the committed probe reports measured above (or below) the calculators' estimates.

Every report in `docs/data/validation/` carries `ratio`: measured / estimate for each
figure both have (a training step's `after_load`, `after_forward`, `backward_peak`,
`optimizer_step`, `peak` and its per-category lines; the KV cache's bytes; the
weights'). This module groups those ratios by probe, figure and device kind, and gives
the largest excess of measured over estimate: the largest ratio's excess over 1, never
below 0.

That excess describes only the calculators' error on what the reports measured. Every
CPU report runs the probes' own reference model and counts its live tensor bytes, with
no caching allocator, CUDA context, library workspaces or fragmentation: its rows check
the calculator against its own reference model. They are no margin for a card; only
reports measured on a GPU could say what a card adds, and none is committed yet.

Standard library only: it runs in the site build, where torch is not installed.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

# A CPU report runs the probes' own reference model (built from the same config) and
# counts its live tensors: it checks the calculators' arithmetic, not a card's behaviour.
DEVICE_NAMES = {
    "cpu": "CPU: calculator against its own reference model",
    "cuda": "GPU (CUDA or ROCm)",
}


class Group(NamedTuple):
    """What a ratio belongs to."""

    probe: str  # train-step, kv-cache, weights, ...
    quantity: str  # the name in the report's `ratio`: after_load, peak, kv_cache_bytes, ...
    device_kind: str  # cpu or cuda (ROCm devices are `cuda` in torch)
    backend: str  # details.backend: cpu-live-tensors, cuda-allocator, or "unknown"


@dataclass(frozen=True)
class Ratio:
    """One measured / estimate ratio and the report it comes from."""

    value: float
    report: str  # the file's name
    device_name: str  # environment.device_name, e.g. "CPU (x86_64)" or "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class Margin:
    """The ratios of one (probe, quantity, device kind), summarised."""

    probe: str
    quantity: str
    device_kind: str
    count: int
    min: float
    median: float
    max: float
    margin: float  # max(0, max - 1): the largest excess of measured over the estimate
    backends: tuple[str, ...]
    reports: tuple[str, ...]
    devices: tuple[str, ...]


def _device_kind(report: dict[str, Any]) -> str:
    device = report["environment"].get("device")
    if isinstance(device, str) and device:
        if device.startswith("cuda"):
            return "cuda"
        return device.split(":")[0]
    backend = report["details"].get("backend")
    if backend == "cuda-allocator":
        return "cuda"
    if backend == "cpu-live-tensors":
        return "cpu"
    return "unknown"


def _load(path: Path) -> dict[str, Any] | None:
    """The report in `path`, None for a JSON Schema; ValueError naming the file otherwise."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"report {path.name!r} cannot be read: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"report {path.name!r} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"report {path.name!r} is not a JSON object")
    if "$schema" in data:
        return None
    for key, kind in (
        ("probe", dict),
        ("status", str),
        ("ratio", dict),
        ("environment", dict),
        ("details", dict),
    ):
        if not isinstance(data.get(key), kind):
            raise ValueError(f"report {path.name!r}: field {key!r} is missing or not a {kind}")
    if not isinstance(data["probe"].get("name"), str):
        raise ValueError(f"report {path.name!r}: field 'probe.name' is missing")
    return data


def phase_ratios(reports_dir: Path) -> dict[Group, list[Ratio]]:
    """Ratios of the reports with status ok in `reports_dir`, grouped.

    Reads every `*.json` except `schema.json` and JSON Schemas (objects with a `$schema`
    key); keeps finite numeric ratios (booleans and nulls are not ratios). Groups are
    sorted by probe, quantity, device kind and backend; ratios within a group by file.
    Raises ValueError naming the file when a report cannot be read or lacks the fields
    read here.
    """
    groups: dict[Group, list[Ratio]] = {}
    for path in sorted(Path(reports_dir).glob("*.json")):
        if path.name == "schema.json":
            continue
        report = _load(path)
        if report is None or report["status"] != "ok":
            continue
        kind = _device_kind(report)
        backend = report["details"].get("backend")
        backend = backend if isinstance(backend, str) else "unknown"
        name = report["environment"].get("device_name")
        name = name if isinstance(name, str) and name else kind
        for quantity, value in report["ratio"].items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if not math.isfinite(value):
                continue
            key = Group(report["probe"]["name"], quantity, kind, backend)
            groups.setdefault(key, []).append(Ratio(float(value), path.name, name))
    return dict(sorted(groups.items()))


def margin_summary(ratios: dict[Group, list[Ratio]]) -> list[Margin]:
    """Per (probe, quantity, device kind), across backends: count, min, median and max
    ratio, and the largest excess of measured over the estimate, max(0, max ratio - 1).

    That excess describes only the calculators' error on what the reports measured (on a
    CPU, the calculator against its own reference model); see the module docstring.
    """
    merged: dict[tuple[str, str, str], list[tuple[str, Ratio]]] = {}
    for g, rs in ratios.items():
        merged.setdefault((g.probe, g.quantity, g.device_kind), []).extend(
            (g.backend, r) for r in rs
        )
    out = []
    for (probe, quantity, kind), items in sorted(merged.items()):
        values = [r.value for _, r in items]
        top = max(values)
        out.append(
            Margin(
                probe=probe,
                quantity=quantity,
                device_kind=kind,
                count=len(values),
                min=min(values),
                median=statistics.median(values),
                max=top,
                margin=max(0.0, top - 1.0),
                backends=tuple(sorted({b for b, _ in items})),
                reports=tuple(sorted({r.report for _, r in items})),
                devices=tuple(sorted({r.device_name for _, r in items})),
            )
        )
    return out


def _sig4(x: float) -> str:
    """Four significant figures, trailing zeros kept: 1.000, 0.9995, 12.35."""
    return f"{x:#.4g}".rstrip(".")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def margin_markdown(summary: list[Margin]) -> str:
    """The summary as a Markdown table, then one sentence per device kind on what it rests
    on, and a sentence saying so when no report was measured on a GPU."""
    lines = [
        "| probe | figure | device | reports | min ratio | median ratio | max ratio "
        "| largest excess over the estimate |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for m in summary:
        lines.append(
            f"| {m.probe} | {m.quantity} | {DEVICE_NAMES.get(m.device_kind, m.device_kind)} "
            f"| {m.count} | {_sig4(m.min)} | {_sig4(m.median)} | {_sig4(m.max)} "
            f"| {m.margin * 100:.1f}% |"
        )
    lines.append("")
    kinds = sorted({m.device_kind for m in summary})
    for kind in kinds:
        rows = [m for m in summary if m.device_kind == kind]
        reports = sorted({r for m in rows for r in m.reports})
        devices = sorted({d for m in rows for d in m.devices})
        backends = sorted({b for m in rows for b in m.backends})
        label = DEVICE_NAMES.get(kind, kind)
        what = (
            " They compare the calculators with the probes' reference model built from the "
            "same config, counting its live tensor bytes, with no caching allocator, CUDA "
            "context or library workspaces: they check the calculators' arithmetic, not "
            "what a card adds."
            if kind == "cpu"
            else ""
        )
        lines.append(
            f"{label}: these rows rest on {_plural(len(reports), 'report')} measured on "
            f"{_plural(len(devices), 'device')} ({', '.join(devices)}), "
            f"backend {', '.join(backends)}.{what}"
        )
        lines.append("")
    if "cuda" not in kinds:
        lines.append(
            "No report measured on a GPU is committed yet: these excesses check the "
            "calculators against their own reference model, and they do not cover the "
            "caching allocator's reserve, the CUDA context or library workspaces."
        )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


__all__ = ["Group", "Margin", "Ratio", "margin_markdown", "margin_summary", "phase_ratios"]
