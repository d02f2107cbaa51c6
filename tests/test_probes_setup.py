"""Probe setup: configs, precision policies, LoRA counts, optimizers, transformers' classes."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from calculators.model.params import parameter_counts
from calculators.training.lora import lora_parameters
from probes.model import build_model
from probes.setup import apply_lora, build_hf, load_config, load_spec, make_optimizer, policy
from tests.probes_helpers import ROOT, torch

TINY = sorted(p.stem for p in (ROOT / "probes" / "configs").glob("*.json"))
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


@pytest.mark.parametrize(
    ("targets", "config"),
    [
        (("q_proj", "k_proj", "v_proj", "o_proj"), "tiny-llama"),
        (("all-linear",), "tiny-qwen3"),
        (("qkv_proj", "gate_up_proj"), "tiny-phi3"),
        (("q_a_proj", "kv_b_proj"), "tiny-deepseek-v3"),
        (("gate_proj", "down_proj"), "tiny-mixtral"),
        (("all-linear",), "tiny-qwen2-moe"),
        (("all-attention",), "tiny-deepseek-v3"),
        (("all-attention",), "tiny-phi3"),
    ],
)
def test_lora_trains_what_the_calculators_count(targets: tuple[str, ...], config: str) -> None:
    spec, _ = load_spec(config, None)
    model = build_model(spec)
    trainable = apply_lora(model, 4, targets)
    assert trainable == lora_parameters(spec, 4, targets).trainable


def test_lora_target_that_matches_nothing() -> None:
    spec, _ = load_spec("tiny-llama", None)
    with pytest.raises(ValueError, match="match no linear layer"):
        apply_lora(build_model(spec), 4, ("c_attn",))


def test_config_sources() -> None:
    data, name = load_config("tiny-llama", None)
    assert name == "tiny-llama" and data["model_type"] == "llama"
    assert load_config(None, "gpt2")[1] == "gpt2"
    with pytest.raises(ValueError, match="exactly one of --config and --model"):
        load_config("tiny-llama", "gpt2")


def test_policies_and_optimizers() -> None:
    master = policy("bf16-fp32-master")
    assert master.master and master.model_dtype == torch.bfloat16
    assert policy("bf16-mixed") == master  # the retired name, still read
    assert policy("amp-fp16").scaler
    with pytest.raises(ValueError, match="precision must be one of"):
        policy("fp8")
    p = [torch.nn.Parameter(torch.ones(3))]
    assert make_optimizer(p, "sgd-momentum", "foreach").defaults["momentum"] == 0.9
    assert make_optimizer(p, "adamw", "fused").defaults["fused"] is True
    with pytest.raises(ValueError, match="optimizer must be one of"):
        make_optimizer(p, "lion", "foreach")


@pytest.mark.skipif(not HAS_TRANSFORMERS, reason="--hf needs transformers (optional)")
@pytest.mark.parametrize("config", [c for c in TINY if c != "tiny-gemma2"])
def test_hf_classes_match_the_calculators(config: str) -> None:
    spec, data = load_spec(config, None)
    model = build_hf(
        data, device="meta", dtype=torch.float32, attention="sdpa", checkpointing="none", seed=0
    )
    n = sum(p.numel() for p in model.parameters())
    # transformers keeps DeepSeek-V3's e_score_correction_bias as a buffer, not a parameter
    extra = spec.moe.n_routed_experts if spec.moe and spec.moe.router_score_bias else 0
    assert n + extra == parameter_counts(spec).total


def test_hf_without_transformers_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import transformers` fail as if it were absent.
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ValueError, match="--hf needs transformers installed"):
        build_hf(
            {}, device="cpu", dtype=torch.float32, attention="sdpa", checkpointing="none", seed=0
        )
