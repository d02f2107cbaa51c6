"""calculators.web.render.run_grid_svg: a design's runs as a grid of shaded cells."""

from __future__ import annotations

from itertools import pairwise

import pytest

from calculators.planning.design import design, parse_factor
from calculators.web.render import FONT, GRID_MAX_ROWS, PALETTE, run_grid_svg
from tests import test_web_render as shared
from tests.test_web_render import SVG, layouts

FACTORS = [("lr", ["1e-4", "3e-4"]), ("warmup", ["100", "1000"]), ("mix", ["a", "b", "c"])]
CODED = [[-1, -1, 0], [1, -1, 1], [-1, 1, 2], [1, 1, 0]]


def grid(**kwargs) -> str:
    return run_grid_svg(FACTORS, CODED, letters=["A", "B", "C"], **kwargs)


def cells(svg) -> list:
    return [r for r in svg.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]


def test_one_cell_per_run_and_factor_in_both_layouts() -> None:
    for svg in layouts(grid()).values():
        assert len(cells(svg)) == len(CODED) * len(FACTORS)


def test_cells_are_shaded_by_level_and_read_in_dark_mode() -> None:
    svg = layouts(grid())["wide"]
    tips = {r.findtext(f"{SVG}title"): r for r in cells(svg)}
    low = tips["run 1: lr = 1e-4 (-1)"]
    assert low.get("fill") == "none" and low.get("stroke") == "currentColor"
    high = tips["run 2: lr = 3e-4 (+1)"]
    assert high.get("fill") == PALETTE[0] and high.get("fill-opacity") == "1.00"
    # a three-level factor: level 0 an outline, then darker
    assert tips["run 1: mix = a (level 0 of 0 to 2)"].get("fill") == "none"
    assert tips["run 2: mix = b (level 1 of 0 to 2)"].get("fill-opacity") == "0.50"
    assert tips["run 3: mix = c (level 2 of 0 to 2)"].get("fill-opacity") == "1.00"
    assert svg.get("fill") == "currentColor"


def test_columns_are_headed_by_letters_and_named_in_the_legend() -> None:
    for svg in layouts(grid()).values():
        texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
        assert {"A", "B", "C", "run"} <= set(texts)
        legend = " ".join(t for t in texts if t.startswith(("Columns", "B", "C")))
        assert "A lr" in legend.replace("\u00a0", " ")


def _example_design() -> str:
    d = design(
        [parse_factor(t) for t in ("data:web,curated", "lr:1e-4,3e-4", "warmup:100,1000")]
        + [parse_factor("weight_decay:0,0.1"), parse_factor("lora_rank:8,16")],
        1,
    )
    return run_grid_svg(
        [(f.name, f.levels) for f in d.factors],
        d.coded,
        letters=list(d.letters.values()),
        run_ids=d.run_ids,
    )


LONG = "a factor name much longer than any column"
NEW = {
    "run grid": grid(),
    "run grid of a fraction": _example_design(),
    "run grid of many runs": run_grid_svg(
        [(f"f{i}", ["lo", "hi"]) for i in range(9)],
        [[1 if (n >> i) & 1 else -1 for i in range(9)] for n in range(512)],
        letters=list("ABCDEFGHJ"),
    ),
    "run grid of long names": run_grid_svg(
        [(LONG, ["x", "y"]), (LONG + " 2", ["x", "y"])],
        [[-1, -1], [1, 1]],
        letters=["A", "B"],
        run_ids=[99_998, 99_999],
    ),
}


@pytest.mark.parametrize("name", sorted(NEW))
def test_run_grids_pass_the_checks_every_chart_does(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(shared.CHARTS, name, NEW[name])
    shared.test_nothing_is_drawn_outside_the_chart(name)
    shared.test_both_layouts_carry_the_same_title_and_data(name)


def test_a_long_design_is_drawn_up_to_the_bound_and_says_so() -> None:
    html = NEW["run grid of many runs"]
    for svg in layouts(html).values():
        assert len(cells(svg)) == GRID_MAX_ROWS * 9
        assert f"first {GRID_MAX_ROWS}" in (svg.findtext(f"{SVG}title") or "")
        # run ids on thin rows are thinned out so that they do not overlap
        ys = [
            float(t.get("y", "0"))
            for t in svg.iter(f"{SVG}text")
            if t.get("text-anchor") == "end" and (t.text or "").replace(",", "").isdigit()
        ]
        assert len(ys) > 1 and min(b - a for a, b in pairwise(ys)) >= FONT


@pytest.mark.parametrize(
    ("factors", "coded", "match"),
    [
        ([], [], "no factor"),
        (FACTORS, [[-1, -1]], "has 2 codes for 3 factors"),
        (FACTORS, [[0, -1, 0]], "has 0 for 'lr'"),
        (FACTORS, [[-1, -1, 3]], "has 3 for 'mix'"),
        (FACTORS, [[True, -1, 0]], "has True for 'lr'"),
    ],
)
def test_it_refuses_what_it_cannot_draw(factors, coded, match) -> None:
    with pytest.raises(ValueError, match=match):
        run_grid_svg(factors, coded)


def test_letters_and_ids_must_match_the_factors_and_runs() -> None:
    with pytest.raises(ValueError, match="letters"):
        run_grid_svg(FACTORS, CODED, letters=["A"])
    with pytest.raises(ValueError, match="run_ids"):
        run_grid_svg(FACTORS, CODED, run_ids=[1])
