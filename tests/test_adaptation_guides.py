"""The adaptation guides' sentences that read their computed figures (docs/adaptation/
fine-tuning.md and quantization.md): if a calculator change or a regenerated example turned
one of them false, the page would still build, so they are checked here on the same inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from calculators.web import compute
from tests.throughput_inputs import LLAMA_8B_ONE_H100, LORA_16_ALL_LINEAR_INPUTS

BASE = {
    "model": "llama-3.1-8b",
    "micro_batch": "4",
    "seq_len": "2048",
    "precision": "bf16-fp32-master",
    "checkpointing": "full",
}
LORA = LORA_16_ALL_LINEAR_INPUTS  # the training blocks' LoRA and the `tp` block's


def step(gpu: str, **extra: str) -> dict[str, Any]:
    return compute("training", {**BASE, "gpu": gpu, **extra})


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, Any]]:
    return {
        "full1": step("h100-sxm"),
        "full8": step("h100-sxm", zero="3", gpus="8"),
        "attn": step("h100-sxm", lora_rank="16", lora_targets="all-attention"),
        "lora": step("h100-sxm", **LORA),
        "lora24": step("rtx-4090", **LORA),
        "qlora24": step("rtx-4090", **LORA, base_format="nf4-dq"),
        "nock": step("h100-sxm", **{**LORA, "checkpointing": "none"}),
    }


def test_full_fine_tuning_fits_no_single_card_at_any_micro_batch(table) -> None:
    assert not table["full1"]["fits"] and table["full1"]["max_micro_batch"] == 0
    assert table["full8"]["fits"]  # "its states must be sharded"


def test_lora_fits_a_24_gb_card_only_at_a_smaller_micro_batch_and_qlora_at_4(table) -> None:
    assert table["lora"]["fits"] and table["lora"]["max_micro_batch"] > 4
    assert not table["lora24"]["fits"] and 1 <= table["lora24"]["max_micro_batch"] < 4
    assert table["qlora24"]["fits"]


def test_all_linear_trains_several_times_more_but_memory_changes_little(table) -> None:
    lora, attn = table["lora"], table["attn"]
    assert lora["trainable_parameters"] >= 2 * attn["trainable_parameters"]
    assert abs(lora["total_bytes"] - attn["total_bytes"]) < 0.05 * lora["total_bytes"]


def test_lora_count_is_the_formula_summed_over_llama_layers(table) -> None:
    # Llama 3.1 8B config.json (meta-llama/Llama-3.1-8B): hidden 4096, intermediate 14336,
    # 32 layers, 8 KV heads of 128: q,o 4096+4096; k,v 4096+1024; gate,up,down 4096+14336.
    per_layer = 2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336)
    assert table["lora"]["trainable_parameters"] == 16 * 32 * per_layer


def test_checkpointing_off_costs_memory(table) -> None:
    # "Turning it off raises the example's LoRA step from [[lora]] to [[nock]]"
    assert table["nock"]["total_bytes"] > table["lora"]["total_bytes"]


def test_the_decision_in_short_reads_its_table(table) -> None:
    # "The decision in short": full fine-tuning fits neither card alone; ZeRO-3 over 8 fits
    # the H100s; LoRA fits the H100 and not the RTX 4090 "at 4"; QLoRA fits both.
    full24 = step("rtx-4090")
    qlora = step("h100-sxm", **LORA, base_format="nf4-dq")
    assert not table["full1"]["fits"] and not full24["fits"]
    assert table["full8"]["fits"]
    assert table["lora"]["fits"] and not table["lora24"]["fits"]
    assert qlora["fits"] and table["qlora24"]["fits"]


# Section 4, QLoRA: "the NF4 base takes [[w4]] instead of [[w16]]: a little over a third,
# not a quarter, because [[w4:bytes_by_format.bf16]] of it stay in 16 bits, nearly all of
# it the input embeddings and the output layer" (lm_head; transformers' bitsandbytes
# loading leaves both unquantized: src/transformers/integrations/bitsandbytes.py, in the
# note "Why the vocabulary matrices of a 4-bit base stay in 16 bits").
def test_qlora_base_is_a_little_over_a_third_of_its_16_bit_weights() -> None:
    w16 = compute("weights", {"model": "llama-3.1-8b", "format": "bf16"})
    w4 = compute("weights", {"model": "llama-3.1-8b", "format": "nf4-dq"})
    ratio = w4["weight_bytes"] / w16["weight_bytes"]
    assert 1 / 3 < ratio < 0.4  # not "a quarter"
    kept = w4["bytes_by_format"]["bf16"]
    vocab = w4["bytes_by_category"]["embedding"] + w4["bytes_by_category"]["lm_head"]
    # Llama 3.1 8B config.json: vocabulary 128,256 x hidden 4096, untied, 2 bytes each
    assert vocab == 2 * 128_256 * 4096 * 2
    assert 0.99 * kept < vocab <= kept
    # the quantized matrices alone do shrink to about a quarter (NF4 with double-quantized
    # scales, a little over 4 bits a weight): the 16-bit parts are what lift the whole
    quantized = (w4["weight_bytes"] - kept) / (w16["weight_bytes"] - kept)
    assert 0.25 < quantized < 0.27


# Section 3, "Audit the split for leakage": the protocol's checklist
# (docs/data/adaptation/fine-tuning-protocol.json, step `leakage`) and the guide's paragraph
# name the same checks, time order included.
def test_the_leakage_paragraph_names_every_check_of_the_protocols_leakage_step() -> None:
    import json

    root = Path(__file__).resolve().parents[1]
    protocol = json.loads(
        (root / "docs" / "data" / "adaptation" / "fine-tuning-protocol.json").read_text()
    )
    (step,) = [i for p in protocol["phases"] for i in p["items"] if i["id"] == "leakage"]
    assert step["section"] == "3-prepare-the-data-and-its-split"
    checks = step["text"].split(": ", 1)[1].rstrip(".").split(", ")
    assert "time order" in checks and len(checks) == 5
    text = (root / "docs" / "adaptation" / "fine-tuning.md").read_text(encoding="utf-8")
    assert text.index("## 3. Prepare the data") < text.index("**Audit the split for leakage**")
    start = text.index("**Audit the split for leakage**")
    paragraph = " ".join(text[start : text.index("\n\n", start)].split())
    for check in checks:
        assert check in paragraph, f"the guide's leakage paragraph omits {check!r}"
    # the time check: what it flags, the audit's field, and the guide that explains it
    assert "evaluation items older than the newest training item" in paragraph
    assert "`time_field`" in paragraph
    assert "(../evaluation/evaluation-set.md#3-audit-the-two-files)" in paragraph


# Section 10 and the note on 4N: the LoRA run's hours come from a frozen base's FLOPs.
THROUGHPUT = LLAMA_8B_ONE_H100


def test_the_pages_throughput_blocks_are_the_inputs_computed_here() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs/adaptation/fine-tuning.md").read_text()
    inputs = "".join(f"{k}: {v}\n" for k, v in THROUGHPUT.items())
    lora = "".join(f"{k}: {v}\n" for k, v in LORA.items())
    assert f"```calculator throughput\nid: tpfull\nshow: no\n{inputs}```" in text
    assert f"```calculator throughput\nid: tp\nshow: no\n{inputs}{lora}" in text


def test_the_plan_counts_a_lora_step_at_about_4n() -> None:
    from calculators.model.presets import load_preset
    from calculators.model.spec import ModelSpec
    from calculators.training.throughput import matmul_parameters

    tp = compute("throughput", {**THROUGHPUT, **LORA})
    full = compute("throughput", THROUGHPUT)
    n = matmul_parameters(ModelSpec.from_hf_config(load_preset("llama-3.1-8b")))
    per_token, full_per_token = (
        tp["training"]["flops_per_token"],
        full["training"]["flops_per_token"],
    )
    # "about 4N": the adapter and attention terms on top of 4N are small here
    assert 4 * n < per_token < 4.5 * n
    assert 6 * n < full_per_token < 6.5 * n
    assert tp["training"]["gpu_hours"] < full["training"]["gpu_hours"]
    assert tp["training"]["gpu_hours"] / full["training"]["gpu_hours"] == pytest.approx(
        per_token / full_per_token
    )


def _pilot_sd() -> str:
    """The seed spread the plan borrows (the `pilot` block: the seed-variability guide's
    ten paired seeds), as the page's `|raw|` reference writes it."""
    import json

    digits = Path(__file__).resolve().parents[1] / "docs" / "data" / "evaluation" / "digits"
    seeds = json.loads((digits / "seeds.json").read_text())
    pilot = compute(
        "seeds",
        {k: ",".join(repr(x) if isinstance(x, float) else str(x) for x in seeds[k]) for k in "ab"},
    )
    return f"{pilot['paired']['sd_difference']:g}"


