"""What a manifest records before and after its command: the run id, the data, the
config, the parameters, the seeds, the cost, the outputs and the metrics; and how a
manifest file is written (atomically) and read back.

Every reader-supplied value is checked here with a one-line ValueError naming the flag,
the value and the bound.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import tomllib
from datetime import UTC, datetime
from typing import Any

from calculators.limits import MAX_GPUS, MAX_PRICE_PER_GPU_HOUR
from probes.manifest.hashing import MAX_FOLDER_FILES, file_sha256, folder_digests, listing_sha256
from probes.report import write_json_atomically

SCHEMA_ID = "kernodeck-run-manifest"
SCHEMA_VERSION = 1
STATUSES = ("running", "ok", "failed", "interrupted", "killed")
ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
MAX_DATA = 64  # --data entries per run
MAX_SEEDS = 64
MAX_PARAMS = 256
MAX_CONFIG_BYTES = 1 << 20  # a config up to 1 MiB is stored whole; larger ones only hashed
MAX_METRICS_BYTES = 1 << 20
MAX_MANIFEST_BYTES = 64 << 20  # `table` and `check` read no larger file
GPU_HOURS_ASSUMPTION = (
    "GPU-hours = wall-clock hours of the command x GPUs: every GPU is billed for the whole "
    "run, busy or idle; time before and after the command is not counted"
)


def _short(text: object, room: int = 80) -> str:
    s = str(text)
    return s if len(s) <= room else s[: room - 3] + "..."


def now() -> str:
    """UTC now, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    """A readable id that sorts by start time: UTC time to the second, then 6 random hex
    digits so that runs started in the same second differ (1 in 16.7 million to collide)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def check_id(flag: str, value: str) -> str:
    if not re.fullmatch(ID_PATTERN, value):
        raise ValueError(
            f"{flag} {_short(value)!r} is not a run id: letters, digits, '.', '_' and '-', "
            "at most 128 characters"
        )
    return value


def manifest_path(out: str) -> tuple[str, str]:
    """(run id, manifest path) from --out: a FILE.json names the run FILE; an existing
    folder, or a path ending in '/', gets a new id (`new_run_id`). An existing manifest
    is never overwritten."""
    if out.endswith(("/", os.sep)) or os.path.isdir(out):
        run_id = new_run_id()
        path = os.path.join(out, f"{run_id}.json")
    else:
        stem, ext = os.path.splitext(os.path.basename(out))
        if ext != ".json":
            raise ValueError(f"--out {_short(out)!r} must end in .json (or name a folder)")
        run_id, path = check_id("--out", stem), out
    if os.path.exists(path):
        raise ValueError(f"--out {_short(path)!r} already exists: a manifest is never overwritten")
    return run_id, path


def entry(digests: list[Any], **fields: Any) -> dict[str, Any]:
    """A folder's record: its files, total bytes and the digest of its listing."""
    return {
        **fields,
        "kind": "folder",
        "bytes": sum(d.bytes for d in digests),
        "sha256": listing_sha256(digests),
        "files": [{"path": d.path, "bytes": d.bytes, "sha256": d.sha256} for d in digests],
    }


def hash_path(flag: str, path: str, **fields: Any) -> dict[str, Any]:
    """A file's or folder's record: kind, bytes, SHA-256, and a folder's files."""
    try:
        if os.path.isdir(path):
            return entry(folder_digests(path, limit=MAX_FOLDER_FILES), path=path, **fields)
        if os.path.isfile(path):
            d = file_sha256(path)
            return {**fields, "path": path, "kind": "file", "bytes": d.bytes, "sha256": d.sha256}
    except ValueError as e:
        raise ValueError(f"{flag} {e}") from None
    except OSError as e:
        raise ValueError(f"{flag} {_short(path)!r} cannot be read: {e.strerror}") from None
    raise ValueError(f"{flag} {_short(path)!r}: no such file or folder")


def data_entries(specs: list[str]) -> list[dict[str, Any]]:
    """The --data [NAME=]PATH entries hashed; NAME (default: the path) identifies a split
    across runs, so that `table` can say which one changed."""
    if len(specs) > MAX_DATA:
        raise ValueError(f"--data given {len(specs)} times: at most {MAX_DATA}")
    out: list[dict[str, Any]] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or os.path.exists(spec) or not re.fullmatch(r"[A-Za-z_][\w.-]*", name):
            name, path = spec, spec
        if any(e["name"] == name for e in out):
            raise ValueError(f"--data {_short(spec)!r}: the name {name!r} is given twice")
        out.append(hash_path("--data", path, name=name))
    return out


