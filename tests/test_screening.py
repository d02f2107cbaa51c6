"""calculators.statistics.screening, the half-normal plot, and their use by the design
calculator: Lenth's pseudo standard error on a published unreplicated 2^4, the centre-point
curvature test on a published 2^2 with centre points, and the best trial per run of
nuisance-tuned runs."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.cli import main
from calculators.errors import InputError
from calculators.planning.design import (
    Factor,
    Result,
    all_columns,
    best_trials,
    centre_levels,
    cost,
    design,
    effects,
    read_results,
)
from calculators.statistics.screening import (
    MIN_CONTRASTS,
    curvature,
    half_normal_scores,
    lenth,
)
from calculators.web.half_normal import half_normal_points, half_normal_svg

# D. C. Montgomery, Design and Analysis of Experiments, 8th ed. (Wiley, 2012), Example 6.2:
# the filtration rate of a pilot plant, an unreplicated 2^4 (A temperature, B pressure,
# C formaldehyde concentration, D stirring rate), in standard (Yates) order, as printed
# in its Table 6.10.
FILTRATION = (45, 71, 48, 65, 68, 60, 80, 65, 43, 100, 45, 104, 75, 86, 70, 96)
# Its effect estimates, Table 6.11.
FILTRATION_EFFECTS = {
    "A": 21.625,
    "B": 3.125,
    "C": 9.875,
    "D": 14.625,
    "AB": 0.125,
    "AC": -18.125,
    "AD": 16.625,
    "BC": 2.375,
    "BD": -0.375,
    "CD": -1.125,
    "ABC": 1.875,
    "ABD": 4.125,
    "ACD": -1.625,
    "BCD": -2.625,
    "ABCD": 1.375,
}


def filtration_design():
    return design([Factor(name, ("-1", "1")) for name in ("temp", "pressure", "conc", "stir")])


def test_the_design_recomputes_the_published_effects_of_every_column():
    d = filtration_design()
    a = effects(d, [(run, "0", y) for run, y in enumerate(FILTRATION, start=1)])
    assert {c.effect: c.estimate for c in a.contrasts} == pytest.approx(FILTRATION_EFFECTS)
    assert len(a.contrasts) == d.run_count - 1


def test_lenth_on_the_published_filtration_example():
    # Lenth (1989) by hand on Montgomery's effects: the median of the 15 |c| is 2.625, so
    # s0 = 1.5 x 2.625 = 3.9375 and 2.5 s0 = 9.84375; the ten |c| below it (0.125 ..
    # 4.125) have median (1.625 + 1.875) / 2 = 1.75, so PSE = 1.5 x 1.75 = 2.625.
    # d = 15 / 3 = 5; t_{0.975, 5} = 2.571 (NIST/SEMATECH e-Handbook 1.3.6.7.2, the t
    # table), so ME = 6.75; gamma = (1 + 0.95^(1/15)) / 2 = 0.99829 and t_{gamma, 5} =
    # 5.2187 (scipy.stats.t.ppf), so SME = 13.70. Montgomery's section 6.5 reads A, C, D,
    # AC and AD as the active effects, the five beyond ME.
    result = lenth(list(FILTRATION_EFFECTS.values()))
    assert result.m == 15 and result.df == 5
    assert result.s0 == 3.9375
    assert result.pse == 2.625
    assert result.t_me == pytest.approx(2.5705818356363146, rel=1e-12)
    assert result.gamma == pytest.approx(0.9982931435267048, rel=1e-12)
    assert result.t_sme == pytest.approx(5.218651262019963, rel=1e-12)
    assert round(result.me, 2) == 6.75
    assert round(result.sme, 2) == 13.70
    active = {k for k, v in FILTRATION_EFFECTS.items() if abs(v) > result.me}
    assert active == {"A", "C", "D", "AC", "AD"}
    beyond_sme = {k for k, v in FILTRATION_EFFECTS.items() if abs(v) > result.sme}
    assert beyond_sme == {"A", "D", "AC", "AD"}


@pytest.mark.parametrize(
    ("m", "t_me", "t_sme"),
    # Lenth's multipliers for the 8-, 16- and 32-run designs: scipy.stats.t.ppf at
    # 0.975 and at gamma = (1 + 0.95^(1/m)) / 2, on m / 3 degrees of freedom (Lenth
    # 1989 prints them as 3.76 and 9.01, 2.57 and 5.22, 2.22 and 4.22).
    [
        (7, 3.764123072082586, 9.008307113944992),
        (15, 2.5705818356363146, 5.218651262019963),
    ],
)
def test_lenths_multipliers(m, t_me, t_sme):
    result = lenth([1.0 + i for i in range(m)])
    assert result.t_me == pytest.approx(t_me, rel=1e-9)
    assert result.t_sme == pytest.approx(t_sme, rel=1e-9)


def test_lenth_refuses_too_few_effects_and_all_zero_ones():
    with pytest.raises(InputError, match="at least 7 values, got 6"):
        lenth([1.0] * 6)
    with pytest.raises(InputError, match="exactly 0"):
        lenth([0.0] * 5 + [1.0, 2.0, 3.0])
    # s0 > 0, but the trimmed median is 0: a margin of 0 would call every effect real
    with pytest.raises(InputError, match="no noise to measure"):
        lenth([0.0, 0.0, 0.0, 1.0, 1.0, 4.0, 4.0])
    with pytest.raises(InputError, match="finite"):
        lenth([1.0] * 6 + [math.nan])


@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_subnormal=False), min_size=7, max_size=63
    ),
    st.floats(min_value=0.01, max_value=100),
)
def test_lenth_is_sign_free_and_scales_with_the_effects(c, k):
    # the trimmed median of Lenth's definition, recomputed: 0 means no noise to measure
    size = [abs(v) for v in c]
    kept = [v for v in size if v < 2.5 * 1.5 * statistics.median(size)]
    if not kept or statistics.median(kept) == 0:
        with pytest.raises(InputError, match="no noise to measure"):
            lenth(c)
        return
    a = lenth(c)
    b = lenth([-k * v for v in c])
    assert b.pse == pytest.approx(k * a.pse, rel=1e-9)
    assert 0 < a.pse < 1.5 * 2.5 * a.s0  # the trimmed median is below the cut
    assert a.me < a.sme  # the simultaneous margin is the wider one


def test_half_normal_scores_are_the_published_plotting_positions():
    # Daniel (1959): the i-th of m at Phi^-1(0.5 + 0.5 (i - 0.5) / m); for m = 1 that is
    # the median of |Z|, 0.6745 (the constant behind Lenth's 1.5 ~ 1 / 0.6745).
    assert half_normal_scores(1) == pytest.approx([0.6744897501960817])
    scores = half_normal_scores(15)
    assert scores == sorted(scores) and scores[0] > 0
    with pytest.raises(ValueError):
        half_normal_scores(0)


def test_half_normal_plot_orders_the_effects_and_draws_both_margins():
    points = half_normal_points(list(FILTRATION_EFFECTS.items()))
    assert [p[2] for p in points] == sorted(abs(v) for v in FILTRATION_EFFECTS.values())
    assert points[-1][0] == "A"
    result = lenth(list(FILTRATION_EFFECTS.values()))
    svg = half_normal_svg(
        list(FILTRATION_EFFECTS.items()),
        pse=result.pse,
        me=result.me,
        sme=result.sme,
        title="Half-normal plot",
    )
    assert svg.count("<svg") == 2  # the wide and the narrow layout
    assert "ME 6.748" in svg and "SME 13.7" in svg
    assert svg.count("<circle") == 2 * 15
    assert "#fff" not in svg.lower() and "#000" not in svg  # colours follow the theme
    with pytest.raises(ValueError):
        half_normal_svg([], pse=1, me=1, sme=1, title="t")


# Montgomery, 8th ed., Example 6.6 (section 6.8, "Addition of center points to the 2^k
# design"): a chemical yield, a 2^2 in standard order and five centre points. It reports
# ybar_F = 40.425, ybar_C = 40.46, SS_pure quadratic = 0.0027, MS_E = 0.0430 on 4 df, and
# F = 0.063: no evidence of curvature.
YIELD = (39.3, 40.9, 40.0, 41.5)
YIELD_CENTRE = (40.3, 40.5, 40.7, 40.2, 40.6)


def test_curvature_on_the_published_centre_point_example():
    c = curvature(YIELD, YIELD_CENTRE)
    assert c.factorial_mean == pytest.approx(40.425)
    assert c.centre_mean == pytest.approx(40.46)
    assert round(c.ss_curvature, 4) == 0.0027
    assert round(c.sd**2, 4) == 0.0430 and c.df == 4
    assert round(c.f, 3) == 0.063
    assert c.f == pytest.approx(c.t**2)
    assert c.p_value > 0.5


def test_the_design_tests_curvature_and_takes_the_noise_from_the_centre_points():
    d = design([Factor("time", ("30", "40")), Factor("temp", ("150", "160"))])
    assert centre_levels(d) == {"time": "35", "temp": "155"}
    rows = [(run, "0", y) for run, y in enumerate(YIELD, start=1)]
    rows += [(0, str(i), y) for i, y in enumerate(YIELD_CENTRE)]
    a = effects(d, rows, centre_points=5)
    assert a.curvature is not None and round(a.curvature.f, 3) == 0.063
    # Montgomery's effects (A = 1.55, B = 0.65, AB = -0.05), each tested against MS_E
    assert [round(e.estimate, 2) for e in a.effects] == [1.55, 0.65, -0.05]
    assert a.df == 4 and a.pooled_sd == pytest.approx(math.sqrt(0.043))
    assert a.effects[0].standard_error == pytest.approx(2 * math.sqrt(0.043 / 4))
    assert a.lenth is None  # a noise estimate exists: no pseudo standard error


def test_centre_points_need_numeric_factors_and_cost_their_runs():
    with pytest.raises(InputError, match="data has web, curated") as e:
        centre_levels(design([Factor("data", ("web", "curated")), Factor("lr", ("1", "3"))]))
    assert e.value.field == "centre_points"
    # (runs x seeds + centre points) x nuisance settings
    c = cost(8, 2, 3.0, 1, None, settings=3, centre_points=4)
    assert c.total_runs == (8 * 2 + 4) * 3 and c.gpu_hours == c.total_runs * 3.0


def test_centre_rows_are_read_and_checked_against_the_middle():
    d = design([Factor("wd", ("0", "0.1")), Factor("ctx", ("4", "12"))])
    rows = read_results(d, [(1, "centre,0.05,8,0,1.5"), (2, "c,s,1.4")], "results", centre=True)
    assert [r.run for r in rows] == [0, 0]
    with pytest.raises(InputError, match=r"the centre point is 0\.05, 8"):
        read_results(d, [(1, "centre,0.05,9,0,1.5")], "results", centre=True)
    with pytest.raises(InputError, match="the plan has none"):
        read_results(d, [(1, "centre,0,1.5")], "results")


def test_best_trial_per_run_is_the_best_mean_over_its_seeds():
    rows = [
        Result(1, "0", 2.0, 1, "lr=1e-4"),
        Result(1, "1", 2.2, 2, "lr=1e-4"),
        Result(1, "0", 1.9, 3, "lr=3e-4"),
        Result(1, "1", 2.2, 4, "lr=3e-4"),
    ]
    kept, chosen = best_trials(rows, "lower")
    assert chosen == {1: "lr=3e-4"} and [r.line for r in kept] == [3, 4]
    _, chosen = best_trials(rows, "higher")
    assert chosen == {1: "lr=1e-4"}
    with pytest.raises(InputError, match="goal"):
        best_trials(rows, "min")


def test_averaging_over_the_nuisance_confounds_the_effect_with_the_optimum_moving():
    # A factor with no effect at its own best learning rate, whose best learning rate
    # moves: at rank 8 the best is 1e-4, at rank 16 it is 3e-4, both reaching loss 2.0.
    # Best-per-setting sees no rank effect; the average over both rates sees one.
    d = design([Factor("rank", ("8", "16")), Factor("data", ("web", "curated"))])
    loss = {("8", "1e-4"): 2.0, ("8", "3e-4"): 2.3, ("16", "1e-4"): 2.6, ("16", "3e-4"): 2.0}
    rows = [
        (run, seed, loss[d.runs[run - 1]["rank"], lr] + 0.01 * int(seed), lr)
        for run in d.run_ids
        for lr in ("1e-4", "3e-4")
        for seed in ("0", "1")
    ]
    best = effects(d, rows)
    averaged = effects(d, [(run, f"{lr}/{seed}", y) for run, seed, y, lr in rows])
    assert best.effects[0].estimate == pytest.approx(0.0)
    assert averaged.effects[0].estimate == pytest.approx(((2.6 + 2.0) - (2.0 + 2.3)) / 2)
    assert best.best_trials == {1: "1e-4", 2: "3e-4", 3: "1e-4", 4: "3e-4"}


def test_every_column_of_a_fraction_is_named_by_its_shortest_alias():
    d = design([Factor(n, ("a", "b")) for n in "pqrst"], fraction=2)  # D=AB, E=AC
    names = [c[0] for c in all_columns(d)]
    assert len(names) == d.run_count - 1 == MIN_CONTRASTS
    assert names[:5] == ["A", "B", "C", "D", "E"]
    assert {n for n in names[5:]} == {"BC", "BE"}  # BC = DE, BE = CD


def _json(capsys, argv):
    assert main(["design", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_design_command_reads_an_unreplicated_screen_with_lenth(capsys):
    argv = [f"--factor={n}:-1,1" for n in ("temp", "pressure", "conc", "stir")]
    argv += [f"--results={run},0,{y}" for run, y in enumerate(FILTRATION, start=1)]
    r = _json(capsys, argv)
    L = r["analysis"]["lenth"]
    assert L["pse"] == 2.625 and L["contrasts"] == 15
    assert set(L["active"]) == {"A", "C", "D", "AC", "AD"}
    assert len(r["contrasts"]) == 15


def test_design_command_with_centre_points_and_trials(capsys):
    argv = ["--factor=wd:0,0.1", "--factor=ctx:4,12", "--centre-points=2", "--nuisance=lr:2"]
    r = _json(capsys, argv)
    assert r["total_runs"] == (4 + 2) * 2
    assert r["centre_levels"] == {"wd": "0.05", "ctx": "8"}
    csv_lines = r["run_table_csv"].splitlines()
    assert csv_lines[0] == "run,wd,ctx,trial,seed,metric"
    assert csv_lines[-1] == "centre,0.05,8,,,"
    assert len(csv_lines) == 1 + r["total_runs"]
    assert re.search(r"\(4 runs x 1 seed \+ 2 centre points\) x 2", _head_text(capsys, argv))


def _head_text(capsys, argv):
    assert main(["design", *argv]) == 0
    return capsys.readouterr().out.splitlines()[0]


@given(
    st.lists(st.floats(min_value=-1e3, max_value=1e3), min_size=2, max_size=16),
    st.lists(st.floats(min_value=-1e3, max_value=1e3), min_size=2, max_size=8).filter(
        lambda c: max(c) - min(c) > 1e-3
    ),
    st.floats(min_value=-1e3, max_value=1e3),
)
def test_curvature_is_the_gap_of_the_means_and_ignores_a_common_shift(f, c, shift):
    a = curvature(f, c)
    b = curvature([y + shift for y in f], [y + shift for y in c])
    assert a.estimate == pytest.approx(sum(f) / len(f) - sum(c) / len(c), abs=1e-9)
    assert b.estimate == pytest.approx(a.estimate, abs=1e-6)
    assert b.sd == pytest.approx(a.sd, rel=1e-6, abs=1e-9)
    assert a.f == pytest.approx(a.t**2) and 0 <= a.p_value <= 1


def test_the_design_page_draws_the_half_normal_plot_for_one_seed_per_run():
    from calculators.commands.design import html
    from calculators.web import compute

    results = "\n".join(f"{run},0,{y}" for run, y in enumerate(FILTRATION, start=1))
    factors = "\n".join(f"{n}:-1,1" for n in ("temp", "pressure", "conc", "stir"))
    r = compute("design", {"factor": factors, "fraction": "", "seeds": "1", "results": results})
    page = html(r)
    assert "Half-normal plot of the effects" in page and "Lenth" in page
    # with two seeds per run the seed-to-seed error is used instead: no plot
    twice = results + "\n" + "\n".join(f"{run},1,{y + 1}" for run, y in enumerate(FILTRATION, 1))
    r2 = compute("design", {"factor": factors, "fraction": "", "seeds": "2", "results": twice})
    assert r2["analysis"]["lenth"] is None and "Half-normal" not in html(r2)
