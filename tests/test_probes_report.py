"""The report schema: what a probe writes validates, what breaks it is named."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from probes.report import (
    JSON_SCHEMA,
    REQUIRED,
    SCHEMA_VERSION,
    finish,
    new_report,
    read,
    validate,
    write,
)
from tests.probes_helpers import ROOT


def _report() -> dict:
    r = new_report("train-step", "1", ["python", "-m", "probes", "train-step"])
    r["estimate"] = {"peak": 100}
    r["measured"] = {"peak": 110}
    r["units"] = {"peak": "bytes"}
    return finish(r, "ok")


def test_a_finished_report_validates_with_its_ratio() -> None:
    r = _report()
    validate(r)
    assert r["ratio"] == {"peak": 1.1}
    assert r["schema_version"] == SCHEMA_VERSION
    assert r["command_line"] == "python -m probes train-step"


def test_reports_are_importable_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import probes.report, probes.compare\n"
        "r = probes.report.new_report('x', '1', ['a'])\n"
        "assert r['environment']['torch'] is None\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("measured"), "'measured' is missing"),
        (lambda r: r.update(status="done"), "'status' must be one of"),
        (lambda r: r["measured"].update(peak="big"), "'measured.peak' must be a number"),
        (lambda r: r["units"].pop("peak"), "'units.peak' is missing"),
        (lambda r: r["environment"].pop("torch"), "'environment.torch' is missing"),
        (lambda r: r.update(schema_version=99), "'schema_version' must be"),
        (lambda r: r.update(status="oom"), "'error' must say why"),
        (lambda r: r.update(started_at="yesterday"), "'started_at' is not ISO 8601"),
    ],
)
def test_broken_reports_are_named(change, message: str) -> None:
    r = copy.deepcopy(_report())
    change(r)
    with pytest.raises(ValueError, match=message):
        validate(r)


def test_finish_rejects_an_unknown_status() -> None:
    with pytest.raises(ValueError, match="status must be one of"):
        finish(_report(), "fine")


def test_write_is_atomic_and_read_validates(tmp_path) -> None:
    path = tmp_path / "r.json"
    write(_report(), str(path))
    assert read(str(path))["measured"]["peak"] == 110
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left
    bad = _report()
    bad["status"] = "?"
    with pytest.raises(ValueError):
        write(bad, str(path))
    assert read(str(path))["status"] == "ok"  # the old file is untouched


def test_read_names_a_bad_file(tmp_path) -> None:
    p = tmp_path / "x.json"
    p.write_text("{")
    with pytest.raises(ValueError, match=r"x\.json"):
        read(str(p))


def test_json_schema_requires_the_same_fields() -> None:
    assert JSON_SCHEMA["required"] == list(REQUIRED)
    assert set(JSON_SCHEMA["properties"]) == set(REQUIRED)
    json.dumps(JSON_SCHEMA)


def test_committed_validation_reports_follow_the_schema() -> None:
    folder = ROOT / "docs" / "data" / "validation"
    for path in sorted(folder.glob("*.json")) if folder.exists() else []:
        if path.name == "schema.json":
            assert json.loads(path.read_text()) == JSON_SCHEMA
        else:
            read(str(path))
