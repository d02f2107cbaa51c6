"""throughput on CPU: rates measured, no MFU without a catalog peak."""

from __future__ import annotations

from probes.throughput import detect_card
from tests.probes_helpers import run_probe


def test_cpu_rates_without_mfu(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "throughput",
        "--config",
        "tiny-llama",
        "--device",
        "cpu",
        "--steps",
        "2",
        "--warmup",
        "1",
        "--seq-len",
        "32",
        "--decode-tokens",
        "4",
        "--context",
        "16",
    )
    assert code == 0 and r and r["status"] == "ok"
    m = r["measured"]
    assert m["training_tokens_per_second"] > 0 and m["decode_tokens_per_second"] > 0
    assert (
        m["training_flops_per_second"]
        == m["training_tokens_per_second"] * (r["details"]["flops_per_token"])
    )
    assert "mfu" not in m and r["estimate"] == {}
    assert r["details"]["budget_inputs"]["mfu"] is None


def test_card_detection() -> None:
    assert detect_card("cpu", None) is None
    assert detect_card("cpu", "h100-sxm") == "h100-sxm"
