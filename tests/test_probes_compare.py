"""compare: reports in, markdown table and CSV out."""

from __future__ import annotations

import csv

import pytest

from probes.compare import compare
from probes.report import finish, new_report, write


def _write(tmp_path, name: str, est: int, meas: int) -> str:
    r = new_report("train-step", "1", ["python"])
    r["inputs"] = {"model": "tiny-llama"}
    r["estimate"], r["measured"] = {"peak": est}, {"peak": meas}
    r["units"] = {"peak": "bytes"}
    path = str(tmp_path / name)
    write(finish(r, "ok"), path)
    return path


def test_markdown_and_csv(tmp_path) -> None:
    a = _write(tmp_path, "a.json", 2**30, 2**31)
    b = _write(tmp_path, "b.json", 1000, 900)
    out = tmp_path / "c.csv"
    md = compare([a, b], str(out))
    lines = md.splitlines()
    assert lines[0].startswith("| report | probe | model")
    assert "| a.json | train-step | tiny-llama |" in lines[2]
    assert "1.0000 GiB | 2.0000 GiB | 2.000 |" in lines[2]
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["report"], r["estimate"], r["measured"], r["ratio"]) for r in rows] == [
        ("a.json", str(2**30), str(2**31), "2.0"),
        ("b.json", "1000", "900", "0.9"),
    ]


def test_cli_compare(tmp_path, capsys) -> None:
    from probes.cli import main

    a = _write(tmp_path, "a.json", 10, 10)
    assert main(["compare", a, "--csv", str(tmp_path / "x.csv")]) == 0
    assert "| a.json |" in capsys.readouterr().out


def test_no_reports_is_an_error(tmp_path) -> None:
    with pytest.raises(ValueError, match="at least one report"):
        compare([], None)


def test_a_report_stopped_early_keeps_a_row(tmp_path) -> None:
    r = new_report("kv-cache", "1", ["python"])
    r["inputs"] = {"model": "gemma-2-2b"}
    path = str(tmp_path / "stopped.json")
    write(finish(r, "interrupted", "interrupted (signal 15) in prefill"), path)
    md = compare([path], None)
    assert "| stopped.json | kv-cache | gemma-2-2b |" in md and "| interrupted |" in md
