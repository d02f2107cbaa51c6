"""The copyable memory protocol (probes/memory_protocol.py): real figures on CPU, a refusal
of a CPU build's zeros on CUDA, and its demo's command line."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from probes.memory_protocol import PhaseLog, run_demo
from tests.probes_helpers import ROOT, run_subprocess, torch

PHASES = [
    "load",
    *(f"step{i}/{p}" for i in (1, 2) for p in ("forward", "backward", "optimizer")),
]


@pytest.fixture(scope="module")
def demo():  # type: ignore[no-untyped-def]
    log, model, optimizer = run_demo("tiny-llama", steps=2, device="cpu", micro_batch=2, seq_len=64)
    return {r["phase"]: r for r in log.records}, log, model, optimizer


def test_the_copyable_part_needs_only_torch_and_the_standard_library() -> None:
    source = (ROOT / "probes" / "memory_protocol.py").read_text()
    top = source[: source.index("\n# ---- demo ---")]
    modules = set()
    for node in ast.walk(ast.parse(top)):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module.split(".")[0])
    assert modules - {"__future__", "torch"} <= set(sys.stdlib_module_names), modules


def test_demo_records_every_phase_with_the_model_states(demo) -> None:  # type: ignore[no-untyped-def]
    by_phase, log, model, optimizer = demo
    assert [r["phase"] for r in log.records] == PHASES
    params = list(model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    assert all(p.dtype == torch.float32 for p in params)
    # after load: the parameters and nothing else
    assert by_phase["load"]["allocated_bytes"] == param_bytes
    # after backward (loss deleted, activations freed): parameters + one gradient each
    assert by_phase["step1/backward"]["allocated_bytes"] == 2 * param_bytes
    # step 1's optimizer creates AdamW's exp_avg and exp_avg_sq (fp32, 2x the parameters)
    # and a 4-byte `step` counter per tensor, then the gradients are set to None
    steps = sum(s["step"].numel() * s["step"].element_size() for s in optimizer.state.values())
    assert steps == 4 * len(params)
    grown = by_phase["step1/optimizer"]["allocated_bytes"] - by_phase["load"]["allocated_bytes"]
    assert grown == 2 * param_bytes + steps
    # inside the optimizer phase the gradients and the new states are alive together
    assert by_phase["step1/optimizer"]["peak_allocated_bytes"] >= 4 * param_bytes + steps
    # step 2 carries the states through forward: its peak is higher by at least them
    f1, f2 = by_phase["step1/forward"], by_phase["step2/forward"]
    assert f2["peak_allocated_bytes"] >= f1["peak_allocated_bytes"] + 2 * param_bytes
    assert by_phase["step2/optimizer"]["allocated_bytes"] == grown + param_bytes
    for r in log.records:
        assert r["peak_allocated_bytes"] >= r["allocated_bytes"] > 0
        # no caching allocator on CPU: nothing is invented for it
        assert r["reserved_bytes"] is r["peak_reserved_bytes"] is r["device_used_bytes"] is None
        assert r["alloc_retries"] is None and r["seconds"] >= 0
    # forward keeps activations for backward: allocated rises above the model states
    assert f1["allocated_bytes"] > by_phase["load"]["allocated_bytes"]


def test_table_and_json(demo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, log, _, _ = demo
    text = log.table()
    assert "MiB" in text and "GiB" in text and "no caching allocator on CPU" in text
    load = log.records[0]
    assert f"{load['allocated_bytes'] / 2**20:,.2f}" in text.splitlines()[2]
    out = tmp_path / "log.json"
    log.write_json(str(out))
    data = json.loads(out.read_text())
    assert data == json.loads(json.dumps(log.as_dict()))
    assert data["device"] == "cpu" and [p["phase"] for p in data["phases"]] == PHASES


def test_mark_records_the_interval_since_the_previous_boundary() -> None:
    with PhaseLog("cpu") as log:
        a = torch.zeros(1000)  # 4000 bytes
        log.mark("a")
        b = torch.zeros(500)
        del b
        log.mark("b")
    assert log.records[0]["allocated_bytes"] == 4000
    assert log.records[1]["allocated_bytes"] == 4000
    assert log.records[1]["peak_allocated_bytes"] == 6000
    del a


def test_cuda_refuses_a_build_or_machine_without_a_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal is for CPU-only machines")
    with pytest.raises(RuntimeError, match=r"torch\.cuda\.is_available\(\) is False") as e:
        PhaseLog("cuda")
    assert "not a measurement" in str(e.value)


def test_snapshot_needs_the_cuda_allocator(tmp_path: Path) -> None:
    with PhaseLog("cpu") as log:
        with pytest.raises(RuntimeError, match="no caching allocator"):
            log.start_history()
        with pytest.raises(RuntimeError, match="no caching allocator"):
            log.dump_snapshot(str(tmp_path / "snap.pickle"))


def test_other_devices_are_refused() -> None:
    with pytest.raises(ValueError, match="device must be cuda or cpu"):
        PhaseLog("meta")


def test_cli_rejects_zero_steps_in_one_line() -> None:
    r = run_subprocess(sys.executable, "-m", "probes.memory_protocol", "--steps", "0")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["error: argument --steps: must be at least 1, got 0"]
    assert r.stdout == ""
