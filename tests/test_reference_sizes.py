"""Computed weight sizes against published checkpoint sizes (requirement: within 2%).

The published sizes and their sources are in calculators/model/reference_sizes.py.
"""

from __future__ import annotations

import pytest

from calculators.memory.weights import weight_bytes
from calculators.model.presets import load_preset
from calculators.model.reference_sizes import PUBLISHED_SIZES, PublishedSize
from calculators.model.spec import ModelSpec

TOLERANCE = 0.02


def test_published_sizes_are_documented():
    for p in PUBLISHED_SIZES:
        assert p.source.startswith("https://")
        assert p.bytes > 0 and p.what


@pytest.mark.parametrize("pub", PUBLISHED_SIZES, ids=lambda p: f"{p.preset}-{p.format_id}")
def test_within_two_percent_of_published(pub: PublishedSize):
    spec = ModelSpec.from_hf_config(load_preset(pub.preset))
    r = weight_bytes(spec, pub.format_id)
    err = (r.total_bytes - pub.bytes) / pub.bytes
    assert abs(err) <= TOLERANCE, f"{pub.what}: {r.total_bytes} vs {pub.bytes} ({err:+.2%})"


def test_gguf_is_below_the_file_by_about_its_metadata():
    # mistral-7b-v0.1 files: tensor data + 734,880 bytes (header, 32k vocabulary, alignment)
    spec = ModelSpec.from_hf_config(load_preset("mistral-7b-v0.1"))
    for fid, size in (
        ("gguf-q4_k_m", 4_368_438_944),
        ("gguf-q4_0", 4_108_916_384),
        ("gguf-q8_0", 7_695_857_312),
        ("gguf-q6_k", 5_942_064_800),
        ("gguf-q5_k_m", 5_131_409_056),
    ):
        assert size - weight_bytes(spec, fid).total_bytes == 734_880


def test_deepseek_v3_mtp_reported_apart():
    spec = ModelSpec.from_hf_config(load_preset("deepseek-v3"))
    r = weight_bytes(spec, "fp8-e4m3-block128")
    assert r.mtp_bytes > 0 and r.main_bytes + r.mtp_bytes == r.total_bytes
    assert r.by_format["bf16"] > 0  # embeddings, head, routers, eh_proj, norms
