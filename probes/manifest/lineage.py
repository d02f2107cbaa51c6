"""What changed between a run and its parent, and the decision table of many runs.

`changes(run, parent)` compares what decides a result: the commit and its uncommitted
diff, the command, the config (key by key where it was parsed, line by line where it was
kept as text), the parameters, the seeds, the data (by name), the GPUs and the installed
packages. Ids, times, outputs and metrics are results, not causes, and are not compared.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

MAX_SHOWN = 4  # changes shown per field before "+N more"


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys (`optimizer.lr`); lists and scalars as leaves."""
    if isinstance(value, dict) and (value or not prefix):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


_ABSENT = object()


def _show(value: Any) -> str:
    text = "absent" if value is _ABSENT else repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _limit(items: list[str]) -> list[str]:
    if len(items) <= MAX_SHOWN:
        return items
    return [*items[:MAX_SHOWN], f"+{len(items) - MAX_SHOWN} more"]


def dict_changes(label: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`label key: old -> new` for each dotted key that differs (absent on one side)."""
    a, b = _flat(old), _flat(new)
    items = [
        f"{k}: {_show(a.get(k, _ABSENT))} -> {_show(b.get(k, _ABSENT))}"
        for k in sorted(set(a) | set(b))
        if a.get(k, _ABSENT) != b.get(k, _ABSENT)
    ]
    return [f"{label} " + ", ".join(_limit(items))] if items else []


def text_changes(label: str, old: str, new: str) -> list[str]:
    """The lines removed and added, as `label -'old line' +'new line'`."""
    items = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        items.append(f"{line[0]}{line[1:].strip()!r}")
    return [f"{label} " + " ".join(_limit(items))] if items else []


def command_changes(old: list[str], new: list[str]) -> list[str]:
    """The words of the command that differ: `command: --lr 1e-3 -> --lr 3e-4`."""
    items = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # one word of context before a change that starts with a value (`--lr 3e-4`)
        lo = i1 - 1 if i1 > 0 and j1 > 0 and old[i1 - 1] == new[j1 - 1] else i1
        jl = j1 - (i1 - lo)
        items.append(f"{' '.join(old[lo:i2]) or 'nothing'} -> {' '.join(new[jl:j2]) or 'nothing'}")
    return ["command: " + "; ".join(_limit(items))] if items else []


def generic_command(command: list[str], run_id: str) -> list[str]:
    """The command with the run's own id written `{id}` where it stands as a name
    (`out/{id}`, `metrics/{id}.json`): a path named after the run is not a change."""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(run_id)}(?![\w-])")
    return [pattern.sub("{id}", word) for word in command]


def _by_name(entries: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    return {e.get("name", e["path"]): e for e in entries or []}


def data_changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    a, b = _by_name(old), _by_name(new)
    items = []
    for name in sorted(set(a) | set(b)):
        if name not in a:
            items.append(f"{name} added")
        elif name not in b:
            items.append(f"{name} removed")
        elif a[name]["sha256"] != b[name]["sha256"]:
            items.append(f"{name} changed")
    return ["data " + ", ".join(_limit(items))] if items else []


def _gpus(run: dict[str, Any]) -> str:
    host = run.get("machine") or {}
    names = sorted({g.get("name") or "?" for g in host.get("gpus") or []})
    count = (run.get("cost") or {}).get("gpus", host.get("gpu_count", 0))
    return f"{count} x {'/'.join(names) or 'no GPU'}"


def config_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    if old is None or new is None:
        return [] if old is new else [f"config {'added' if old is None else 'removed'}"]
    if old["sha256"] == new["sha256"]:
        return []
    if isinstance(old.get("content"), dict) and isinstance(new.get("content"), dict):
        return dict_changes("config", old["content"], new["content"]) or ["config changed"]
    if isinstance(old.get("content"), str) and isinstance(new.get("content"), str):
        return text_changes("config", old["content"], new["content"]) or ["config changed"]
    return ["config changed (content not kept: compare the files)"]


def changes(run: dict[str, Any], parent: dict[str, Any]) -> list[str]:
    """What differs between `run` and `parent`, cause by cause; [] for a plain rerun."""
    out: list[str] = []
    g, pg = run.get("git") or {}, parent.get("git") or {}
    if g.get("commit") != pg.get("commit"):
        old, new = pg.get("commit") or "none", g.get("commit") or "none"
        out.append(f"commit {old[:7]} -> {new[:7]}")
    if g.get("diff_sha256") != pg.get("diff_sha256"):
        before, after = pg.get("diff_sha256"), g.get("diff_sha256")
        out.append(
            "uncommitted diff " + ("added" if not before else "removed" if not after else "differs")
        )
    out += command_changes(
        generic_command(parent["command"], parent["id"]),
        generic_command(run["command"], run["id"]),
    )
    out += config_changes(parent.get("config"), run.get("config"))
    out += dict_changes("params", parent.get("params") or {}, run.get("params") or {})
    if run.get("seeds") != parent.get("seeds"):
        out.append(f"seeds {parent.get('seeds')} -> {run.get('seeds')}")
    out += data_changes(parent.get("data") or [], run.get("data") or [])
    if _gpus(run) != _gpus(parent):
        out.append(f"GPUs {_gpus(parent)} -> {_gpus(run)}")
    pkgs = dict_changes(
        "packages",
        (parent.get("machine") or {}).get("packages") or {},
        (run.get("machine") or {}).get("packages") or {},
    )
    return out + pkgs


def changed_text(run: dict[str, Any], runs: dict[str, dict[str, Any]]) -> str:
    """The table's `changed` cell: against the parent, or why there is nothing to say."""
    parent = run.get("parent")
    if parent is None:
        return "(first run)"
    if parent not in runs:
        return f"(parent {parent} not among these manifests)"
    found = changes(run, runs[parent])
    return "; ".join(found) if found else "nothing: a rerun"
