"""A calculator as page markup, and the one call the browser's worker makes.

`form_html` writes the form (from the declared fields) with its result prerendered;
`run_json` is what the worker calls on every input change. Both go through `compute`
and `render_result`, so the built page and the live page agree by construction.

Markup contract (the browser tests rely on it): the form has
`data-calculator="NAME"`; each input's `name` is the CLI flag in snake_case; the result
element has `data-result` and carries the result as JSON in `data-result-json`.
"""

from __future__ import annotations

import json
from typing import Any

from calculators.commands import CALCULATORS as DECLARED
from calculators.web.forms import Field, FieldError, argv_for, calculator, clean, compute
from calculators.web.render import notes_html, to_csv, warnings_html
from calculators.web.text import escape, percent_encode, shell_quote


def evaluate(name: str, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Result, HTML, CSV and the equivalent command line; or the field errors."""
    calc = calculator(name)
    try:
        result = compute(name, inputs)
    except FieldError as e:
        return {"ok": False, "field": e.field, "message": str(e)}
    return {
        "ok": True,
        "result": result,
        "result_json": json.dumps(result, allow_nan=False),
        "html": render_result(name, result),
        "csv": (DECLARED[name].csv or to_csv)(result),
        "tables": DECLARED[name].tables(result) if DECLARED[name].tables else {},
        "command": command_line(argv_for(calc, clean(calc, inputs or {}))),
    }


def render_result(name: str, result: dict[str, Any]) -> str:
    """The result as HTML: its warnings, what the calculator declares (a summary, an SVG
    chart where one helps, tables), and notes on what could not be computed."""
    html = DECLARED[name].html
    if html is None:
        raise KeyError(f"calculator {name!r} has no page")
    return warnings_html(result) + html(result) + notes_html(result)


def run_json(name: str, inputs_json: str) -> str:
    """The worker's entry point: JSON inputs in, `evaluate`'s answer as JSON out."""
    return json.dumps(evaluate(name, json.loads(inputs_json)), allow_nan=False)


def command_line(argv: list[str]) -> str:
    """The shell command for `argv`."""
    return "python -m calculators " + " ".join(shell_quote(a) for a in argv) + " --json"


def _file_control(fid: str, f: Field, value: Any, described: str, site_root: str) -> str:
    """A file picker that starts on the example file (a path under docs/, served by the
    site at the same path): the page computes with the example until the reader picks a
    file of their own, which the browser reads locally."""
    example = str(value)
    name = example.rsplit("/", 1)[-1]
    # records (leakage, compare) come as text, JSON lines or CSV; a model export as JSON
    accept = ".json" if name.endswith(".json") else ".txt,.jsonl,.csv"
    return (
        f'<input id="{fid}" name="{f.name}" type="file" accept="{accept}" '
        f'data-example="{escape(example)}" {described}>'
        f'<small class="kd-file" data-file-current>Computing with the example file '
        f'<a href="{escape(site_root + example)}" download>{escape(name)}</a>; '
        "a file you pick is read by your browser and never leaves it.</small>"
    )


def _field_html(form_id: str, f: Field, value: Any, site_root: str = "") -> str:
    fid = f"{form_id}-{f.name}"
    unit = f' <span class="kd-unit">({escape(f.unit)})</span>' if f.unit else ""
    described = f'aria-describedby="{fid}-help {fid}-error"'
    if f.kind == "file":
        control = _file_control(fid, f, value, described, site_root)
    elif f.kind == "choice":
        value = dict(f.aliases).get(value, value)
        options = "".join(
            f'<option value="{escape(c)}"{" selected" if c == value else ""}>{escape(c)}</option>'
            for c in f.choices
        )
        # retired names, so that an old shared link still selects what it meant
        aliases = f" data-aliases='{escape(json.dumps(dict(f.aliases)))}'" if f.aliases else ""
        control = f'<select id="{fid}" name="{f.name}"{aliases} {described}>{options}</select>'
    elif f.kind == "bool":
        checked = " checked" if value else ""
        control = f'<input id="{fid}" name="{f.name}" type="checkbox"{checked} {described}>'
    elif f.kind == "lines":
        text = "" if value is None else str(value)
        control = (
            f'<textarea id="{fid}" name="{f.name}" rows="3" spellcheck="false" {described}>'
            f"{escape(text)}</textarea>"
        )
    else:
        text = "" if value is None else str(value)
        mode = {"int": "numeric", "float": "decimal"}.get(f.kind, "text")
        bounds = ""
        if f.minimum is not None:
            bounds += f' data-min="{f.minimum}"'
        if f.maximum is not None:
            bounds += f' data-max="{f.maximum}"'
        placeholder = ' placeholder="optional"' if f.optional else ""
        control = (
            f'<input id="{fid}" name="{f.name}" type="text" inputmode="{mode}" '
            f'value="{escape(text)}" autocomplete="off" spellcheck="false"{bounds}'
            f"{placeholder} {described}>"
        )
    return (
        f'<div class="kd-field" data-field="{f.name}">'
        f'<label for="{fid}">{escape(f.label)}{unit}</label>{control}'
        f'<small class="kd-help" id="{fid}-help">{escape(f.help)}</small>'
        f'<small class="kd-error" id="{fid}-error" role="alert" hidden></small></div>'
    )


def _table_links(name: str, tables: dict[str, str]) -> str:
    """A download link per CSV table the calculator declares beyond its main CSV."""
    return "".join(
        f'<a data-download="csv:{escape(stem)}" download="{name}-{escape(stem)}.csv" '
        f'href="data:text/csv;charset=utf-8,{percent_encode(text)}">{escape(stem)} (CSV)</a> '
        for stem, text in tables.items()
    )


def form_html(
    name: str, inputs: dict[str, Any] | None = None, *, form_id: str = "", site_root: str = ""
) -> str:
    """The form for calculator `name` with `inputs` preset and its result prerendered.

    `site_root` is the site's root relative to the page ("../../"): a file input links its
    example file there. Raises FieldError for preset inputs the calculator rejects (a page
    must not ship one).
    """
    calc = calculator(name)
    inputs = dict(inputs or {})
    answer = evaluate(name, inputs)
    if not answer["ok"]:
        raise FieldError(answer["field"], answer["message"])
    values = {**calc.defaults(), **inputs}
    form_id = form_id or f"kd-{name}"
    fields = "".join(_field_html(form_id, f, values.get(f.name), site_root) for f in calc.fields)
    preset = escape(json.dumps(inputs, sort_keys=True))
    json_url = "data:application/json;charset=utf-8," + percent_encode(answer["result_json"])
    csv_url = "data:text/csv;charset=utf-8," + percent_encode(answer["csv"])
    return (
        f'<form class="kd-calc" id="{form_id}" data-calculator="{name}" '
        f'data-preset="{preset}" novalidate autocomplete="off">'
        f'<fieldset class="kd-fields"><legend>{escape(calc.title)}: inputs</legend>{fields}'
        "</fieldset>"
        f'<div class="kd-result" data-result data-state="prerendered" aria-live="polite" '
        f'data-result-json="{escape(answer["result_json"])}">{answer["html"]}</div>'
        '<p class="kd-form-error" role="alert" hidden></p>'
        '<p class="kd-actions">'
        f'<a data-share href="?calc={name}">Link to these inputs</a> '
        f'<a data-download="json" download="{name}.json" '
        f'href="{json_url}">JSON</a> '
        f'<a data-download="csv" download="{name}.csv" '
        f'href="{csv_url}">CSV</a> '
        f"{_table_links(name, answer['tables'])}"
        '<span class="kd-status" data-status>computed at build time</span>'
        '<progress class="kd-progress" data-progress max="1" value="0" hidden></progress></p>'
        f'<p class="kd-command">Same result on the command line: '
        f"<code data-command>{escape(answer['command'])}</code></p>"
        "</form>"
    )
