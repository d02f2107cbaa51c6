"""accumulation: token-mean equals one batch; mean-of-means does not; DDP under torchrun."""

from __future__ import annotations

import json

from tests.probes_helpers import run_probe, torchrun


def test_token_mean_matches_one_batch_in_fp32(tmp_path) -> None:
    code, r = run_probe(tmp_path, "accumulation", "--config", "tiny-llama", "--device", "cpu")
    assert code == 0 and r and r["status"] == "ok"
    assert r["measured"]["token_mean_rel_l2"] < 1e-5
    assert r["measured"]["mean_of_means_rel_l2"] > 0.05  # uneven lengths: a visible error
    counts = r["details"]["token_counts"]
    assert len(counts) == 4 and len(set(counts)) > 1
    # one large batch's loss is calculators.training.batch's token mean of the micro-batch means
    assert abs(r["ratio"]["token_mean_loss"] - 1) < 1e-5


def test_bf16_within_two_percent(tmp_path) -> None:
    code, r = run_probe(
        tmp_path, "accumulation", "--config", "tiny-qwen2", "--precision", "bf16", "--device", "cpu"
    )
    assert code == 0 and r
    assert 0 < r["measured"]["token_mean_rel_l2"] < 2e-2
    assert r["measured"]["mean_of_means_rel_l2"] > 10 * r["measured"]["token_mean_rel_l2"]


def test_ddp_no_sync_matches_the_single_process_gradient(tmp_path) -> None:
    out = tmp_path / "ddp.json"
    p = torchrun(
        "accumulation",
        "--config",
        "tiny-llama",
        "--strategy",
        "ddp",
        "--device",
        "cpu",
        "--accumulation",
        "3",
        "--out",
        str(out),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(out.read_text())
    assert r["inputs"]["world_size"] == 2
    assert len(r["details"]["token_counts"]) == 6  # 3 micro-batches on each of 2 ranks
    assert r["measured"]["token_mean_rel_l2"] < 1e-5
