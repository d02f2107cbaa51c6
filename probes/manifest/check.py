"""`manifest check`: hash the data, the config and the outputs again and say what
changed since the run.

Paths are read as the run gave them: a relative path from the run's working directory
(`cwd` in the manifest), or from `--root` when the project has moved.
"""

from __future__ import annotations

import os
from typing import Any

from probes.manifest.hashing import MAX_FOLDER_FILES, file_sha256, folder_digests


def _now(path: str) -> dict[str, Any]:
    """What lies at `path` today: kind, SHA-256 and, for a folder, its files' digests;
    an `error` where it cannot be read."""
    try:
        if os.path.isdir(path):
            files = {d.path: d.sha256 for d in folder_digests(path, limit=MAX_FOLDER_FILES)}
            return {"kind": "folder", "files": files}
        if os.path.isfile(path):
            return {"kind": "file", "sha256": file_sha256(path).sha256}
    except (ValueError, OSError) as e:
        return {"kind": None, "error": str(e)}
    return {"kind": None, "error": "missing"}


def compare_entry(label: str, recorded: dict[str, Any], root: str) -> dict[str, Any]:
    """One recorded file or folder against what lies there now.

    state: unchanged, changed, missing (or unreadable); for a folder the files changed,
    added and missing, by path.
    """
    path = recorded["path"]
    now = _now(path if os.path.isabs(path) else os.path.join(root, path))
    result: dict[str, Any] = {"what": label, "path": path, "state": "unchanged"}
    if now["kind"] is None:
        result.update(state="missing", detail=now["error"])
    elif recorded.get("kind") == "file":
        if now["kind"] != "file" or now["sha256"] != recorded["sha256"]:
            result.update(state="changed", detail="content differs")
    else:
        old = {f["path"]: f["sha256"] for f in recorded.get("files") or []}
        new = now.get("files") or {}
        diff = {
            "changed": sorted(p for p in old.keys() & new.keys() if old[p] != new[p]),
            "added": sorted(new.keys() - old.keys()),
            "missing": sorted(old.keys() - new.keys()),
        }
        if now["kind"] != "folder" or any(diff.values()):
            counts = ", ".join(f"{len(v)} {k}" for k, v in diff.items() if v)
            result.update(state="changed", detail=counts or "no longer a folder", files=diff)
    return result


def check(manifest: dict[str, Any], root: str | None = None) -> list[dict[str, Any]]:
    """Every data entry, the config and every output folder of the run, compared."""
    base = root if root is not None else manifest.get("cwd") or "."
    if root is None and not os.path.isdir(base):
        base = "."
    found = [
        compare_entry(f"data {e.get('name', e['path'])}", e, base)
        for e in manifest.get("data") or []
    ]
    if manifest.get("config"):
        found.append(compare_entry("config", manifest["config"], base))
    for o in manifest.get("outputs") or []:
        if o.get("exists") and o.get("sha256"):
            found.append(compare_entry("outputs", o, base))
    return found


def render(path: str, found: list[dict[str, Any]]) -> str:
    """One line per entry: `state  what  path  (detail)`, then the changed files' names."""
    if not found:
        return f"{path}: nothing recorded to check (no --data, --config or --outputs)"
    lines = [f"{path}:"]
    for f in found:
        detail = f" ({f['detail']})" if f.get("detail") else ""
        lines.append(f"  {f['state']:<9} {f['what']}: {f['path']}{detail}")
        for kind, paths in (f.get("files") or {}).items():
            shown = ", ".join(paths[:5]) + (f", +{len(paths) - 5} more" if len(paths) > 5 else "")
            if paths:
                lines.append(f"            {kind}: {shown}")
    return "\n".join(lines)
