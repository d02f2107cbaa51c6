"""preflight: every check passes on the tiny configs on CPU; each planted fault fails its
own check and no other; flags are checked; torchrun with 2 gloo ranks."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.model.spec import ModelSpec
from calculators.training.lora import adapter_parameters_or_none
from calculators.training.step import DEFAULT_LORA_TARGETS
from calculators.training.throughput import frozen_base_training_flops_per_token
from tests.probes_helpers import ROOT, run_probe, torchrun

torch = pytest.importorskip("torch")

from probes.preflight import data_order, learning  # noqa: E402
from probes.preflight.outcome import CheckOutcome  # noqa: E402
from probes.preflight.reused import planned_run_seconds  # noqa: E402
from probes.preflight.settings import CHECKS  # noqa: E402
from probes.setup import load_config  # noqa: E402
from probes.train_step import StepSettings  # noqa: E402

FAST = ("--device", "cpu", "--seq-len", "32", "--overfit-steps", "40")
TINY = sorted(p.stem for p in (ROOT / "probes" / "configs").glob("*.json"))


def _statuses(r: dict) -> dict[str, str]:
    return {c["id"]: c["status"] for c in r["details"]["checks"]}


def _check(r: dict, check: str) -> dict:
    return next(c for c in r["details"]["checks"] if c["id"] == check)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> dict:
    code, r = run_probe(
        tmp_path_factory.mktemp("base"), "preflight", "--config", "tiny-llama", *FAST
    )
    assert code == 0 and r is not None
    return r


def test_every_check_passes_on_tiny_llama(baseline) -> None:
    r = baseline
    assert r["status"] == "ok"
    assert [c["id"] for c in r["details"]["checks"]] == list(CHECKS)
    assert set(_statuses(r).values()) == {"pass"}
    # check 1: ln(512) = 6.2383, the uniform guess over tiny-llama's 512 tokens
    one = _check(r, "initial-loss")
    assert one["threshold"]["ln_vocab"] == pytest.approx(6.2383, abs=1e-4)
    assert abs(one["measured"]["initial_loss"] - 6.2383) < 0.1
    assert _check(r, "gradients")["measured"]["trainable_tensors"] == 21
    three = _check(r, "overfit")["measured"]
    assert three["final_loss"] < 0.5 * three["start_loss"]
    assert three["fresh_batch_loss"] > 6.2383 * 0.9
    assert three["targets_aligned"] == 1.0
    assert _check(r, "resume")["measured"] == {
        "bitwise_equal": 1,
        "max_abs_diff": 0.0,
        "loads_weights_only": 1,
    }
    # the CPU tracker meets the calculators' estimate of the step
    assert r["ratio"]["peak"] == pytest.approx(1, abs=0.01)
    assert r["details"]["backend"] == "cpu-live-tensors"


@pytest.mark.parametrize("config", [c for c in TINY if c != "tiny-llama"])
def test_every_in_process_check_passes_on_each_tiny_config(tmp_path, config: str) -> None:
    # resume spawns a process: run once above; here the checks that differ per model
    checks = "initial-loss,gradients,overfit,memory,accumulation,data-order,speed"
    code, r = run_probe(tmp_path, "preflight", "--config", config, *FAST, "--checks", checks)
    assert code == 0 and r is not None, r and r["details"]
    s = _statuses(r)
    assert s.pop("resume") == "skipped"
    assert set(s.values()) == {"pass"}, r["details"]["checks"]


def _with_fault(tmp_path, *extra: str) -> tuple[int, dict]:
    code, r = run_probe(tmp_path, "preflight", "--config", "tiny-llama", *FAST, *extra)
    assert r is not None
    return code, r


def _only_failure(r: dict) -> str:
    failed = [k for k, v in _statuses(r).items() if v == "fail"]
    assert len(failed) == 1, r["details"]["checks"]
    assert all(v == "pass" for k, v in _statuses(r).items() if k != failed[0])
    return failed[0]


def test_a_frozen_tensor_that_should_train_fails_gradients(tmp_path, monkeypatch) -> None:
    original = learning.prepare_model

    def freezes_the_final_norm(model, s, freeze):  # type: ignore[no-untyped-def]
        original(model, s, freeze)
        model.model.norm.weight.requires_grad_(False)

    monkeypatch.setattr(learning, "prepare_model", freezes_the_final_norm)
    code, r = _with_fault(tmp_path)
    assert code == 1 and r["status"] == "error"
    assert _only_failure(r) == "gradients"
    two = _check(r, "gradients")
    assert two["offenders"] == {"should train but frozen": ["model.norm.weight"]}
    assert "requires_grad" in two["look_at"]


def test_a_loss_on_unshifted_targets_fails_overfit(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(learning, "inputs_and_targets", lambda t: (t[:, :-1], t[:, :-1]))
    code, r = _with_fault(tmp_path)
    assert code == 1 and _only_failure(r) == "overfit"
    three = _check(r, "overfit")
    # the batch is still learnt (a copy task is easy); its targets are not the next
    # tokens: on uniform tokens a wrong alignment matches about 1 position in V = 512
    assert three["measured"]["steps_to_target"] is not None
    assert three["measured"]["targets_aligned"] < 0.05
    assert "shifted" in three["look_at"]


def test_a_resume_that_drops_the_optimizer_state_fails_resume(tmp_path, monkeypatch) -> None:
    from probes.checkpoint import Run

    original = Run.state

    def without_optimizer(self, omit):  # type: ignore[no-untyped-def]
        state = original(self, omit)
        del state["optimizer"]
        return state

    monkeypatch.setattr(Run, "state", without_optimizer)
    code, r = _with_fault(tmp_path)
    assert code == 1 and _only_failure(r) == "resume"
    six = _check(r, "resume")
    assert six["measured"]["bitwise_equal"] == 0 and six["measured"]["max_abs_diff"] > 0
    assert "optimizer state" in six["look_at"]


def test_a_resume_check_out_of_memory_is_skipped_with_what_to_do(tmp_path, monkeypatch) -> None:
    # the check trains the full model in fp32 with AdamW: on a card that holds the reader's
    # bf16 or LoRA run but not that, the loop is not at fault, so the check is not failed
    import torch

    import probes.checkpoint

    def out_of_memory(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise torch.OutOfMemoryError("CUDA out of memory (planted)")

    monkeypatch.setattr(probes.checkpoint, "checkpoint_probe", out_of_memory)
    code, r = _with_fault(tmp_path, "--checks", "resume")
    six = _check(r, "resume")
    assert code == 0 and six["status"] == "skipped"
    assert "out of memory" in six["summary"] and "fewer layers" in six["look_at"]


def test_a_loader_without_set_epoch_fails_data_order(tmp_path, monkeypatch) -> None:
    def forgets_set_epoch(sampler, epoch, consumed_batches, batch):  # type: ignore[no-untyped-def]
        sampler.skip = consumed_batches * batch

    monkeypatch.setattr(data_order, "begin_epoch", forgets_set_epoch)
    code, r = _with_fault(tmp_path)
    assert code == 1 and _only_failure(r) == "data-order"
    seven = _check(r, "data-order")
    assert seven["offenders"] == {"broken": ["new_epoch_new_order"]}
    assert seven["details"]["first_epoch_rows"] == seven["details"]["second_epoch_rows"]


def test_lora_trains_the_adapters_only(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "preflight",
        "--config",
        "tiny-llama",
        *FAST,
        "--lora-rank",
        "4",
        "--checks",
        "gradients,speed",
    )
    assert code == 0 and r is not None
    # the speed check counts a frozen base's FLOPs: 4 N + 6 N_a per token (issue 23)
    speed = _check(r, "speed")["details"]
    spec = ModelSpec.from_hf_config(load_config("tiny-llama", None)[0])
    adapters = adapter_parameters_or_none(spec, 4, ",".join(DEFAULT_LORA_TARGETS))
    assert speed["adapter_parameters"] == adapters
    assert speed["flops_per_token"] == frozen_base_training_flops_per_token(
        spec,
        32,
        adapters,  # FAST's --seq-len
    )
    assert speed["flops_per_token_formula"].startswith("4 N + 6 N_a")
    two = _check(r, "gradients")
    # all-attention on 2 layers: q, k, v, o each with A and B
    assert two["status"] == "pass" and two["measured"]["trainable_tensors"] == 2 * 4 * 2
    assert two["measured"]["tensors"] == 21 + 16


def test_freeze_flag_is_honoured_and_checked(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "preflight",
        "--config",
        "tiny-llama",
        *FAST,
        "--freeze",
        "embed_tokens",
        "--checks",
        "gradients",
    )
    assert code == 0 and r is not None
    assert _check(r, "gradients")["measured"]["trainable_tensors"] == 20


def test_a_local_checkpoint_reports_the_initial_loss_as_a_value(tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    cfg = json.loads((ROOT / "probes/configs/tiny-llama.json").read_text())
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**cfg))
    model.save_pretrained(tmp_path / "ckpt")
    code, r = run_probe(
        tmp_path,
        "preflight",
        "--hf",
        "--config",
        str(tmp_path / "ckpt"),
        *FAST,
        "--checks",
        "initial-loss,gradients",
    )
    assert code == 0 and r is not None, r
    one = _check(r, "initial-loss")
    assert one["status"] == "skipped" and one["measured"]["initial_loss"] > 0
    assert "pretrained" in one["summary"]
    assert _check(r, "gradients")["status"] == "pass"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "--overfit-fraction",
            "1.5",
            "overfit-fraction must be a number strictly between 0 and 1, got 1.5",
        ),
        ("--accumulation", "1", "accumulation must be an integer from 2 to 1,024, got 1"),
        ("--checks", "speed,warp", "checks must list some of initial-loss"),
        ("--strategy", "ddp", "strategy ddp runs under torchrun"),
    ],
)
def test_bad_flags_end_with_one_line(tmp_path, capsys, flag: str, value: str, message: str) -> None:
    code, _ = run_probe(tmp_path, "preflight", "--config", "tiny-llama", *FAST, flag, value)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_planned_run_cost_on_cpu_is_the_measured_rate_held(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "preflight",
        "--config",
        "tiny-llama",
        *FAST,
        "--checks",
        "speed",
        "--tokens",
        "1000000",
        "--price",
        "2.5",
    )
    assert code == 0 and r is not None
    m = _check(r, "speed")["measured"]
    assert m["mfu"] is None  # no catalog peak on a CPU
    assert m["planned_run_hours"] == pytest.approx(1e6 / m["tokens_per_second"] / 3600)
    assert m["planned_run_cost"] == pytest.approx(m["planned_run_gpu_hours"] * 2.5)


def test_min_mfu_without_a_peak_is_skipped_not_passed(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "preflight",
        "--config",
        "tiny-llama",
        *FAST,
        "--checks",
        "speed",
        "--min-mfu",
        "0.3",
    )
    assert code == 0 and r is not None
    assert _check(r, "speed")["status"] == "skipped"


def test_two_gloo_ranks_under_torchrun(tmp_path) -> None:
    out = tmp_path / "ddp.json"
    p = torchrun(
        "preflight", "--config", "tiny-llama", *FAST, "--strategy", "ddp", "--out", str(out)
    )
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(out.read_text())
    s = _statuses(r)
    assert r["inputs"]["world_size"] == 2 and r["details"]["world_size"] == 2
    assert s == dict.fromkeys(CHECKS, "pass")
    assert _check(r, "accumulation")["details"]["strategy_run"] == "ddp"
    assert _check(r, "data-order")["measured"]["ranks_disjoint"] == 1


def test_intended_trainable_follows_the_settings_not_requires_grad() -> None:
    names = ["a.weight", "a.lora_A", "a.lora_B", "embed_tokens.weight"]
    full = StepSettings(micro_batch=1, seq_len=8)
    lora = StepSettings(micro_batch=1, seq_len=8, lora_rank=4)
    assert learning.intended_trainable(names, full, ()) == set(names)
    assert learning.intended_trainable(names, full, ("embed",)) == set(names[:3])
    assert learning.intended_trainable(names, lora, ()) == {"a.lora_A", "a.lora_B"}


@given(st.integers(min_value=2, max_value=1_000_000))
def test_uniform_loss_is_the_entropy_of_the_uniform_guess(vocab: int) -> None:
    # -sum (1/V) ln(1/V) = ln V
    assert learning.uniform_loss(vocab) == pytest.approx(-math.log(1 / vocab))


@given(st.floats(min_value=0.0, max_value=5.0))
def test_init_tolerance_maps_to_a_logit_spread(sigma: float) -> None:
    # the inverse used in check 1's details: sigma = sqrt(2 x excess)
    assert math.sqrt(2 * learning.init_excess_for_logit_std(sigma)) == pytest.approx(sigma)


@given(
    st.integers(min_value=1, max_value=10**12),
    st.floats(min_value=1.0, max_value=1e7),
    st.integers(min_value=1, max_value=1024),
)
def test_planned_run_scales_inversely_with_gpus(tokens: int, rate: float, gpus: int) -> None:
    one = planned_run_seconds(tokens, rate, 1)
    assert planned_run_seconds(tokens, rate, gpus) == pytest.approx(one / gpus)


def test_outcome_refuses_an_unknown_status() -> None:
    with pytest.raises(ValueError, match="status must be one of pass, fail, skipped"):
        CheckOutcome(number=1, id="x", title="x", status="maybe")


def test_uniform_tokens_are_seeded() -> None:
    a = learning.uniform_tokens(512, 2, 8, 3)
    assert torch.equal(a, learning.uniform_tokens(512, 2, 8, 3))
    assert a.shape == (2, 9) and int(a.max()) < 512
