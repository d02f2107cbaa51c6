"""weights and kv-cache probes: exact against the calculators on tiny configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calculators.memory.activations import inference_workspace
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.weights import weight_bytes
from probes.setup import load_spec
from tests.probes_helpers import run_probe

PROBE_CONFIGS = Path(__file__).parent.parent / "probes" / "configs"


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


@pytest.mark.parametrize(
    ("dtype_key", "dtype", "fmt"),
    [("torch_dtype", "float16", "fp16"), ("dtype", "float32", "fp32"), (None, None, "bf16")],
)
def test_the_cache_format_follows_the_models_dtype(tmp_path, dtype_key, dtype, fmt) -> None:
    # transformers writes torch_dtype (dtype from 4.56) into config.json and its
    # dtype="auto" loads that dtype, float32 included, so the probe measures the cache in
    # it unless told otherwise (vLLM's dtype="auto" would load a float32 config in 16 bits)
    config = json.loads((PROBE_CONFIGS / "tiny-llama.json").read_text())
    if dtype_key is not None:
        config[dtype_key] = dtype
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, r = run_probe(
        tmp_path, "kv-cache", "--config", str(path), "--context", "16", "--device", "cpu"
    )
    assert code == 0 and r is not None
    assert r["inputs"]["kv_format"] == fmt
    assert r["measured"]["kv_cache_bytes"] == r["estimate"]["kv_cache_bytes"] > 0


def test_the_default_format_is_said_to_follow_transformers_not_vllm() -> None:
    # a float32 config stays float32 under transformers' dtype="auto" and so in the probe;
    # vLLM's dtype="auto" would load it in 16 bits: the words say which runtime the
    # default follows (issue 23), and the page says the same
    import argparse

    from probes.commands.kv_cache import flags
    from probes.inference import model_format

    assert model_format({"torch_dtype": "float32"}) == "fp32"
    doc = " ".join((model_format.__doc__ or "").split())
    assert 'transformers\' dtype="auto" loads' in doc and "vLLM" in doc
    assert "runtime loads" not in doc
    parser = argparse.ArgumentParser()
    flags(parser)
    (kv,) = [a for a in parser._actions if a.dest == "kv_format"]
    assert "transformers' dtype='auto'" in kv.help and "vLLM would load 16 bits" in kv.help
    page = (Path(__file__).parent.parent / "docs/memory/kv-cache.md").read_text()
    page = " ".join(page.split())
    assert 'as transformers\' `dtype="auto"` loads it (float32 configs stay float32' in page
    assert "as a runtime loads it" not in page


def test_the_probe_states_its_own_memory_and_keeps_only_the_last_logits(tmp_path) -> None:
    code, r = run_probe(
        tmp_path,
        "kv-cache",
        *("--config", "tiny-llama", "--context", "48", "--batch", "3", "--kv-format", "bf16"),
        *("--device", "cpu"),
    )
    assert code == 0 and r is not None
    spec, _ = load_spec("tiny-llama", None)
    cache = kv_cache_bytes(spec, context=48, batch=3, settings=KVSettings(kv_format="bf16"))
    work = inference_workspace(spec, context=48, batch=3)
    need = weight_bytes(spec, "bf16").main_bytes + cache.total_bytes + work.total
    assert r["details"]["probe_memory_bytes"] == need
    assert r["details"]["logits"] == "last position only"
    # one row of logits per sequence (bf16, and its fp32 copy for sampling), not one per
    # position: 48 times less than the full logits
    assert work.logits == 3 * spec.vocab_size * (2 + 4)


def test_a_card_too_small_for_the_probe_is_refused_before_loading(monkeypatch) -> None:
    import torch

    from probes.commands.kv_cache import _check_free_memory

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2**30, 80 * 2**30))
    with pytest.raises(ValueError, match=r"^batch: the probe needs about 2\.0 GiB .* 1\.0 GiB"):
        _check_free_memory("cuda:0", 2 * 2**30, 8)
    _check_free_memory("cuda:0", 2**29, 8)  # fits: no error
    _check_free_memory("cpu", 2**40, 8)  # CPU runs are not checked
