"""The probes' JSON report: a versioned schema, its check, and an atomic writer.

Importable without torch (the docs' validation page and `probes compare` read reports
on machines that never measured anything). One report is one JSON object:

  schema, schema_version   "kernodeck-probe-report", SCHEMA_VERSION
  probe                    {"name": "train-step", "version": "1"}
  command                  the exact argv, and `command_line`, the same joined for a shell
  environment              python, platform, torch, cuda, hip, device, device_name,
                           driver, total_memory_bytes, allocator settings from the
                           environment (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF, ...)
  inputs                   the probe's settings (model, micro_batch, seq_len, ...)
  estimate, measured       {name: number}; entries share names (a `peak` in each)
  units                    {name: unit} for every name in estimate or measured
  ratio                    {name: measured / estimate} for names in both (estimate != 0)
  details                  free-form: the tracker's categories, per-rank figures, ...
  status                   ok | oom | error | interrupted; `error` says why when not ok
  started_at, finished_at  ISO 8601 UTC timestamps

Measured bytes are ints. A figure a backend could not measure (a CPU build's
`torch.cuda.*` zeros) is absent from `measured`, never written as 0.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import tempfile
from datetime import UTC, datetime
from typing import Any

from calculators.render import table
from calculators.units import format_gib

SCHEMA_ID = "kernodeck-probe-report"
SCHEMA_VERSION = 1
STATUSES = ("ok", "oom", "error", "interrupted")
ALLOCATOR_ENV = (
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
)
REQUIRED = {
    "schema": str,
    "schema_version": int,
    "probe": dict,
    "command": list,
    "command_line": str,
    "environment": dict,
    "inputs": dict,
    "estimate": dict,
    "measured": dict,
    "units": dict,
    "ratio": dict,
    "details": dict,
    "status": str,
    "error": (str, type(None)),
    "started_at": str,
    "finished_at": str,
}
ENVIRONMENT_KEYS = (
    "python",
    "platform",
    "torch",
    "cuda",
    "hip",
    "device",
    "device_name",
    "driver",
    "total_memory_bytes",
    "allocator_settings",
)

# JSON Schema (draft 2020-12) of the same rules, for the docs page and other readers.
JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": f"{SCHEMA_ID}/v{SCHEMA_VERSION}",
    "title": "Kernodeck probe report",
    "type": "object",
    "required": list(REQUIRED),
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "schema_version": {"const": SCHEMA_VERSION},
        "probe": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        },
        "command": {"type": "array", "items": {"type": "string"}},
        "command_line": {"type": "string"},
        "environment": {"type": "object", "required": list(ENVIRONMENT_KEYS)},
        "inputs": {"type": "object"},
        "estimate": {"type": "object", "additionalProperties": {"type": "number"}},
        "measured": {"type": "object", "additionalProperties": {"type": "number"}},
        "units": {"type": "object", "additionalProperties": {"type": "string"}},
        "ratio": {"type": "object", "additionalProperties": {"type": "number"}},
        "details": {"type": "object"},
        "status": {"enum": list(STATUSES)},
        "error": {"type": ["string", "null"]},
        "started_at": {"type": "string", "format": "date-time"},
        "finished_at": {"type": "string", "format": "date-time"},
    },
}


def now() -> str:
    """UTC now, ISO 8601 with seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def environment(device: str | None = None) -> dict[str, Any]:
    """Python, torch, CUDA or HIP version, device, driver, memory, allocator settings.

    torch is imported only if it is already importable; without it the torch fields are
    None. Fields that do not apply (driver on CPU) are None, never guessed.
    """
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": None,
        "cuda": None,
        "hip": None,
        "numpy": None,
        "device": device,
        "device_name": f"CPU ({platform.processor() or platform.machine()})",
        "driver": None,
        "total_memory_bytes": None,
        "allocator_settings": {k: os.environ[k] for k in ALLOCATOR_ENV if k in os.environ},
        "cpu_count": os.cpu_count(),
    }
    try:
        import numpy

        env["numpy"] = numpy.__version__
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return env
    env["torch"] = torch.__version__
    env["cuda"] = torch.version.cuda
    env["hip"] = getattr(torch.version, "hip", None)
    if device is not None and device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        env["device_name"] = props.name
        env["total_memory_bytes"] = int(props.total_memory)
        env["driver"] = _driver_version()
    elif device == "cpu":
        env["total_memory_bytes"] = _cpu_memory_bytes()
    return env


def _driver_version() -> str | None:
    try:
        import torch

        if getattr(torch.version, "hip", None):
            return f"HIP runtime {torch.version.hip}"
        v = torch._C._cuda_getDriverVersion()  # e.g. 12040 for CUDA 12.4 driver API
        return f"CUDA driver API {v // 1000}.{v % 1000 // 10}"
    except Exception:  # any failure leaves the field unknown rather than guessed
        return None


def _cpu_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def ratios(estimate: dict[str, Any], measured: dict[str, Any]) -> dict[str, float]:
    """measured / estimate for each name in both, where the estimate is not zero."""
    out = {}
    for name, m in measured.items():
        e = estimate.get(name)
        if isinstance(e, int | float) and isinstance(m, int | float) and e:
            out[name] = m / e
    return out


