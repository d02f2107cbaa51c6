"""The cost-at-equal-quality guide (docs/budget/cost-at-equal-quality.md): its decision
comes first, and every sentence that reads computed MLPerf data or states an MLPerf rule
holds on the committed data and the committed excerpt of the rules.

The rules are MLCommons' `training_rules.adoc` at 9f32f97db41fd1fbbe27b89dfebfda4a8c7f343b
(mlcommons/training_policies), excerpted verbatim in
benchmarks/mlperf/rules/v4.0/training_rules.adoc.excerpt (lines listed in
benchmarks/mlperf/SOURCES.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from calculators.planning.target_cost import scaling_pairs, shown_decimals, submissions
from calculators.web import compute
from tests.page_blocks import hook, page_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "budget" / "cost-at-equal-quality.md"
RULES = ROOT / "benchmarks" / "mlperf" / "rules" / "v4.0" / "training_rules.adoc.excerpt"
RAW = ROOT / "docs" / "data" / "mlperf" / "raw_table.json"
BLOCK = hook()._BLOCK
_hook = hook


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _block(block_id: str) -> tuple[str, dict[str, str]]:
    for block in page_blocks(PAGE):
        if block.id == block_id:
            return block.name, block.inputs
    raise AssertionError(f"no block {block_id} on the page")


def test_the_decision_comes_within_the_first_600_words() -> None:
    text = _page()
    first = text.index("\n## ")
    assert text[first:].startswith("\n## The decision in short")
    # Everything up to the end of the decision's list, code blocks left out.
    head = BLOCK.sub(" ", text[: text.index('??? note "The rules')])
    assert len(head.split()) < 600
    for claim in ("like with like", "what the clock leaves out", "how many runs make a score"):
        assert claim in head.replace("**", "").replace("\n  ", " ").lower()
    assert "[[mlperf scaling]]" in head and "[[mlperf untimed]]" in head


def test_larger_system_finishes_sooner_but_costs_more_gpu_hours() -> None:
    # "a larger system finishes sooner but can cost more to reach the same target"
    (pair,) = scaling_pairs()
    assert pair.speedup > 1
    assert pair.gpu_hours_ratio - 2 * pair.gpu_hours_ratio_standard_error > 1
    sentence = _hook()._mlperf(ROOT / "docs", "scaling")
    speedup = f"{pair.speedup:,.{shown_decimals(pair.speedup_standard_error)}f}"
    ratio = f"{pair.gpu_hours_ratio:,.{shown_decimals(pair.gpu_hours_ratio_standard_error)}f}"
    assert f"reached the target {speedup} times sooner" in sentence
    assert f"took {ratio} times the GPU-hours" in sentence
    assert "64 accelerators instead of 8 (8 times as many)" in sentence


def test_the_cheapest_at_the_example_prices_is_not_told_apart_from_others() -> None:
    # "yet [[eq:tied_with_cheapest|len]] other system(s) of the table lie within two
    # standard errors of it": at least one, or the sentence would be false
    name, inputs = _block("eq")
    assert name == "target-cost"
    r = compute(name, inputs)
    assert r["benchmark"] == "llama2_70b_lora"
    assert r["cheapest"] and len(r["tied_with_cheapest"]) >= 1
    # the visible calculator on the page prices the same example
    assert "```calculator target-cost\nprice: H100=3.99" in _page()


def test_the_untimed_sentence_reads_the_logged_initialisation() -> None:
    text = _hook()._mlperf(ROOT / "docs", "untimed")
    for bench in ("bert", "llama2_70b_lora"):
        known = [
            s for s in submissions() if s.benchmark == bench and s.mean_init_minutes is not None
        ]
        hi = max(known, key=lambda s: s.mean_init_minutes / s.score_minutes)
        share = f"{hi.mean_init_minutes / hi.score_minutes:.0%} of its timed run"
        assert f"to {hi.mean_init_minutes:,.2f} minutes ({hi.id}" in text and share in text
    # The page's point: on the 64-GPU BERT system the untimed part is most of a timed run.
    (n8,) = [s for s in submissions() if s.id == "NVIDIA/eos_n8_ngc23.04_pytorch"]
    assert n8.mean_init_minutes / n8.score_minutes > 0.5


def test_the_rules_the_page_states_are_in_the_excerpt() -> None:
    rules = RULES.read_text(encoding="utf-8")
    text = _page()
    # "up to 30 minutes of model initialisation in the closed division"
    assert "maximum model initialization time of 30 minutes for _Closed_ division" in rules
    assert "up to 30 minutes of model initialisation in the" in text
    # "evaluation is on the clock unless a benchmark says otherwise (Stable Diffusion ...)"
    assert "By default, the time to evaluate the quality is included in the wallclock" in rules
    assert "evaluation is done offline, the time is not counted" in rules
    # "60 minutes of initialisation for GPT-3"
    assert "increased to 60 minutes for Closed Division" in rules
    # the runs per benchmark: "three for GPT-3, five for image classification and object
    # detection, forty for U-Net3D"
    runs = dict(
        (m.group(1).strip(), int(m.group(2)))
        for m in re.finditer(r"^\|[^|]*\|([^|]+)\|\s*([0-9]+)\s*$", rules, re.M)
    )
    assert runs["Large language model"] == 3
    assert runs["Image classification"] == runs["Object detection (light weight)"] == 5
    assert runs["Object detection (heavy weight)"] == 5
    assert runs["Image segmentation (medical)"] == 40
    assert min(runs.values()) == 3  # "never fewer than three"
    assert "(three for GPT-3, five\n  for image classification and object detection, forty" in text
    # the referenced counts: targets[0] is BERT, targets[1] Llama 2 70B LoRA
    targets = json.loads(RAW.read_text(encoding="utf-8"))["targets"]
    assert [t["benchmark"] for t in targets] == ["bert", "llama2_70b_lora"]
    assert runs["NLP"] == targets[0]["min_runs"] == 10
    assert runs["Large language model Fine Tune (LoRA)"] == targets[1]["min_runs"] == 10
    assert "targets.1.min_runs|int]] for Llama 2 70B LoRA" in text
    assert "targets.0.min_runs|int]] for BERT" in text


def test_the_tables_group_by_size_and_label_the_stack() -> None:
    out = _hook()._mlperf(ROOT / "docs")
    for bench in ("bert", "llama2_70b_lora"):
        section = out[out.index(f"#### `{bench}`") :]
        assert section.index("Systems of 8 accelerators") < section.index(
            "Systems of 64 accelerators"
        )
    for s in submissions():
        assert s.framework and s.framework in out
        # each score shown to the first digit of its standard error
        d = shown_decimals(s.score_standard_error_minutes)
        assert f"{s.score_minutes:,.{d}f} &plusmn; {s.score_standard_error_minutes:,.{d}f}" in out
