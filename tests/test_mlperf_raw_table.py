"""The MLPerf raw table: parsed from the committed MLLOG excerpts, never typed by hand."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.mlperf import raw_table as rt

ROOT = Path(__file__).resolve().parents[1]
MLPERF = ROOT / "benchmarks" / "mlperf"
OUT = ROOT / "docs" / "data" / "mlperf"
H200_RESULT_0 = MLPERF / "logs/v4.0/NVIDIA/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt"
BERT_EOS_RESULT_0 = MLPERF / "logs/v4.0/NVIDIA/eos_ngc23.04_pytorch/bert/result_0.txt"
BERT_EOS_N8 = MLPERF / "logs/v4.0/NVIDIA/eos_n8_ngc23.04_pytorch/bert"


@pytest.fixture(scope="module")
def table() -> dict:
    return rt.build()


def _row(table: dict, excerpt: Path) -> dict:
    rel = excerpt.relative_to(ROOT).as_posix()
    (row,) = [r for r in table["rows"] if r["excerpt_path"] == rel]
    return row


def test_minutes_from_run_start_and_run_stop_by_hand(table: dict) -> None:
    # benchmarks/mlperf/logs/v4.0/NVIDIA/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt:
    #   run_start "time_ms": 1714993577687
    #   run_stop  "time_ms": 1714994988899, "status": "success"
    text = H200_RESULT_0.read_text()
    assert '"time_ms": 1714993577687, "event_type": "INTERVAL_START", "key": "run_start"' in text
    assert '"time_ms": 1714994988899, "event_type": "INTERVAL_END", "key": "run_stop"' in text
    row = _row(table, H200_RESULT_0)
    assert row["run_start_time_ms"] == 1714993577687
    assert row["run_stop_time_ms"] == 1714994988899
    assert row["time_to_train_ms"] == 1714994988899 - 1714993577687 == 1411212
    assert row["minutes_to_train"] == round(1411212 / 60000, 4) == 23.5202
    # 8 x H200 on one node (system.json: accelerators_per_node "8", number_of_nodes "1").
    assert row["accelerator"] == "NVIDIA H200-SXM5-141GB"
    assert row["accelerator_count"] == 8
    assert row["gpu_hours_to_target"] == round(1411212 / 60000 / 60 * 8, 4)
    assert row["status"] == "success"
    # The last eval_accuracy line before run_stop in that file.
    assert row["quality_reached"] == 0.9249271154403687
    assert row["meets_target"] is True
    assert row["quality_target"] == "eval_accuracy <= 0.925 (Eval loss)"


def test_every_row_is_arithmetic_on_its_own_excerpt(table: dict) -> None:
    # 8 submissions x 10 result files, one of which did not reach the target
    assert len(table["rows"]) == 79 and len(table["excluded"]) == 1
    for row in table["rows"]:
        run = rt.read_run(ROOT / row["excerpt_path"])
        ms = run["run_stop_time_ms"] - run["run_start_time_ms"]
        assert row["time_to_train_ms"] == ms
        assert row["minutes_to_train"] == round(ms / 60000, 4)
        assert row["gpu_hours_to_target"] == round(ms / 60000 / 60 * row["accelerator_count"], 4)
        assert row["accelerator_count"] == row["accelerators_per_node"] * row["number_of_nodes"]
        assert row["status"] == "success" and row["meets_target"] is True


def test_target_comes_from_the_rules_excerpts() -> None:
    target = rt.read_target(rt.RULES_DIR, "v4.0", "llama2_70b_lora")
    assert target["metric"] == "eval_accuracy"
    assert (target["comparison"], target["value"], target["label"]) == ("<=", 0.925, "Eval loss")
    assert target["min_runs"] == 10
    adoc = (rt.RULES_DIR / "v4.0" / rt.RULES_EXCERPT).read_text()
    assert "|Llama2-70B-LoRA |0.925 Eval loss" in adoc


def _write_log(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


START = (
    ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "INTERVAL_START", '
    '"key": "run_start", "value": null, "metadata": {}}'
)
EVAL = (
    ':::MLLOG {"namespace": "", "time_ms": 61000, "event_type": "POINT_IN_TIME", '
    '"key": "eval_accuracy", "value": 0.92, "metadata": {"samples_count": 1}}'
)


def test_log_without_run_stop_is_rejected(tmp_path: Path) -> None:
    log = _write_log(tmp_path / "result_0.txt", [START, EVAL])
    with pytest.raises(rt.LogError, match="no run_stop"):
        rt.read_run(log)


def test_log_with_aborted_run_stop_is_rejected(tmp_path: Path) -> None:
    stop = (
        ':::MLLOG {"namespace": "", "time_ms": 61000, "event_type": "INTERVAL_END", '
        '"key": "run_stop", "value": null, "metadata": {"status": "aborted"}}'
    )
    log = _write_log(tmp_path / "result_0.txt", [START, EVAL, stop])
    with pytest.raises(rt.LogError, match="aborted"):
        rt.read_run(log)


def _copy_h200_cutting_run_stop(tmp_path: Path, runs: tuple[int, ...]) -> Path:
    """A copy of one committed submission with the given logs cut before run_stop."""
    system_dir = H200_RESULT_0.parents[1]  # logs/v4.0/NVIDIA/h200_ngc24.04_nemo
    copy = tmp_path / system_dir.relative_to(ROOT)
    shutil.copytree(system_dir, copy)
    shutil.copytree(MLPERF / "rules", tmp_path / "benchmarks/mlperf/rules")
    for n in runs:
        log = copy / "llama2_70b_lora" / f"result_{n}.txt"
        log.write_text(
            "".join(x for x in log.read_text().splitlines(True) if '"run_stop"' not in x)
        )
    listed = [
        line
        for line in rt.SOURCES_MD.read_text().splitlines()
        if "/h200_ngc24.04_nemo/" in line or "/rules/" in line
    ]
    (tmp_path / "benchmarks/mlperf/SOURCES.md").write_text("\n".join(listed) + "\n")
    return tmp_path


def test_log_without_run_stop_is_excluded_from_the_table(tmp_path: Path) -> None:
    table = rt.build(root=_copy_h200_cutting_run_stop(tmp_path, (0,)))
    assert len(table["rows"]) == 9
    assert all(r["run"] != 0 for r in table["rows"])
    (excluded,) = table["excluded"]
    assert excluded["reason"] == "no run_stop line"
    assert excluded["source_path"] == (
        "NVIDIA/results/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt"
    )
    # One non-converging run is the dropped slowest (training_rules.adoc, Benchmark Results).
    (sub,) = table["submissions"]
    assert (sub["result_files"], sub["successful_runs"]) == (10, 9)
    kept = sorted(r["time_to_train_ms"] / 60000 for r in table["rows"])[1:]
    assert sub["score_minutes"] == round(sum(kept) / len(kept) * sub["scaling_factor"], 4)


def test_two_failed_runs_make_the_submission_score_invalid(tmp_path: Path) -> None:
    table = rt.build(root=_copy_h200_cutting_run_stop(tmp_path, (0, 1)))
    assert len(table["rows"]) == 8 and len(table["excluded"]) == 2
    (sub,) = table["submissions"]
    assert sub["score_minutes"] is None and "invalid" in sub["note"]


def test_committed_files_equal_what_the_script_writes_now(table: dict) -> None:
    json_text, csv_text = rt.render(table)
    assert (OUT / "raw_table.json").read_bytes() == json_text.encode("utf-8")
    assert (OUT / "raw_table.csv").read_bytes() == csv_text.encode("utf-8")
    # A second build gives the same bytes.
    assert rt.render(rt.build()) == (json_text, csv_text)
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert [r["source_path"] for r in rows] == [r["source_path"] for r in table["rows"]]
    assert json.loads(json_text)["columns"] == list(rt.COLUMNS)


def test_every_row_has_a_recorded_source(table: dict) -> None:
    sources = rt.read_sources(rt.SOURCES_MD)
    recorded = {(s["repository"], s["path"], s["commit"]) for s in sources.values()}
    for row in table["rows"]:
        assert re.fullmatch(r"[0-9a-f]{40}", row["source_commit"])
        assert (row["source_repository"], row["source_path"], row["source_commit"]) in recorded
        assert sources[row["excerpt_path"]]["path"] == row["source_path"]
        assert (ROOT / row["excerpt_path"]).is_file()
    # Every committed excerpt is listed in SOURCES.md, and every listed excerpt exists.
    committed = {
        p.relative_to(ROOT).as_posix()
        for d in ("logs", "rules")
        for p in (MLPERF / d).rglob("*")
        if p.is_file()
    }
    assert committed == set(sources)


def test_submission_score_is_the_olympic_mean_times_scaling(table: dict) -> None:
    for sub in table["submissions"]:
        rows = [
            r
            for r in table["rows"]
            if (r["submitter"], r["system"], r["benchmark"])
            == (sub["submitter"], sub["system"], sub["benchmark"])
        ]
        minutes = sorted(r["time_to_train_ms"] / 60000 for r in rows)
        failed = sub["result_files"] - len(minutes)
        assert sub["result_files"] == 10 and failed in (0, 1)
        # drop the fastest, and the slowest unless a failed run is the slowest
        kept = minutes[1 : len(minutes) - (1 - failed)]
        assert len(kept) == 8
        expected = sum(kept) / 8 * sub["scaling_factor"]
        assert sub["score_minutes"] == round(expected, 4)
        mean = sum(kept) / 8
        sem = (sum((x - mean) ** 2 for x in kept) / 7) ** 0.5 / 8**0.5
        assert sub["score_standard_error_minutes"] == round(sem * sub["scaling_factor"], 4)


def test_committed_time_to_target_equals_what_the_script_writes_now(table: dict) -> None:
    text = rt.render_time_to_target(table)
    assert rt.CALCULATOR_OUT == ROOT / "calculators" / "planning" / "time_to_target.json"
    assert rt.CALCULATOR_OUT.read_bytes() == text.encode("utf-8")
    assert rt.render_time_to_target(rt.build()) == text  # the same bytes again
    data = json.loads(text)
    assert data["source"] == {"title": table["title"], "sources": "benchmarks/mlperf/SOURCES.md"}
    assert len(data["submissions"]) == len(table["submissions"])
    for entry, sub in zip(data["submissions"], table["submissions"], strict=True):
        rows = [
            r
            for r in table["rows"]
            if (r["submitter"], r["system"], r["benchmark"])
            == (sub["submitter"], sub["system"], sub["benchmark"])
        ]
        assert entry["score_minutes"] == sub["score_minutes"]
        assert entry["score_gpu_hours"] == sub["score_gpu_hours"]
        assert entry["runs"] == sub["successful_runs"] == len(rows)
        assert entry["fastest_run_minutes"] == min(r["minutes_to_train"] for r in rows)
        assert entry["slowest_run_minutes"] == max(r["minutes_to_train"] for r in rows)
        assert {entry["accelerator"]} == {r["accelerator"] for r in rows}
        assert {entry["quality_target"]} == {r["quality_target"] for r in rows}
        src = entry["source"]
        assert {(src["repository"], src["commit"])} == {
            (r["source_repository"], r["source_commit"]) for r in rows
        }
        assert all(r["source_path"].startswith(src["path"] + "/") for r in rows)


def test_the_projects_own_rows_are_its_reports_repeats(table: dict) -> None:
    report_path = ROOT / "docs/data/validation/cpu-ttq-tiny-llama.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    mine = [
        r for r in table["measured"] if r["source_path"] == report_path.relative_to(ROOT).as_posix()
    ]
    repeats = report["details"]["repeats"]
    assert [r["run"] for r in mine] == [rep["repeat"] for rep in repeats]
    for row, rep in zip(mine, repeats, strict=True):
        assert row["obtained"].startswith("measured by this project")
        assert row["steps"] == rep["steps"] and row["reached"] == rep["reached"]
        assert row["seconds_to_target"] == round(rep["seconds"], 4)
    assert (OUT / "measured_rows.csv").read_text(encoding="utf-8") == rt.render_measured(table)


def test_a_run_that_missed_the_target_has_no_time(tmp_path: Path) -> None:
    report = json.loads((ROOT / "docs/data/validation/cpu-ttq-tiny-llama.json").read_text())
    report["details"]["repeats"][0]["reached"] = False
    validation = tmp_path / "docs" / "data" / "validation"
    validation.mkdir(parents=True)
    (validation / "ttq.json").write_text(json.dumps(report), encoding="utf-8")
    rows = rt.measured_rows(tmp_path)
    assert rows[0]["reached"] is False
    assert rows[0]["seconds_to_target"] is None and rows[0]["gpu_hours_to_target"] is None
    assert rows[1]["seconds_to_target"] is not None
    csv_rows = list(csv.DictReader(io.StringIO(rt.render_measured({"measured": rows}))))
    assert csv_rows[0]["seconds_to_target"] == "" and csv_rows[0]["reached"] == "false"


def test_bert_minutes_from_run_start_and_run_stop_by_hand(table: dict) -> None:
    # benchmarks/mlperf/logs/v4.0/NVIDIA/eos_ngc23.04_pytorch/bert/result_0.txt, cut from
    # mlcommons/training_results_v4.0 NVIDIA/results/eos_ngc23.04_pytorch/bert/result_0.txt:
    #   init_start (first of 8 ranks) "time_ms": 1682641165571
    #   run_start "time_ms": 1682641208321
    #   run_stop  "time_ms": 1682641556024, "status": "success"
    #   last eval_accuracy before it: 0.7203474640846252 (target: at least 0.720)
    text = BERT_EOS_RESULT_0.read_text()
    assert '"time_ms": 1682641165571, "event_type": "INTERVAL_START", "key": "init_start"' in text
    assert '"time_ms": 1682641556024, "event_type": "INTERVAL_END", "key": "run_stop"' in text
    row = _row(table, BERT_EOS_RESULT_0)
    assert row["time_to_train_ms"] == 1682641556024 - 1682641208321 == 347703
    # 5.79505 minutes; the nearest double lies just below it, so 4 decimals give 5.795
    assert row["minutes_to_train"] == round(347703 / 60000, 4) == 5.795
    assert row["init_minutes"] == round((1682641208321 - 1682641165571) / 60000, 4) == 0.7125
    assert row["quality_reached"] == 0.7203474640846252
    assert row["quality_target"] == "eval_accuracy >= 0.720 (Mask-LM accuracy)"
    # systems/eos_ngc23.04_pytorch.json: 8 per node, 1 node, its framework as stated
    assert (row["accelerator_count"], row["framework"]) == (8, "PyTorch NVIDIA Release 23.04")


def test_bert_target_and_run_count_come_from_the_rules_excerpts() -> None:
    target = rt.read_target(rt.RULES_DIR, "v4.0", "bert")
    assert (target["metric"], target["comparison"], target["value"]) == (
        "eval_accuracy",
        ">=",
        0.72,
    )
    assert (target["label"], target["min_runs"]) == ("Mask-LM accuracy", 10)
    adoc = (rt.RULES_DIR / "v4.0" / rt.RULES_EXCERPT).read_text()
    assert "| |NLP |BERT |0.720 Mask-LM accuracy" in adoc and "|Language |NLP |10" in adoc


def test_an_aborted_bert_run_is_listed_and_counts_as_the_slowest(table: dict) -> None:
    # NVIDIA/results/eos_n8_ngc23.04_pytorch/bert/result_4.txt ends in run_stop "aborted"
    assert '"status": "aborted"' in (BERT_EOS_N8 / "result_4.txt").read_text()
    (excluded,) = table["excluded"]
    assert excluded["source_path"] == "NVIDIA/results/eos_n8_ngc23.04_pytorch/bert/result_4.txt"
    assert "aborted" in excluded["reason"]
    (sub,) = [s for s in table["submissions"] if s["system"] == "eos_n8_ngc23.04_pytorch"]
    assert (sub["result_files"], sub["successful_runs"], sub["accelerator_count"]) == (10, 9, 64)
    assert sub["score_minutes"] is not None  # one failed run is allowed


def test_init_minutes_are_the_logged_time_before_the_clock(table: dict) -> None:
    # result_0.txt of NVIDIA h200_ngc24.04_nemo llama2_70b_lora: init_start 1714993490208,
    # run_start 1714993577687
    row = _row(table, H200_RESULT_0)
    assert row["init_start_time_ms"] == 1714993490208
    assert row["init_minutes"] == round((1714993577687 - 1714993490208) / 60000, 4) == 1.458
    for row in table["rows"]:
        run = rt.read_run(ROOT / row["excerpt_path"])
        starts = [e["time_ms"] for e in run["events"] if e["key"] == "init_start"]
        assert row["init_minutes"] == round((row["run_start_time_ms"] - min(starts)) / 60000, 4)
    for sub in table["submissions"]:
        inits = [
            r["init_minutes"]
            for r in table["rows"]
            if (r["submitter"], r["system"], r["benchmark"])
            == (sub["submitter"], sub["system"], sub["benchmark"])
        ]
        assert sub["mean_init_minutes"] == round(sum(inits) / len(inits), 4)
        # the closed division allows 30 minutes of initialisation off the clock
        assert sub["mean_init_minutes"] <= 30


def test_every_system_states_its_framework(table: dict) -> None:
    for sub in table["submissions"]:
        desc = json.loads(
            (
                MLPERF / "logs" / sub["round"] / sub["submitter"] / sub["system"] / "system.json"
            ).read_text(encoding="utf-8")
        )
        assert sub["framework"] == desc["framework"] and desc["framework"].strip()
