"""adapter: the four checks pass on tiny Llama, Qwen2 and Mixtral configs on CPU; the
counts equal the calculators' and PEFT's; a planted fault fails its own check; an
adapter saved for another base is refused; bad flags end with one line."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.probes_helpers import ROOT, run_probe

torch = pytest.importorskip("torch")
pytest.importorskip("peft", reason="the adapter probe needs peft")
pytest.importorskip("transformers", reason="the adapter probe needs transformers")

from probes.adapter import base, merge, reload  # noqa: E402
from probes.adapter.settings import CHECKS  # noqa: E402

FAST = ("--device", "cpu", "--hf", "--seq-len", "16")
LLAMA = json.loads((ROOT / "probes/configs/tiny-llama.json").read_text())


def _check(r: dict, check: str) -> dict:
    return next(c for c in r["details"]["checks"] if c["id"] == check)


def _statuses(r: dict) -> dict[str, str]:
    return {c["id"]: c["status"] for c in r["details"]["checks"]}


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> tuple[dict, str]:
    """tiny-llama, rank 8 on all-linear, the adapter kept for the --adapter tests."""
    folder = tmp_path_factory.mktemp("llama")
    saved = str(folder / "adapter")
    code, r = run_probe(
        folder,
        "adapter",
        "--config",
        "tiny-llama",
        *FAST,
        "--lora-rank",
        "8",
        "--lora-targets",
        "all-linear",
        "--save-adapter",
        saved,
    )
    assert code == 0 and r is not None, r and r["details"]
    return r, saved


def test_every_check_passes_on_tiny_llama(llama) -> None:
    r, _ = llama
    assert r["status"] == "ok" and r["probe"]["name"] == "adapter"
    assert [c["id"] for c in r["details"]["checks"]] == list(CHECKS)
    assert set(_statuses(r).values()) == {"pass"}
    # rank 8 on q, k, v, o, gate, up, down of 2 layers: 8 x (in + out) per matrix,
    # 8 x (256 + 192 + 192 + 256 + 384 + 384 + 384) = 16,384 per layer
    one = _check(r, "counts")["measured"]
    assert one["trainable_parameters"] == one["peft_trainable_parameters"] == 2 * 16_384
    # the base: 426,624 parameters (the weights probe's committed count for tiny-llama)
    assert one["total_parameters"] == one["peft_total_parameters"] == 426_624 + 32_768
    assert r["estimate"] == {"trainable_parameters": 32_768, "total_parameters": 459_392}
    assert r["ratio"] == {"trainable_parameters": 1.0, "total_parameters": 1.0}
    two = _check(r, "update")["measured"]
    assert two["lora_A_tensors"] == two["lora_B_tensors"] == 14
    assert two["lora_B_changed_after_step_1"] == 14
    # B starts at zero: A's first gradient is exactly zero, so A moves only at step 2
    assert two["lora_A_zero_gradient_at_step_1"] == 14
    assert two["lora_A_changed_after_step_1"] == 0
    assert two["lora_A_changed_after_step_2"] == 14
    assert two["base_tensors"] == 21 and two["base_tensors_changed"] == 0
    three = _check(r, "reload")
    assert three["measured"] == {
        "bitwise_equal": 1,
        "max_abs_diff": 0.0,
        "different_base_refused": 1,
    }
    assert "num_hidden_layers 2 -> 1" in three["details"]["refusal"]["change"]
    four = _check(r, "merge")["measured"]
    assert 0 <= four["max_abs_diff"] <= _check(r, "merge")["threshold"]["max_abs_diff"]
    assert 0 <= four["kl_mean"] <= _check(r, "merge")["threshold"]["kl_mean"]
    # the comparison is informative: the adapter moves the logits by more than the limit
    assert four["adapter_effect"] > _check(r, "merge")["threshold"]["max_abs_diff"]


def test_the_saved_adapter_records_its_base(llama) -> None:
    r, saved = llama
    from pathlib import Path

    record = json.loads((Path(saved) / base.BASE_RECORD).read_text())
    assert record["config_sha256"] == base.config_sha256(LLAMA) == r["inputs"]["config_sha256"]
    assert record["model_id"] == "tiny-llama" and record["weights"] == "random"
    assert record["seed"] == 0 and record["lora_rank"] == 8
    peft_config = json.loads((Path(saved) / "adapter_config.json").read_text())
    assert peft_config["base_model_name_or_path"] == "tiny-llama"
    assert r["details"]["adapter_saved_to"] == saved


def test_the_report_draws_as_a_checklist(llama) -> None:
    from calculators.web.render import checklist_svg

    r, _ = llama
    svg = checklist_svg(r["details"]["checks"])
    assert "4 passed, 0 failed, 0 skipped" in svg


@pytest.mark.parametrize("config", ["tiny-qwen2", "tiny-mixtral"])
def test_every_check_passes_on_qwen2_and_mixtral(tmp_path, config: str) -> None:
    code, r = run_probe(tmp_path, "adapter", "--config", config, *FAST, "--lora-rank", "4")
    assert code == 0 and r is not None, r and r["details"]
    assert set(_statuses(r).values()) == {"pass"}, r["details"]["checks"]
    one = _check(r, "counts")
    # all-attention: q (128+128), k and v (128+64), o (128+128) per layer, rank 4
    assert one["measured"]["trainable_parameters"] == 2 * 4 * (256 + 192 + 192 + 256)
    assert r["ratio"]["total_parameters"] == 1.0  # Qwen2's tied embedding counted once


def test_a_saved_adapter_on_its_own_base_is_checked_without_training(tmp_path, llama) -> None:
    _, saved = llama
    code, r = run_probe(tmp_path, "adapter", "--config", "tiny-llama", *FAST, "--adapter", saved)
    assert code == 0 and r is not None, r and r["details"]
    assert _statuses(r) == {
        "counts": "pass",
        "update": "skipped",
        "reload": "pass",
        "merge": "pass",
    }
    assert r["inputs"]["lora_rank"] == 8 and r["inputs"]["lora_targets"] == ["all-linear"]


def test_a_saved_adapter_on_another_base_is_refused_naming_both_hashes(
    tmp_path, capsys, llama
) -> None:
    _, saved = llama
    other = {**LLAMA, "num_hidden_layers": 1}
    path = tmp_path / "one-layer.json"
    path.write_text(json.dumps(other))
    code, r = run_probe(tmp_path, "adapter", "--config", str(path), *FAST, "--adapter", saved)
    assert code == 2 and r is not None and r["status"] == "error"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refused" in err[0]
    assert base.config_sha256(LLAMA) in err[0] and base.config_sha256(other) in err[0]


def test_a_merge_that_drops_the_adapter_fails_merge_only(tmp_path, monkeypatch) -> None:
    from peft.tuners.lora import LoraModel

    monkeypatch.setattr(LoraModel, "merge_and_unload", lambda self, **kw: self.unload())
    code, r = run_probe(tmp_path, "adapter", "--config", "tiny-llama", *FAST, "--lora-rank", "8")
    assert code == 1 and r is not None and r["status"] == "error"
    assert _statuses(r) == {"counts": "pass", "update": "pass", "reload": "pass", "merge": "fail"}
    four = _check(r, "merge")["measured"]
    # without the adapter the "merged" logits are the base's: off by the adapter's effect
    assert four["max_abs_diff"] == pytest.approx(four["adapter_effect"])


def test_an_adapter_saved_without_its_b_matrices_fails_reload_only(tmp_path, monkeypatch) -> None:
    from safetensors.torch import load_file, save_file

    original = reload.save_adapter

    def zeroes_b(model, folder, record):  # type: ignore[no-untyped-def]
        original(model, folder, record)
        path = f"{folder}/adapter_model.safetensors"
        weights = load_file(path)
        save_file({k: v.zero_() if "lora_B" in k else v for k, v in weights.items()}, path)

    import probes.adapter as adapter

    monkeypatch.setattr(adapter, "save_adapter", zeroes_b)
    code, r = run_probe(tmp_path, "adapter", "--config", "tiny-llama", *FAST, "--lora-rank", "8")
    assert code == 1 and r is not None
    assert _statuses(r) == {"counts": "pass", "update": "pass", "reload": "fail", "merge": "pass"}
    three = _check(r, "reload")["measured"]
    assert three["bitwise_equal"] == 0 and three["max_abs_diff"] > 0


def test_fused_experts_show_where_the_counts_differ(tmp_path) -> None:
    # transformers 5 stores Mixtral's experts as 3-D gate_up_proj and down_proj: PEFT
    # adapts them through target_parameters, with one adapter on the fused gate_up
    code, r = run_probe(
        tmp_path,
        "adapter",
        "--config",
        "tiny-mixtral",
        *FAST,
        "--lora-rank",
        "4",
        "--lora-targets",
        "all-linear",
    )
    assert code == 1 and r is not None
    one = _check(r, "counts")
    assert one["status"] == "fail" and "fused" in one["look_at"]
    assert one["details"]["peft_target_parameters"] == ["down_proj", "gate_up_proj"]
    calc = one["threshold"]["calculators_trainable_parameters"]
    # per layer and expert: separate gate and up train 2 r (H + I), fused r (H + 2 I);
    # H = I = 128 here, r = 4, 4 experts, 2 layers
    assert calc - one["measured"]["trainable_parameters"] == 2 * 4 * (2 * 4 * 256 - 4 * 384)
    assert one["measured"]["trainable_parameters"] == one["measured"]["peft_trainable_parameters"]
    assert {c["id"]: c["status"] for c in r["details"]["checks"][1:]} == {
        "update": "pass",
        "reload": "pass",
        "merge": "pass",
    }


def test_a_bitsandbytes_base_without_bitsandbytes_is_skipped_with_the_reason(tmp_path) -> None:
    try:
        import bitsandbytes  # type: ignore[import-not-found]  # noqa: F401

        pytest.skip("bitsandbytes is installed here")
    except ImportError:
        pass
    code, r = run_probe(
        tmp_path,
        "adapter",
        "--config",
        "tiny-llama",
        *FAST,
        "--lora-rank",
        "8",
        "--base-format",
        "nf4",
    )
    assert code == 0 and r is not None and r["status"] == "ok"
    assert set(_statuses(r).values()) == {"skipped"}
    assert all("bitsandbytes" in c["look_at"] for c in r["details"]["checks"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--lora-rank", "8"), "add --hf"),
        (("--hf",), "lora-rank is required"),
        (("--hf", "--lora-rank", "0"), "lora-rank must be an integer from 1 to 4,096, got 0"),
        (("--hf", "--lora-rank", "8", "--base-format", "fp8"), "base-format must be one of"),
        (("--hf", "--lora-rank", "8", "--lr", "-1"), "lr must be a number above 0 to 1"),
        (("--hf", "--lora-rank", "8", "--adapter", "/nonexistent"), "not a saved adapter"),
    ],
)
def test_bad_flags_end_with_one_line(tmp_path, capsys, argv: tuple, message: str) -> None:
    code, r = run_probe(tmp_path, "adapter", "--config", "tiny-llama", "--device", "cpu", *argv)
    assert code == 2 and r is not None and r["status"] == "error"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_an_unknown_target_ends_with_one_line(tmp_path, capsys) -> None:
    code, _ = run_probe(
        tmp_path,
        "adapter",
        "--config",
        "tiny-llama",
        *FAST,
        "--lora-rank",
        "8",
        "--lora-targets",
        "qkv",
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "qkv" in err[0] and "matches no linear layer" in err[0]


def test_the_config_hash_ignores_names_and_key_order_but_not_the_shape() -> None:
    renamed = {"_name_or_path": "elsewhere", "transformers_version": "9.9", **LLAMA}
    reordered = dict(reversed(list(renamed.items())))
    assert base.config_sha256(reordered) == base.config_sha256(LLAMA)
    assert base.config_sha256({**LLAMA, "hidden_size": 256}) != base.config_sha256(LLAMA)
    other, change = reload.different_config(LLAMA)
    assert other["num_hidden_layers"] == 1 and change == "num_hidden_layers 2 -> 1"
    single, change = reload.different_config({**LLAMA, "num_hidden_layers": 1})
    assert single["hidden_size"] == 256 and "hidden_size" in change


def test_a_base_of_another_seed_is_refused(tmp_path) -> None:
    (tmp_path / base.BASE_RECORD).write_text(
        json.dumps(
            {
                "schema": base.RECORD_SCHEMA,
                "config_sha256": "a" * 64,
                "weights": "random",
                "seed": 0,
                "model_id": "x",
            }
        )
    )
    here = {"config_sha256": "a" * 64, "weights": "random", "seed": 1, "model_id": "x"}
    with pytest.raises(ValueError, match="seed 0, not seed 1"):
        base.verify_base(str(tmp_path), here)
    with pytest.raises(ValueError, match=r"has no kernodeck_base\.json"):
        base.verify_base(str(tmp_path / "missing"), here)


def test_fused_names() -> None:
    assert base.fused_names("gate_up_proj") == {"gate_proj", "up_proj"}
    assert base.fused_names("down_proj") == {"down_proj"}


def test_kl_of_two_known_distributions() -> None:
    # P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3)
    p = torch.log(torch.tensor([[[0.5, 0.5]]]))
    q = torch.log(torch.tensor([[[0.25, 0.75]]]))
    assert merge.kl_mean(p, q) == pytest.approx(0.5 * math.log(4 / 3))


@given(st.lists(st.floats(min_value=-30, max_value=30), min_size=2, max_size=16))
def test_kl_is_zero_against_itself_and_never_negative(values: list[float]) -> None:
    a = torch.tensor([[values]])
    assert merge.kl_mean(a, a) == pytest.approx(0.0, abs=1e-12)
    assert merge.kl_mean(a, a.flip(-1)) >= -1e-12
