"""train-step under torchrun with gloo, 2 processes: every rank measured."""

from __future__ import annotations

import json

import pytest

from tests.probes_helpers import torchrun


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_ranks_on_cpu(tmp_path, strategy: str) -> None:
    out = tmp_path / f"{strategy}.json"
    p = torchrun(
        "train-step",
        "--config",
        "tiny-llama",
        "--strategy",
        strategy,
        "--device",
        "cpu",
        "--seq-len",
        "32",
        "--out",
        str(out),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(out.read_text())
    assert r["status"] == "ok" and r["inputs"]["world_size"] == 2
    ranks = r["details"]["ranks"]
    assert len(ranks) == 2 and all(rank["peak"] > 0 for rank in ranks)
    n = 426_624 * 4
    if strategy == "ddp":  # a full replica on each rank, DDP buckets in after_load
        assert r["measured"]["parameters"] == n == r["estimate"]["parameters"]
        assert r["ratio"]["after_load"] == pytest.approx(1, abs=0.01)
    else:  # FULL_SHARD: each rank holds its half of the parameters and states between steps
        assert r["estimate"]["parameters"] == r["measured"]["parameters"] == n // 2
        assert r["measured"]["gradients"] == n // 2
        # FSDP frees gathered parameters with storage.resize_(0): the tracker follows it
        assert r["ratio"]["after_load"] == pytest.approx(1, abs=0.01)
    assert r["measured"]["activations"] == pytest.approx(r["estimate"]["activations"], rel=0.01)
