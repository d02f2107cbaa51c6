"""The calculators in the browser's Python: import time and each calculator's compute time
in the pinned Pyodide under Node, with the zip the site ships (sources plus bytecode)
against sources alone.

A page is interactive once Pyodide has loaded, the calculators are imported and the first
result is computed; that import and first result are the part this repository controls
(a calculator's modules are imported when it is first asked for, so the page's figure,
not the bare import, is the one to compare). Medians over fresh Pyodide instances;
compute times are the medians of 10 repeats after a first call (the first call of a
calculator includes importing its modules).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import tempfile
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5


def _hook():
    spec = importlib.util.spec_from_file_location("kd_hook", ROOT / "docs/hooks/kernodeck.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _runs(zip_bytes: bytes) -> list[dict]:
    with tempfile.NamedTemporaryFile(suffix=".zip") as f:
        f.write(zip_bytes)
        f.flush()
        proc = subprocess.run(
            ["node", str(ROOT / "benchmarks/pyodide_calculators.mjs"), f.name, str(RUNS)],
            capture_output=True,
            text=True,
            check=True,
        )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    hook = _hook()
    source = hook._source_zip()
    shipped = hook._calculators_zip()
    plain, compiled = _runs(source), _runs(shipped)
    print(f"calculators in Pyodide under Node, medians of {RUNS} fresh instances")
    print("| step | sources only | shipped (sources + bytecode) |")
    print("|---|---:|---:|")
    print(f"| zip size | {len(source) / 1024:,.0f} KiB | {len(shipped) / 1024:,.0f} KiB |")
    steps = (
        ("load", "load Pyodide"),
        ("unpack", "unpack"),
        ("import", "import `calculators.web`"),
        ("page", "import and the kv-cache page's first result"),
    )
    for key, label in steps:
        a, b = median(r[key] for r in plain), median(r[key] for r in compiled)
        print(f"| {label} | {a:,.0f} ms | {b:,.0f} ms |")
    print()
    print("| calculator (defaults) | first call ms | median ms |")
    print("|---|---:|---:|")
    for name in compiled[0]["compute"]:
        first = median(r["compute"][name]["first"] for r in compiled)
        typical = median(r["compute"][name]["median"] for r in compiled)
        print(f"| {name} | {first:.1f} | {typical:.1f} |")


if __name__ == "__main__":
    main()
