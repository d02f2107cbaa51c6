"""target-cost: the cost to MLPerf Training's fixed quality target at the reader's prices,
from the committed `calculators/planning/time_to_target.json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.cli import main
from calculators.errors import InputError
from calculators.planning.target_cost import (
    PACKAGE_DAYS,
    comparable,
    load_table,
    parse_prices,
    scaling_pairs,
    shown_decimals,
    submissions,
    target_cost,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "calculators" / "planning" / "time_to_target.json"
H200 = "NVIDIA/h200_ngc24.04_nemo"
H100 = "Oracle/1xBM.GPU.H100.8"
A100 = "JuniperNetworks/a100_n8_ngc24.1_pytorch_deepspeed"
GAUDI = "Intel-HabanaLabs/HLS-Gaudi2-PT"
EXAMPLE = {"H100": 3.99, "H200": 4.99, "A100": 1.99, "Gaudi": 1.50}
LORA = "llama2_70b_lora"
BERT_8 = "NVIDIA/eos_ngc23.04_pytorch"
BERT_64 = "NVIDIA/eos_n8_ngc23.04_pytorch"
BERT_DELL = "Dell/XE9680x8H100-SXM-80GB"
BERT_H200 = "NVIDIA/h200_ngc23.09_pytorch"


def _lora(prices: dict, **kwargs):
    """The calculator on the Llama 2 70B LoRA rows (the page's example benchmark)."""
    return target_cost(prices, benchmark=LORA, **kwargs)


def _committed(submission_id: str) -> dict:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    (entry,) = [
        s for s in data["submissions"] if f"{s['submitter']}/{s['system']}" == submission_id
    ]
    return entry


def _options(result) -> dict:
    return {o.id: o for o in result.options}


def test_the_module_reads_the_committed_file() -> None:
    assert load_table() == json.loads(DATA.read_text(encoding="utf-8"))
    assert {s.id for s in submissions() if s.benchmark == LORA} == {H200, H100, A100, GAUDI}
    assert {s.id for s in submissions() if s.benchmark == "bert"} == {
        BERT_8,
        BERT_64,
        BERT_DELL,
        BERT_H200,
    }


def test_h200_cost_by_hand() -> None:
    # The committed row: 8 x NVIDIA H200-SXM5-141GB, score 24.6892 minutes, 3.2919
    # GPU-hours (24.6892 / 60 x 8 = 3.29189...), runs from 23.4336 to 26.6938 minutes.
    s = _committed(H200)
    assert s["accelerator"] == "NVIDIA H200-SXM5-141GB"
    assert (s["accelerator_count"], s["runs"]) == (8, 10)
    assert (s["score_minutes"], s["score_gpu_hours"]) == (24.6892, 3.2919)
    assert (s["fastest_run_minutes"], s["slowest_run_minutes"]) == (23.4336, 26.6938)
    o = _options(_lora(EXAMPLE))[H200]
    assert (o.price_per_accelerator_hour, o.price_from) == (4.99, "H200")
    assert o.gpu_hours_to_target == 3.2919
    # 3.2919 x 4.99 = 3.2919 x 5 - 3.2919 x 0.01 = 16.4595 - 0.032919 = 16.426581
    assert o.cost_to_target_usd == pytest.approx(16.426581, abs=1e-9)
    # fastest: 23.4336 x 8 / 60 = 3.12448 accelerator-hours; x 4.99 = 15.6224 - 0.0312448
    assert o.fastest_run_cost_usd == pytest.approx(15.5911552, abs=1e-9)
    # slowest: 26.6938 x 8 / 60 = 213.5504 / 60 = 3.5591733...; x 4.99
    assert o.slowest_run_cost_usd == pytest.approx(213.5504 / 60 * 4.99, abs=1e-9)
    assert o.wall_minutes == 24.6892


def test_h100_cost_by_hand() -> None:
    # The committed row: 8 x NVIDIA H100-SXM5-80GB, score 29.6998 minutes, 3.96 GPU-hours.
    s = _committed(H100)
    assert (s["accelerator"], s["accelerator_count"]) == ("NVIDIA H100-SXM5-80GB", 8)
    assert (s["score_minutes"], s["score_gpu_hours"]) == (29.6998, 3.96)
    assert (s["fastest_run_minutes"], s["slowest_run_minutes"]) == (28.6109, 32.4462)
    o = _options(_lora(EXAMPLE))[H100]
    # 3.96 x 3.99 = 3.96 x 4 - 3.96 x 0.01 = 15.84 - 0.0396 = 15.8004
    assert o.cost_to_target_usd == pytest.approx(15.8004, abs=1e-9)
    # fastest: 28.6109 x 8 = 228.8872 accelerator-minutes; / 60 x 3.99
    assert o.fastest_run_cost_usd == pytest.approx(228.8872 / 60 * 3.99, abs=1e-9)
    # slowest: 32.4462 x 8 = 259.5696 accelerator-minutes; / 60 x 3.99
    assert o.slowest_run_cost_usd == pytest.approx(259.5696 / 60 * 3.99, abs=1e-9)


def test_runs_in_a_rental_package() -> None:
    assert PACKAGE_DAYS == (3, 7, 30)
    options = _options(_lora(EXAMPLE))
    # H200, score 24.6892 minutes plus 1.4481 minutes of logged initialisation = 26.1373:
    # 3 days = 4,320 minutes / 26.1373 = 165.28 -> 165; 7 days = 10,080 / 26.1373 =
    # 385.66 -> 385; 30 days = 43,200 / 26.1373 = 1,652.81 -> 1,652
    assert _committed(H200)["mean_init_minutes"] == 1.4481
    assert [p.runs_to_target for p in options[H200].packages] == [165, 385, 1652]
    # H100, 29.6998 + 1.0016 = 30.7014: 4,320 / 30.7014 = 140.71; 10,080 / 30.7014 =
    # 328.32; 43,200 / 30.7014 = 1,407.10
    assert _committed(H100)["mean_init_minutes"] == 1.0016
    assert [p.runs_to_target for p in options[H100].packages] == [140, 328, 1407]
    # a 3-day rental of the 8 x H200 system: 3 x 24 x 8 x 4.99 = 2,874.24 USD
    assert options[H200].packages[0].rental_cost_usd == pytest.approx(2874.24)


def test_sorted_by_cost_and_unpriced_last() -> None:
    r = _lora({"H100": 3.99, "H200": 4.99})
    assert [o.id for o in r.options][:2] == [H100, H200]  # 15.80 before 16.43
    assert {o.id for o in r.options[2:]} == {A100, GAUDI}
    assert all(o.cost_to_target_usd is None for o in r.options[2:])
    assert all(o.fastest_run_cost_usd is None for o in r.options[2:])
    assert r.cheapest == H100
    assert sum("no price for" in w for w in r.warnings) == 2
    full = _lora(EXAMPLE)
    costs = [o.cost_to_target_usd for o in full.options]
    assert costs == sorted(costs)
    # Gaudi 2: 10.4145 GPU-hours x 1.50 = 15.62175, below the H100's 15.8004
    assert full.cheapest == GAUDI
    assert _options(full)[GAUDI].cost_to_target_usd == pytest.approx(15.62175)


def test_no_price_is_guessed_and_the_default_prices_the_rest() -> None:
    bare = _lora({})
    assert bare.cheapest is None
    assert all(o.cost_to_target_usd is None for o in bare.options)
    r = _lora({"H200": 4.99}, default_price=2.0)
    options = _options(r)
    assert options[H200].price_from == "H200"
    assert (options[A100].price_from, options[A100].price_per_accelerator_hour) == (
        "default_price",
        2.0,
    )
    # JuniperNetworks: 64 x A100, 80.5007 GPU-hours x 2.0
    assert options[A100].cost_to_target_usd == pytest.approx(161.0014)


def test_first_listed_name_applies_and_case_does_not_matter() -> None:
    r = _lora({"nvidia": 2.0, "h100": 3.0})
    options = _options(r)
    assert (options[H100].price_per_accelerator_hour, options[H100].price_from) == (2.0, "nvidia")
    assert options[H200].price_per_accelerator_hour == 2.0
    assert any("matches 3 different accelerators" in w for w in r.warnings)
    assert any("the first listed, 'nvidia', applies" in w for w in r.warnings)


def test_parse_prices_reads_name_number_lines() -> None:
    assert parse_prices(["H100=3.99", "", "  gaudi = 1.5 "]) == {"H100": 3.99, "gaudi": 1.5}
    assert list(parse_prices(["b=1", "a=2"])) == ["b", "a"]  # the order is kept


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        (["H100"], ["price line 'H100' is not NAME=USD_PER_HOUR"]),
        (["=3"], ["is not NAME=USD_PER_HOUR"]),
        (["H100="], ["is not NAME=USD_PER_HOUR"]),
        (["H100=abc"], ["'abc' is not a number"]),
        (["H100=-1"], ["for 'H100' must be at least 0"]),
        (["H100=nan"], ["finite"]),
        (["H100=inf"], ["finite"]),
        (["H100=1", "h100=2"], ["'h100' is given twice"]),
    ],
)
def test_bad_price_lines_name_the_field(lines: list[str], words: list[str]) -> None:
    with pytest.raises(InputError) as e:
        parse_prices(lines)
    assert e.value.field == "price"
    for word in words:
        assert word in str(e.value)


