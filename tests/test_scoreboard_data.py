"""docs/data/adaptation/llama3-8b-scoreboard.json: llama.cpp's LLaMA 3 8b scoreboard as data.

Pinned values are cells of the "LLaMA 3 8b Scoreboard" and "LLaMA 2 vs. LLaMA 3
Quantization comparison" tables of llama.cpp's tools/perplexity/README.md, at the commit
the file records (`revision`), where the guide on comparing quantizations reads them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from calculators.memory.formats import FORMATS
from calculators.model.presets import load_preset

DATA = Path(__file__).resolve().parents[1] / "docs" / "data" / "adaptation"
BOARD = json.loads((DATA / "llama3-8b-scoreboard.json").read_text(encoding="utf-8"))
ROWS = {row["id"]: row for row in BOARD["rows"]}

# The scoreboard's quant types that the calculators also lay out, as the guide maps them.
GGUF_IDS = {
    "q8_0": "gguf-q8_0",
    "q6_K": "gguf-q6_k",
    "q5_K_M": "gguf-q5_k_m",
    "q4_K_M": "gguf-q4_k_m",
    "q4_0": "gguf-q4_0",
}
NUMBER_FIELDS = ("size_gib", "ppl", "delta_ppl", "kld_mean", "mean_delta_p_pct", "rms_delta_p_pct")


def test_the_source_is_recorded_with_its_revision() -> None:
    assert re.fullmatch(r"[0-9a-f]{40}", BOARD["revision"])
    assert BOARD["revision"] in BOARD["source"]
    assert BOARD["source"].endswith("/tools/perplexity/README.md")
    assert BOARD["read_from"]["commit"] == BOARD["revision"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", BOARD["retrieved"])
    notes = BOARD["table_notes"]
    assert "Wikitext-2" in notes["dataset"]
    assert "f364eb6f" in notes["build_revision"]
    for key in ("model", "context", "backend", "hardware", "reference_logits"):
        assert notes[key]


def test_every_row_has_the_published_columns() -> None:
    assert len(BOARD["rows"]) == len(ROWS), "row ids must be unique"
    assert len(ROWS) == 46  # the table's rows, importance-matrix variants included
    for row in BOARD["rows"]:
        assert "." not in row["id"], "a dotted id cannot be referenced from a page"
        for field in NUMBER_FIELDS:
            assert isinstance(row[field], float) and math.isfinite(row[field]), (row["id"], field)
            if field != "size_gib":  # the size is published without an uncertainty
                assert row[f"{field}_uncertainty"] >= 0, (row["id"], field)
        assert row["kld_mean"] >= 0 and row["ppl"] > 0 and row["size_gib"] > 0
        assert row["imatrix"] is None or row["imatrix"].startswith("WT ")


def test_rows_are_in_the_published_order_of_kl_divergence() -> None:
    # the README sorts its rows by mean KL divergence relative to FP16
    kld = [row["kld_mean"] for row in BOARD["rows"]]
    assert kld == sorted(kld)


@pytest.mark.parametrize(
    ("row", "size_gib", "ppl", "kld_mean", "rms_delta_p_pct"),
    [
        # README, "LLaMA 3 8b Scoreboard", rows f16, q8_0, q4_K_M (None), q4_0, iq1_S (WT 10k)
        ("f16", 14.97, 6.233160, 0.000551, 0.787),
        ("q8_0", 7.96, 6.234284, 0.001355, 1.198),
        ("q4_K_M", 4.58, 6.407115, 0.031273, 5.519),
        ("q4_K_M-wt10m", 4.58, 6.382937, 0.028152, 5.251),
        ("q4_0", 4.34, 6.700147, 0.071940, 8.434),
        ("iq1_S-wt10k", 1.88, 63.221324, 2.293527, 46.562),
    ],
)
def test_pinned_cells_of_the_scoreboard(
    row: str, size_gib: float, ppl: float, kld_mean: float, rms_delta_p_pct: float
) -> None:
    r = ROWS[row]
    assert (r["size_gib"], r["ppl"], r["kld_mean"], r["rms_delta_p_pct"]) == (
        size_gib,
        ppl,
        kld_mean,
        rms_delta_p_pct,
    )


@pytest.mark.parametrize(
    ("row", "same_top_p_pct", "ppl_ratio", "p1", "p99"),
    [
        # README, "LLaMA 2 vs. LLaMA 3 Quantization comparison", the L3 8b columns
        ("q8_0", 97.674, 1.000425, -3.698, 3.544),
        ("q6_K", 96.031, 1.003490, -6.767, 6.407),
        ("q4_K_M", 91.901, 1.028160, -19.567, 12.084),
        ("q2_K", 71.138, 1.564849, -87.173, 25.875),
    ],
)
def test_pinned_cells_of_the_comparison_table(
    row: str, same_top_p_pct: float, ppl_ratio: float, p1: float, p99: float
) -> None:
    r = ROWS[row]
    assert r["same_top_p_pct"] == same_top_p_pct
    assert r["ppl_ratio"] == ppl_ratio
    assert r["delta_p_percentiles_pct"]["p1"] == p1
    assert r["delta_p_percentiles_pct"]["p99"] == p99


def test_only_the_comparison_rows_carry_top_token_agreement() -> None:
    assert {k for k, r in ROWS.items() if "same_top_p_pct" in r} == {
        "q8_0",
        "q6_K",
        "q4_K_M",
        "q2_K",
    }


def test_the_ppl_ratio_agrees_with_the_ppl_columns() -> None:
    # PPL(Q)/PPL(FP16) from the comparison table against the scoreboard's own PPL and
    # delta-PPL: the FP16 perplexity they imply is the same within the published digits
    for rid in ("q8_0", "q6_K", "q4_K_M", "q2_K"):
        r = ROWS[rid]
        fp16 = r["ppl"] - r["delta_ppl"]
        assert r["ppl"] / fp16 == pytest.approx(r["ppl_ratio"], abs=2e-6)


def test_quant_types_map_to_the_calculators_gguf_formats() -> None:
    assert BOARD["calculator_formats"] == GGUF_IDS
    for quant, fid in GGUF_IDS.items():
        assert fid in FORMATS and FORMATS[fid].family == "gguf"
        assert FORMATS[fid].gguf_mix == quant.upper()
        assert ROWS[quant]["calculator_format"] == fid
    mapped = {r["id"] for r in BOARD["rows"] if r["calculator_format"]}
    assert mapped == set(GGUF_IDS), "only rows without an importance matrix map to a format"


def test_llama_3_8b_has_the_tensor_shapes_of_the_llama_3_1_8b_preset() -> None:
    # The figure computes Llama 3 8B's weights with the llama-3.1-8b preset: every key that
    # sets a tensor shape must agree (Meta-Llama-3-8B's config.json, as the file records it)
    llama3 = BOARD["reference_model_config"]
    preset = load_preset("llama-3.1-8b")
    for key in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "vocab_size",
        "tie_word_embeddings",
    ):
        assert llama3[key] == preset[key], key


def test_published_sizes_agree_with_the_calculators_to_the_last_digit() -> None:
    # The guide's table of calculated against published sizes says the two agree to within
    # about one unit of the published last digit (0.01 GiB) and that, where they differ by
    # more than the rounding, the published size is the larger. f16 and the calculators'
    # bf16 both store two bytes per weight.
    from calculators.memory.weights import weight_bytes
    from calculators.model.spec import ModelSpec
    from calculators.units import GIB

    spec = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"), name="llama-3.1-8b")
    pairs = {**GGUF_IDS, "f16": "bf16"}
    for quant, fid in pairs.items():
        calculated = weight_bytes(spec, fid).main_bytes / GIB
        published = ROWS[quant]["size_gib"]
        assert -0.005 <= published - calculated <= 0.015, (quant, calculated, published)
