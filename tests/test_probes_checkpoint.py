"""checkpoint: a complete checkpoint resumes bitwise in a new process; an omission breaks it."""

from __future__ import annotations

from tests.probes_helpers import run_probe

ARGS = (
    "checkpoint",
    "--config",
    "tiny-llama",
    "--device",
    "cpu",
    "--steps",
    "2",
    "--more-steps",
    "2",
    "--seq-len",
    "16",
)


def test_complete_checkpoint_resumes_bitwise(tmp_path) -> None:
    code, r = run_probe(tmp_path, *ARGS, "--dir", str(tmp_path / "ck"))
    assert code == 0 and r and r["status"] == "ok"
    assert r["measured"]["bitwise_equal"] == 1
    assert r["details"]["results"]["nothing"]["max_abs_diff"] == 0.0
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["checkpoint.pt", "final.pt"]


def test_omitting_the_optimizer_state_breaks_equality(tmp_path) -> None:
    code, r = run_probe(tmp_path, *ARGS, "--omit", "optimizer")
    assert code == 0 and r
    assert r["measured"] == {"bitwise_equal_omit_optimizer": 0}
    assert r["details"]["breaks_equality"] == ["optimizer"]
    assert r["details"]["results"]["optimizer"]["max_abs_diff"] > 0


def test_unknown_piece_is_a_usage_error(tmp_path, capsys) -> None:
    code, _ = run_probe(tmp_path, *ARGS, "--omit", "everything")
    assert code == 2
    assert "omit must be one of model, optimizer" in capsys.readouterr().err
