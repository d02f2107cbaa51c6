"""MkDocs hook: calculators embedded in pages, figures computed at build time, vendored assets.

Kept under docs/hooks/ and excluded from the site by `exclude_docs`.

In a page's Markdown:

    ```calculator kv-cache
    id: ex
    model: qwen3-8b
    context: 32768
    ```

embeds the kv-cache form with those inputs preset and its result prerendered (`show: no`
computes the example without a form). `[[ex:total_bytes|gib]]` anywhere on the page is the
figure at that path of example `ex`'s result (dotted; a list is indexed by position or by
its elements' `id` or `gpu`: `lines.kv_cache.bytes`, `cards.h200.max_context`),
formatted; and `[[spec:qwen3-8b:moe.experts_per_token|int]]`,
`[[preset:qwen3-8b:hf_repo]]` read the model and its source,
`[[kvformat:fp8:bits_per_value]]` a KV format, `[[format:nf4:bits]]` a weights format,
`[[gpu:h200:memory_vendor]]` the GPU catalog, `[[report:FILE.json:measured.runs]]` a
committed probe report, `[[data:evaluation/digits/seeds.json:a|list]]` any committed JSON
under docs/data (also inside a calculator block's values), `[[margin:train-step:peak:cpu:max|g4]]`
the margins of the committed probe reports. Formats: gib, gb, int, count, f1, f2, g4,
pct, pct1, raw, fits (a boolean as "fits" / "does not fit"), list (numbers joined by
commas), len (a list's length). Directives on a line of their
own: `[[fields NAME]]` (the inputs explained), `[[command NAME key=value ...]]`,
`[[table calculators|presets|gpus|formats]]`, `[[margins]]` (the margins table),
`[[mlperf]]` (the published time-to-train rows), `[[serving-logs]]` (public vLLM and SGLang
startup logs against `calculators.serving`),
`[[validation-reports]]`, `[[checklist FILE.json]]` (a committed report's checks drawn as
a checklist), `[[protocol PATH-protocol.json]]` (a protocol under docs/data/ as task lists,
with its JSON and a Markdown copy, written next to it in the site, to download), and
`[[figure NAME key=value ... caption="..."]]`: a chart of
`calculators.figures` drawn as SVG into the page (no JavaScript needed), captioned by
`caption` or else by the figure's own first docstring line; its arguments may hold
references (`points=gguf-q8_0:[[data:...]]`), resolved first.
No figure is typed by hand: a reference that cannot be resolved fails the build.
"""

from __future__ import annotations

import functools
import html as html_module
import json
import mimetypes
import posixpath
import re
import shlex
import shutil
import subprocess
import zipfile
from fractions import Fraction
from html import escape
from io import BytesIO
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

from calculators.figures import FIGURES, figure_caption, figure_svg
from calculators.memory.formats import FORMATS
from calculators.memory.gpus import GPUS, get_gpu
from calculators.memory.kv_formats import KV_FORMATS
from calculators.model.presets import get_preset, load_preset, preset_ids
from calculators.model.spec import ModelSpec
from calculators.units import format_count, format_gib, format_headroom
from calculators.web import CALCULATORS, compute, form_html
from calculators.web import forms as web_forms
from calculators.web.forms import argv_for, calculator, clean
from calculators.web.page import command_line
from calculators.web.protocol import item_count, protocol_markdown
from calculators.web.render import bar_chart_svg
from probes.margins import Margin, margin_markdown, margin_summary, phase_ratios

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules"
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
KATEX_FILES = ("katex.min.css",)

_BLOCK = re.compile(r"```calculator[ \t]+([a-z-]+)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_REF = re.compile(r"\[\[([a-z0-9_-]+):([^\]|]+)(?:\|([a-z0-9]+))?\]\]")
_DIRECTIVE = re.compile(
    r"^\[\[(fields|command|table|figure|checklist|protocol|margins|mlperf|serving-logs|validation-reports)\b"
    r"([^\]]*)\]\]$",
    re.M,
)

_FIGURE_LINE = re.compile(r"^\[\[figure\b.*\]\]$", re.M)

_forms: dict[str, list[str]] = {}

# `mkdocs serve` guesses types with mimetypes: a module worker refuses .mjs served as
# application/octet-stream, and WebAssembly streaming wants application/wasm.
mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("application/wasm", ".wasm")


_FORMATS: dict[str, Any] = {
    "raw": lambda v: f"{v:g}" if isinstance(v, float) else str(v),
    "gib": format_gib,
    # visible memory minus an estimate, to a tenth of a GiB (calculators.units says why)
    "headroom": format_headroom,
    "gb": lambda v: f"{v / 10**9:,.2f} GB",
    "int": lambda v: f"{v:,}",
    "count": format_count,
    "f1": lambda v: f"{v:,.1f}",
    "f2": lambda v: f"{v:,.2f}",
    "g4": lambda v: f"{v:.4g}",
    "pct": lambda v: f"{v:.0%}",
    "pct1": lambda v: f"{v:.1%}",
    "fits": lambda v: _verdict(v),
    # how many: the items a list holds (the planted leaks of an example file)
    "len": lambda v: f"{len(v):,}",
    # a list of numbers as a calculator's comma-separated input: every digit kept
    "list": lambda v: ",".join(repr(x) if isinstance(x, float) else str(x) for x in v),
}


def _verdict(value: Any) -> str:
    if not isinstance(value, bool):
        raise ValueError(f"format fits wants true or false, got {value!r}")
    return "fits" if value else "does not fit"


def _fmt(value: Any, fmt: str | None, where: str) -> str:
    if (fmt or "raw") not in _FORMATS:
        raise PluginError(f"{where}: unknown format {fmt!r}")
    return _FORMATS[fmt or "raw"](value)


