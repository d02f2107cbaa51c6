"""Where the time of `make test` goes, from a clean clone: `make test-profile`.

    python -m benchmarks.test_profile [--rev REV] [--jobs N|auto] [--keep DIR]

Clones the repository at REV (default HEAD) into a temporary folder and times, one after
the other, what `make test` does there:

- the installs: the Python packages (venv, torch, the project's extras), `npm ci`,
  Chromium (apt, only where it is missing), the Pyodide test wheels;
- lint;
- the Python suite as `make test` runs it (pytest-xdist, JOBS workers), with a notebook
  cache of its own that starts empty: its wall time, the site build's time and each
  notebook's execution time, and the test time summed by kind (browser, probes with
  PyTorch, retraining generators, notebook cache, property tests with hypothesis, other);
- the Pyodide run, alone;
- the site built again with the now warm notebook cache (what a second run pays).

Prints a table and writes test-artifacts/test-profile.json. Timings are wall-clock seconds
on a shared machine: read them as one run's, and compare runs made on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "test-artifacts" / "test-profile.json"

# Kinds of test, first match wins: module name prefix -> kind.
KINDS = (
    ("tests.browser.", "browser (Chromium, Pyodide in the page)"),
    ("tests.test_probes_", "probes (PyTorch)"),
    ("tests.test_evaluation_examples", "generators (retrain the guides' examples)"),
    ("tests.test_adaptation_contribution", "generators (retrain the guides' examples)"),
    ("tests.test_tinylm", "generators (retrain the guides' examples)"),
    ("tests.test_notebook_cache", "notebook cache (Jupyter kernels)"),
)
HYPOTHESIS = "property tests (hypothesis)"
OTHER = "other unit tests"


def _run(label: str, argv: list[str], cwd: Path, env: dict[str, str], rows: list) -> str:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    rows.append({"phase": label, "seconds": round(seconds, 1), "status": proc.returncode})
    print(f"{seconds:8.1f} s  {label} (exit {proc.returncode})", flush=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
    return proc.stdout + proc.stderr


def _hypothesis_modules(clone: Path) -> set[str]:
    found = set()
    for path in (clone / "tests").rglob("test_*.py"):
        if re.search(r"^from hypothesis|^import hypothesis", path.read_text(), re.M):
            found.add(".".join(path.relative_to(clone).with_suffix("").parts))
    return found


def kind_of(classname: str, hypothesis_modules: set[str]) -> str:
    for pattern, kind in KINDS:
        # "tests.browser." and "tests.test_probes_" name many modules; the rest, one each
        prefix = pattern if pattern.endswith((".", "_")) else pattern + "."
        if classname == pattern or classname.startswith(prefix):
            return kind
    module = classname if classname in hypothesis_modules else classname.rsplit(".", 1)[0]
    return HYPOTHESIS if module in hypothesis_modules else OTHER


def test_time_by_kind(junit: Path, hypothesis_modules: set[str]) -> dict[str, dict[str, float]]:
    """Seconds and counts of the tests in a JUnit file, summed by kind. A module that uses
    hypothesis counts whole under property tests (its other tests are quick)."""
    seconds: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for case in ET.parse(junit).iter("testcase"):
        kind = kind_of(case.get("classname", ""), hypothesis_modules)
        seconds[kind] += float(case.get("time", 0))
        counts[kind] += 1
    return {k: {"seconds": round(seconds[k], 1), "tests": counts[k]} for k in seconds}


def notebook_seconds(cache: Path) -> dict[str, float]:
    """Each notebook's execution time, from the cache's entries."""
    times = {}
    for meta in cache.glob("*/*.json"):
        data = json.loads(meta.read_text(encoding="utf-8"))
        times[data["notebook"]] = data["seconds"]
    return dict(sorted(times.items(), key=lambda kv: -kv[1]))


def _summary(output: str) -> str:
    lines = [line for line in output.splitlines() if re.search(r"\d+ passed", line)]
    return lines[-1].strip("= ") if lines else ""


def profile(rev: str, jobs: str, keep: Path | None) -> dict:
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="kd-profile-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=clone, check=True)
    run_dir, cache = work / "run", work / "notebooks"
    run_dir.mkdir()
    env = {
        **os.environ,
        "KERNODECK_NOTEBOOK_CACHE": str(cache),
        "KERNODECK_TEST_RUN_DIR": str(run_dir),
        "NO_MKDOCS_2_WARNING": "1",
    }
    rows: list[dict] = []
    _run("install: Python packages (make setup)", ["make", "setup"], clone, env, rows)
    _run("install: npm ci (make node)", ["make", "node"], clone, env, rows)
    _run("install: Chromium where missing (make chromium)", ["make", "chromium"], clone, env, rows)
    _run("install: Pyodide test wheels", ["make", "pyodide-wheels"], clone, env, rows)
    _run("lint (ruff)", ["make", "lint"], clone, env, rows)
    junit = work / "junit.xml"
    py = str(clone / ".venv" / "bin" / "python")
    pytest_out = _run(
        f"Python suite, pytest -n {jobs} (site built once, notebooks cold)",
        [py, "-m", "pytest", "-q", "-n", jobs, "-p", "no:cacheprovider", f"--junitxml={junit}"],
        clone,
        env,
        rows,
    )
    pyodide_out = _run("Pyodide run, alone", ["make", "test-pyodide"], clone, env, rows)
    status = run_dir / "status.json"
    build = json.loads(status.read_text()) if status.exists() else {}
    warm_site = work / "site-warm"
    _run(
        "site build again, notebook cache warm",
        [py, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(warm_site)],
        clone,
        env,
        rows,
    )
    report = {
        "rev": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
        ).stdout.strip(),
        "cpus": os.cpu_count(),
        "phases": rows,
        "pytest_summary": _summary(pytest_out),
        "pyodide_summary": _summary(pyodide_out),
        "site_build_seconds_cold": round(build.get("seconds", 0.0), 1),
        "notebook_seconds_cold": notebook_seconds(cache),
        "test_seconds_by_kind": test_time_by_kind(junit, _hypothesis_modules(clone))
        if junit.exists()
        else {},
    }
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return report


def print_report(report: dict) -> None:
    print(f"\nrevision {report['rev'][:12]}, {report['cpus']} CPUs")
    for row in report["phases"]:
        print(f"  {row['seconds']:8.1f} s  {row['phase']}")
    print(f"  pytest: {report['pytest_summary']}")
    print(f"  Pyodide: {report['pyodide_summary']}")
    print(f"\nsite build inside the suite (cold notebooks): {report['site_build_seconds_cold']} s")
    for name, seconds in report["notebook_seconds_cold"].items():
        print(f"  {seconds:8.1f} s  {name}")
    print("\ntest time summed over the workers, by kind:")
    kinds = sorted(report["test_seconds_by_kind"].items(), key=lambda kv: -kv[1]["seconds"])
    for kind, v in kinds:
        print(f"  {v['seconds']:8.1f} s  {v['tests']:5d} tests  {kind}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--jobs", default="auto")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args(argv)
    report = profile(args.rev, args.jobs, args.keep)
    print_report(report)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"\nwritten to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
