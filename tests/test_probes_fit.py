"""fit: bisection on real OOM errors, on CPU through --memory-limit."""

from __future__ import annotations

from probes.fit import search
from tests.probes_helpers import run_probe


def test_search_finds_the_largest_fitting_value() -> None:
    for limit in range(0, 40):
        for bound in (1, 7, 16, 33):
            assert search(lambda v, n=limit: v <= n, bound)[0] == min(limit, bound)


def test_fit_catches_ooms_and_agrees_with_the_estimate(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "fit",
        "--config",
        "tiny-llama",
        "--device",
        "cpu",
        "--seq-len",
        "32",
        "--memory-limit",
        "12000000",
        "--max",
        "64",
    )
    assert code == 0 and r and r["status"] == "ok"
    attempts = r["details"]["attempts"]
    ooms = [a for a in attempts if a["status"] == "oom"]
    assert ooms and all(a["phase"] in ("forward", "backward", "optimizer_step") for a in ooms)
    found = r["measured"]["max_micro_batch"]
    assert found >= 1
    assert all(a["micro-batch"] > found for a in ooms)
    assert any(a["micro-batch"] == found + 1 for a in ooms)  # bisection closed the gap
    # the estimate's peak is within a few percent of the measurement: same or next size
    assert abs(found - r["estimate"]["max_micro_batch"]) <= max(1, found // 10)


def test_cpu_fit_needs_a_memory_limit(tmp_path, capsys) -> None:
    code, _ = run_probe(tmp_path, "fit", "--config", "tiny-llama", "--device", "cpu")
    assert code == 2
    assert "needs --memory-limit" in capsys.readouterr().err