def test_a_name_matching_no_accelerator_lists_the_accelerators() -> None:
    with pytest.raises(InputError) as e:
        _lora({"TPU": 1.0})
    assert e.value.field == "price"
    message = str(e.value)
    assert "'TPU' matches no accelerator" in message
    for name in ("NVIDIA H100-SXM5-80GB", "NVIDIA H200-SXM5-141GB", "Intel(R) Gaudi(R) 2"):
        assert name in message


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"default_price": -1.0}, "default_price"),
        ({"default_price": float("inf")}, "default_price"),
        ({"default_price": float("nan")}, "default_price"),
        ({"benchmark": "resnet"}, "benchmark"),
    ],
)
def test_other_bad_inputs_name_their_field(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as e:
        target_cost({"H100": 3.99}, **{"benchmark": LORA, **kwargs})
    assert e.value.field == field


def test_command_json_contract(capsys) -> None:
    argv = ["target-cost", "--price", "H100=3.99", "--price", "H200=4.99", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"benchmark", "round", "quality_target", "options", "cheapest", "warnings", "notes"} <= (
        set(data)
    )
    assert (data["benchmark"], data["round"]) == ("llama2_70b_lora", "v4.0")
    assert data["quality_target"] == "eval_accuracy <= 0.925 (Eval loss)"
    assert data["cheapest"] == H100
    ids = [o["id"] for o in data["options"]]
    assert ids[:2] == [H100, H200] and set(ids) == {H100, H200, A100, GAUDI}
    for o in data["options"]:
        assert o["id"] == f"{o['submitter']}/{o['system']}"
        assert [p["days"] for p in o["packages"]] == [3, 7, 30]
        assert o["source"]["repository"] == "mlcommons/training_results_v4.0"
        assert o["source"]["path"].endswith("/llama2_70b_lora")
    by_id = {o["id"]: o for o in data["options"]}
    assert by_id[H100]["cost_to_target_usd"] == pytest.approx(15.8004)
    assert by_id[A100]["cost_to_target_usd"] is None
    assert any("no price for NVIDIA A100" in w for w in data["warnings"])
    assert data["notes"]


def test_command_text_is_a_table(capsys) -> None:
    assert main(["target-cost", "--price", "H100=3.99", "--price", "H200=4.99"]) == 0
    out = capsys.readouterr().out
    assert "USD to target" in out and "runs in 30 days" in out
    # 15.8004 USD with a standard error of 0.4789 / 60 x 8 x 3.99 = 0.25 USD: one decimal
    assert "Cheapest to the target at these prices: Oracle/1xBM.GPU.H100.8 (8 accelerators" in out
    assert "), 15.8 USD (3.96 accelerator-hours x 3.99 USD), 29.7 minutes." in out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--price", "TPU=1"], "error: --price name 'TPU' matches no accelerator"),
        (["--price", "H100"], "error: --price line 'H100' is not NAME=USD_PER_HOUR"),
        (["--price", "H100=-2"], "error: --price for 'H100' must be at least 0"),
        (["--default-price", "-1"], "error: --default-price must be at least 0"),
        (
            ["--benchmark", "resnet"],
            "error: --benchmark must be one of bert, llama2_70b_lora; got 'resnet'",
        ),
    ],
)
def test_command_bad_input_is_one_line_and_exit_2(capsys, argv: list[str], match: str) -> None:
    assert main(["target-cost", *argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(match), captured.err
    assert captured.out == ""


# --- digits shown, like-with-like pairs, the untimed initialisation ---------------------


@pytest.mark.parametrize(
    ("error", "decimals"),
    [
        (0.5542, 1),  # H200 LoRA score 24.6892 +- 0.5542 -> 24.7
        (0.1227, 2),  # leading 1: two digits of the error -> 5.51
        (0.0151, 3),
        (1.592, 1),
        (12.0, 0),
        (3.0, 0),
        (None, 4),
        (0.0, 4),
    ],
)
def test_shown_decimals_end_at_the_errors_first_digit(error, decimals: int) -> None:
    assert shown_decimals(error) == decimals


@given(st.integers(min_value=100, max_value=999), st.integers(min_value=-6, max_value=-1))
def test_shown_decimals_keep_one_digit_of_the_error_or_two_from_a_one(
    mantissa: int, exponent: int
) -> None:
    error = mantissa / 100 * 10.0**exponent  # three digits, the first of them `mantissa // 100`
    d = shown_decimals(error, finest=20)
    units = error * 10.0**d  # the error in units of the last digit shown
    if mantissa // 100 == 1:
        assert 10.0 - 1e-6 < units < 20.0  # a leading 1 and the digit after it
    else:
        assert 2.0 - 1e-6 < units < 10.0  # one digit, 2 to 9


def test_the_bert_rows_price_and_one_list_serves_both_benchmarks() -> None:
    r = target_cost(EXAMPLE, benchmark="bert")
    # A100 and Gaudi price Llama 2 rows only: a note here, not an error.
    assert "price name 'A100' matches no accelerator of bert" in r.notes
    assert "price name 'Gaudi' matches no accelerator of bert" in r.notes
    o = _options(r)[BERT_8]
    # 8 x H100, score 5.4688 minutes = 0.7292 GPU-hours; x 3.99 = 2.909508 USD
    assert (o.accelerator_count, o.wall_minutes, o.gpu_hours_to_target) == (8, 5.4688, 0.7292)
    assert o.cost_to_target_usd == pytest.approx(2.909508)
    # with its logged initialisation, 0.7083 minutes: (5.4688 + 0.7083) / 60 x 8 x 3.99
    assert o.init_minutes == 0.7083
    assert o.cost_with_init_usd == pytest.approx(6.1771 / 60 * 8 * 3.99)
    # two benchmarks in the table: one must be named
    with pytest.raises(InputError) as e:
        target_cost(EXAMPLE)
    assert e.value.field == "benchmark"


def test_sizes_and_stacks_are_flagged_and_close_costs_are_tied() -> None:
    r = target_cost(EXAMPLE, benchmark="bert")
    assert any("differ in system size (8, 64 accelerators)" in n for n in r.notes)
    options = _options(r)
    cheapest, dell = options[r.cheapest], options[BERT_DELL]
    assert r.cheapest == BERT_8
    # 2.9095 and 2.9307 USD, errors 0.1049 / 60 x 8 x 3.99 and 0.1227 / 60 x 8 x 3.99:
    # the difference, 0.021 USD, is well inside two standard errors of it
    assert cheapest.cost_standard_error_usd == pytest.approx(0.1049 / 60 * 8 * 3.99)
    assert dell.cost_to_target_usd - cheapest.cost_to_target_usd < 2 * (
        (cheapest.cost_standard_error_usd**2 + dell.cost_standard_error_usd**2) ** 0.5
    )
    assert BERT_DELL in r.tied_with_cheapest
    # The 64-GPU system costs 3.82 USD against 2.91: more than two errors apart.
    assert BERT_64 not in r.tied_with_cheapest


def test_one_stack_at_two_sizes_is_the_only_scaling_pair() -> None:
    (pair,) = scaling_pairs()
    assert (pair.benchmark, pair.small, pair.large) == ("bert", BERT_8, BERT_64)
    assert (pair.small_count, pair.large_count, pair.size_ratio) == (8, 64, 8.0)
    assert pair.framework == "PyTorch NVIDIA Release 23.04"
    # 5.4688 / 0.8981 minutes; 0.958 / 0.7292 GPU-hours
    assert pair.speedup == pytest.approx(5.4688 / 0.8981)
    assert pair.gpu_hours_ratio == pytest.approx(0.958 / 0.7292)
    relative = ((0.1049 / 5.4688) ** 2 + (0.0151 / 0.8981) ** 2) ** 0.5
    assert pair.gpu_hours_ratio_standard_error == pytest.approx(0.958 / 0.7292 * relative)
    # Eight times the GPUs, not eight times sooner: more GPU-hours, beyond two errors.
    assert pair.speedup + 2 * pair.speedup_standard_error < pair.size_ratio
    assert pair.gpu_hours_ratio - 2 * pair.gpu_hours_ratio_standard_error > 1


def test_comparable_means_one_benchmark_size_and_stack() -> None:
    by_id = {(s.benchmark, s.id): s for s in submissions()}
    small, large = by_id[("bert", BERT_8)], by_id[("bert", BERT_64)]
    dell, h200 = by_id[("bert", BERT_DELL)], by_id[("bert", BERT_H200)]
    assert comparable(small, small)
    assert not comparable(small, large)  # one stack, two sizes
    assert not comparable(small, dell)  # one size, two stacks as stated
    assert not comparable(dell, h200)
