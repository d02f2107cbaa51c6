"""Shipped presets: every config loads and reads; the index names where each came from."""

from __future__ import annotations

import json
import re
from importlib.resources import files

import pytest

from calculators.model.presets import Preset, get_preset, load_preset, preset_ids, presets
from calculators.model.spec import ModelSpec

INDEX = json.loads(files("calculators.model.presets").joinpath("index.json").read_text("utf-8"))
SHIPPED = sorted(
    p.name.removesuffix(".json")
    for p in files("calculators.model.presets").iterdir()
    if p.name.endswith(".json") and p.name != "index.json"
)


def test_ids_sorted_and_match_shipped_files():
    ids = preset_ids()
    assert list(ids) == sorted(ids)
    assert list(ids) == SHIPPED
    assert set(ids) == set(INDEX)
    assert len(ids) == 22


@pytest.mark.parametrize("preset_id", preset_ids())
def test_preset_loads_and_reads(preset_id):
    config = load_preset(preset_id)
    assert isinstance(config, dict)
    assert isinstance(config["model_type"], str)
    spec = ModelSpec.from_hf_config(config, name=preset_id)
    assert spec.name == preset_id
    assert spec.num_layers == len(spec.layers) > 0


@pytest.mark.parametrize("preset_id", preset_ids())
def test_index_entry(preset_id):
    entry = INDEX[preset_id]
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry["hf_repo"])
    assert entry["config_source"] == (
        f"https://huggingface.co/{entry['hf_repo']}/blob/main/config.json"
    )
    preset = get_preset(preset_id)
    assert preset == Preset(
        id=preset_id,
        hf_repo=entry["hf_repo"],
        config_source=entry["config_source"],
        published_parameters=entry.get("published_parameters"),
        published_parameters_source=entry.get("published_parameters_source") or "",
    )
    assert isinstance(preset.published_parameters, int) and preset.published_parameters > 0
    assert preset.published_parameters_source


def test_presets_by_id():
    table = presets()
    assert all(pid == preset.id for pid, preset in table.items())
    assert get_preset("qwen3-8b").hf_repo == "Qwen/Qwen3-8B"
    assert get_preset("gpt2").hf_repo == "openai-community/gpt2"


@pytest.mark.parametrize("preset_id", ["llama-4", "", "GPT2", "gpt2.json", "../index"])
def test_unknown_id_names_model_and_value(preset_id):
    pattern = rf"^model must be one of .*; got {re.escape(repr(preset_id))}$"
    with pytest.raises(ValueError, match=pattern):
        get_preset(preset_id)
    with pytest.raises(ValueError, match=pattern):
        load_preset(preset_id)


def test_unknown_id_lists_known_ids():
    with pytest.raises(ValueError) as info:
        get_preset("llama-4")
    assert ", ".join(preset_ids()) in str(info.value)


def test_index_is_not_a_preset():
    with pytest.raises(ValueError, match=r"got 'index'"):
        load_preset("index")


def test_load_preset_returns_fresh_dict():
    first = load_preset("llama-3.1-8b")
    assert first["hidden_size"] == 4096
    first["hidden_size"] = 1
    first["rope_scaling"]["factor"] = 0.0
    del first["vocab_size"]
    second = load_preset("llama-3.1-8b")
    assert second is not first
    assert second["hidden_size"] == 4096
    assert second["vocab_size"] == 128_256
    assert second["rope_scaling"]["factor"] == 8.0


def test_preset_matches_shipped_file():
    for preset_id in preset_ids():
        text = files("calculators.model.presets").joinpath(f"{preset_id}.json").read_text("utf-8")
        assert load_preset(preset_id) == json.loads(text)
