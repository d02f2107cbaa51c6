"""The reference decoder reproduces the calculators' tensor inventory exactly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from calculators.model.params import parameter_counts
from calculators.model.presets import load_preset, preset_ids
from calculators.model.spec import ModelSpec
from calculators.model.tensors import model_tensors
from tests.probes_helpers import ROOT
from tests.strategies import specs

torch = pytest.importorskip("torch")
from probes.model import build_model, inventory_of, parameter_count  # noqa: E402

TINY = sorted((ROOT / "probes" / "configs").glob("*.json"))


def _inventory(spec: ModelSpec) -> dict[str, tuple[tuple[int, ...], int]]:
    return {t.name: (t.shape, t.count) for t in model_tensors(spec) if not t.mtp}


@pytest.mark.parametrize("preset", preset_ids())
def test_every_preset_matches_the_inventory_on_meta(preset: str) -> None:
    spec = ModelSpec.from_hf_config(load_preset(preset), name=preset)
    model = build_model(spec, device="meta")
    assert parameter_count(model) == parameter_counts(spec).total
    assert {n: (s, c) for n, s, c in inventory_of(model)} == _inventory(spec)


def test_deepseek_v3_count_is_the_published_671b_main_model() -> None:
    spec = ModelSpec.from_hf_config(load_preset("deepseek-v3"))
    n = parameter_count(build_model(spec, device="meta"))
    # DeepSeek-V3 report (arXiv:2412.19437): 671B total, of which 14B are the MTP module
    assert n == parameter_counts(spec).total
    assert 655e9 < n < 672e9


@settings(max_examples=25, deadline=None)
@given(specs())
def test_drawn_configs_match_the_inventory(spec: ModelSpec) -> None:
    model = build_model(spec, device="meta")
    assert parameter_count(model) == parameter_counts(spec).total
    assert {n: (s, c) for n, s, c in inventory_of(model)} == _inventory(spec)


@pytest.mark.parametrize("path", TINY, ids=lambda p: p.stem)
def test_tiny_configs_train_and_decode(path) -> None:
    spec = ModelSpec.from_hf_config(json.loads(path.read_text()), name=path.stem)
    model = build_model(spec)
    assert parameter_count(model) == parameter_counts(spec).total
    if spec.tie_word_embeddings:  # re-tied after materialising: one tensor
        assert model.output_weight() is model.model.embed_tokens.weight
    ids = torch.randint(0, spec.vocab_size, (2, 40))
    for impl in ("sdpa", "eager"):
        model.attention = impl
        model.zero_grad()
        loss = model.loss(ids, ids)
        loss.backward()
        assert torch.isfinite(loss)
        # every trainable tensor takes part (80 tokens reach all 4 experts of the MoE configs)
        missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
        assert missing == []
    model.eval()
    with torch.no_grad():
        full = model(ids)
        model.start_decoding()
        steps = [model(ids[:, :33])[:, -1]]
        steps += [model(ids[:, i : i + 1], past=i)[:, -1] for i in range(33, 39)]
        model.stop_decoding()
    assert torch.allclose(torch.stack(steps, 1), full[:, 32:39], atol=1e-5)


def test_sdpa_and_eager_agree() -> None:
    spec = ModelSpec.from_hf_config(
        json.loads((ROOT / "probes/configs/tiny-gemma2.json").read_text())
    )
    model = build_model(spec).eval()
    ids = torch.randint(0, spec.vocab_size, (1, 48))  # longer than the 32-token window
    with torch.no_grad():
        a = model(ids)
        model.attention = "eager"
        b = model(ids)
    assert torch.allclose(a, b, atol=1e-5)
