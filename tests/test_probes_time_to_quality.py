"""time-to-quality on CPU: the tiny config trained on the shipped corpus until a target."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest

from probes.report import validate
from tests.probes_helpers import ROOT, run_probe

CORPUS = ROOT / "probes" / "data" / "corpus"
FAST = ("--config", "tiny-llama", "--device", "cpu", "--seq-len", "32", "--micro-batch", "4")
FAST += ("--eval-windows", "8", "--lr", "1e-3", "--warmup", "1")
LOOSE = f"{math.log(256) - 0.25:.3f}"  # a little below a uniform byte guess


def test_a_loose_target_is_reached_by_every_repeat_and_scored_olympic(tmp_path) -> None:
    code, r = run_probe(
        tmp_path, "time-to-quality", *FAST, "--target-loss", LOOSE, "--eval-every", "1",
        "--max-steps", "40", "--repeats", "5", "--price", "2.5", "--gpus", "8",
    )  # fmt: skip
    assert code == 0 and r is not None and r["status"] == "ok"
    validate(r)
    runs = r["details"]["repeats"]
    assert [run["repeat"] for run in runs] == [0, 1, 2, 3, 4]
    for run in runs:
        assert run["reached"] and run["outcome"] == "reached" and run["steps"] > 0
        assert run["tokens"] == run["steps"] * 4 * 32
        assert run["curve"][-1] == [run["steps"], run["final_loss"]]
        assert run["final_loss"] <= float(LOOSE)
        assert all(loss > float(LOOSE) for _, loss in run["curve"][:-1])
        assert run["gpu_hours"] == pytest.approx(run["seconds"] * 8 / 3600)
        assert run["cost"] == pytest.approx(run["gpu_hours"] * 2.5)
    # MLPerf: drop the fastest and the slowest, average the other three
    seconds = sorted(run["seconds"] for run in runs)
    m = r["measured"]
    assert m["runs"] == m["reached_runs"] == 5
    assert m["trimmed_mean_seconds"] == pytest.approx(sum(seconds[1:4]) / 3)
    assert m["trimmed_mean_gpu_hours"] == pytest.approx(sum(seconds[1:4]) / 3 * 8 / 3600)
    assert m["trimmed_mean_cost"] == pytest.approx(sum(seconds[1:4]) / 3 * 8 / 3600 * 2.5)
    assert (m["min_seconds"], m["max_seconds"]) == (seconds[0], seconds[-1])
    scoring = r["details"]["scoring"]
    assert scoring["valid"] and scoring["not_reached"] == [] and len(scoring["scored"]) == 3
    assert "training_policies" in scoring["source"]
    assert set(m) <= set(r["units"]) and r["estimate"] == {}
    # the data and the tokenisation are recorded
    data = r["details"]["data"]
    for name in ("train", "eval"):
        raw = (CORPUS / f"{name}.txt").read_bytes()
        assert data[name]["sha256"] == hashlib.sha256(raw).hexdigest()
        assert data[name]["bytes"] == len(raw) < 64 * 1024
    assert data["eval"]["windows"] == 8 and data["eval"]["window_starts"][0] == 0
    assert r["details"]["tokenisation"]["vocab_size"] == 256
    assert r["details"]["tokenisation"]["config_vocab_size"] == 512


def test_an_impossible_target_is_not_reached_and_never_averaged_in(tmp_path) -> None:
    code, r = run_probe(
        tmp_path, "time-to-quality", *FAST, "--target-loss", "0.01", "--eval-every", "3",
        "--max-steps", "4", "--repeats", "2",
        "--train", str(ROOT / "docs" / "memory" / "kv-cache.md"),
        "--eval", str(ROOT / "docs" / "calculators" / "envelope.md"),
    )  # fmt: skip
    assert code == 0 and r is not None and r["status"] == "ok"
    validate(r)
    for run in r["details"]["repeats"]:
        assert not run["reached"] and run["outcome"] == "max-steps" and run["steps"] == 4
        assert [step for step, _ in run["curve"]] == [3, 4]
    m = r["measured"]
    assert m["runs"] == 2 and m["reached_runs"] == 0
    assert not any(k.startswith(("trimmed_mean", "min_", "max_")) for k in m)
    assert r["details"]["scoring"]["not_reached"] == [0, 1]
    assert r["details"]["scoring"]["valid"] is False


def _run(repeat: int, seconds: float, reached: bool = True) -> dict:
    return {"repeat": repeat, "seconds": seconds, "reached": reached, "gpu_hours": seconds / 3600}


def test_the_mlperf_rule_drops_one_missed_run_as_the_slowest_and_refuses_two() -> None:
    from probes.time_to_quality import summarize

    runs = [_run(0, 4.0), _run(1, 1.0), _run(2, 9.0, False), _run(3, 2.0), _run(4, 3.0)]
    for run in runs:
        run["steps"], run["tokens"] = 10, 100
    m, _, s = summarize(runs, None)
    assert s["valid"] and s["dropped"] == [1, 2] and s["scored"] == [0, 3, 4]
    assert m["trimmed_mean_seconds"] == pytest.approx(3.0) and m["max_seconds"] == 4.0
    runs[0]["reached"] = False
    m, _, s = summarize(runs, None)
    assert not s["valid"] and "trimmed_mean_seconds" not in m and m["reached_runs"] == 3
    m, _, s = summarize(runs[:3], None)  # fewer than 5: the mean of those that reached
    assert s["valid"] and s["scored"] == [1] and m["trimmed_mean_seconds"] == 1.0


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "error: --target-loss is required"),
        (["--target-loss", "0"], "error: --target-loss must be a positive number, got 0.0"),
        (["--target-loss", "x"], "error: argument --target-loss: invalid float value: 'x'"),
        (["--target-loss", "4", "--train", "missing.txt"], "error: --train 'missing.txt': no such"),
        (["--target-loss", "4", "--eval", "EMPTY"], "error: --eval '"),
        (["--target-loss", "4", "--train", "LATIN1"], "error: --train '"),
        (["--target-loss", "4", "--eval", "SHORT"], "error: --eval '"),
        (["--target-loss", "4", "--repeats", "0"], "error: --repeats must be a positive integer"),
        (["--target-loss", "4", "--warmup", "-1"], "error: --warmup must be a non-negative"),
        (["--target-loss", "4", "--price", "-1"], "error: --price must be a positive number"),
        (["--target-loss", "4", "--seq-len", "4096"], "error: --seq-len 4096 is past the model"),
    ],
)
def test_bad_flags_are_one_line_naming_the_flag_and_status_2(
    tmp_path, capsys, extra: list[str], message: str
) -> None:
    from probes.cli import main

    files = {
        "EMPTY": _write(tmp_path, "empty.txt", b""),
        "LATIN1": _write(tmp_path, "latin1.txt", "caf\u00e9 ".encode("latin-1") * 20),
        "SHORT": _write(tmp_path, "short.txt", b"too short for a window"),
    }
    argv = ["time-to-quality", "--config", "tiny-llama", "--device", "cpu", "--seq-len", "32"]
    assert main([*argv, *(files.get(a, a) for a in extra)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    hint = {"EMPTY": "is empty", "LATIN1": "is not UTF-8", "SHORT": "shorter than one window"}
    for key, words in hint.items():
        if key in extra:
            assert words in err, err