def _item(items: list[Any], key: str) -> Any:
    """A list's element by index, or the object whose `id` or `gpu` is `key`: a page
    names `cards.h200`, not the H200's place in the catalog, which may change."""
    if key.isdigit():
        return items[int(key)]
    for item in items:
        if isinstance(item, dict) and key in (item.get("id"), item.get("gpu")):
            return item
    raise KeyError(key)


def _path(value: Any, path: str, where: str) -> Any:
    for key in path.split("."):
        try:
            value = _item(value, key) if isinstance(value, list) else value[key]
        except (KeyError, IndexError, ValueError, TypeError):
            raise PluginError(f"{where}: no {path!r} in the result") from None
    return value


def _options(body: str, where: str) -> dict[str, str]:
    """`key: value` lines; a key given again adds a line to its value, as a `lines`
    input takes one value per line (`phase:` twice is two phases)."""
    out: dict[str, str] = {}
    for line in body.splitlines():
        if line.strip():
            key, sep, value = line.partition(":")
            if not sep:
                raise PluginError(f"{where}: expected 'key: value', got {line!r}")
            key = key.strip()
            out[key] = f"{out[key]}\n{value.strip()}" if key in out else value.strip()
    return out


def _pairs(text: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in text.split())


def _spec(model: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(model), name=model)


def _figure(arg: str) -> str:
    """`NAME key=value ... caption="..."` as a captioned figure: HTML on a line of its own,
    blank lines around it, so that Markdown keeps it as one raw block."""
    words = shlex.split(arg)  # a quoted caption keeps its spaces
    if not words:
        raise ValueError(f"name a figure: one of {', '.join(FIGURES)}")
    name, pairs = words[0], words[1:]
    arguments: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {pair!r}")
        arguments[key] = value
    caption = arguments.pop("caption", None)
    svg = figure_svg(name, arguments)
    text = figure_caption(name) if caption is None else caption
    return f'\n<figure class="kd-figure">{svg}<figcaption>{escape(text)}</figcaption></figure>\n'


def _fields_table(name: str) -> str:
    calc = calculator(name)
    rows = []
    for f in calc.fields:
        bounds = ""
        if f.minimum is not None or f.maximum is not None:
            bounds = f"{f.minimum if f.minimum is not None else ''} to "
            bounds += f"{f.maximum:,}" if f.maximum is not None else ""
        if f.choices:
            shown = ", ".join(f.choices[:4])
            more = len(f.choices) - 4
            bounds = "one of " + shown + (f" and {more} more" if more > 0 else "")
        # a `lines` example holds one value per line: a table cell needs them on one
        default = "" if f.default in (None, "") else str(f.default).replace("\n", "<br>")
        rows.append(
            f"| `{f.name}` | `{f.flag}` | {f.label} | {f.unit} | {default} | {bounds} | {f.help} |"
        )
    head = "| input | CLI flag | label | unit | default | bounds | what it is |\n"
    return head + "|---|---|---|---|---|---|---|\n" + "\n".join(rows)


def _reference_table(which: str) -> str:
    if which == "presets":
        rows = []
        for pid in preset_ids():
            p = get_preset(pid)
            spec = _spec(pid)
            rows.append(
                f"| `{pid}` | [{p.hf_repo}]({p.config_source}) | {spec.model_type} | "
                f"{spec.num_layers} | {spec.num_heads} | {spec.num_kv_heads} | {spec.head_dim} |"
            )
        return (
            "| preset | config.json | model_type | layers | heads | KV heads | head_dim |\n"
            "|---|---|---|---|---|---|---|\n" + "\n".join(rows)
        )
    if which == "gpus":
        rows = [
            f"| `{g.id}` | {g.memory_vendor} | {format_gib(g.visible_bytes)} | "
            f"{g.bandwidth_gb_s:,.0f} | {g.bf16_dense_tflops:,.1f} | "
            f"{'-' if g.fp8_dense_tflops is None else f'{g.fp8_dense_tflops:,.1f}'} |"
            for g in GPUS
        ]
        return (
            "| GPU | vendor memory | visible to torch | bandwidth, GB/s | BF16 dense TFLOPS | "
            "FP8 dense TFLOPS |\n|---|---|---|---|---|---|\n" + "\n".join(rows)
        )
    if which == "calculators":
        rows = "\n".join(
            f"| [{c.title}]({name}.md) | {c.summary} |" for name, c in CALCULATORS.items()
        )
        return "| calculator | what it answers |\n|---|---|\n" + rows
    if which == "formats":
        weights = "\n".join(f"| `{fid}` | {f.name} |" for fid, f in FORMATS.items())
        kv = "\n".join(
            f"| `{fid}` | {f.name} | {f.bits_per_value:g} |" for fid, f in KV_FORMATS.items()
        )
        return (
            "### Weights formats\n\n| id | format |\n|---|---|\n"
            + weights
            + "\n\n### KV cache formats\n\n| id | format | bits per value |\n|---|---|---|\n"
            + kv
        )
    raise PluginError(f"unknown table {which!r}")


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return escape(str(text)).replace("|", "&#124;").replace("\n", " ")


def _ratios(report: dict[str, Any]) -> str:
    """'peak 1.00; 9 ratios from 0.9996 to 1.002', or each ratio when there are few."""
    ratio = report.get("ratio")
    if not isinstance(ratio, dict) or not ratio:
        return ""
    numbers = {k: v for k, v in ratio.items() if isinstance(v, int | float)}
    if len(numbers) <= 3 or len(numbers) != len(ratio):
        return ", ".join(f"{escape(str(k))} {_cell(v)}" for k, v in ratio.items())
    low, high = min(numbers.values()), max(numbers.values())
    head = f"peak {numbers['peak']:.4g}; " if "peak" in numbers else ""
    return f"{head}{len(numbers)} ratios from {low:.4g} to {high:.4g}"


