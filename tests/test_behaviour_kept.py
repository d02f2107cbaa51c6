"""What the calculators answer stays what it was: every page example, every `[[command]]`
directive and every README command, against tests/data/behaviour.json.

The record was first made by tests/data/make_behaviour_fixture.py before the calculators
were laid out by domain and declared once per calculator, and remade when the envelope
gained its card-selection columns, the weights their bits per parameter and the presets
Llama 3.1 70B (every earlier result is contained in the new one), and again for the gap
calculator's paragraphs, the design and target-cost calculators the design's CSV
download and its factor roles, and for the evaluation calculators (leakage and compare,
which read files under docs/data/evaluation; the seeds calculator's exact tests and
summary; every form's progress bar). Rerun it only for a
deliberate change of behaviour. Each entry holds its own inputs (a page's references
resolved), so this runs without docs/ but for the example files of docs/data/evaluation,
which the Pyodide run copies too.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from calculators.cli import main
from calculators.model.presets import load_preset
from calculators.web import compute, evaluate, form_html
from calculators.web.forms import argv_for, calculator, clean
from calculators.web.page import command_line

PLACEHOLDER = "path/to/config.json"

RECORD = json.loads((Path(__file__).parent / "data" / "behaviour.json").read_text())


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['where']}:{entry['name']}:{sorted(entry['inputs'].items())}"


@pytest.mark.parametrize("entry", RECORD["pages"], ids=_id)
def test_page_example_is_unchanged(entry: dict[str, Any]) -> None:
    name, inputs = entry["name"], entry["inputs"]
    assert json.loads(json.dumps(compute(name, inputs))) == entry["result"]
    answer = evaluate(name, inputs)
    assert answer["command"] == entry["command"]
    assert _sha(answer["html"]) == entry["html_sha256"]
    form = form_html(name, inputs, form_id="kd-fixture")
    assert _sha(form) == entry["form_sha256"]


@pytest.mark.parametrize("entry", RECORD["commands"], ids=lambda e: e["directive"])
def test_command_directive_is_unchanged(entry: dict[str, Any]) -> None:
    name, _, rest = entry["directive"][len("[[command ") : -2].partition(" ")
    calc = calculator(name)
    pairs = dict(p.split("=", 1) for p in rest.split())
    assert command_line(argv_for(calc, clean(calc, pairs))) == entry["command"]


def _run(argv: list[str]) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize("entry", RECORD["readme"], ids=lambda e: " ".join(e["argv"]))
def test_readme_command_is_unchanged(entry: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps(load_preset("llama-3.1-8b")), encoding="utf-8")
        argv = [str(config) if a == PLACEHOLDER else a for a in entry["argv"]]
        as_json = _run([*argv, "--json"]).replace(json.dumps(str(config))[1:-1], PLACEHOLDER)
        text = _run(argv).replace(str(config), PLACEHOLDER)
    assert json.loads(as_json) == entry["json"]
    assert text == entry["text"]


def test_the_record_covers_every_calculator() -> None:
    names = {e["name"] for e in RECORD["pages"]}
    commands = {e["argv"][0] for e in RECORD["readme"]}
    assert names == {
        "weights",
        "kv-cache",
        "envelope",
        "training",
        "throughput",
        "batch",
        "budget",
        "seeds",
        "gap",
        "design",
        "target-cost",
        "useful-cost",
        "sampling",
        "generate",
        "leakage",
        "compare",
        "serve",
        "eval-size",
    }
    assert names | {"presets", "gpus", "formats"} >= commands
