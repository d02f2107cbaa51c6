"""docs/adaptation/quantization.md: the sentences that read computed figures, checked on
the page's own inputs (a calculator change that turned one false would still build), and
the committed pair file the page quotes (`calculators/statistics/separation.py` computes
it; its own tests are in tests/test_separation.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from calculators.memory.gpus import get_gpu
from calculators.statistics.separation import pair_file
from calculators.web import compute
from tests.page_blocks import page_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "adaptation" / "quantization.md"
SCOREBOARD = "docs/data/adaptation/llama3-8b-scoreboard.json"
PAIR = ROOT / "docs" / "data" / "adaptation" / "llama3-8b-q4_0-vs-q3_K_L-wt10m.json"

GGUF = "bf16,gguf-q8_0,gguf-q6_k,gguf-q5_k_m,gguf-q4_k_m,gguf-q4_0"
SERVED = "bf16,fp8-e4m3,fp8-e4m3-block128,awq-int4,gptq-int4"
WORKLOAD = {"model": "llama-3.1-8b", "context": "8192", "sequences": "16", "kv_formats": "bf16,fp8"}
PRICES = "l40s=1.00\nh100-sxm=2.50\nh200=3.50"


def _blocks() -> dict[str, dict[str, str]]:
    """The page's calculator blocks by id, their inputs as the site's hook reads them, with
    the calculator under `_calculator`."""
    return {b.id: {"_calculator": b.name, **b.inputs} for b in page_blocks(PAGE) if b.id}


def _row(result: dict[str, Any], row_id: str) -> dict[str, Any]:
    return next(r for r in result["rows"] if r["id"] == row_id)


def _cheapest(result: dict[str, Any], fmt: str) -> dict[str, Any]:
    return next(c for c in result["cheapest"] if c["id"] == fmt)


@pytest.fixture(scope="module")
def uc() -> dict[str, Any]:
    return compute(
        "useful-cost",
        {
            **WORKLOAD,
            "gpus": "l40s,h100-sxm,h200",
            "formats": GGUF,
            "vllm_chunk": "true",
            "price": PRICES,
        },
    )


@pytest.fixture(scope="module")
def whole() -> dict[str, Any]:
    return compute(
        "useful-cost",
        {
            **WORKLOAD,
            "gpus": "l40s,h100-sxm,h200",
            "formats": GGUF,
            "prefill_chunk": "",
            "vllm_chunk": "false",
        },
    )


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    return compute(
        "useful-cost",
        {
            **WORKLOAD,
            "gpus": "h100-sxm,h200",
            "formats": SERVED,
            "vllm_chunk": "true",
            "price": "h100-sxm=2.50\nh200=3.50",
        },
    )


def test_the_page_blocks_are_the_inputs_these_tests_compute() -> None:
    b = _blocks()
    for ex, gpus, formats, vllm in (
        ("uc", "l40s,h100-sxm,h200", GGUF, "true"),
        ("whole", "l40s,h100-sxm,h200", GGUF, "false"),
        ("served", "h100-sxm,h200", SERVED, "true"),
    ):
        assert b[ex]["_calculator"] == "useful-cost"
        assert (b[ex]["gpus"], b[ex]["formats"], b[ex].get("vllm_chunk")) == (gpus, formats, vllm)
        assert b[ex].get("prefill_chunk", "") == ""
        assert (b[ex]["context"], b[ex]["sequences"]) == ("8192", "16")
    assert b["uc"]["price"] == PRICES


# "The decision for your case", Fit, and the worked pass's *Fit*.
def test_chunked_prefill_fits_every_combination_on_one_card(uc) -> None:
    assert len(uc["rows"]) == 36
    assert all(r["fits"] and r["cards"] == 1 for r in uc["rows"])
    # worked pass: "The cheapest single card for each weights format" (the table above it
    # has no cards column, so the sentence carries the figure)
    assert all(c["cards"] == 1 for c in uc["cheapest"])
    # "bf16 weights and cache leave room on one L40S for N sequences": N >= 16
    assert _row(uc, "bf16/bf16/l40s")["max_sequences"] >= 16


def test_each_card_prefills_in_vllm_serves_default_chunk(uc, served) -> None:
    # "as vLLM does (by default [[uc:...l40s.prefill_chunk]] tokens per step on the L40S,
    # [[uc:...h100-sxm.prefill_chunk]] on the H100 and H200)": the serve calculator's
    # default max_num_batched_tokens on each card, from vLLM's own rule
    def default_chunk(gpu: str) -> int:
        r = compute("serve", {"model": "llama-3.1-8b", "gpu": gpu, "max_model_len": "8192"})
        return r["max_num_batched_tokens"]

    for r in [*uc["rows"], *served["rows"]]:
        assert r["prefill_chunk"] == default_chunk(r["gpu"])
    assert default_chunk("h100-sxm") == default_chunk("h200") == 8192
    assert default_chunk("l40s") == 2048


def test_whole_batch_prefill_needs_two_l40s_for_bf16_only(uc, whole) -> None:
    # "One-pass prefill ... takes X of activations, not Y: bf16 weights and cache then need
    # [[whole:...cards]] L40S; all else still fits one card"
    pair = _row(whole, "bf16/bf16/l40s")
    assert pair["cards"] == 2
    assert pair["activations_bytes"] > 10 * _row(uc, "bf16/bf16/l40s")["activations_bytes"]
    others = [r for r in whole["rows"] if r["id"] != "bf16/bf16/l40s"]
    assert all(r["cards"] == 1 for r in others)
    # "all else" includes bf16 with a bf16 cache on one H100 or H200
    assert _row(whole, "bf16/bf16/h100-sxm")["cards"] == 1
    assert _row(whole, "bf16/bf16/h200")["cards"] == 1


def test_vllm_accounting_holds_the_workload_on_one_l40s() -> None:
    # "vLLM's startup accounting ... predicts a maximum concurrency of N such sequences"
    r = compute(
        "serve", {"model": "llama-3.1-8b", "gpu": "l40s", "format": "bf16", "max_model_len": "8192"}
    )
    assert r["starts"] and r["max_concurrency"] >= 16
    # "which uses [[svl40s:utilization|pct]] of the card by default": the reason it is
    # below the envelope's room
    assert r["utilization"] < 1


# Quality gate and cost: "q8_0 and q6_K pass. The cheaper is q6_K ...".
def test_gate_and_the_cheapest_gguf_file_that_passes(uc) -> None:
    rows = {r["id"]: r for r in json.loads((ROOT / SCOREBOARD).read_text())["rows"]}
    gate = 0.01
    assert rows["q8_0"]["kld_mean"] <= gate and rows["q6_K"]["kld_mean"] <= gate
    # "q5_K_M misses by a little, q4_K_M and q4_0 by a wide margin"
    assert gate < rows["q5_K_M"]["kld_mean"] < 1.1 * gate
    assert rows["q4_K_M"]["kld_mean"] > 3 * gate and rows["q4_0"]["kld_mean"] > 3 * gate
    q6, q8, bf = (_cheapest(uc, f) for f in ("gguf-q6_k", "gguf-q8_0", "bf16"))
    assert q6["cards"] == 1  # "on a single [[uc:cheapest.gguf-q6_k.gpu]]"
    assert q6["cost_per_million_tokens"] < q8["cost_per_million_tokens"]
    assert q6["cost_per_million_tokens"] < bf["cost_per_million_tokens"]
    # "the 4-bit files would save a little more"
    for f in ("gguf-q4_k_m", "gguf-q4_0"):
        assert _cheapest(uc, f)["cost_per_million_tokens"] < q6["cost_per_million_tokens"]


# "Formats served on rented H100 and H200".
def test_served_formats_fit_one_card_and_sit_near_their_gguf_counterparts(uc, served) -> None:
    assert all(r["cards"] == 1 for r in served["rows"])

    def weights(fmt: str) -> int:
        return compute("weights", {"model": "llama-3.1-8b", "format": fmt})["weight_bytes"]

    def cost(result: dict[str, Any], fmt: str) -> float:
        return _cheapest(result, fmt)["cost_per_million_tokens"]

    # "The 4-bit checkpoints take about q5_K_M's bytes and reach about its bound"
    for fmt in ("awq-int4", "gptq-int4"):
        assert abs(weights(fmt) / weights("gguf-q5_k_m") - 1) < 0.01
        assert abs(cost(served, fmt) / cost(uc, "gguf-q5_k_m") - 1) < 0.02
    # "FP8 sits near q8_0"
    assert abs(weights("fp8-e4m3") / weights("gguf-q8_0") - 1) < 0.1
    assert abs(cost(served, "fp8-e4m3") / cost(uc, "gguf-q8_0") - 1) < 0.1
    # the decision section: 4-bit cheaper than FP8, cheaper than bf16
    assert cost(served, "awq-int4") < cost(served, "fp8-e4m3") < cost(served, "bf16")
    # "[[wfp8:bits_per_parameter]] bits per parameter, not 8": embeddings and head in bf16
    bits = compute("weights", {"model": "llama-3.1-8b", "format": "fp8-e4m3"})
    assert bits["bits_per_parameter"] > 8


def test_fp8_peak_is_twice_bf16_on_the_h100() -> None:
    # note "Why the 4-bit bounds flatter 4-bit kernels": "the 4-bit kernels multiply in 16
    # bits, at half the FP8 tensor cores' peak"
    h100 = get_gpu("h100-sxm")
    assert h100.fp8_dense_tflops == pytest.approx(2 * h100.bf16_dense_tflops, rel=0.01)


def test_vllm_concurrency_rises_as_the_weights_shrink() -> None:
    # "predicts vLLM's maximum concurrency at A in bf16, B in FP8 and C in AWQ int4"
    def concurrency(fmt: str) -> float:
        r = compute(
            "serve",
            {"model": "llama-3.1-8b", "gpu": "h100-sxm", "format": fmt, "max_model_len": "8192"},
        )
        return r["max_concurrency"]

    assert concurrency("bf16") < concurrency("fp8-e4m3") < concurrency("awq-int4")


# "Why KL divergence rather than perplexity alone": q4_0 against q3_K_L (WT 10m).
def test_the_committed_pair_file_is_what_the_helper_computes() -> None:
    import os

    here = os.getcwd()
    try:
        os.chdir(ROOT)  # the file records the scoreboard's path from the repository root
        assert pair_file(SCOREBOARD, "q4_0", "q3_K_L-wt10m") == PAIR.read_text(encoding="utf-8")
    finally:
        os.chdir(here)


def test_the_metrics_rank_the_two_files_in_opposite_order() -> None:
    m = json.loads(PAIR.read_text())["metrics"]
    # by the absolute perplexities' own uncertainties the gap looks like nothing
    assert m["ppl"]["sigmas"] < 1
    # by the paired ΔPPL the calibrated 3-bit file is better, at about 2.5 standard errors
    assert m["delta_ppl"]["better"] == "q3_K_L-wt10m" and 2 < m["delta_ppl"]["sigmas"] < 3
    # the KL divergence puts q4_0 closer to the reference, by less than two standard errors
    assert m["kld_mean"]["better"] == "q4_0" and 1 < m["kld_mean"]["sigmas"] < 2
    # note: "their mean KL divergences differ by N%" (a few percent), "the RMS Δp leans
    # towards q4_0"; body: "the two are about equal"
    assert 0 < m["kld_mean"]["relative_difference"] < 0.05
    assert m["rms_delta_p_pct"]["better"] == "q4_0"
    # mean Δp (the correct token only) sides with perplexity
    assert m["mean_delta_p_pct"]["better"] == "q3_K_L-wt10m"
    assert m["mean_delta_p_pct"]["sigmas"] > m["delta_ppl"]["sigmas"]
    # ΔPPL and PPL differences are the same number: the reference's PPL cancels
    assert m["ppl"]["difference"] == pytest.approx(m["delta_ppl"]["difference"], abs=1e-6)


def test_the_3_bit_file_is_the_smaller_as_published() -> None:
    rows = {r["id"]: r for r in json.loads((ROOT / SCOREBOARD).read_text())["rows"]}
    assert rows["q3_K_L-wt10m"]["size_gib"] < rows["q4_0"]["size_gib"]


# Page shape: the decision for the reader's case within the first 600 words, in the
# "In short" box (tests/test_guide_shape.py holds every guide to the box's place).
def test_the_in_short_box_holds_each_decision_of_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    box = re.search(r'^!!! abstract "In short[^"]*"\n((?:    .*\n|\n)+)', text, re.M)
    assert box
    prose = re.sub(r"^```.*?^```[ \t]*$", "", text[: box.end()], flags=re.M | re.S)
    assert len(prose.split()) <= 600
    for topic in ("**Fit", "**GGUF files", "**On a rented H100 or H200", "**Reading quality"):
        assert topic in box.group(1)
    # the GGUF pick names its cache caveat: the scoreboard's divergences were measured with
    # an FP16 cache, and the cheapest q6_K row uses another (fp8), so that pair is unmeasured
    gguf = " ".join(box.group(1).split("**GGUF files", 1)[1].split("**On a rented", 1)[0].split())
    assert "with an [[uc:cheapest.gguf-q6_k.kv_format]] KV cache" in gguf
    assert "the gate's divergences assumed an FP16 cache" in gguf
    assert "measure q6_K with the [[uc:cheapest.gguf-q6_k.kv_format]] one too" in gguf


def test_the_cheapest_q6_k_row_uses_a_cache_the_gate_did_not_measure(uc) -> None:
    # the box's caveat reads the pick's KV format: not the 16-bit cache of the scoreboard
    assert _cheapest(uc, "gguf-q6_k")["kv_format"] == "fp8"


# "The same launch from the command line": the command's arguments are the shown block's
# (vLLM's default chunk on each card, as the form prefills; not one chunk for every card),
# so it computes what the form shows, row for row.
def test_the_command_line_is_the_forms_launch(capsys) -> None:
    import shlex

    from calculators.cli import build_parser, main
    from calculators.web.forms import args_for, calculator, clean

    (shown,) = [b for b in page_blocks(PAGE) if b.name == "useful-cost" and b.id is None]
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("The same launch from the command line")
    found = re.search(r"```sh\n(python -m calculators useful-cost .*?)\n```", text[start:], re.S)
    assert found
    argv = shlex.split(found.group(1).replace("\\\n", " "))[3:]
    assert argv[-1] == "--json" and "--prefill-chunk" not in argv and "--vllm-chunk" in argv
    calc = calculator("useful-cost")
    parsed = vars(build_parser().parse_args(argv))
    assert parsed.pop("command") == "useful-cost" and parsed.pop("json") is True
    parsed.pop("run")
    expected = vars(args_for(calc, clean(calc, shown.inputs)))
    expected.pop("json")
    assert parsed == expected
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == compute("useful-cost", shown.inputs)