def _get(report: dict[str, Any], *path: str) -> Any:
    value: Any = report
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _title(name: str, report: dict[str, Any]) -> str:
    probe = report.get("probe", name)
    return probe.get("name", name) if isinstance(probe, dict) else str(probe)


def render_report(name: str, report: dict[str, Any]) -> str:
    """One probe report as Markdown, collapsed: the estimate against the measurement, then
    every field.

    Generic on purpose: any JSON object renders; the comparison table appears when
    `estimate`, `measured` (and `ratio`, `units`) are objects keyed by the same names.
    """
    body = []
    estimate, measured = report.get("estimate"), report.get("measured")
    if isinstance(estimate, dict) and isinstance(measured, dict):
        ratio = report.get("ratio") if isinstance(report.get("ratio"), dict) else {}
        units = report.get("units") if isinstance(report.get("units"), dict) else {}
        body.append("| quantity | estimate | measured | unit | measured / estimate |")
        body.append("|---|---|---|---|---|")
        for key in sorted(set(estimate) | set(measured)):
            row = [estimate.get(key, ""), measured.get(key, ""), units.get(key, "")]
            r = ratio.get(key)
            body.append(
                f"| `{escape(key)}` | "
                + " | ".join(_cell(v) for v in row)
                + f" | {'' if r is None else _cell(r)} |"
            )
        body.append("")
    body.append("| field | value |\n|---|---|")
    for key, value in report.items():
        body.append(f"| `{escape(str(key))}` | <code>{_cell(value)}</code> |")
    title = f"{_title(name, report)}: {report.get('status', 'no status')} ({name})"
    indented = "\n".join(f"    {line}" if line else "" for line in "\n".join(body).splitlines())
    return f'??? info "{escape(title)}"\n\n{indented}\n'


def _summary(reports: list[tuple[str, dict[str, Any]]]) -> str:
    rows = ["| report | probe | model | status | device | measured / estimate | finished |"]
    rows.append("|---|---|---|---|---|---|---|")
    for name, r in reports:
        device = _get(r, "environment", "device_name") or _get(r, "environment", "device") or ""
        rows.append(
            f"| `{escape(name)}` | {escape(_title(name, r))} | "
            f"{_cell(_get(r, 'inputs', 'model') or '')} | {_cell(r.get('status', ''))} | "
            f"{_cell(device)} | {_ratios(r)} | {_cell(r.get('finished_at', ''))} |"
        )
    return "\n".join(rows) + "\n"


def _margins(docs_dir: Path) -> list[Margin]:
    """The margins the committed probe reports support (`probes.margins`)."""
    return margin_summary(phase_ratios(docs_dir / "data" / "validation"))


def _mlperf_table(docs_dir: Path) -> dict[str, Any]:
    path = docs_dir / "data" / "mlperf" / "raw_table.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise PluginError(f"{path}: {e} (python -m benchmarks.mlperf.raw_table)") from None