def jsonable(value: Any) -> Any:
    """`value` as strict JSON: NaN and infinities as the strings "NaN", "Infinity",
    "-Infinity" (a diverged loss is a result to keep, and JSON has no such numbers),
    dates and other objects as their text."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def config_entry(path: str | None) -> dict[str, Any] | None:
    """The --config file: its hash and, up to MAX_CONFIG_BYTES of UTF-8, its content:
    parsed for .json and .toml, the text otherwise (YAML and the rest are kept as text:
    no parser outside the standard library)."""
    if path is None:
        return None
    if os.path.isdir(path):
        raise ValueError(f"--config {_short(path)!r} is a folder: give the config file")
    record = hash_path("--config", path)
    record.update(format=None, content=None)
    if record["bytes"] > MAX_CONFIG_BYTES:
        return record
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return record
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".json":
            record.update(format="json", content=jsonable(json.loads(text)))
        elif ext == ".toml":
            record.update(format="toml", content=jsonable(tomllib.loads(text)))
        else:
            record.update(format="text", content=text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError):
        record.update(format="text", content=text)  # kept as written: the run read it so
    return record


def _param_value(text: str) -> Any:
    try:
        value = json.loads(text, parse_constant=lambda c: text)
    except json.JSONDecodeError:
        return text
    return value if value is None or isinstance(value, bool | int | float | str) else text


def params(specs: list[str]) -> dict[str, Any]:
    """--param KEY=VALUE as a dict; VALUE read as a JSON number, true, false or null
    where it is one, else kept as text."""
    if len(specs) > MAX_PARAMS:
        raise ValueError(f"--param given {len(specs)} times: at most {MAX_PARAMS}")
    out: dict[str, Any] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][\w./-]{0,127}", key):
            raise ValueError(f"--param {_short(spec)!r} must be KEY=VALUE (KEY: a name)")
        if key in out:
            raise ValueError(f"--param {key!r} is given twice")
        out[key] = _param_value(value)
    return out


def seeds(values: list[int]) -> list[int]:
    if len(values) > MAX_SEEDS:
        raise ValueError(f"--seed given {len(values)} times: at most {MAX_SEEDS}")
    for s in values:
        if not 0 <= s < 2**64:
            raise ValueError(f"--seed must be in [0, 2**64), got {s}")
    return list(values)


def check_price(price: float | None) -> float | None:
    if price is not None and not (math.isfinite(price) and 0 <= price <= MAX_PRICE_PER_GPU_HOUR):
        raise ValueError(
            f"--price must be between 0 and {MAX_PRICE_PER_GPU_HOUR:,} USD per GPU-hour, "
            f"got {price}"
        )
    return price


def check_gpus(gpus: int | None) -> int | None:
    if gpus is not None and not 0 <= gpus <= MAX_GPUS:
        raise ValueError(f"--gpus must be between 0 and {MAX_GPUS:,}, got {gpus}")
    return gpus


def gpu_hours(wall_seconds: float, gpus: int) -> float:
    """GPU-hours = wall seconds / 3600 x GPUs.

    Assumes what renting bills: each of the `gpus` GPUs is held for the whole run,
    whatever its utilisation (the budget calculator's definition, and time-to-quality's:
    seconds x gpus / 3600). Time spent before the command starts or after it ends
    (setup, copying data, an idle machine) is not in it.
    """
    return wall_seconds / 3600 * gpus


def cost_usd(hours: float, price: float | None) -> float | None:
    """cost = GPU-hours x price per GPU-hour (None without a price)."""
    return None if price is None else hours * price


def file_stamp(path: str | None) -> tuple[int, int] | None:
    """Size and modification time of a file, None when there is none."""
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_size, st.st_mtime_ns)


def metrics(
    path: str | None, before: tuple[int, int] | None = None
) -> tuple[Any, dict[str, Any] | None]:
    """The metrics JSON file the command wrote, and a record of it (path, SHA-256, or
    why it could not be read: a failed run often writes none). A file whose size and
    modification time are still `before` (its stamp when the run started) was left by
    an earlier run and is not read: its metrics are not this run's. Non-finite numbers
    are kept as text (see `jsonable`)."""
    if path is None:
        return None, None
    record: dict[str, Any] = {"path": path, "sha256": None, "error": None}
    if before is not None and file_stamp(path) == before:
        record["error"] = "not written by this run: the file predates it"
        return None, record
    try:
        size = os.path.getsize(path)
        if size > MAX_METRICS_BYTES:
            record["error"] = f"larger than {MAX_METRICS_BYTES:,} bytes: not read"
            return None, record
        record["sha256"] = file_sha256(path).sha256
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        record["error"] = "not written"
        return None, record
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        record["error"] = f"not read: {_short(e, 200)}"
        return None, record
    if not isinstance(value, dict):
        record["error"] = f"not a JSON object but {type(value).__name__}"
        return None, record
    return jsonable(value), record


def write(manifest: dict[str, Any], path: str) -> None:
    """Write atomically, so that a manifest on disk is always whole, even if the writer is
    killed; strict JSON (a NaN metric is refused, not written)."""
    write_json_atomically(manifest, path, prefix=".manifest-", allow_nan=False)


REQUIRED = ("schema", "schema_version", "id", "status", "command", "started_at")


def read(path: str) -> dict[str, Any]:
    """One manifest; ValueError naming the file when it cannot be read or is not one.

    Checks the schema's id and version and the fields `table` and `check` rely on; the
    full JSON Schema (docs/data/manifest.schema.json) is checked by the tests.
    """
    try:
        if os.path.getsize(path) > MAX_MANIFEST_BYTES:
            raise ValueError(
                f"manifest {_short(path)!r} is larger than {MAX_MANIFEST_BYTES:,} bytes"
            )
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise ValueError(f"manifest {_short(path)!r} cannot be read: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"manifest {_short(path)!r} is not valid JSON: {_short(e)}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_ID:
        raise ValueError(f"manifest {_short(path)!r} is not a {SCHEMA_ID} file")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"manifest {_short(path)!r} has schema_version {data.get('schema_version')!r}, "
            f"this version reads {SCHEMA_VERSION}"
        )
    for key in REQUIRED:
        if key not in data:
            raise ValueError(f"manifest {_short(path)!r}: field {key!r} is missing")
    return data
