"""The MkDocs hook (docs/hooks/kernodeck.py): embedded calculators, computed references,
code left alone, validation reports rendered generically."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from html import escape
from pathlib import Path
from types import SimpleNamespace

import markdown
import pytest
from mkdocs.exceptions import PluginError

from calculators.figures import figure_caption
from calculators.memory.weights import weight_bytes
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.planning.target_cost import shown_decimals
from calculators.units import format_gib
from calculators.web import compute

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("kd_hook", ROOT / "docs/hooks/kernodeck.py")
assert _spec and _spec.loader
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


def page(uri: str = "guide.md") -> SimpleNamespace:
    # MkDocs' directory URLs: "guide.md" is served at "guide/"
    return SimpleNamespace(file=SimpleNamespace(src_uri=uri), url=uri.removesuffix(".md") + "/")


def render(markdown: str, docs_dir: Path = ROOT / "docs") -> tuple[str, str]:
    p = page()
    md = hook.on_page_markdown(markdown, p, {"docs_dir": str(docs_dir)}, None)
    return md, hook.on_page_content(md, p, {}, None)


EXAMPLE = """```calculator kv-cache
id: ex
show: no
model: qwen3-8b
context: 4096
batch: 2
```
"""


def test_references_are_computed() -> None:
    md, _ = render(EXAMPLE + "Total [[ex:total_bytes|gib]], [[ex:lines.0.layers|int]] layers.")
    r = compute("kv-cache", {"model": "qwen3-8b", "context": "4096", "batch": "2"})
    assert f"Total {format_gib(r['total_bytes'])}, {r['lines'][0]['layers']:,} layers." in md


def test_spec_preset_and_format_references() -> None:
    md, _ = render(
        "[[spec:llama-3.1-8b:num_kv_heads|int]] [[preset:llama-3.1-8b:hf_repo]] "
        "[[kvformat:fp8:bits_per_value]]"
    )
    assert md == "8 meta-llama/Llama-3.1-8B 8"


def test_code_is_left_alone() -> None:
    text = "`[[ex:total_bytes|gib]]`\n\n````markdown\n```calculator kv-cache\nbogus: 1\n```\n````\n"
    md, _ = render(text)
    assert md == text


@pytest.mark.parametrize(
    "markdown",
    [
        "[[nope:total_bytes|gib]]",
        EXAMPLE + "[[ex:no_such_key|gib]]",
        EXAMPLE + "[[ex:total_bytes|furlongs]]",
        "[[spec:no-model:head_dim]]",
        "```calculator kv-cache\ncontext: 0\n```\n",
        "```calculator nope\n```\n",
        "- text\n  [[spec:gemma-2-9b:head_dim|int]]. More\n",
    ],
)
def test_unresolvable_references_fail_the_build(markdown: str) -> None:
    with pytest.raises(PluginError):
        render(markdown)


def test_embedded_calculator_becomes_the_form() -> None:
    _, html = render("```calculator batch\nmicro_batch: 2\n```\n")
    assert 'data-calculator="batch"' in html
    assert 'name="micro_batch"' in html and 'value="2"' in html
    assert "kd-slot" not in html


def test_validation_without_reports(tmp_path: Path) -> None:
    md, _ = render("[[validation-reports]]", docs_dir=tmp_path)
    assert "No reports yet" in md and "python -m probes kv-cache" in md


def test_validation_report_renders_estimate_against_measurement(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "validation"
    folder.mkdir(parents=True)
    report = {
        "probe": {"name": "kv-cache", "version": "1"},
        "command_line": "python -m probes kv-cache --model gpt2",
        "inputs": {"model": "gpt2"},
        "status": "ok",
        "estimate": {"kv_cache_bytes": 100},
        "measured": {"kv_cache_bytes": 101},
        "units": {"kv_cache_bytes": "bytes"},
        "ratio": {"kv_cache_bytes": 1.01},
        "environment": {"device_name": "a | b"},
    }
    (folder / "kv.json").write_text(json.dumps(report), encoding="utf-8")
    md, _ = render("[[validation-reports]]", docs_dir=tmp_path)
    assert '??? info "kv-cache: ok (kv.json)"' in md
    assert "    | `kv_cache_bytes` | 100 | 101 | bytes | 1.01 |" in md
    assert "| `kv.json` | kv-cache | gpt2 | ok | a &#124; b | kv_cache_bytes 1.01 |" in md
    assert "a &#124; b" in md  # a pipe in a value does not break the table
    # Every field of a report stays out of the search index; the summary table stays in.
    excluded = md.index("data-search-exclude")
    assert md.index("| `kv.json` | kv-cache |") < excluded < md.index("??? info")
    (folder / "schema.json").write_text('{"$schema": "x"}', encoding="utf-8")
    md, _ = render("[[validation-reports]]", docs_dir=tmp_path)
    assert "1 reports." in md and "JSON Schema [`schema.json`]" in md
    (folder / "bad.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(PluginError, match="not a JSON object"):
        render("[[validation-reports]]", docs_dir=tmp_path)


def test_formulas_are_rendered_by_katex() -> None:
    html = hook.render_math(
        '<p>Inline <span class="arithmatex">\\(n_{kv} \\times d\\)</span></p>'
        '<div class="arithmatex">\\[\nB &lt; L\n\\]</div>',
        "x.md",
    )
    assert html.count('class="katex"') == 2
    assert 'class="katex-display"' in html
    assert "arithmatex" not in html


def test_a_formula_katex_rejects_fails_the_build() -> None:
    with pytest.raises(PluginError, match="KaTeX"):
        hook.render_math('<span class="arithmatex">\\(\\frac{1}\\)</span>', "x.md")


def test_many_ratios_are_summarised() -> None:
    ratio = {"peak": 1.0, "a": 0.99, "b": 1.02, "c": 1.0}
    assert hook._ratios({"ratio": ratio}) == "peak 1; 4 ratios from 0.99 to 1.02"
    assert hook._ratios({"ratio": {"a": 1.5}}) == "a 1.5"
    assert hook._ratios({}) == ""


def test_the_shipped_zip_carries_bytecode_for_the_browsers_python() -> None:
    # PEP 552: a hash-based .pyc has flags 0b01 when its source is not checked, so the
    # bytecode stays valid whatever file times unpacking gives the sources.
    lock = json.loads((ROOT / "node_modules/pyodide/pyodide-lock.json").read_text())
    major, minor = lock["info"]["python"].split(".")[:2]
    tag = f"cpython-{major}{minor}"
    with zipfile.ZipFile(io.BytesIO(hook._calculators_zip())) as z:
        names = set(z.namelist())
        sources = sorted(n for n in names if n.endswith(".py"))
        assert (
            "calculators/web/page.py" in sources and "calculators/model/presets/index.json" in names
        )
        for name in sources:
            folder, _, file = name.rpartition("/")
            pyc = f"{folder}/__pycache__/{file[:-3]}.{tag}.pyc"
            assert pyc in names, pyc
            header = z.read(pyc)[:16]
            assert int.from_bytes(header[4:8], "little") == 0b01, pyc


def test_figure_directive_becomes_a_captioned_svg() -> None:
    md, _ = render(
        "Before.\n"
        '[[figure weights-by-format model=llama-3.1-8b formats=bf16,nf4 caption="x y"]]\n'
        "After.\n"
    )
    figure = re.search(r'<figure class="kd-figure">(.*?)</figure>', md, re.S)
    assert figure is not None
    svgs = re.findall(r"<svg\b.*?</svg>", figure.group(1), re.S)
    assert len(svgs) == 2  # the wide and the narrow drawing
    for svg in svgs:
        ET.fromstring(svg)
    assert figure.group(1).endswith("<figcaption>x y</figcaption>")
    spec = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"), name="llama-3.1-8b")
    assert f"bf16: {format_gib(weight_bytes(spec, 'bf16').main_bytes)}" in figure.group(1)
    # a block of its own: Markdown keeps it whole, not inside a paragraph
    html = markdown.markdown(md, extensions=["md_in_html", "attr_list"])
    assert html.count("<svg") == 2 and "<p><figure" not in html
    assert "<p>Before.</p>" in html and "<p>After.</p>" in html


def test_figure_caption_defaults_to_the_figures_description() -> None:
    md, _ = render("[[figure kv-vs-context model=qwen3-8b batch=1 kv_formats=bf16]]")
    caption = escape(figure_caption("kv-vs-context"))
    assert f"<figcaption>{caption}</figcaption></figure>" in md


@pytest.mark.parametrize(
    ("markdown_text", "complaint"),
    [
        ("[[figure no-such-figure model=llama-3.1-8b]]", "figure"),
        ("[[figure weights-by-format model=llama-3.1-8b formats=bogus]]", "formats"),
        ("[[figure weights-by-format model=llama-3.1-8b]]", "formats"),
        ("[[figure weights-by-format model=llama-3.1-8b formats=bf16 stray]]", "key=value"),
        ('[[figure weights-by-format model=llama-3.1-8b formats=bf16 caption="open]]', "quot"),
        ("[[figure]]", "name a figure"),
    ],
)
def test_a_bad_figure_fails_the_build_naming_the_page(markdown_text: str, complaint: str) -> None:
    with pytest.raises(PluginError, match=complaint) as caught:
        render(markdown_text)
    assert str(caught.value).startswith("guide.md: [[figure")


ENVELOPE = """```calculator envelope
id: env
show: no
model: llama-3.1-8b
context: 8192
batch: 4
gpu: l40s
```
"""


def test_a_list_element_is_found_by_its_id_or_its_card() -> None:
    r = compute(
        "envelope", {"model": "llama-3.1-8b", "context": "8192", "batch": "4", "gpu": "l40s"}
    )
    kv = next(line for line in r["lines"] if line["id"] == "kv_cache")
    h200 = next(card for card in r["cards"] if card["gpu"] == "h200")
    md, _ = render(ENVELOPE + "[[env:lines.kv_cache.bytes|int]] [[env:cards.h200.max_context|int]]")
    assert md.endswith(f"{kv['bytes']:,} {h200['max_context']:,}")


def test_a_missing_list_element_fails_the_build() -> None:
    with pytest.raises(PluginError, match=re.escape("no 'cards.h900.fits' in the result")):
        render(ENVELOPE + "[[env:cards.h900.fits|fits]]")


def test_a_verdict_reads_as_words() -> None:
    r = compute(
        "envelope", {"model": "llama-3.1-8b", "context": "8192", "batch": "4", "gpu": "l40s"}
    )
    fits = {c["gpu"]: c["fits"] for c in r["cards"]}
    md, _ = render(ENVELOPE + "[[env:cards.h200.fits|fits]], [[env:cards.l4.fits|fits]]")
    words = {True: "fits", False: "does not fit"}
    assert md.endswith(f"{words[fits['h200']]}, {words[fits['l4']]}")
    with pytest.raises(PluginError, match="format fits wants true or false, got 4"):
        render(ENVELOPE + "[[env:batch|fits]]")


def test_gpu_format_and_nested_spec_references() -> None:
    from calculators.memory.formats import FORMATS
    from calculators.memory.gpus import get_gpu

    md, _ = render(
        "[[gpu:h200:memory_vendor]]; [[gpu:h200:visible_bytes|gib]]; [[format:nf4:bits]]; "
        "[[format:gguf-q4_k_m:bits|f2]]; [[spec:qwen3-30b-a3b:moe.experts_per_token|int]]"
    )
    h200 = get_gpu("h200")
    # Qwen3-30B-A3B config.json: num_experts_per_tok 8
    assert md == (
        f"{h200.memory_vendor}; {format_gib(h200.visible_bytes)}; "
        f"{float(FORMATS['nf4'].bits):g}; {float(FORMATS['gguf-q4_k_m'].bits):.2f}; 8"
    )
    with pytest.raises(PluginError, match="unknown weights format 'nf5'"):
        render("[[format:nf5:bits]]")


def _report(name: str, ratio: float) -> dict[str, object]:
    return {
        "probe": {"name": "train-step", "version": "1"},
        "status": "ok",
        "ratio": {"peak": ratio},
        "environment": {"device": "cpu", "device_name": "CPU"},
        "details": {"backend": "cpu-live-tensors"},
    }


def test_margins_come_from_the_reports(tmp_path: Path) -> None:
    reports = tmp_path / "data" / "validation"
    reports.mkdir(parents=True)
    for name, ratio in (("a.json", 1.02), ("b.json", 0.97)):
        (reports / name).write_text(json.dumps(_report(name, ratio)), encoding="utf-8")
    md, _ = render("[[margins]]", docs_dir=tmp_path)
    # the larger ratio, 1.02, leaves a margin of 2.0% above the estimate
    assert (
        "| train-step | peak | CPU: calculator against its own reference model | 2 | 0.9700 "
        "| 0.9950 | 1.020 | 2.0% |" in md
    )
    with pytest.raises(PluginError, match="no reports for train-step peak on cuda"):
        render("[[margin:train-step:peak:cuda:max|g4]]")


def test_a_margin_figure_reads_the_committed_reports() -> None:
    from probes.margins import margin_summary, phase_ratios

    rows = margin_summary(phase_ratios(ROOT / "docs" / "data" / "validation"))
    peak = next(
        m for m in rows if (m.probe, m.quantity, m.device_kind) == ("train-step", "peak", "cpu")
    )
    md, _ = render(
        "[[margin:train-step:peak:cpu:max|g4]] [[margin:train-step:peak:cpu:margin|pct1]]"
    )
    assert md == f"{peak.max:.4g} {peak.margin:.1%}"


def test_a_key_given_twice_adds_a_line() -> None:
    text = """```calculator budget
id: two
show: no
gpus: 4
price: 2.5
phase: check:2:1
phase: sweep:12:6
```
[[two:gpu_hours|raw]]"""
    r = compute("budget", {"gpus": "4", "price": "2.5", "phase": "check:2:1\nsweep:12:6"})
    md, _ = render(text)
    assert md.strip() == _fmt_raw(r["gpu_hours"])
    assert [p["name"] for p in r["phases"]] == ["check", "sweep"]


def _fmt_raw(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def test_a_multi_line_example_stays_in_its_table_cell() -> None:
    md, _ = render("[[fields design]]")
    factor = next(line for line in md.splitlines() if line.startswith("| `factor` |"))
    assert "<br>" in factor and factor.endswith("|")
    assert not any(line.startswith("lr:") for line in md.splitlines())


def test_a_committed_report_is_a_source() -> None:
    report = json.loads(
        (ROOT / "docs/data/validation/cpu-ttq-tiny-llama.json").read_text(encoding="utf-8")
    )
    md, _ = render("[[report:cpu-ttq-tiny-llama.json:measured.reached_runs|int]]")
    assert md == f"{report['measured']['reached_runs']:,}"
    with pytest.raises(PluginError, match=re.escape("no report 'nope.json'")):
        render("[[report:nope.json:measured.runs|int]]")


def test_the_mlperf_rows_come_from_the_raw_table() -> None:
    data = json.loads((ROOT / "docs/data/mlperf/raw_table.json").read_text(encoding="utf-8"))
    md, _ = render("[[mlperf]]")
    for s in data["submissions"]:
        # each score to the first digit of its standard error (shown beside it)
        se = s["score_standard_error_minutes"]
        d, h = shown_decimals(se), shown_decimals(se / 60 * s["accelerator_count"])
        assert (
            f"| {s['score_minutes']:,.{d}f} &plusmn; {se:,.{d}f} | {s['score_gpu_hours']:,.{h}f} |"
            in md
        )
    assert f"Every run ({len(data['rows'])} rows" in md
    assert md.count("](https://github.com/mlcommons/") == len(data["rows"])


PREFLIGHT_REPORT = ROOT / "docs/data/validation/cpu-preflight-tiny-llama.json"


def test_checklist_directive_draws_the_reports_checks() -> None:
    report = json.loads(PREFLIGHT_REPORT.read_text(encoding="utf-8"))
    checks = report["details"]["checks"]
    md, _ = render("Before.\n[[checklist cpu-preflight-tiny-llama.json]]\nAfter.\n")
    figure = re.search(r'<figure class="kd-figure">(.*?)</figure>', md, re.S)
    assert figure is not None
    svgs = [ET.fromstring(s) for s in re.findall(r"<svg\b.*?</svg>", figure.group(1), re.S)]
    assert len(svgs) == 2  # the wide and the narrow drawing
    ns = "{http://www.w3.org/2000/svg}"
    for svg in svgs:
        tips = [c.findtext(f"{ns}title") for c in svg.iter(f"{ns}circle")]
        assert tips == [f"check {c['number']} {c['id']}: {c['status']}" for c in checks]
    # the caption says where and how the report was made, from the report itself
    caption = figure.group(1).rsplit("<figcaption>", 1)[1]
    assert escape(report["command_line"]) in caption
    assert report["environment"]["torch"] in caption
    assert caption.startswith(f"preflight on {escape(report['environment']['device_name'])}")
    html = markdown.markdown(md, extensions=["md_in_html", "attr_list"])
    assert html.count("<svg") == 2 and "<p><figure" not in html
    assert "<p>Before.</p>" in html and "<p>After.</p>" in html


def test_checklist_caption_can_be_given() -> None:
    md, _ = render('[[checklist cpu-preflight-tiny-llama.json caption="the CPU run"]]')
    assert md.endswith("<figcaption>the CPU run</figcaption></figure>\n")


def test_checklist_draws_a_failed_check_from_any_report(tmp_path: Path) -> None:
    report = json.loads(PREFLIGHT_REPORT.read_text(encoding="utf-8"))
    report["details"]["checks"][5]["status"] = "fail"
    report["details"]["checks"][5]["look_at"] = "optimizer state not restored"
    folder = tmp_path / "data" / "validation"
    folder.mkdir(parents=True)
    (folder / "planted.json").write_text(json.dumps(report), encoding="utf-8")
    md, _ = render("[[checklist planted.json]]", docs_dir=tmp_path)
    assert md.count("check 6 resume: fail") == 2  # the mark's tooltip, in both layouts
    assert md.count("look at: optimizer state not restored") == 2
    assert "7 passed, 1 failed, 0 skipped" in md


@pytest.mark.parametrize(
    ("markdown_text", "complaint"),
    [
        ("[[checklist nope.json]]", "no report 'nope.json'"),
        ("[[checklist ../validation/cpu-preflight-tiny-llama.json]]", "no report"),
        ("[[checklist]]", "no report ''"),
        ("[[checklist cpu-ttq-tiny-llama.json]]", "no details.checks"),
        ("[[checklist cpu-preflight-tiny-llama.json stray]]", "expected FILE.json"),
        ('[[checklist cpu-preflight-tiny-llama.json caption="open]]', "quot"),
    ],
)
def test_a_bad_checklist_fails_the_build_naming_the_page(
    markdown_text: str, complaint: str
) -> None:
    with pytest.raises(PluginError, match=complaint) as caught:
        render(markdown_text)
    assert str(caught.value).startswith("guide.md: [[checklist")


def _site_files(*uris: str):
    from mkdocs.structure.files import File, Files

    docs = str(ROOT / "docs")
    return Files([File(u, src_dir=docs, dest_dir="/tmp/x", use_directory_urls=True) for u in uris])


def test_a_notebook_page_links_point_at_the_built_pages() -> None:
    files = _site_files("calculators/training.md", "learn/tinylm.py", "learn/01-a.ipynb")
    nb = SimpleNamespace(file=SimpleNamespace(src_uri="learn/03-b.ipynb"), url="learn/03-b/")
    html = (
        '<a href="../calculators/training.md#fields">t</a> <a href="tinylm.py">m</a> '
        '<a href="https://pytorch.org/x.md">p</a> <a href="#top">a</a>'
    )
    out = hook.notebook_links(html, nb, files)
    assert 'href="../../calculators/training/#fields"' in out
    assert 'href="../tinylm.py"' in out
    assert 'href="https://pytorch.org/x.md"' in out and 'href="#top"' in out


def test_a_notebook_link_to_a_missing_file_stops_the_build() -> None:
    files = _site_files("calculators/training.md")
    nb = SimpleNamespace(file=SimpleNamespace(src_uri="learn/03-b.ipynb"), url="learn/03-b/")
    with pytest.raises(PluginError, match=r"learn/03-b.ipynb: link to '\.\./nowhere\.md'"):
        hook.notebook_links('<a href="../nowhere.md">x</a>', nb, files)


def test_notebook_math_becomes_the_spans_katex_renders_but_code_is_left_alone() -> None:
    html = (
        '<div class="jp-RenderedMarkdown" data-mime-type="text/markdown">'
        "<p>loss is $\\ln V$ and</p><p>$$p_i = e^{z_i}$$</p>"
        "<p><code>x = $HOME</code> costs $3 or $4</p></div>"
        '<div data-mime-type="text/plain"><pre>$not math$</pre></div>'
    )
    out = hook.notebook_math(html)
    assert '<span class="arithmatex">\\(\\ln V\\)</span>' in out
    assert '<div class="arithmatex">\\[p_i = e^{z_i}\\]</div>' in out
    assert "<code>x = $HOME</code>" in out and "<pre>$not math$</pre>" in out
    rendered = hook.render_math(out, "learn/x.ipynb")
    # \ln V, the display, and "3 or ": two dollar amounts in one cell read as math, as they
    # do in Jupyter itself (write \$ for a literal dollar)
    assert rendered.count('class="kd-math"') == 3


def test_a_notebook_cell_naming_a_calculator_becomes_its_live_form() -> None:
    nb = SimpleNamespace(file=SimpleNamespace(src_uri="learn/10-x.ipynb"), url="learn/10-x/")
    html = (
        "<p>before</p><p>[[calculator seeds a=0.80,0.82,0.79,0.81,0.80 "
        "b=&quot;0.82,0.83,0.81,0.84,0.81&quot; effect=0.005]]</p>"
    )
    out = hook.notebook_calculators(html, nb)
    assert out.startswith("<p>before</p>") and "[[calculator" not in out
    assert 'data-calculator="seeds"' in out and 'id="kd-seeds-nb0"' in out
    assert json.loads(re.search(r'data-preset="([^"]*)"', out).group(1).replace("&quot;", '"')) == {
        "a": "0.80,0.82,0.79,0.81,0.80",
        "b": "0.82,0.83,0.81,0.84,0.81",
        "effect": "0.005",
    }


def test_a_notebook_cell_naming_an_unknown_calculator_or_a_bad_value_stops_the_build() -> None:
    nb = SimpleNamespace(file=SimpleNamespace(src_uri="learn/10-x.ipynb"), url="learn/10-x/")
    with pytest.raises(PluginError, match="unknown calculator 'nope'"):
        hook.notebook_calculators("<p>[[calculator nope]]</p>", nb)
    with pytest.raises(PluginError, match=r"learn/10-x.ipynb: \[\[calculator seeds"):
        hook.notebook_calculators("<p>[[calculator seeds a]]</p>", nb)
