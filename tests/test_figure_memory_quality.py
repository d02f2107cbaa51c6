"""The `memory-vs-quality` figure and `render.labelled_points_svg`, which draws it."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.figures import FIGURES, KL_LABEL, figure_caption, figure_svg
from calculators.memory.weights import weight_bytes
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.units import format_gib
from calculators.web.render import labelled_points_svg

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"
BOARD = json.loads(
    (ROOT / "docs/data/adaptation/llama3-8b-scoreboard.json").read_text(encoding="utf-8")
)
ROWS = {row["id"]: row for row in BOARD["rows"]}

# The guide's figure: each scoreboard row that maps to a calculators' format, its KLD as
# the page quotes it (the hook's `raw` format, `f"{v:g}"`).
POINTS = ",".join(
    f"{fid}:{ROWS[quant]['kld_mean']:g}" for quant, fid in BOARD["calculator_formats"].items()
)
ARGS = {"model": "llama-3.1-8b", "points": POINTS}


def drawings(html: str) -> list[ET.Element]:
    found = [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", html, re.S)]
    assert sorted(s.get("class", "").split("kd-chart-")[-1] for s in found) == ["narrow", "wide"]
    return found


def circles(svg: ET.Element) -> list[ET.Element]:
    return list(svg.iter(f"{SVG}circle"))


def labels(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG}text")]


def test_it_is_a_named_figure_with_a_caption() -> None:
    assert FIGURES["memory-vs-quality"].__name__ == "memory_vs_quality"
    assert figure_caption("memory-vs-quality").startswith("Weights memory against mean KL")


def test_each_point_is_the_calculators_gib_and_the_published_kld() -> None:
    spec = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"), name="llama-3.1-8b")
    for svg in drawings(figure_svg("memory-vs-quality", ARGS)):
        tips = [c.findtext(f"{SVG}title") for c in circles(svg)]
        expected = [
            f"{fid}: weights of the main model, GiB (2^30 bytes), from the calculators = "
            f"{format_gib(weight_bytes(spec, fid).main_bytes)}, {KL_LABEL} = "
            f"{ROWS[quant]['kld_mean']:.4g}"
            for quant, fid in BOARD["calculator_formats"].items()
        ]
        assert tips == expected
        # every point is labelled with its format, in the drawing itself
        for fid in BOARD["calculator_formats"].values():
            assert fid in labels(svg)


def test_less_memory_sits_left_and_more_divergence_sits_higher() -> None:
    # the published trade-off, drawn: q8_0 is the largest and closest to the reference,
    # q4_0 the smallest and furthest
    for svg in drawings(figure_svg("memory-vs-quality", ARGS)):
        at = {
            c.findtext(f"{SVG}title").split(":")[0]: (float(c.get("cx")), float(c.get("cy")))
            for c in circles(svg)
        }
        assert at["gguf-q8_0"][0] > at["gguf-q6_k"][0] > at["gguf-q4_k_m"][0] > at["gguf-q4_0"][0]
        # SVG y grows downwards: a larger divergence is a smaller cy
        assert at["gguf-q8_0"][1] > at["gguf-q6_k"][1] > at["gguf-q4_k_m"][1] > at["gguf-q4_0"][1]


def test_points_and_labels_stay_inside_the_plot() -> None:
    for svg in drawings(figure_svg("memory-vs-quality", ARGS)):
        plot = next(r for r in svg.iter(f"{SVG}rect") if r.get("class") == "kd-plot")
        x0, y0 = float(plot.get("x")), float(plot.get("y"))
        x1, y1 = x0 + float(plot.get("width")), y0 + float(plot.get("height"))
        for c in circles(svg):
            assert x0 <= float(c.get("cx")) <= x1 and y0 <= float(c.get("cy")) <= y1
        texts = {t.text: t for t in svg.iter(f"{SVG}text")}
        for fid in BOARD["calculator_formats"].values():
            t = texts[fid]
            x, y = float(t.get("x")), float(t.get("y"))
            assert x0 <= x and x + len(fid) * 0.6 * 12 <= x1 + 0.01
            assert y0 <= y <= y1


def test_it_draws_for_dark_mode_like_the_other_figures() -> None:
    # text and axes take the page's colour (currentColor), so the chart reads on a dark page
    for svg in drawings(figure_svg("memory-vs-quality", ARGS)):
        assert svg.get("fill") == "currentColor"
        assert all(c.get("stroke") == "currentColor" for c in circles(svg))


@pytest.mark.parametrize(
    ("points", "blamed"),
    [
        ("gguf-q8_0", "points"),  # no KL
        ("gguf-q8_0:0.1,gguf-q8_0:0.2", "points"),  # twice
        ("furlongs:0.1", "points"),
        ("gguf-q8_0:-0.1", "points"),
        ("gguf-q8_0:1e9", "points"),
        ("gguf-q8_0:nan", "points"),
        ("gguf-q8_0:abc", "points"),
        (" , ", "points"),
    ],
)
def test_bad_points_name_the_argument(points: str, blamed: str) -> None:
    with pytest.raises(InputError) as e:
        figure_svg("memory-vs-quality", {"model": "llama-3.1-8b", "points": points})
    assert e.value.field == blamed


def test_an_unknown_model_names_the_model() -> None:
    with pytest.raises(InputError) as e:
        figure_svg("memory-vs-quality", {"model": "no-such-model", "points": POINTS})
    assert e.value.field == "model"


def test_the_renderer_refuses_nothing_to_draw_and_non_numbers() -> None:
    with pytest.raises(ValueError, match="no points"):
        labelled_points_svg([], x_label="x", y_label="y", title="t")
    with pytest.raises(ValueError, match="finite"):
        labelled_points_svg([("a", float("inf"), 1.0)], x_label="x", y_label="y", title="t")


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="abcdefgh_-0123456789", min_size=1, max_size=30),
            st.floats(min_value=0.1, max_value=1e4, allow_nan=False),
            st.floats(min_value=0.0, max_value=10.0, allow_nan=False),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_any_points_draw_one_circle_each_inside_the_plot(
    points: list[tuple[str, float, float]],
) -> None:
    html = labelled_points_svg(points, x_label="x (GiB)", y_label="KL", title="t")
    for svg in drawings(html):
        plot = next(r for r in svg.iter(f"{SVG}rect") if r.get("class") == "kd-plot")
        x0, y0 = float(plot.get("x")), float(plot.get("y"))
        x1, y1 = x0 + float(plot.get("width")), y0 + float(plot.get("height"))
        drawn = circles(svg)
        assert len(drawn) == len(points)
        for c in drawn:
            assert x0 - 1e-6 <= float(c.get("cx")) <= x1 + 1e-6
            assert y0 - 1e-6 <= float(c.get("cy")) <= y1 + 1e-6


def _hook():  # the docs hook, loaded as the site loads it
    from tests.page_blocks import hook

    return hook()


def test_a_page_quotes_the_committed_file_in_the_figures_arguments() -> None:
    # `[[data:...]]` inside `[[figure ...]]` is resolved before the figure is drawn, so the
    # page draws the scoreboard's own numbers without retyping them
    from types import SimpleNamespace

    hook = _hook()
    ref = "[[data:adaptation/llama3-8b-scoreboard.json:rows.{}.kld_mean]]"
    line = (
        "[[figure memory-vs-quality model=llama-3.1-8b "
        f"points=gguf-q8_0:{ref.format('q8_0')},gguf-q4_0:{ref.format('q4_0')}]]"
    )
    page = SimpleNamespace(file=SimpleNamespace(src_uri="guide.md"), url="guide/")
    md = hook.on_page_markdown(f"Before.\n\n{line}\n\nAfter.\n", page, {"docs_dir": "docs"}, None)
    points = f"gguf-q8_0:{ROWS['q8_0']['kld_mean']:g},gguf-q4_0:{ROWS['q4_0']['kld_mean']:g}"
    direct = figure_svg("memory-vs-quality", {"model": "llama-3.1-8b", "points": points})
    assert direct in md and "[[" not in md
