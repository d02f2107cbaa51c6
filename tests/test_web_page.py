"""calculators.web.page: the markup contract the browser tests and the worker rely on."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from calculators.web import CALCULATORS, FieldError, compute, evaluate, form_html, run_json


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse(html: str) -> list[tuple[str, dict[str, str | None]]]:
    p = _Collect()
    p.feed(html)
    return p.tags


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_form_contract(name: str) -> None:
    tags = parse(form_html(name))
    forms = [a for t, a in tags if t == "form"]
    assert forms[0]["data-calculator"] == name
    names = {a["name"] for t, a in tags if t in ("input", "select", "textarea")}
    assert names == {f.name for f in CALCULATORS[name].fields}
    result = next(a for t, a in tags if "data-result" in a)
    assert json.loads(result["data-result-json"] or "") == json.loads(json.dumps(compute(name)))


def test_preset_inputs_are_shown_and_computed() -> None:
    html = form_html("kv-cache", {"context": "16384", "kv_format": "fp8"})
    tags = parse(html)
    context = next(a for t, a in tags if a.get("name") == "context")
    assert context["value"] == "16384"
    selected = [a for t, a in tags if t == "option" and "selected" in a]
    assert {"value": "fp8", "selected": None} in selected
    result = next(a for t, a in tags if "data-result" in a)
    want = compute("kv-cache", {"context": "16384", "kv_format": "fp8"})
    assert json.loads(result["data-result-json"] or "") == json.loads(json.dumps(want))


def test_a_page_cannot_ship_bad_presets() -> None:
    with pytest.raises(FieldError):
        form_html("kv-cache", {"context": "0"})


def test_run_json_is_the_workers_contract() -> None:
    ok = json.loads(run_json("batch", json.dumps({"micro_batch": "2"})))
    assert ok["ok"] and json.loads(ok["result_json"]) == ok["result"]
    assert ok["command"].startswith("python -m calculators batch --micro-batch 2")
    bad = json.loads(run_json("batch", json.dumps({"micro_batch": "x"})))
    assert bad == {"ok": False, "field": "micro_batch", "message": bad["message"]}
    assert "'x'" in bad["message"]


def test_evaluate_command_reproduces_the_result() -> None:
    answer = evaluate("seeds")
    assert answer["command"].endswith("--json")
    assert "--effect 0.005" in answer["command"]


def test_a_calculator_may_declare_the_csv_its_download_gives() -> None:
    from calculators.web import evaluate
    from calculators.web.render import to_csv

    design = evaluate("design", {})
    assert design["csv"] == design["result"]["run_table_csv"]
    assert design["csv"].splitlines()[0].endswith(",seed,metric")
    # the others keep every field as field,value rows
    seeds = evaluate("seeds", {})
    assert seeds["csv"] == to_csv(seeds["result"])
