"""Shared helpers of the probes' tests: run the CLI in this process or under torchrun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

torch = pytest.importorskip("torch", reason="the probes need torch (the probes extra)")


def run_probe(tmp_path: Path, *argv: str) -> tuple[int, dict[str, Any] | None]:
    """`python -m probes ARGV --out FILE` in this process: exit status and the report."""
    from probes.cli import main

    out = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    code = main([*argv, "--out", str(out)])
    report = json.loads(out.read_text()) if out.exists() else None
    return code, report


def run_subprocess(*cmd: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        list(cmd), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def torchrun(*argv: str, nproc: int = 2) -> subprocess.CompletedProcess[str]:
    """`torchrun --nproc-per-node N -m probes ARGV` on CPU (gloo)."""
    return run_subprocess(
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",  # a free port on localhost
        "--nproc-per-node",
        str(nproc),
        "-m",
        "probes",
        *argv,
    )
