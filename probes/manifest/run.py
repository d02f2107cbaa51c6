"""`manifest run`: record everything about a run around the reader's command.

Order: check every flag, read the code's state (refuse a dirty tree unless asked), hash
the data and the config, read the machine, write the manifest with status `running`,
run the command, then hash its outputs, read its metrics and write the manifest again
with how it ended. Both writes are atomic; a manifest left `running` means the
manifest's own process was killed (its command may have run on).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from probes.manifest import record
from probes.manifest.child import SignalWatch, run_command
from probes.manifest.git import git_state, write_diff
from probes.manifest.hashing import MAX_FOLDER_FILES, file_sha256, folder_digests
from probes.manifest.machine import machine

MANIFEST_TOOL = {"name": "python -m probes manifest", "version": "1"}


def command_of(args: argparse.Namespace) -> list[str]:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ValueError(
            "no command to run: put it after --, as in `manifest run --out "
            "runs/a.json -- python train.py`"
        )
    return command


def parent_id(value: str | None, manifest_file: str) -> str | None:
    """--parent: a run id whose manifest lies beside --out, or the path of a manifest."""
    if value is None:
        return None
    if value.endswith(".json") or os.sep in value:
        return str(record.read(value)["id"])
    record.check_id("--parent", value)
    beside = os.path.join(os.path.dirname(manifest_file) or ".", f"{value}.json")
    if not os.path.isfile(beside):
        raise ValueError(
            f"--parent {value!r}: no manifest {beside!r} (give the parent manifest's path)"
        )
    return value


def _stats(folder: str) -> dict[str, tuple[int, int]]:
    """Size and modification time of each file under `folder` before the run."""
    if not os.path.isdir(folder):
        return {}
    from probes.manifest.hashing import folder_files

    out = {}
    for rel in folder_files(folder, limit=MAX_FOLDER_FILES):
        st = os.stat(os.path.join(folder, rel))
        out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def outputs_entry(folder: str, before: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """An --outputs folder after the run: each file's size and SHA-256, and whether the
    run wrote it (absent before, or its size or modification time changed)."""
    if os.path.isfile(folder):
        d = file_sha256(folder)
        return {
            "path": folder,
            "exists": True,
            "kind": "file",
            "bytes": d.bytes,
            "sha256": d.sha256,
            "error": None,
        }
    if not os.path.isdir(folder):
        return {
            "path": folder,
            "exists": False,
            "kind": None,
            "bytes": None,
            "sha256": None,
            "error": None,
        }
    try:
        digests = folder_digests(folder, limit=MAX_FOLDER_FILES)
    except (ValueError, OSError) as e:
        return {
            "path": folder,
            "exists": True,
            "kind": "folder",
            "bytes": None,
            "sha256": None,
            "error": str(e),
        }
    out = record.entry(digests, path=folder, exists=True, error=None)
    for f in out["files"]:
        st = os.stat(os.path.join(folder, f["path"]))
        f["written_by_run"] = before.get(f["path"]) != (st.st_size, st.st_mtime_ns)
    return out


def refuse_dirty(git: dict[str, Any]) -> None:
    n = git["changed_count"]
    first = ", ".join(git["changed"][:3]) + (", ..." if n > 3 else "")
    raise ValueError(
        f"the git tree at {git['repository']} has {n} uncommitted change(s) to tracked "
        f"files ({first}): commit them, or pass --allow-dirty to save the diff beside the "
        "manifest"
    )


def prepare(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """Check the flags and record everything known before the command starts."""
    command = command_of(args)
    run_id, path = record.manifest_path(args.out)
    parent = parent_id(args.parent, path)
    seeds = record.seeds(args.seed or [])
    params = record.params(args.param or [])
    price = record.check_price(args.price)
    gpus = record.check_gpus(args.gpus)
    git = git_state(os.getcwd())
    if git["dirty"] and not args.allow_dirty:
        refuse_dirty(git)
    data = record.data_entries(args.data or [])
    config = record.config_entry(args.config)
    host = machine()
    manifest: dict[str, Any] = {
        "schema": record.SCHEMA_ID,
        "schema_version": record.SCHEMA_VERSION,
        "id": run_id,
        "parent": parent,
        "status": "running",
        "command": command,
        "command_line": shlex.join(command),
        "cwd": os.getcwd(),
        "started_at": record.now(),
        "finished_at": None,
        "wall_seconds": None,
        "exit": None,
        "git": git,
        "data": data,
        "config": config,
        "params": params,
        "seeds": seeds,
        "machine": host,
        "cost": {
            "gpus": host["gpu_count"] if gpus is None else gpus,
            "gpus_from": "detected" if gpus is None else "--gpus",
            "gpu_hours": None,
            "price_per_gpu_hour": price,
            "usd": None,
            "assumption": record.GPU_HOURS_ASSUMPTION,
        },
        "outputs": [],
        "metrics": None,
        "metrics_file": None,
        "manifest_tool": MANIFEST_TOOL,
    }
    return manifest, path


def save_diff(manifest: dict[str, Any], path: str) -> None:
    """The tracked changes, beside the manifest as ID.diff, with their SHA-256."""
    diff = os.path.join(os.path.dirname(path) or ".", f"{manifest['id']}.diff")
    if os.path.exists(diff):
        raise ValueError(f"--out: {diff!r} already exists: a diff is never overwritten")
    os.makedirs(os.path.dirname(os.path.abspath(diff)), exist_ok=True)
    write_diff(manifest["git"], diff)
    manifest["git"]["diff_file"] = os.path.basename(diff)
    manifest["git"]["diff_sha256"] = file_sha256(diff).sha256


def run(args: argparse.Namespace) -> int:
    """`manifest run`: the command's exit status (see `child.Outcome.exit_status`)."""
    manifest, path = prepare(args)
    outputs = list(args.outputs or [])
    before = {o: _stats(o) for o in outputs}
    metrics_before = record.file_stamp(args.metrics)
    if manifest["git"]["dirty"]:
        save_diff(manifest, path)
    env = {**os.environ, "KERNODECK_RUN_ID": manifest["id"]}
    with SignalWatch() as watch:
        record.write(manifest, path)
        print(f"manifest {path}: running {manifest['command_line']}", file=sys.stderr)
        outcome = run_command(manifest["command"], env, watch)
        manifest["finished_at"] = record.now()
        manifest["wall_seconds"] = outcome.wall_seconds
        manifest["status"] = outcome.status
        manifest["exit"] = {
            "returncode": outcome.returncode,
            "signal": outcome.signal,
            "interrupted_by": outcome.interrupted_by,
            "error": outcome.error,
        }
        cost = manifest["cost"]
        cost["gpu_hours"] = record.gpu_hours(outcome.wall_seconds, cost["gpus"])
        cost["usd"] = record.cost_usd(cost["gpu_hours"], cost["price_per_gpu_hour"])
        manifest["outputs"] = [outputs_entry(o, before[o]) for o in outputs]
        manifest["metrics"], manifest["metrics_file"] = record.metrics(args.metrics, metrics_before)
        record.write(manifest, path)
    usd = "" if cost["usd"] is None else f", {cost['usd']:.2g} USD"
    print(
        f"manifest {path}: {outcome.status} (exit {outcome.exit_status}), "
        f"{cost['gpu_hours']:.4g} GPU-hours{usd}",
        file=sys.stderr,
    )
    if outcome.error:
        print(f"error: {outcome.error}", file=sys.stderr)
    return outcome.exit_status
