"""The lessons' on-ramp and the fixes issue 25 asked for: lesson 0's picture of tinylm
(docs/learn/tinylm_diagram.py), the lessons' place in the navigation and the index, and
lesson 9's dropout hook, which must drop in training mode only.

The notebooks themselves are executed by the site build (mkdocs-jupyter, `allow_errors:
false`), which is what checks each lesson's assertions; these tests hold what the build
does not: the picture's drawing rules and the order of the lessons."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
LEARN = ROOT / "docs" / "learn"
SVG_NS = "{http://www.w3.org/2000/svg}"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, LEARN / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


diagram = _load("tinylm_diagram")


def _cell(notebook: str, cell_id: str) -> str:
    cells = json.loads((LEARN / notebook).read_text(encoding="utf-8"))["cells"]
    (source,) = ["".join(c["source"]) for c in cells if c["id"] == cell_id]
    return source


@given(
    n_layers=st.integers(min_value=1, max_value=6),
    d_model=st.integers(min_value=8, max_value=512),
    vocab=st.integers(min_value=2, max_value=300),
    context=st.integers(min_value=8, max_value=1024),
)
def test_the_picture_is_svg_in_the_text_colour_with_one_box_per_block(
    n_layers: int, d_model: int, vocab: int, context: int
) -> None:
    svg = diagram.tinylm_svg(n_layers, d_model, vocab, context)
    root = ET.fromstring(svg)  # well-formed: the page inlines it as it is
    assert root.tag == f"{SVG_NS}svg"
    colours = {
        value
        for element in root.iter()
        for attr in ("stroke", "fill")
        if (value := element.get(attr)) is not None
    }
    # readable in the dark scheme: every line and letter takes the colour of the text
    assert colours <= {"currentColor", "none"}
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]
    assert [t for t in texts if re.fullmatch(r"block \d+", t)] == [
        f"block {i}" for i in range(n_layers)
    ]
    assert sum(t.startswith("attention: ") for t in texts) == n_layers
    assert sum(t.startswith("MLP: ") for t in texts) == n_layers
    assert f"tok: {vocab} rows x {d_model}" in texts
    assert f"pos: {context} rows x {d_model}" in texts
    height = float(root.get("height", "0"))
    lowest = max(float(t.get("y", "0")) for t in root.iter(f"{SVG_NS}text"))
    assert lowest < height, "the last label lies inside the picture"


def test_the_picture_names_only_parts_the_model_has() -> None:
    pytest.importorskip("torch")
    tinylm = _load("tinylm")
    corpus = tinylm.load_corpus()
    model = tinylm.make_model(corpus, n_layers=3)
    cfg = model.cfg
    svg = diagram.tinylm_svg(cfg.n_layers, cfg.d_model, cfg.vocab_size, cfg.context)
    paths = set(re.findall(r"blocks\[(\d+)\]\.(\w+)", svg))
    assert {int(i) for i, _ in paths} == set(range(cfg.n_layers))
    for i, name in paths:
        assert hasattr(model.blocks[int(i)], name), f"blocks[{i}].{name}"
    texts = ["".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG_NS}text")]
    for name in ("tok", "pos", "norm", "head"):  # the labels that name the model's parts
        assert hasattr(model, name)
        assert any(re.match(rf"{name}\b", t) for t in texts), name


def test_every_lesson_is_in_the_nav_and_the_index_in_order() -> None:
    lessons = sorted(p.name for p in LEARN.glob("*.ipynb"))
    assert lessons[0] == "00-tensors-and-modules.ipynb"
    nav = re.findall(r"^\s+- learn/(\S+\.ipynb)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert nav == lessons
    index = (LEARN / "index.md").read_text(encoding="utf-8")
    table = re.findall(r"^\| \[\d+\. [^]]+\]\((\S+\.ipynb)\)", index, re.M)
    assert table == lessons


def test_lesson_9s_dropout_hook_drops_in_training_mode_only() -> None:
    torch = pytest.importorskip("torch")
    namespace: dict = {"torch": torch}
    exec(_cell("09-checkpoints-that-resume.ipynb", "l08-12"), namespace)
    hook = namespace["embedding_dropout"]
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(10, 16)
    embedding.register_forward_hook(hook)
    ids = torch.arange(10)
    dropped = embedding(ids)
    assert (dropped == 0).any(), "train(): some numbers are zeroed"
    embedding.eval()
    assert torch.equal(embedding(ids), embedding.weight), "eval(): the output is untouched"


def test_the_index_links_every_notebook_file_the_site_serves() -> None:
    # mkdocs-jupyter's include_source copies NAME.ipynb beside its page, NAME/
    assert re.search(r"^\s+include_source: true$", (ROOT / "mkdocs.yml").read_text(), re.M)
    index = (LEARN / "index.md").read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]+)" download>', index)
    lessons = sorted(p.stem for p in LEARN.glob("*.ipynb"))
    assert links == [f"{name}/{name}.ipynb" for name in lessons]


def test_the_index_times_every_lesson_from_the_benchmarks_data() -> None:
    # issue 25: "cold build and per-notebook times are quoted", each read from the file
    # `python -m benchmarks.lesson_times` writes, never typed
    index = (LEARN / "index.md").read_text(encoding="utf-8")
    section = index[index.index("## How long they take to run") :]
    section = section[: section.index("\n## ")]
    data_file = "learn/notebook-times.json"
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", section, re.M)[1:]  # after the header
    lessons = sorted(p.stem for p in LEARN.glob("[0-9][0-9]-*.ipynb"))
    assert [value for _, value in rows] == [
        *(f"[[data:{data_file}:lessons.{stem}.seconds|f1]]" for stem in lessons),
        f"[[data:{data_file}:lessons_total_seconds|f1]]",
    ]
    for stem, (title, _) in zip(lessons, rows, strict=False):
        assert title.startswith(f"{int(stem[:2])}. "), title
    assert f"[[data:{data_file}:cold_build_seconds|f1]]" in section
    without_references = re.sub(r"\[\[data:[^\]]+\]\]", "", section)
    without_titles = re.sub(r"^\| \d+\. ", "", without_references, flags=re.M)
    assert not re.search(r"\d", without_titles), "a number typed by hand"
    data = json.loads((ROOT / "docs" / "data" / data_file).read_text(encoding="utf-8"))
    assert [row["id"] for row in data["lessons"]] == lessons, "rerun the benchmark"
    total = sum(row["seconds"] for row in data["lessons"])
    assert data["lessons_total_seconds"] == pytest.approx(total, abs=0.05 * len(lessons))


def test_chart_labels_write_ordinary_numbers_in_full() -> None:
    # a first-time reader reads 4,570 KiB more easily than 4.57e+03 (lesson 8's chart)
    charts = _load("lesson_charts")
    assert [charts.figure(v) for v in (4570.4, 703.2, 0.0304, 76.5, 999.96, -3.336)] == [
        "4,570",
        "703",
        "0.0304",
        "76.5",
        "1,000",
        "-3.34",
    ]
    # far outside everyday sizes, the notation stays scientific
    assert [charts.figure(v) for v in (1.49e-08, 2.5e6, 0.0)] == ["1.49e-08", "2.5e+06", "0"]
    assert charts.figure(12_352) == "12,352"  # a count, exactly