def _mlperf(docs_dir: Path, arg: str = "") -> str:
    """The published time-to-train rows (`benchmarks/mlperf/raw_table.py`).

    `[[mlperf]]`: per benchmark, the submissions grouped by system size and labelled by
    software stack, each score to the digits its runs support (`shown_decimals` of its
    standard error), a chart of GPU-hours per benchmark, every run collapsed.
    `[[mlperf scaling]]`: one sentence per pair of submissions that share benchmark,
    accelerator and stack at two system sizes (`scaling_pairs`).
    `[[mlperf untimed]]`: per benchmark, the least and the greatest logged initialisation
    before the clock (`mean_init_minutes`) as a share of the timed score."""
    from calculators.planning.target_cost import scaling_pairs, shown_decimals, submissions

    if arg.strip() == "untimed":
        lines = []
        for bench in sorted({s.benchmark for s in submissions()}):
            known = sorted(
                (
                    s
                    for s in submissions()
                    if s.benchmark == bench and s.score_minutes and s.mean_init_minutes is not None
                ),
                key=lambda s: s.mean_init_minutes / s.score_minutes,  # type: ignore[operator]
            )
            if len(known) < 2:
                continue
            lo, hi = known[0], known[-1]
            assert lo.mean_init_minutes is not None and hi.mean_init_minutes is not None
            assert lo.score_minutes and hi.score_minutes
            low = lo.mean_init_minutes / lo.score_minutes
            lines.append(
                f"- `{bench}`: from {lo.mean_init_minutes:,.2f} minutes ({escape(lo.id)}, "
                f"{'under 1%' if low < 0.005 else f'{low:.0%}'} of its timed run) to "
                f"{hi.mean_init_minutes:,.2f} minutes ({escape(hi.id)}, "
                f"{hi.accelerator_count} accelerators, "
                f"{hi.mean_init_minutes / hi.score_minutes:.0%} of its timed run)."
            )
        if not lines:
            raise ValueError("no benchmark with two submissions that log init_start")
        return "\n".join(lines) + "\n"

    if arg.strip() == "scaling":
        lines = []
        for p in scaling_pairs():
            sd = shown_decimals(p.speedup_standard_error)
            rd = shown_decimals(p.gpu_hours_ratio_standard_error)
            lines.append(
                f"- `{p.benchmark}`, {escape(p.accelerator)}, one stack "
                f"({escape(p.framework)}): {p.large_count} accelerators instead of "
                f"{p.small_count} ({p.size_ratio:g} times as many) reached the target "
                f"{p.speedup:,.{sd}f} times sooner, so the run took {p.gpu_hours_ratio:,.{rd}f} "
                "times the GPU-hours."
            )
        if not lines:
            raise ValueError("no pair of one stack at two system sizes in the table")
        return "\n".join(lines) + "\n"
    if arg.strip():
        raise ValueError(
            f"expected [[mlperf]], [[mlperf scaling]] or [[mlperf untimed]], got {arg!r}"
        )

    data = _mlperf_table(docs_dir)
    subs = data["submissions"]
    targets = {(t["round"], t["benchmark"]): t for t in data["targets"]}
    accel = {(r["benchmark"], r["submitter"], r["system"]): r["accelerator"] for r in data["rows"]}
    parts = []
    for bench in sorted({s["benchmark"] for s in subs}):
        group = [s for s in subs if s["benchmark"] == bench]
        target = "; ".join(
            sorted({targets[(s["round"], bench)]["text"] for s in group if s["round"]})
        )
        parts.append(f"#### `{bench}`: {escape(target)}\n")
        for size in sorted({s["accelerator_count"] for s in group}):
            rows = sorted(
                (s for s in group if s["accelerator_count"] == size),
                key=lambda s: (s["score_minutes"] is None, s["score_minutes"] or 0.0),
            )
            parts.append(
                f"Systems of {size} accelerators:\n\n"
                "| round | submitter | system | accelerators | software stack | runs | "
                "minutes to target (score, &plusmn; standard error) | GPU-hours to target | "
                "logged initialisation before the clock, minutes |"
                "\n|---|---|---|---|---|---:|---:|---:|---:|"
            )
            for s in rows:
                se = s["score_standard_error_minutes"]
                d = shown_decimals(se)
                h = shown_decimals(None if se is None else se / 60 * s["accelerator_count"])
                score = (
                    "no valid score"
                    if s["score_minutes"] is None
                    else f"{s['score_minutes']:,.{d}f}"
                    + ("" if se is None else f" &plusmn; {se:,.{d}f}")
                )
                hours = "" if s["score_gpu_hours"] is None else f"{s['score_gpu_hours']:,.{h}f}"
                init = "" if s["mean_init_minutes"] is None else f"{s['mean_init_minutes']:,.2f}"
                parts.append(
                    f"| {s['round']} | {escape(s['submitter'])} | {escape(s['system'])} | "
                    f"{escape(accel.get((bench, s['submitter'], s['system']), ''))} x "
                    f"{s['accelerator_count']} | {escape(s['framework'])} | "
                    f"{s['successful_runs']} of {s['result_files']} | {score} | {hours} | "
                    f"{init} |"
                )
            parts.append("")
        scored = sorted(
            (s for s in group if s["score_gpu_hours"] is not None),
            key=lambda s: s["score_gpu_hours"],
        )
        chart = bar_chart_svg(
            [
                (
                    f"{s['submitter']} {s['system']} ({s['accelerator_count']} accelerators)",
                    s["score_gpu_hours"],
                )
                for s in scored
            ],
            title=f"{bench}: GPU-hours to the quality target, by system",
            value_format=lambda v: f"{v:,.3g} GPU-hours",
            unit_label="accelerator-hours to target (score minutes / 60 x accelerators)",
        )
        parts.append(
            f'<figure class="kd-figure">{chart}<figcaption>{escape(bench)}: GPU-hours to '
            "the target by system, from the scores above; bars of different system sizes "
            "or stacks do not compare the hardware alone</figcaption></figure>\n"
        )
    runs = [
        "| benchmark | submitter | system | accelerators | run | minutes | GPU-hours | "
        "reached | source |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    # One run is one measurement to the millisecond; two decimals of a minute are shown.
    runs += [
        f"| `{r['benchmark']}` | {escape(r['submitter'])} | {escape(r['system'])} | "
        f"{r['accelerator_count']} | {r['run']} | {r['minutes_to_train']:,.2f} | "
        f"{r['gpu_hours_to_target']:,.2f} | {r['quality_reached']:.4f} | "
        f"[{escape(r['source_repository'])}]"
        f"(https://github.com/{r['source_repository']}/blob/{r['source_commit']}/"
        f"{r['source_path']}) |"
        for r in data["rows"]
    ]
    body = "\n".join(f"    {line}" for line in runs)
    excluded = data.get("excluded") or []
    note = "".join(
        f"    Not a row: {escape(e['source_path'])}: {escape(e['reason'])}.\n\n" for e in excluded
    )
    return (
        "\n".join(parts) + f'\n??? info "Every run ({len(data["rows"])} rows, each with its log; '
        f'{len(excluded)} run(s) that did not reach the target)"\n\n{note}{body}\n'
    )


def _validation_reports(docs_dir: Path) -> str:
    reports: list[tuple[str, dict[str, Any]]] = []
    schemas: list[str] = []
    for path in sorted((docs_dir / "data" / "validation").glob("*.json")):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise PluginError(f"validation report {path.name} cannot be read: {e}") from None
        if not isinstance(report, dict):
            raise PluginError(f"validation report {path.name} is not a JSON object")
        if "$schema" in report:  # the reports' JSON Schema, not a report
            schemas.append(path.name)
        else:
            reports.append((path.name, report))
    note = "".join(
        f"The reports follow the JSON Schema [`{n}`](../data/validation/{n}).\n\n" for n in schemas
    )
    if not reports:
        return note + (
            '!!! note "No reports yet"\n\n'
            "    No probe report has been published. Run a probe on a GPU, e.g. "
            "`python -m probes kv-cache --model qwen3-8b --context 8192 --batch 4 "
            "--out report.json`, and add the JSON report it writes to "
            "`docs/data/validation/`; it appears here on the next build.\n"
        )
    # The reports' every field stays out of the search index: the summary table above
    # finds a report; its raw numbers were two thirds of the index every page loads.
    details = "\n".join(render_report(n, r) for n, r in reports)
    return (
        note
        + f"{len(reports)} reports.\n\n"
        + _summary(reports)
        + "\n"
        + f'<div class="kd-reports" data-search-exclude markdown>\n\n{details}\n</div>\n'
    )


def _protocol_file(docs_dir: Path, name: str) -> Path:
    path = docs_dir / "data" / name
    if not name.endswith("-protocol.json") or ".." in name or not path.is_file():
        raise ValueError(f"no protocol {name!r} (docs/data/...-protocol.json)")
    return path


def _protocol(docs_dir: Path, name: str, where: str, site_root: str) -> str:
    """The checklist on its page, and links to its JSON and to the Markdown copy that
    `on_post_build` writes next to it."""
    data = json.loads(_protocol_file(docs_dir, name).read_text(encoding="utf-8"))
    body = protocol_markdown(data, page=where)
    json_url, md_url = f"{site_root}data/{name}", f"{site_root}data/{name.removesuffix('.json')}.md"
    md_name = Path(md_url).name
    return (
        f'<p class="kd-downloads">Download: <a href="{md_url}" download="{md_name}">Markdown</a>'
        f' &middot; <a href="{json_url}" download>JSON</a> ({item_count(data)} items)</p>\n\n'
        + body
    )


def on_post_build(config: Any) -> None:
    # A protocol's Markdown copy is written into the built site, not docs/: MkDocs would
    # render a .md file under docs/ as a page instead of serving it as a file.
    docs_dir, site_dir = Path(config["docs_dir"]), Path(config["site_dir"])
    for path in sorted((docs_dir / "data").rglob("*-protocol.json")):
        rel = path.relative_to(docs_dir).with_suffix(".md")
        data = json.loads(path.read_text(encoding="utf-8"))
        (site_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (site_dir / rel).write_text(protocol_markdown(data, page=None), encoding="utf-8")


def on_config(config: Any) -> Any:
    missing = [f for f in PYODIDE_FILES if not (NODE / "pyodide" / f).is_file()]
    missing += [f for f in KATEX_FILES if not (NODE / "katex" / "dist" / f).is_file()]
    if missing:
        raise PluginError(f"node_modules lacks {', '.join(missing)}: run `npm ci` (make node)")
    # A calculator's example file is a path under docs/, where the site serves it too.
    web_forms.FILE_ROOT = str(config["docs_dir"])
    return config


def _calculators_zip() -> bytes:
    """The calculators package as the browser loads it: sources, data and bytecode."""
    return _with_bytecode(_source_zip())


@functools.cache
def _with_bytecode(source: bytes) -> bytes:
    # Compiled by the pinned Pyodide itself (docs/hooks/compile_pyc.mjs), once per
    # content: `mkdocs serve` rebuilds on every edit and Pyodide takes a second to start.
    node = shutil.which("node")
    if node is None:
        raise PluginError("node is needed to compile the calculators: install Node.js")
    proc = subprocess.run(
        [node, str(Path(__file__).with_name("compile_pyc.mjs"))],
        input=source,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise PluginError(f"compiling the calculators in Pyodide failed: {proc.stderr.decode()}")
    return proc.stdout


def _source_zip() -> bytes:
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted((ROOT / "calculators").rglob("*")):
            if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
                info = zipfile.ZipInfo(str(path.relative_to(ROOT)), (2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, path.read_bytes())
    return buf.getvalue()


# What a downloaded lesson needs beside it, from outside docs/ (site path: repository
# path): the corpus tinylm reads and the memory probe lesson 7 imports.
LESSON_FILES = {
    "learn/corpus/train.txt": "probes/data/corpus/train.txt",
    "learn/corpus/eval.txt": "probes/data/corpus/eval.txt",
    "learn/probes/memory.py": "probes/memory.py",
}


def on_files(files: Files, config: Any) -> Files:
    for name in PYODIDE_FILES:
        files.append(
            File.generated(
                config, f"assets/vendor/pyodide/{name}", abs_src_path=str(NODE / "pyodide" / name)
            )
        )
    katex = NODE / "katex" / "dist"
    for path in [katex / f for f in KATEX_FILES] + sorted((katex / "fonts").glob("*.woff2")):
        rel = path.relative_to(katex).as_posix()
        files.append(File.generated(config, f"assets/vendor/katex/{rel}", abs_src_path=str(path)))
    files.append(File.generated(config, "assets/kd/calculators.zip", content=_calculators_zip()))
    for dest, src in LESSON_FILES.items():
        files.append(File.generated(config, dest, abs_src_path=str(ROOT / src)))
    # lesson 10 imports the sampling code: the sources (bytecode of one Python only would
    # not load in another), read by Python's zipimport from beside the notebook
    files.append(File.generated(config, "learn/calculators.zip", content=_source_zip()))
    return files


_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")


def _split(markdown: str) -> list[tuple[str, str]]:
    """('text' | 'code' | 'calc', chunk) in order: fenced code is left alone, a top-level
    ```calculator fence is a calculator block."""
    out: list[tuple[str, str]] = []
    lines = markdown.splitlines(keepends=True)
    i = 0
    text: list[str] = []
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            text.append(lines[i])
            i += 1
            continue
        fence = m.group(1)
        j = i + 1
        while j < len(lines) and not re.match(rf"^{re.escape(fence)}[{fence[0]}]*\s*$", lines[j]):
            j += 1
        out.append(("text", "".join(text)))
        text = []
        kind = "calc" if fence == "```" and m.group(2).startswith("calculator ") else "code"
        out.append((kind, "".join(lines[i : j + 1])))
        i = j + 1
    out.append(("text", "".join(text)))
    return out


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    where = page.file.src_uri
    examples: dict[str, dict[str, Any]] = {}
    forms: list[str] = []
    site_root = "../" * page.url.count("/")  # "evaluation/evaluation-set/" -> "../../"

    def block(chunk: str) -> str:
        m = _BLOCK.match(chunk)
        if not m:
            raise PluginError(f"{where}: malformed calculator block {chunk[:40]!r}")
        name = m.group(1)
        if name not in CALCULATORS:
            raise PluginError(f"{where}: unknown calculator {name!r}")
        # A value may quote a committed file: `a: [[data:evaluation/digits/seeds.json:a|list]]`
        opts = _options(_REF.sub(ref, m.group(2)), where)
        ex_id = opts.pop("id", None)
        show = opts.pop("show", "yes") != "no"
        try:
            result = compute(name, opts)
            form_id = f"kd-{name}-{len(forms)}"
            html = form_html(name, opts, form_id=form_id, site_root=site_root) if show else ""
        except ValueError as e:
            raise PluginError(f"{where}: calculator {name}: {e}") from None
        if ex_id:
            examples[ex_id] = result
        if not show:
            return ""
        forms.append(html)
        return f'\n<div class="kd-slot" data-slot="{len(forms) - 1}"></div>\n'

    def directive(m: re.Match[str]) -> str:
        kind, arg = m.group(1), m.group(2).strip()
        try:
            if kind == "fields":
                return _fields_table(arg)
            if kind == "command":
                name, _, rest = arg.partition(" ")
                calc = calculator(name)
                return f"```sh\n{command_line(argv_for(calc, clean(calc, _pairs(rest))))}\n```"
            if kind == "table":
                return _reference_table(arg)
            if kind == "figure":
                return _figure(arg)
            if kind == "checklist":  # [[checklist FILE.json]]: a committed report's checks
                from calculators.web.render import checklist_svg

                name, *rest = shlex.split(arg) or [""]
                if any(not w.startswith("caption=") for w in rest) or len(rest) > 1:
                    raise ValueError(f'expected FILE.json [caption="..."], got {arg!r}')
                caption = rest[0].removeprefix("caption=") if rest else None
                report = Path(config["docs_dir"]) / "data" / "validation" / name
                if "/" in name or not name.endswith(".json") or not report.is_file():
                    raise ValueError(f"no report {name!r} in docs/data/validation")
                r = json.loads(report.read_text(encoding="utf-8"))
                checks = r.get("details", {}).get("checks")
                if not isinstance(checks, list):
                    raise ValueError(f"{name} has no details.checks: not a checklist report")
                env, probe = r.get("environment", {}), r.get("probe", {}).get("name", "probe")
                text = caption or (
                    f"{probe} on {env.get('device_name')}, torch {env.get('torch')}, "
                    f"{str(r.get('started_at'))[:10]}: {r.get('command_line')}"
                )
                svg = checklist_svg(checks, title=f"{probe} checks of {name}")
                return (
                    f'\n<figure class="kd-figure">{svg}'
                    f"<figcaption>{escape(text)}</figcaption></figure>\n"
                )
            if kind == "protocol":  # [[protocol adaptation/fine-tuning-protocol.json]]
                return _protocol(Path(config["docs_dir"]), arg, where, site_root)
            if kind == "margins":
                return margin_markdown(_margins(Path(config["docs_dir"])))
            if kind == "mlperf":
                return _mlperf(Path(config["docs_dir"]), arg)
            if kind == "serving-logs":  # public startup logs against the serve predictor
                from calculators.serving.logs_page import serving_logs_markdown

                return serving_logs_markdown(
                    str(Path(config["docs_dir"]) / "data" / "serving-logs" / "records.json")
                )
        except ValueError as e:
            raise PluginError(f"{where}: [[{kind} {arg}]]: {e}") from None
        return _validation_reports(Path(config["docs_dir"]))

    def ref(m: re.Match[str]) -> str:
        source, path, fmt = m.group(1), m.group(2), m.group(3)
        label = f"{where}: [[{m.group(0)[2:-2]}]]"
        try:
            return _resolve(source, path, fmt, label, examples, Path(config["docs_dir"]))
        except (ValueError, AttributeError, TypeError) as e:
            raise PluginError(f"{label}: {e}") from None

    def text(chunk: str) -> str:
        codes: list[str] = []

        def keep(m: re.Match[str]) -> str:
            codes.append(m.group(0))
            return f"\x00{len(codes) - 1}\x00"

        chunk = _INLINE_CODE.sub(keep, chunk)
        # A figure's argument may quote a committed file, as a calculator block's value may
        # (`points=gguf-q8_0:[[data:adaptation/llama3-8b-scoreboard.json:rows.q8_0.kld_mean]]`):
        # resolved first, so that the directive sees the numbers
        chunk = _FIGURE_LINE.sub(lambda m: _REF.sub(ref, m.group(0)), chunk)
        chunk = _DIRECTIVE.sub(directive, chunk)
        lines = []
        for line in chunk.splitlines(keepends=True):
            done = _REF.sub(ref, line)
            # "256. Read" at the start of a line would become an ordered list item
            if line.lstrip().startswith("[[") and re.match(r"\s*\d+[.)](\s|$)", done):
                raise PluginError(f"{where}: a figure starts a line as a list marker: {line!r}")
            lines.append(done)
        chunk = "".join(lines)
        return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], chunk)

    chunks = _split(markdown)
    done = {i: block(c) for i, (k, c) in enumerate(chunks) if k == "calc"}
    out = [
        done[i] if k == "calc" else c if k == "code" else text(c) for i, (k, c) in enumerate(chunks)
    ]
    _forms[where] = forms
    return "".join(out)


def _resolve(
    source: str,
    path: str,
    fmt: str | None,
    label: str,
    examples: dict[str, dict[str, Any]],
    docs_dir: Path = ROOT / "docs",
) -> str:
    if source == "spec":
        model, _, attr = path.partition(":")
        if model not in preset_ids():
            raise PluginError(f"{label}: unknown preset {model!r}")
        spec = _spec(model)
        if attr == "hidden_over_heads":
            return _fmt(spec.hidden_size // spec.num_heads, fmt, label)
        value: Any = spec
        for part in attr.split("."):  # moe.experts_per_token
            value = getattr(value, part, None)
        if value is None:
            raise PluginError(f"{label}: the spec has no {attr!r}")
        return _fmt(value, fmt, label)
    if source == "margin":  # [[margin:train-step:peak:cpu:max|g4]]
        probe, quantity, device, attr = path.split(":")
        for m in _margins(docs_dir):
            if (m.probe, m.quantity, m.device_kind) == (probe, quantity, device):
                return _fmt(getattr(m, attr), fmt, label)
        raise PluginError(f"{label}: no reports for {probe} {quantity} on {device}")
    if source == "report":  # [[report:FILE.json:measured.runs|int]]: a committed report
        name, _, field = path.partition(":")
        report = docs_dir / "data" / "validation" / name
        if "/" in name or not report.is_file():
            raise PluginError(f"{label}: no report {name!r} in docs/data/validation")
        return _fmt(_path(json.loads(report.read_text(encoding="utf-8")), field, label), fmt, label)
    if source == "data":  # [[data:evaluation/digits/seeds.json:a|list]]: a committed data file
        name, _, field = path.partition(":")
        data = (docs_dir / "data" / name).resolve()
        if not name.endswith(".json") or not data.is_relative_to((docs_dir / "data").resolve()):
            raise PluginError(f"{label}: {name!r} must be a .json file under docs/data")
        if not data.is_file():
            raise PluginError(f"{label}: no file {name!r} in docs/data")
        return _fmt(_path(json.loads(data.read_text(encoding="utf-8")), field, label), fmt, label)
    if source == "gpu":  # [[gpu:h200:memory_vendor]]: the catalog's figures
        gid, _, attr = path.partition(":")
        return _fmt(getattr(get_gpu(gid), attr), fmt, label)
    if source == "format":  # [[format:nf4:bits]]: a weights format's nominal bits
        fid, _, attr = path.partition(":")
        if fid not in FORMATS:
            raise PluginError(f"{label}: unknown weights format {fid!r}")
        value = getattr(FORMATS[fid], attr)
        return _fmt(float(value) if isinstance(value, Fraction) else value, fmt, label)
    if source == "kvformat":
        fid, _, attr = path.partition(":")
        if fid not in KV_FORMATS:
            raise PluginError(f"{label}: unknown KV format {fid!r}")
        return _fmt(getattr(KV_FORMATS[fid], attr), fmt, label)
    if source == "preset":
        model, _, attr = path.partition(":")
        return _fmt(getattr(get_preset(model), attr), fmt, label)
    if source not in examples:
        raise PluginError(f"{label}: no example {source!r} on this page")
    return _fmt(_path(examples[source], path, label), fmt, label)


_MATH = re.compile(
    r'<span class="arithmatex">\\\((.*?)\\\)</span>|<div class="arithmatex">\\\[(.*?)\\\]</div>',
    re.S,
)


def render_math(html: str, where: str) -> str:
    """Formulas rendered by the pinned KaTeX (node_modules) at build time: readable
    without JavaScript, nothing to typeset in the browser."""
    found = list(_MATH.finditer(html))
    if not found:
        return html
    node = shutil.which("node")
    if node is None:
        raise PluginError("node is needed to render formulas: install Node.js (make node)")
    items = [
        [
            html_module.unescape(m.group(1) if m.group(1) is not None else m.group(2)).strip(),
            m.group(2) is not None,
        ]
        for m in found
    ]
    proc = subprocess.run(
        [node, str(Path(__file__).with_name("katex_render.mjs"))],
        input=json.dumps(items),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise PluginError(f"{where}: {proc.stderr.strip()}")
    rendered = iter(json.loads(proc.stdout))

    def swap(m: re.Match[str]) -> str:
        tag = "div" if m.group(2) is not None else "span"
        return f'<{tag} class="kd-math">{next(rendered)}</{tag}>'

    return _MATH.sub(swap, html)


# A relative link in rendered HTML: no scheme, not site-absolute, not a bare anchor.
_RELATIVE_HREF = re.compile(r'href="(?![a-zA-Z][a-zA-Z0-9+.-]*:|/|#)([^"#?]+)(#[^"]*)?"')


def notebook_links(html: str, page: Any, files: Any) -> str:
    """A notebook page's relative links pointed at the built pages and files.

    MkDocs rewrites `../training/x.md` into the page's URL only on Markdown pages; a
    notebook's Markdown cells are rendered by nbconvert, so their links keep the source
    path, which breaks under directory URLs (`learn/03-adamw/` + `../x.md`). A link to a
    file the site does not have stops the build, as a broken Markdown link does."""
    where = page.file.src_uri
    folder = posixpath.dirname(where)

    def swap(m: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(folder, m.group(1)))
        file = files.get_file_from_path(target)
        if file is None:
            raise PluginError(f"{where}: link to {m.group(1)!r}: no such page or file")
        return f'href="{get_relative_url(file.url, page.url)}{m.group(2) or ""}"'

    return _RELATIVE_HREF.sub(swap, html)


# A notebook's Markdown cell as nbconvert renders it, and the code inside it.
_MARKDOWN_CELL = re.compile(r'(data-mime-type="text/markdown">)(.*?)(</div>)', re.S)
_CODE = re.compile(r"(<code>.*?</code>|<pre>.*?</pre>)", re.S)
_DISPLAY_PARAGRAPH = re.compile(r"<p>\$\$(.+?)\$\$</p>", re.S)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE = re.compile(r"(?<![\\$])\$([^$\n]+?)\$")


def notebook_math(html: str) -> str:
    """`$...$` and `$$...$$` in a notebook's Markdown cells as the spans `render_math`
    typesets with KaTeX, as on the Markdown pages: the notebook template's MathJax is not
    loaded (no CDN), so the TeX would otherwise show as written. Code is left alone."""

    def cell(m: re.Match[str]) -> str:
        parts = _CODE.split(m.group(2))
        for i in range(0, len(parts), 2):  # even parts are outside <code> and <pre>
            text = _DISPLAY_PARAGRAPH.sub(r'<div class="arithmatex">\\[\1\\]</div>', parts[i])
            text = _DISPLAY.sub(r'<span class="arithmatex">\\(\1\\)</span>', text)
            parts[i] = _INLINE.sub(r'<span class="arithmatex">\\(\1\\)</span>', text)
        return m.group(1) + "".join(parts) + m.group(3)

    return _MARKDOWN_CELL.sub(cell, html)


# `[[calculator NAME key=value ...]]` alone in a notebook's Markdown cell (values with spaces
# quoted), as nbconvert renders it: a paragraph of its own.
_NOTEBOOK_CALCULATOR = re.compile(r"<p>\[\[calculator ([a-z-]+)((?: [^\]]*)?)\]\]</p>")


def notebook_calculators(html: str, page: Any) -> str:
    """A live calculator form where a notebook's Markdown cell names one, as a
    ```calculator block does on a Markdown page: the page's worker computes it in the
    browser, and its first result is computed here, at build time."""
    where = page.file.src_uri
    site_root = "../" * page.url.count("/")
    count = 0

    def form(m: re.Match[str]) -> str:
        nonlocal count
        name, args = m.group(1), html_module.unescape(m.group(2)).strip()
        if name not in CALCULATORS:
            raise PluginError(f"{where}: unknown calculator {name!r}")
        try:
            opts = dict(w.split("=", 1) for w in shlex.split(args))
            out = form_html(name, opts, form_id=f"kd-{name}-nb{count}", site_root=site_root)
        except ValueError as e:
            raise PluginError(f"{where}: [[calculator {name}{m.group(2)}]]: {e}") from None
        count += 1
        return out

    return _NOTEBOOK_CALCULATOR.sub(form, html)


# The tag a lesson's cells carry to be folded into a collapsed "Going deeper" block, and the
# title its first (Markdown) cell opens with: `**Going deeper: TITLE**`.
DEEPER_TAG = "going-deeper"
_DIV = re.compile(r"<div\b[^>]*>|</div>")
_CELL_CLASS = re.compile(r'^<div\b[^>]*\bclass="jp-Cell jp-(Markdown|Code)Cell\b')
_DEEPER_TITLE = re.compile(r"<strong>Going deeper: (.+?)</strong>\s*", re.S)


def _top_cells(html: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each cell of the notebook, in order: a cell's div runs to its
    matching </div>. Cells are siblings; a code cell's template nests one cell div in
    another, so only the outermost counts."""
    cells, depth, opened = [], 0, None
    for m in _DIV.finditer(html):
        if m.group().startswith("</"):
            depth -= 1
            if opened is not None and depth == opened[0]:
                cells.append((opened[1], m.end(), opened[2]))
                opened = None
            continue
        kind = _CELL_CLASS.match(m.group())
        if opened is None and kind:
            opened = (depth, m.start(), kind.group(1))
        depth += 1
    return cells


_MARKDOWN_OUTPUT = re.compile(r'<div class="[^"]*\bjp-MarkdownOutput\b[^"]*"')
_OPENING_DIV = re.compile(r"^<div\b[^>]*>")


def _tagged(cell_html: str, kind: str) -> bool:
    """A cell carries the tag: nbconvert writes it as the class celltag_TAG on a code
    cell's outer div and on a Markdown cell's rendered-output div."""
    where = _MARKDOWN_OUTPUT if kind == "Markdown" else _OPENING_DIV
    tag = where.search(cell_html)
    return tag is not None and f"celltag_{DEEPER_TAG}" in tag.group()


def notebook_going_deeper(html: str, where: str) -> str:
    """Consecutive cells tagged `going-deeper` folded into one collapsed note titled
    "Going deeper: TITLE" (styled like the guides' collapsed notes), so that the lesson's
    main path reads straight on while its internals stay one click away; the cells were
    executed like the others, so their assertions ran. In Jupyter the tag is invisible and
    the cells show as usual. A block must open with a Markdown cell whose first words are
    `**Going deeper: TITLE**`: the build stops otherwise."""
    cells = _top_cells(html)
    out, last, i = [], 0, 0
    while i < len(cells):
        start, end, kind = cells[i]
        if not _tagged(html[start:end], kind):
            i += 1
            continue
        j = i
        while j + 1 < len(cells) and _tagged(
            html[cells[j + 1][0] : cells[j + 1][1]], cells[j + 1][2]
        ):
            j += 1
        first = html[start:end]
        title = _DEEPER_TITLE.search(first) if kind == "Markdown" else None
        if title is None:
            raise PluginError(
                f"{where}: a '{DEEPER_TAG}' block must open with a Markdown cell whose first "
                "words are **Going deeper: TITLE**"
            )
        summary = re.sub(r"<[^>]+>", "", title.group(1)).strip()
        body = first[: title.start()] + first[title.end() :] + html[end : cells[j][1]]
        out += [
            html[last:start],
            f'<details class="note kd-deeper"><summary>Going deeper: {summary}</summary>\n',
            body,
            "\n</details>",
        ]
        last, i = cells[j][1], j + 1
    return "".join(out) + html[last:]


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri.endswith(".ipynb"):
        html = notebook_math(notebook_links(html, page, files))
        html = notebook_calculators(html, page)
        html = notebook_going_deeper(html, page.file.src_uri)
    html = render_math(html, page.file.src_uri)
    forms = _forms.pop(page.file.src_uri, [])
    for i, form in enumerate(forms):
        slot = f'<div class="kd-slot" data-slot="{i}"></div>'
        if slot not in html:
            raise PluginError(f"{page.file.src_uri}: calculator {i} lost in Markdown rendering")
        html = html.replace(slot, form)
    return html
