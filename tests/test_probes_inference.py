"""weights and kv-cache probes: exact against the calculators on tiny configs."""

from __future__ import annotations

import pytest

from tests.probes_helpers import run_probe


@pytest.mark.parametrize("config", ["tiny-deepseek-v3", "tiny-qwen2", "tiny-gpt2", "tiny-mixtral"])
@pytest.mark.parametrize("fmt", ["fp32", "bf16"])
def test_weights_are_exact(tmp_path, config: str, fmt: str) -> None:
    code, r = run_probe(tmp_path, "weights", "--config", config, "--format", fmt, "--device", "cpu")
    assert code == 0 and r is not None and r["status"] == "ok"
    assert r["measured"]["parameters"] == r["estimate"]["parameters"] > 300_000
    assert r["measured"]["weight_bytes"] == r["estimate"]["weight_bytes"]
    assert r["measured"]["allocated_bytes"] == r["estimate"]["weight_bytes"]
    assert r["ratio"]["weight_bytes"] == 1.0


@pytest.mark.parametrize(
    "config", ["tiny-llama", "tiny-gemma2", "tiny-gemma3", "tiny-mistral", "tiny-deepseek-v3"]
)
def test_kv_cache_is_exact(tmp_path, config: str) -> None:
    # 48 tokens: longer than the 32-token windows of gemma and mistral
    code, r = run_probe(
        tmp_path,
        "kv-cache",
        "--config",
        config,
        "--context",
        "48",
        "--batch",
        "3",
        "--kv-format",
        "bf16",
        "--device",
        "cpu",
    )
    assert code == 0 and r is not None
    assert r["measured"]["kv_cache_bytes"] == r["estimate"]["kv_cache_bytes"] > 0
    assert r["measured"]["allocated_bytes"] == r["estimate"]["kv_cache_bytes"]


def test_a_format_torch_cannot_hold_is_a_usage_error(tmp_path, capsys) -> None:
    code, _ = run_probe(tmp_path, "weights", "--config", "tiny-llama", "--format", "nf4")
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "error: format must be one of fp32, bf16, fp16 for a probe, got 'nf4'"
    )