def new_report(probe: str, version: str, argv: list[str] | None = None) -> dict[str, Any]:
    """A report with status `interrupted` until the probe finishes and says otherwise."""
    argv = list(sys.argv if argv is None else argv)
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "probe": {"name": probe, "version": version},
        "command": argv,
        "command_line": shlex.join(argv),
        "environment": environment(),
        "inputs": {},
        "estimate": {},
        "measured": {},
        "units": {},
        "ratio": {},
        "details": {},
        "status": "interrupted",
        "error": None,
        "started_at": now(),
        "finished_at": now(),
    }


def finish(report: dict[str, Any], status: str, error: str | None = None) -> dict[str, Any]:
    """Set status, error, ratio and finished_at; returns the report."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    report["status"] = status
    report["error"] = error
    report["ratio"] = ratios(report["estimate"], report["measured"])
    report["finished_at"] = now()
    return report


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def validate(report: object) -> None:
    """Raise ValueError naming the field when `report` does not follow the schema."""
    if not isinstance(report, dict):
        raise ValueError(f"report must be a JSON object, got {type(report).__name__}")
    for key, kind in REQUIRED.items():
        if key not in report:
            raise ValueError(f"report field {key!r} is missing")
        if not isinstance(report[key], kind):
            raise ValueError(f"report field {key!r} has type {type(report[key]).__name__}")
    if report["schema"] != SCHEMA_ID:
        raise ValueError(f"report field 'schema' must be {SCHEMA_ID!r}, got {report['schema']!r}")
    if report["schema_version"] != SCHEMA_VERSION:
        raise ValueError(
            f"report field 'schema_version' must be {SCHEMA_VERSION}, "
            f"got {report['schema_version']!r}"
        )
    for key in ("name", "version"):
        if not isinstance(report["probe"].get(key), str):
            raise ValueError(f"report field 'probe.{key}' must be a string")
    if not all(isinstance(a, str) for a in report["command"]):
        raise ValueError("report field 'command' must list strings")
    for key in ENVIRONMENT_KEYS:
        if key not in report["environment"]:
            raise ValueError(f"report field 'environment.{key}' is missing")
    for section in ("estimate", "measured", "ratio"):
        for name, value in report[section].items():
            if not _is_number(value):
                raise ValueError(f"report field '{section}.{name}' must be a number, got {value!r}")
    for name in set(report["estimate"]) | set(report["measured"]):
        if not isinstance(report["units"].get(name), str):
            raise ValueError(f"report field 'units.{name}' is missing")
    if report["status"] not in STATUSES:
        raise ValueError(
            f"report field 'status' must be one of {', '.join(STATUSES)}, got {report['status']!r}"
        )
    if report["status"] != "ok" and report["error"] is None and report["status"] != "interrupted":
        raise ValueError(f"report field 'error' must say why the status is {report['status']}")
    for key in ("started_at", "finished_at"):
        try:
            datetime.fromisoformat(report[key])
        except ValueError:
            raise ValueError(f"report field {key!r} is not ISO 8601: {report[key]!r}") from None


def write_json_atomically(
    data: dict[str, Any], path: str, *, prefix: str, allow_nan: bool = True
) -> None:
    """Write JSON through a temporary file in the same folder, then a rename, so that the
    file on disk is always whole, even if the writer is killed mid-write."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, allow_nan=allow_nan)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write(report: dict[str, Any], path: str) -> None:
    """Validate and write atomically."""
    validate(report)
    write_json_atomically(report, path, prefix=".report-")


def read(path: str) -> dict[str, Any]:
    """Read and validate one report; ValueError naming the file otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise ValueError(f"report {path!r} cannot be read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"report {path!r} is not valid JSON: {e}") from None
    try:
        validate(data)
    except ValueError as e:
        raise ValueError(f"report {path!r}: {e}") from None
    return data


__all__ = [
    "JSON_SCHEMA",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "STATUSES",
    "environment",
    "finish",
    "new_report",
    "ratios",
    "read",
    "validate",
    "write",
]


class Phases:
    """The phase a probe is in, for the report of a run that stops there."""

    def __init__(self) -> None:
        self.current = "setup"


def _show(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bytes":
        return f"{format_gib(int(value), 4)} ({int(value):,})"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}"


def render(report: dict[str, Any], text: str = "") -> str:
    """The estimate vs measured table of a report, then the probe's own lines."""
    names = list(report["estimate"]) + [
        n for n in report["measured"] if n not in report["estimate"]
    ]
    rows = []
    for n in names:
        unit = report["units"].get(n, "")
        ratio = report["ratio"].get(n)
        rows.append(
            [
                n,
                _show(report["estimate"].get(n), unit),
                _show(report["measured"].get(n), unit),
                "-" if ratio is None else f"{ratio:.3f}",
            ]
        )
    inputs = ", ".join(f"{k}={v}" for k, v in report["inputs"].items() if v is not None)
    head = f"{report['probe']['name']} ({report['status']}): {inputs}"
    parts = [head]
    if rows:
        parts.append(table(["figure", "estimate", "measured", "measured/estimate"], rows))
    if text:
        parts.append(text)
    return "\n".join(parts)
