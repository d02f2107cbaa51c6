"""calculators.figures: the guides' named figures, drawn from the calculators' own numbers."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from calculators.errors import InputError
from calculators.figures import (
    CONTEXT_LABEL,
    DEFAULT_CONTEXTS,
    FIGURES,
    figure_caption,
    figure_svg,
)
from calculators.memory.envelope import EnvelopeQuery, memory_envelope
from calculators.memory.gpus import get_gpu
from calculators.memory.kv_cache import KVSettings, kv_cache_bytes
from calculators.memory.weights import weight_bytes
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.training.step import TrainingQuery, training_fit
from calculators.units import format_gib

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"


def drawings(html: str) -> list[ET.Element]:
    """The figure's wide and narrow drawings, each parsed as XML."""
    found = [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", html, re.S)]
    assert sorted(s.get("class", "").split("kd-chart-")[-1] for s in found) == ["narrow", "wide"]
    return found


def tooltips(svg: ET.Element) -> list[str]:
    """The tooltip of every shape (bar, point, marked line) in the drawing."""
    return [
        el.findtext(f"{SVG}title") or ""
        for el in svg.iter()
        if el.tag != f"{SVG}svg" and el.find(f"{SVG}title") is not None
    ]


def spec_of(model: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(model), name=model)


# Each figure for a real preset, as a guide would ask for it.
EXAMPLES = {
    "weights-by-format": {"model": "llama-3.1-8b", "formats": "bf16,fp8-e4m3,int8,nf4"},
    "memory-vs-context": {
        "model": "llama-3.1-8b",
        "batch": "4",
        "formats": "bf16,nf4",
        "contexts": "4096,32768,131072",
    },
    "kv-vs-context": {"model": "gemma-2-9b", "batch": "2", "kv_formats": "bf16,fp8,int8"},
    "training-phases": {
        "model": "qwen3-0.6b",
        "micro_batch": "2",
        "seq_len": "4096",
        "precision": "bf16-fp32-master",
    },
    # mean KL divergences of llama.cpp's LLaMA 3 8b scoreboard (docs/data/adaptation)
    "memory-vs-quality": {
        "model": "llama-3.1-8b",
        "points": "gguf-q8_0:0.001355,gguf-q4_k_m:0.031273",
    },
    "training-by-method": {
        "model": "llama-3.1-8b",
        "micro_batch": "4",
        "seq_len": "2048",
        "gpu": "rtx-4090",
    },
}


def test_every_figure_has_an_example() -> None:
    assert set(EXAMPLES) == set(FIGURES)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_renders_and_says_what_it_shows(name: str) -> None:
    html = figure_svg(name, EXAMPLES[name])
    for svg in drawings(html):
        assert svg.findtext(f"{SVG}title")
        assert tooltips(svg)
    doc = inspect.getdoc(FIGURES[name]) or ""
    assert figure_caption(name) == doc.splitlines()[0] != ""


def test_weights_by_format_shows_the_main_model_bytes() -> None:
    args = EXAMPLES["weights-by-format"]
    spec = spec_of(args["model"])
    expected = [
        f"{f}: {format_gib(weight_bytes(spec, f).main_bytes)}" for f in args["formats"].split(",")
    ]
    for svg in drawings(figure_svg("weights-by-format", args)):
        assert tooltips(svg) == expected


def test_weights_by_format_leaves_the_mtp_modules_out() -> None:
    # DeepSeek-V3 ships multi-token-prediction layers that serving does not load by default:
    # its bar is main_bytes, not total_bytes
    spec = spec_of("deepseek-v3")
    w = weight_bytes(spec, "bf16")
    assert w.mtp_bytes > 0
    html = figure_svg("weights-by-format", {"model": "deepseek-v3", "formats": "bf16"})
    for svg in drawings(html):
        assert tooltips(svg) == [f"bf16: {format_gib(w.main_bytes)}"]


def test_memory_vs_context_shows_the_envelope_totals_and_the_card() -> None:
    args = EXAMPLES["memory-vs-context"]
    spec = spec_of(args["model"])
    batch = int(args["batch"])
    expected = [
        f"{f}: {format_gib(memory_envelope(spec, query).total_bytes)} "
        f"at {CONTEXT_LABEL} = {query.context:,}"
        for f in args["formats"].split(",")
        for query in (
            EnvelopeQuery(context=int(c), batch=batch, weights_format=f)
            for c in args["contexts"].split(",")
        )
    ]
    card = get_gpu("h100-sxm")  # the figure's default card
    for svg in drawings(figure_svg("memory-vs-context", args)):
        tips = tooltips(svg)
        assert f"visible on {card.id}: {format_gib(card.visible_bytes)}" in tips
        assert [t for t in tips if " at " in t] == expected


def test_memory_vs_context_honours_the_kv_format_and_card() -> None:
    args = {**EXAMPLES["memory-vs-context"], "kv_format": "fp8", "gpu": "l40s", "formats": "bf16"}
    spec = spec_of(args["model"])
    context = int(args["contexts"].split(",")[0])
    kv = KVSettings(kv_format="fp8")
    query = EnvelopeQuery(context=context, batch=int(args["batch"]), kv=kv)
    total = memory_envelope(spec, query, gpu="l40s").total_bytes
    for svg in drawings(figure_svg("memory-vs-context", args)):
        tips = tooltips(svg)
        assert f"bf16: {format_gib(total)} at {CONTEXT_LABEL} = {context:,}" in tips
        assert f"visible on l40s: {format_gib(get_gpu('l40s').visible_bytes)}" in tips


def test_kv_vs_context_shows_the_kv_cache_totals_over_the_default_contexts() -> None:
    args = EXAMPLES["kv-vs-context"]
    spec = spec_of(args["model"])

    def total(kv_format: str, context: int) -> int:
        settings = KVSettings(kv_format=kv_format)
        batch = int(args["batch"])
        return kv_cache_bytes(spec, context=context, batch=batch, settings=settings).total_bytes

    expected = [
        f"{k}: {format_gib(total(k, c))} at {CONTEXT_LABEL} = {c:,}"
        for k in args["kv_formats"].split(",")
        for c in map(int, DEFAULT_CONTEXTS.split(","))
    ]
    for svg in drawings(figure_svg("kv-vs-context", args)):
        assert tooltips(svg) == expected


def test_training_phases_shows_the_training_calculators_bars() -> None:
    args = EXAMPLES["training-phases"]
    query = TrainingQuery(
        micro_batch=int(args["micro_batch"]),
        seq_len=int(args["seq_len"]),
        precision=args["precision"],
    )
    fit = training_fit(spec_of(args["model"]), query, gpu="h100-sxm")  # the default card
    reserves = sum(r.bytes for r in fit.reserves)
    expected = [
        f"{p.label} + reserves: {format_gib(p.bytes + reserves)}" for p in fit.memory.phases
    ]
    for svg in drawings(figure_svg("training-phases", args)):
        assert tooltips(svg) == expected
        texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
        assert any(format_gib(fit.visible_bytes) in t for t in texts)


def _with(name: str, **changes: str | None) -> dict[str, str]:
    """The figure's example with arguments changed (None: left out)."""
    args = {**EXAMPLES[name], **changes}
    return {k: v for k, v in args.items() if v is not None}


@pytest.mark.parametrize(
    ("name", "args", "blamed"),
    [
        ("weights-by-format", _with("weights-by-format", model="no-such-model"), "model"),
        ("weights-by-format", _with("weights-by-format", formats="bf16,furlongs"), "formats"),
        ("weights-by-format", _with("weights-by-format", formats=" , "), "formats"),
        ("weights-by-format", _with("weights-by-format", formats=None), "formats"),
        ("weights-by-format", _with("weights-by-format", colour="red"), "colour"),
        ("memory-vs-context", _with("memory-vs-context", batch="0"), "batch"),
        ("memory-vs-context", _with("memory-vs-context", batch="four"), "batch"),
        ("memory-vs-context", _with("memory-vs-context", kv_format="nf4"), "kv_format"),
        ("memory-vs-context", _with("memory-vs-context", gpu="abacus"), "gpu"),
        ("memory-vs-context", _with("memory-vs-context", contexts="1024,0"), "contexts"),
        ("memory-vs-context", _with("memory-vs-context", contexts="1e12"), "contexts"),
        ("kv-vs-context", _with("kv-vs-context", kv_formats="nf4"), "kv_formats"),
        ("kv-vs-context", _with("kv-vs-context", batch=None), "batch"),
        ("training-phases", _with("training-phases", micro_batch="-1"), "micro_batch"),
        ("training-phases", _with("training-phases", seq_len="2.5"), "seq_len"),
        ("training-phases", _with("training-phases", precision="fp3"), "precision"),
        ("training-phases", _with("training-phases", gpu="abacus"), "gpu"),
        ("no-such-figure", {}, "figure"),
    ],
)
def test_bad_arguments_are_refused_by_name(name: str, args: dict[str, str], blamed: str) -> None:
    with pytest.raises(ValueError, match=re.escape(blamed)) as caught:
        figure_svg(name, args)
    assert isinstance(caught.value, InputError)
    assert caught.value.field == blamed


def test_a_page_never_imports_the_figures() -> None:
    # the figures are drawn at build time; the pages' worker loads calculators.web for the
    # forms and must not pay for (or depend on) this module
    code = (
        "import json, sys\n"
        "from calculators.web import compute, form_html, render_result\n"
        "render_result('weights', compute('weights'))\n"
        "form_html('weights', {})\n"
        "print(json.dumps('calculators.figures' in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) is False


def test_training_by_method_draws_the_training_calculator_per_method() -> None:
    from calculators.training.step import TrainingQuery, training_fit

    args = EXAMPLES["training-by-method"]
    spec = spec_of(args["model"])
    common = dict(micro_batch=4, seq_len=2048, precision="bf16-fp32-master", checkpointing="full")
    full = training_fit(spec, TrainingQuery(**common), gpu="rtx-4090")
    qlora = training_fit(
        spec,
        TrainingQuery(**common, lora_rank=16, lora_targets=("all-linear",), base_format="nf4-dq"),
        gpu="rtx-4090",
    )
    for svg in drawings(figure_svg("training-by-method", args)):
        tips = tooltips(svg)
        assert len(tips) >= 4
        assert any(t.startswith("full fine-tuning (8.03B trained)") for t in tips)
        assert any(format_gib(full.total_bytes) in t for t in tips)
        assert any(t.startswith("QLoRA r16") and format_gib(qlora.total_bytes) in t for t in tips)


def test_training_by_method_refuses_a_zero_rank() -> None:
    with pytest.raises(ValueError, match="rank"):
        figure_svg("training-by-method", {**EXAMPLES["training-by-method"], "rank": "0"})
