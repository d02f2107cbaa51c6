"""train-step on CPU: phases measured by the live-tensor tracker against training_memory."""

from __future__ import annotations

import importlib.util

import pytest

from calculators.model.spec import ModelSpec
from calculators.training.lora import lora_parameters
from probes.setup import load_config
from tests.probes_helpers import run_probe

PHASES = ("after_load", "after_forward", "backward_peak", "optimizer_step", "peak")


def test_fp32_adamw_model_states_are_exact_and_phases_close(tmp_path) -> None:
    code, r = run_probe(tmp_path, "train-step", "--config", "tiny-llama", "--device", "cpu")
    assert code == 0 and r is not None and r["status"] == "ok"
    m, e = r["measured"], r["estimate"]
    assert set(PHASES) <= set(m) and set(PHASES) <= set(e)
    # 426,624 fp32 parameters: 4 bytes each, gradients the same, AdamW two states
    assert m["parameters"] == e["parameters"] == 426_624 * 4
    assert m["gradients"] == e["gradients"] == 426_624 * 4
    # torch keeps each AdamW `step` as a 4-byte CPU tensor: 21 parameter tensors
    assert m["optimizer_states"] - e["optimizer_states"] == 21 * 4
    for phase in PHASES:
        assert 0.9 < r["ratio"][phase] < 1.1, (phase, r["ratio"][phase])
    cats = r["details"]["phases"]["backward"]["peak_by_category"]
    assert sum(cats.values()) == r["details"]["phases"]["backward"]["peak_bytes"]
    assert cats["activations"] > 0 and cats["optimizer_states"] > 0


def test_checkpointing_keeps_fewer_activations(tmp_path) -> None:
    args = ("train-step", "--config", "tiny-qwen2", "--device", "cpu", "--seq-len", "64")
    _, plain = run_probe(tmp_path, *args)
    _, ckpt = run_probe(tmp_path, *args, "--checkpointing", "full")
    assert plain and ckpt
    assert ckpt["measured"]["activations"] < plain["measured"]["activations"] / 2


def test_bf16_mixed_keeps_a_master_copy(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "train-step",
        "--config",
        "tiny-llama",
        "--precision",
        "bf16-fp32-master",
        "--device",
        "cpu",
        "--seq-len",
        "32",
    )
    assert code == 0 and r
    n = 426_624
    assert r["measured"]["parameters"] == 2 * n
    # fp32 master (4) + AdamW exp_avg and exp_avg_sq (8), plus the 4-byte step tensors
    assert r["measured"]["optimizer_states"] == 12 * n + 21 * 4


def test_lora_trains_only_the_adapters(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "train-step",
        "--config",
        "tiny-llama",
        "--lora-rank",
        "8",
        "--optimizer",
        "sgd",
        "--device",
        "cpu",
        "--seq-len",
        "32",
    )
    assert code == 0 and r
    spec = ModelSpec.from_hf_config(load_config("tiny-llama", None)[0])
    trainable = lora_parameters(spec, 8, ("q_proj", "k_proj", "v_proj", "o_proj")).trainable
    assert r["details"]["trainable_parameters"] == trainable
    assert r["measured"]["gradients"] == 4 * trainable
    assert r["measured"]["optimizer_states"] == 0


def test_steps_below_two_are_refused(tmp_path, capsys) -> None:
    code, r = run_probe(tmp_path, "train-step", "--config", "tiny-llama", "--steps", "1")
    assert code == 2
    assert "steps must be at least 2" in capsys.readouterr().err
    assert r is not None and r["status"] == "error"


def test_memory_limit_gives_an_oom_report_with_its_phase(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "train-step",
        "--config",
        "tiny-llama",
        "--device",
        "cpu",
        "--memory-limit",
        "8000000",
    )
    assert code == 1 and r is not None
    assert r["status"] == "oom"
    assert r["details"]["oom_phase"] in ("forward", "backward", "optimizer_step")
    assert r["error"].startswith(f"out of memory in phase {r['details']['oom_phase']}")


@pytest.mark.parametrize(
    ("config", "extra"),
    [
        ("tiny-mixtral", ("--precision", "bf16")),
        ("tiny-gemma2", ("--attention", "eager", "--optimizer", "sgd-momentum")),
        ("tiny-deepseek-v3", ("--precision", "amp-bf16")),
    ],
)
def test_other_families_and_policies_run(tmp_path, config: str, extra: tuple[str, ...]) -> None:
    code, r = run_probe(
        tmp_path, "train-step", "--config", config, "--device", "cpu", "--seq-len", "32", *extra
    )
    assert code == 0 and r and r["status"] == "ok"
    assert r["measured"]["parameters"] == r["estimate"]["parameters"]
    assert r["measured"]["peak"] > r["measured"]["after_load"] > 0


def test_selective_checkpointing_drops_the_eager_scores(tmp_path) -> None:
    args = (
        "train-step",
        "--config",
        "tiny-gemma2",
        "--attention",
        "eager",
        "--device",
        "cpu",
        "--seq-len",
        "64",
    )
    _, plain = run_probe(tmp_path, *args)
    _, selective = run_probe(tmp_path, *args, "--checkpointing", "selective")
    assert plain and selective
    # 2 layers x 4 heads x 64 x 64 scores x (4-byte softmax) x 2 sequences at least
    dropped = plain["measured"]["activations"] - selective["measured"]["activations"]
    assert dropped >= 2 * 4 * 64 * 64 * 4 * 2


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="--hf needs transformers (optional)"
)
def test_hf_train_step_measures_transformers_own_class(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "train-step",
        "--config",
        "tiny-llama",
        "--hf",
        "--device",
        "cpu",
        "--seq-len",
        "32",
    )
    assert code == 0 and r and r["inputs"]["hf"] is True
    assert r["details"]["parameters_built"] == 426_624
    assert 0.9 < r["ratio"]["peak"] < 1.1


class _AllocatorLike:
    """The CUDA backend's interface (no categories, no storage ids) over the CPU tracker,
    so that the GPU path of train-step runs here too."""

    kind = "allocator-like"

    def __init__(self) -> None:
        from probes.memory import Categorizer, CPUBackend

        self._cpu = CPUBackend()
        self.categories = Categorizer()

    def __enter__(self):  # type: ignore[no-untyped-def]
        self._cpu.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cpu.__exit__(*exc)

    def ids(self, tensors):  # type: ignore[no-untyped-def]
        return set()

    def start(self) -> None:
        self._cpu.start()

    def current(self) -> int:
        return self._cpu.current()

    def end(self, name: str):  # type: ignore[no-untyped-def]
        return self._cpu.end(name)

    def categorize(self, m) -> None:  # type: ignore[no-untyped-def]
        pass


def test_the_allocator_path_measures_model_states_from_tensors() -> None:
    from probes.cli import Phases
    from probes.setup import load_spec
    from probes.train_step import StepSettings, train_step

    spec, config = load_spec("tiny-llama", None)
    with _AllocatorLike() as b:
        out = train_step(
            spec, config, StepSettings(seq_len=32), device="cpu", backend=b, phases=Phases()
        )
    m = out["measured"]
    assert m["parameters"] == m["gradients"] == 426_624 * 4
    assert m["optimizer_states"] == 2 * 426_624 * 4 + 21 * 4  # CPU `step` counters: device cpu
    assert m["activations"] == m["after_forward"] - m["after_load"] > 0