def test_the_budget_command_line_gives_the_blocks_lora_hours(capsys) -> None:
    # the page's `python -m calculators budget ... --lora-rank 16 --lora-targets all-linear`
    # derives the experiment phase from tokens; the page's block takes the hours of `tp`.
    # The experiments are a comparison phase: three arms and a control on the seeds that
    # detect 0.02 at the borrowed spread.
    import json

    from calculators.cli import main

    tp = compute("throughput", {**THROUGHPUT, **LORA})
    argv = [
        "budget",
        *("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--mfu", "0.3", "--seq-len", "2048"),
        *("--lora-rank", "16", "--lora-targets", "all-linear"),
        *("--sd-difference", _pilot_sd(), "--detect", "0.02"),
        *("--phase", "experiments:arms=3:tokens=100000000", "--margin", "0"),
        *("--gpus", "1", "--price", "3.99", "--json"),
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    phase, n = out["phases"][0], out["seed_count"]["seeds"]
    assert (phase["arms"], phase["runs"], phase["control_runs"]) == (3, 3 * n, n)
    per_run = phase["gpu_hours"] / (phase["runs"] + phase["control_runs"])
    assert per_run == pytest.approx(tp["training"]["gpu_hours"])


# Section 10: "three LoRA variants ... and a control ... on the same [[plan:seed_count.seeds]]
# seeds (`arms=3`): the fewest whose paired t test detects a gain of [[detect]] with
# [[power]] power at the campaign budget guide's seed spread": every variant is replicated
# against a control, with the seed count the campaign budget guide derives for that gain;
# the form and the command line below it are the same plan.
def test_the_plan_replicates_each_variant_and_a_control_on_the_seeds_of_a_stated_gain(
    capsys,
) -> None:
    import json
    import re
    import shlex

    from calculators.cli import main
    from calculators.statistics.seeds import seeds_needed
    from tests.page_blocks import page_blocks, results_by_id

    root = Path(__file__).resolve().parents[1]
    page = root / "docs" / "adaptation" / "fine-tuning.md"
    blocks = page_blocks(page)
    hidden = next(b for b in blocks if b.id == "plan")
    plan = hidden.result
    assert plan is not None
    s = plan["seed_count"]
    assert s["detect"] == 0.02 and s["power"] == 0.8
    assert s["seeds"] == seeds_needed(0.02, s["sd_difference"]) >= 2
    assert s["minimum_detectable_effect"] <= s["detect"]
    # "the campaign budget guide's seed spread": the same spread, gain and seeds as its plan
    assert s == results_by_id(root / "docs" / "budget" / "campaign-budget.md")["b7"]["seed_count"]
    experiments = plan["phases"][2]  # the page reads phases.2
    assert experiments["name"] == "experiments"
    n = s["seeds"]
    assert (experiments["arms"], experiments["runs"], experiments["control_runs"]) == (3, 3 * n, n)
    assert plan["control_runs"] == n
    # the form shows the plan the sentences read
    (shown,) = [b for b in blocks if b.name == "budget" and b.id is None]
    assert shown.inputs == hidden.inputs
    # the command line, with S the spread: the same phases, seeds and control runs
    text = page.read_text(encoding="utf-8")
    found = re.search(r"```sh\n(python -m calculators budget .*?)\n```", text, re.S)
    assert found
    argv = shlex.split(found.group(1).replace("\\\n", " "))[3:]
    assert argv.count("S") == 1
    argv = [hidden.inputs["sd_difference"] if a == "S" else a for a in argv]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seed_count"] == s

    def shape(r):
        return [(p["name"], p["runs"], p["control_runs"], p["reruns"]) for p in r["phases"]]

    assert shape(out) == shape(plan)
    assert out["gpu_hours"] == pytest.approx(plan["gpu_hours"], rel=0.01)


# Section 8, "Reading it", "Why" and the note "LoRA against full fine-tuning across the
# sweep, and what Biderman et al. found": the sentences that read the committed contribution
# files (docs/data/adaptation/contribution/, regenerated byte for byte by
# tests/test_adaptation_contribution.py).
CONTRIBUTION = "data/adaptation/contribution"  # file inputs are paths under docs/


def _compare(file: str, a: str, b: str) -> dict[str, Any]:
    return compute("compare", {"predictions": f"{CONTRIBUTION}/{file}", "a_field": a, "b_field": b})


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return json.loads(
        (root / "docs" / "data" / "adaptation" / "contribution" / "summary.json").read_text()
    )


def test_both_adaptations_fix_far_more_than_they_break_on_the_target() -> None:
    for b in ("lora", "full"):
        p = _compare("target.csv", "base", b)["paired"]
        assert p["positive_flips"] > 5 * p["negative_flips"]
        assert p["mcnemar"]["p_value_exact"] < 1e-6


def test_lora_and_full_do_not_differ_on_the_target() -> None:
    p = _compare("target.csv", "lora", "full")["paired"]
    assert abs(p["positive_flips"] - p["negative_flips"]) <= 0.1 * p["mcnemar"]["discordant"]
    assert p["mcnemar"]["p_value_exact"] > 0.5


def test_both_adaptations_break_the_panel_with_almost_nothing_fixed() -> None:
    lora = _compare("panel.csv", "base", "lora")["paired"]
    full = _compare("panel.csv", "base", "full")["paired"]
    for p in (lora, full):
        assert p["positive_flips"] <= 5 and p["negative_flips"] > 0.01 * p["n"] * 10
    assert full["negative_flips"] > lora["negative_flips"]


def test_sweep_lora_learns_less_at_every_rate_and_the_quoted_rows_are_the_rate_1e_3(
    summary,
) -> None:
    runs = {(r["variant"], r["learning_rate"]): r for r in summary["sweep"]}
    rates = summary["training"]["adaptation"]["learning_rates"]
    for lr in rates:
        assert runs["lora", lr]["target_test"] < runs["full", lr]["target_test"]
    # the guide quotes sweep.8 (full) and sweep.2 (LoRA) as the runs at the same rate 1e-3
    assert summary["sweep"][8]["variant"] == "full" and summary["sweep"][2]["variant"] == "lora"
    assert summary["sweep"][8]["learning_rate"] == summary["sweep"][2]["learning_rate"] == 1e-3
    # "full fine-tuning at that rate keeps far more of the panel than the chosen runs"
    chosen = [r for r in summary["sweep"] if r["chosen"]]
    assert all(summary["sweep"][8]["panel"] > r["panel"] + 0.2 for r in chosen)


# Section 8, "Why" and the sweep note: the sentences that read the sweep.
def test_sweep_the_choice_picked_rates_near_the_top_of_the_grid(summary) -> None:
    rates = sorted(summary["training"]["adaptation"]["learning_rates"])
    chosen = [r for r in summary["sweep"] if r["chosen"]]
    assert {r["variant"] for r in chosen} == {"lora", "full"}
    assert all(r["learning_rate"] >= rates[-2] for r in chosen)
    # the chosen full run is sweep.11: "gained little more on the target" than sweep.8
    # and kept far less of the panel
    full_chosen, full_1e3 = summary["sweep"][11], summary["sweep"][8]
    assert full_chosen["variant"] == "full" and full_chosen["chosen"]
    assert 0 < full_chosen["target_test"] - full_1e3["target_test"] < 0.03
    assert full_chosen["panel"] < full_1e3["panel"] - 0.5


def test_sweep_lora_does_not_forget_less_at_every_rate(summary) -> None:
    runs = {(r["variant"], r["learning_rate"]): r for r in summary["sweep"]}
    rates = summary["training"]["adaptation"]["learning_rates"]
    keeps_more = sum(runs["lora", lr]["panel"] > runs["full", lr]["panel"] for lr in rates)
    # "it kept more of the panel at some rates and less at others"
    assert 0 < keeps_more < len(rates)


def test_sweep_full_learns_as_much_for_less_forgetting_over_most_of_the_range(summary) -> None:
    sweep = summary["sweep"]
    lora = [r for r in sweep if r["variant"] == "lora"]
    full = [r for r in sweep if r["variant"] == "full"]

    def dominated(p, others):
        return any(
            q["target_test"] >= p["target_test"]
            and q["panel"] >= p["panel"]
            and (q["target_test"], q["panel"]) != (p["target_test"], p["panel"])
            for q in others
        )

    # "over most of the range": most LoRA runs are beaten on both sets by a full run,
    # and fewer full runs by a LoRA run
    lora_beaten = sum(dominated(p, full) for p in lora)
    full_beaten = sum(dominated(p, lora) for p in full)
    assert lora_beaten > len(lora) / 2 and full_beaten < lora_beaten
    # "the only LoRA run to reach [[sweep.8.target_test]] on the target, at sweep.4's rate,
    # kept [[sweep.4.panel]]"
    reach = [r for r in lora if r["target_test"] >= sweep[8]["target_test"]]
    assert reach == [sweep[4]] and sweep[4]["panel"] < sweep[8]["panel"] - 0.2
    # "LoRA at sweep.2's rate kept the most of the panel of any run ... but reached only"
    assert sweep[2]["variant"] == "lora"
    assert sweep[2]["panel"] == max(r["panel"] for r in sweep)
    assert sweep[2]["target_test"] < sweep[8]["target_test"] - 0.1


def test_quantization_guide_every_useful_cost_row_fits_one_card() -> None:
    # docs/adaptation/quantization.md, "A worked pass": "Every combination fits on a single
    # card of each kind", read from the page's `uc` block (same inputs, prices aside).
    r = compute(
        "useful-cost",
        {
            "model": "llama-3.1-8b",
            "context": "8192",
            "sequences": "16",
            "gpus": "l40s,h100-sxm,h200",
            "formats": "bf16,gguf-q8_0,gguf-q6_k,gguf-q5_k_m,gguf-q4_k_m,gguf-q4_0",
            "kv_formats": "bf16,fp8",
        },
    )
    assert len(r["rows"]) == 36
    assert all(row["fits"] and row["cards"] == 1 for row in r["rows"])
    assert r["rows"][0]["max_sequences"] >= 16
