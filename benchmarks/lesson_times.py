"""How long the lessons take to run, cold: `python -m benchmarks.lesson_times`.

Each lesson notebook (docs/learn/NN-*.ipynb) is executed on its own, one after the other,
in a new Jupyter kernel (python3 of this environment) started in docs/learn, as the site
build runs it. A lesson's time runs from starting the kernel to the end of its last cell,
so it includes starting Python and importing PyTorch, as a reader's "Run all" does.
Nothing is reused: the site's notebook cache (docs/hooks/notebook_cache.py) is not used,
and the kernel keeps the environment's thread settings. Every lesson runs --repeats times
(3 by default), in rounds, and its median is kept: on a shared machine, one run can land
in another job's busy spell.

Then, unless --no-build, the whole site is built once from this checkout with an empty
notebook cache (KERNODECK_NOTEBOOK_CACHE pointing at a new folder), so that every notebook
of the site is executed, as in the first build of a clean clone; what the build does
beside executing (rendering, the calculators' zip) is part of its time.

Writes docs/data/learn/notebook-times.json: the seconds of each lesson and of the build,
with the machine (CPU count and model, Python, torch) and the date. docs/learn/index.md
shows that file's numbers. Timings are wall-clock seconds of one run on one machine: on a
shared machine, read them as that run's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
LEARN = ROOT / "docs" / "learn"
OUT = ROOT / "docs" / "data" / "learn" / "notebook-times.json"
BUILD_TIMEOUT_S = 3600


def lessons() -> list[Path]:
    return sorted(LEARN.glob("[0-9][0-9]-*.ipynb"))


def run_cold(path: Path) -> float:
    """Seconds to execute the notebook in a new kernel, from the kernel's start."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=600,
        allow_errors=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    started = time.perf_counter()
    client.execute()
    return time.perf_counter() - started


def cold_build() -> float:
    """Seconds of `mkdocs build --strict` with an empty notebook cache."""
    with tempfile.TemporaryDirectory(prefix="kd-cold-build-") as work:
        env = {
            **os.environ,
            "KERNODECK_NOTEBOOK_CACHE": str(Path(work) / "notebooks"),
            "NO_MKDOCS_2_WARNING": "1",
        }
        command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", f"{work}/site"]
        started = time.perf_counter()
        proc = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
        seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"the cold build failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return seconds


def cpu_model() -> str:
    """The processor's name as Linux reports it, else what Python's platform says."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def gpu() -> str:
    """The GPU the lessons' kernels see (they use it when there is one), or "none"."""
    probe = (
        "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    return proc.stdout.strip() or "none"


def machine() -> dict[str, object]:
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "gpu": gpu(),
        "python": platform.python_version(),
        "torch": version("torch"),
        "platform": platform.platform(terse=True),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-build", action="store_true", help="time the lessons only")
    parser.add_argument("--repeats", type=int, default=3, help="cold runs per lesson (median)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT}")
    args = parser.parse_args(argv)

    runs: dict[str, list[float]] = {path.stem: [] for path in lessons()}
    for _ in range(args.repeats):  # round by round: a slow spell of a shared machine is spread
        for path in lessons():
            runs[path.stem].append(round(run_cold(path), 1))
            print(f"{runs[path.stem][-1]:7.1f} s  {path.name}", flush=True)
    rows = [{"id": stem, "seconds": round(median(s), 1), "runs": s} for stem, s in runs.items()]
    total = round(sum(r["seconds"] for r in rows), 1)
    print(f"{total:7.1f} s  all {len(rows)} lessons, medians added up", flush=True)
    report: dict[str, object] = {
        "what": (
            "Seconds to execute each lesson notebook cold, in a new Jupyter kernel (kernel "
            "start and importing torch included): the median of `repeats` runs, one "
            "notebook at a time; and of one site build with an empty notebook cache (every "
            "notebook of the site executed)."
        ),
        "command": "python -m benchmarks.lesson_times",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": machine(),
        "repeats": args.repeats,
        "lessons": rows,
        "lessons_total_seconds": total,
    }
    # The site's index reads this file, so the build needs one: the lessons' new times,
    # with the last measured build until this run's is known (0 on a first run).
    previous = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    report["cold_build_seconds"] = previous.get("cold_build_seconds", 0.0)
    report["cold_build_date"] = previous.get("cold_build_date", "not measured")
    # the build figure kept from an earlier run keeps the machine it was measured on
    report["cold_build_machine"] = previous.get("cold_build_machine", previous.get("machine"))
    _write(args.out, report)
    if not args.no_build:
        build = cold_build()
        report["cold_build_seconds"] = round(build, 1)
        report["cold_build_date"] = report["date"]
        report["cold_build_machine"] = report["machine"]
        print(f"{build:7.1f} s  the site built with an empty notebook cache", flush=True)
        _write(args.out, report)
    print(f"wrote {args.out}")
    return 0


def _write(path: Path, report: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
