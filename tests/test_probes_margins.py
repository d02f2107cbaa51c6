"""probes.margins: the ratios of the committed reports, their summary and its Markdown."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from probes.margins import Group, margin_markdown, margin_summary, phase_ratios

ROOT = Path(__file__).resolve().parent.parent
VALIDATION = ROOT / "docs" / "data" / "validation"


def _committed() -> list[dict]:
    out = []
    for path in sorted(VALIDATION.glob("*.json")):
        data = json.loads(path.read_text())
        if path.name != "schema.json" and "$schema" not in data and data["status"] == "ok":
            out.append(data)
    return out


def test_counts_and_extremes_match_a_direct_scan_of_the_committed_reports() -> None:
    reports = _committed()
    assert reports, "no committed report to check against"
    summary = margin_summary(phase_ratios(VALIDATION))
    scan: dict[tuple[str, str, str], list[float]] = {}
    for r in reports:
        kind = "cuda" if r["environment"]["device"].startswith("cuda") else "cpu"
        for name, value in r["ratio"].items():
            scan.setdefault((r["probe"]["name"], name, kind), []).append(value)
    assert {(m.probe, m.quantity, m.device_kind) for m in summary} == set(scan)
    for m in summary:
        values = scan[(m.probe, m.quantity, m.device_kind)]
        assert m.count == len(values)
        assert m.min == min(values) and m.max == max(values)
        assert m.min <= m.median <= m.max
        assert m.margin == max(0.0, max(values) - 1.0)
    # every committed train-step report gives each of the step's phases
    train = [r for r in reports if r["probe"]["name"] == "train-step"]
    peaks = [m for m in summary if (m.probe, m.quantity) == ("train-step", "peak")]
    assert peaks and sum(m.count for m in peaks) == len(train)


def test_groups_carry_the_backend_and_files() -> None:
    groups = phase_ratios(VALIDATION)
    # reports without ratios (time-to-quality measures no estimate) form no group
    backends = {r["details"]["backend"] for r in _committed() if r["ratio"]}
    assert {g.backend for g in groups} == backends
    files = {r.report for rs in groups.values() for r in rs}
    assert "schema.json" not in files
    assert "cpu-train-llama-amp-bf16.json" in files


def _report(name: str, device: str, backend: str, ratio: dict, status: str = "ok") -> dict:
    return {
        "schema": "kernodeck-probe-report",
        "probe": {"name": name, "version": "1"},
        "environment": {
            "device": device,
            "device_name": "CPU (x86_64)" if device == "cpu" else "Test GPU 80GB",
        },
        "details": {"backend": backend},
        "ratio": ratio,
        "status": status,
    }


def test_hand_made_reports_give_the_summary_by_arithmetic(tmp_path: Path) -> None:
    reports = {
        "a.json": _report("train-step", "cpu", "cpu-live-tensors", {"peak": 0.98, "x": True}),
        "b.json": _report("train-step", "cpu", "cpu-live-tensors", {"peak": 1.25}),
        "c.json": _report("train-step", "cuda:0", "cuda-allocator", {"peak": 1.1}),
        "d.json": _report("train-step", "cpu", "cpu-live-tensors", {"peak": 9.0}, "error"),
        "schema.json": {"$schema": "https://json-schema.org/draft/2020-12/schema"},
        "other-schema.json": {"$schema": "https://json-schema.org/draft/2020-12/schema"},
    }
    for name, data in reports.items():
        (tmp_path / name).write_text(json.dumps(data))
    groups = phase_ratios(tmp_path)
    cpu = Group("train-step", "peak", "cpu", "cpu-live-tensors")
    gpu = Group("train-step", "peak", "cuda", "cuda-allocator")
    assert set(groups) == {cpu, gpu}  # the boolean `x` is no ratio; d's status is error
    assert [r.value for r in groups[cpu]] == [0.98, 1.25]
    s = {m.device_kind: m for m in margin_summary(groups)}
    assert (s["cpu"].count, s["cpu"].min, s["cpu"].max) == (2, 0.98, 1.25)
    assert math.isclose(s["cpu"].median, (0.98 + 1.25) / 2)
    assert math.isclose(s["cpu"].margin, 0.25)
    assert s["cpu"].reports == ("a.json", "b.json")
    assert (s["cuda"].count, s["cuda"].median) == (1, 1.1)
    assert math.isclose(s["cuda"].margin, 0.1)
    md = margin_markdown(list(s.values()))
    cpu_row = "| train-step | peak | CPU: calculator against its own reference model | 2 |"
    assert cpu_row + " 0.9800 | 1.115 | 1.250 | 25.0% |" in md
    assert "| train-step | peak | GPU (CUDA or ROCm) | 1 | 1.100 | 1.100 | 1.100 | 10.0% |" in md
    assert (
        "CPU: calculator against its own reference model: these rows rest on 2 reports "
        "measured on 1 device (CPU (x86_64))" in md
    )
    assert "rest on 1 report measured on 1 device (Test GPU 80GB)" in md
    assert "No report measured on a GPU" not in md


def test_a_ratio_below_one_needs_no_margin(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        json.dumps(_report("weights", "cpu", "cpu-live-tensors", {"weight_bytes": 0.9}))
    )
    (m,) = margin_summary(phase_ratios(tmp_path))
    assert m.margin == 0.0
    md = margin_markdown([m])
    assert "| 0.0% |" in md and "No report measured on a GPU is committed yet" in md


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"status": "ok"}', "field 'probe' is missing"),
    ],
)
def test_a_malformed_report_is_named(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "good.json").write_text(
        json.dumps(_report("weights", "cpu", "cpu-live-tensors", {"weight_bytes": 1.0}))
    )
    (tmp_path / "broken.json").write_text(text)
    with pytest.raises(ValueError, match=r"'broken\.json'") as e:
        phase_ratios(tmp_path)
    assert message in str(e.value)


def test_an_unreadable_report_is_named(tmp_path: Path) -> None:
    (tmp_path / "folder.json").mkdir()  # a directory: reading it fails on every system
    with pytest.raises(ValueError, match=r"report 'folder\.json' cannot be read"):
        phase_ratios(tmp_path)


def _sentences(text: str) -> list[str]:
    """`text` cut at sentence ends and blank lines, whitespace folded."""
    flat = re.sub(r"\s+", " ", text.replace("\n\n", " \u2029 "))
    return [s.strip() for s in re.split(r"(?<=[.:;!?])\s+|\u2029", flat) if s.strip()]


def test_the_pages_do_not_present_the_cpu_margins_as_advice() -> None:
    # issue 23: the committed reports compare the calculators with the probes' own
    # reference model on a CPU; until GPU reports exist, no sentence about their margins
    # may say which margin "to keep" above an estimate
    notebook = json.loads((ROOT / "docs/memory/estimate-vs-peak-notebook.ipynb").read_text())
    cells = ["".join(c["source"]) for c in notebook["cells"]]
    texts = {
        "the notebook": "\n\n".join(cells),
        "estimate-vs-peak.md": (ROOT / "docs/memory/estimate-vs-peak.md").read_text(),
        "the margins table": margin_markdown(margin_summary(phase_ratios(VALIDATION))),
        "probes/margins.py": (ROOT / "probes/margins.py").read_text(),
    }
    for where, text in texts.items():
        advice = [
            s
            for s in _sentences(text)
            if "margin" in s.lower() and re.search(r"\b(to keep|you keep|should keep)\b", s)
        ]
        assert not advice, f"{where} still gives the margins as advice: {advice}"
    heading = "## What the committed reports check (calculator against its own reference model)"
    assert any(c.startswith(heading) for c in cells)
    assert "calculator against its own reference model" in texts["estimate-vs-peak.md"]
