"""The MkDocs hook (docs/hooks/kernodeck.py): embedded calculators, computed references,
code left alone, validation reports rendered generically."""

from __future__ import annotations

import importlib.util
import io
import json
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from calculators.units import format_gib
from calculators.web import compute

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("kd_hook", ROOT / "docs/hooks/kernodeck.py")
assert _spec and _spec.loader
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


def page(uri: str = "guide.md") -> SimpleNamespace:
    return SimpleNamespace(file=SimpleNamespace(src_uri=uri))


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
