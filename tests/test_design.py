"""calculators.planning.design and the `design` command: factorial designs, their aliasing,
fold-over, cost and the effects of a filled table."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from collections import Counter
from itertools import combinations, product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.cli import main
from calculators.errors import InputError
from calculators.planning.design import (
    LETTERS,
    MAX_RUNS,
    PUBLISHED,
    Design,
    Factor,
    Result,
    cost,
    defining_relation,
    design,
    effects,
    fold_over,
    fractions_for,
    parse_factor,
    read_results,
    resolution_of,
)


def two_level(k: int) -> list[Factor]:
    return [Factor(name=f"f{i}", levels=("lo", "hi")) for i in range(k)]


def balanced(d: Design) -> bool:
    """Each level of each factor appears equally often."""
    for j, f in enumerate(d.factors):
        counts = Counter(row[j] for row in d.coded)
        if len(counts) != len(f.levels) or len(set(counts.values())) != 1:
            return False
    return True


def orthogonal(d: Design) -> bool:
    """Every pair of two-level main-effect columns has a zero dot product."""
    two = [j for j, f in enumerate(d.factors) if len(f.levels) == 2]
    return all(sum(row[a] * row[b] for row in d.coded) == 0 for a, b in combinations(two, 2))


# ---- the published table -----------------------------------------------------------------


@pytest.mark.parametrize(("k", "p"), sorted(PUBLISHED))
def test_every_published_design_is_balanced_orthogonal_and_of_its_listed_resolution(k, p):
    d = design(two_level(k), p)
    assert d.run_count == 2 ** (k - p) == len(set(d.coded))  # distinct runs
    assert balanced(d) and orthogonal(d)
    # the resolution is the shortest word of the defining relation, and the table's
    words = defining_relation(PUBLISHED[k, p].generators)
    assert len(words) == 2**p - 1
    assert d.resolution == min(len(w) for w in words) == PUBLISHED[k, p].resolution >= 3
    # every word of the defining relation is a column of +1 in the design: I = word
    for word in d.defining_relation:
        columns = [LETTERS.index(c) for c in word]
        assert all(math.prod(row[j] for j in columns) == 1 for row in d.coded)


@pytest.mark.parametrize(("k", "p"), sorted(PUBLISHED))
def test_generators_place_the_added_factors_in_order_on_base_factors(k, p):
    base = k - p
    for i, g in enumerate(PUBLISHED[k, p].generators):
        target, _, sources = g.partition("=")
        assert target == LETTERS[base + i]
        assert set(sources) <= set(LETTERS[:base]) and len(sources) >= 2


def test_the_table_covers_3_to_11_factors():
    assert {k for k, _ in PUBLISHED} == set(range(3, 12))
    assert fractions_for(5) == (1, 2) and fractions_for(11) == (4, 5, 6, 7)
    assert fractions_for(2) == () and fractions_for(12) == ()


# Entries pinned as the NIST/SEMATECH e-Handbook section 5.3.3.4.7, Table 3.17
# (https://www.itl.nist.gov/div898/handbook/pri/section3/pri3347.htm) and Box, Hunter and
# Hunter (2005), Table 6.22 list them: (k, p): generators, resolution, runs.
PINNED = {
    (3, 1): (("C=AB",), 3, 4),
    (4, 1): (("D=ABC",), 4, 8),
    (5, 1): (("E=ABCD",), 5, 16),
    (7, 3): (("E=ABC", "F=BCD", "G=ACD"), 4, 16),
    (7, 4): (("D=AB", "E=AC", "F=BC", "G=ABC"), 3, 8),
    (8, 4): (("E=BCD", "F=ACD", "G=ABC", "H=ABD"), 4, 16),
    (9, 2): (("H=ACDFG", "J=BCEFG"), 6, 128),
    (10, 3): (("H=ABCG", "J=BCDE", "K=ACDF"), 5, 128),
    (11, 6): (("F=ABC", "G=BCD", "H=CDE", "J=ACD", "K=ADE", "L=BDE"), 4, 32),
}


@pytest.mark.parametrize(("k", "p"), sorted(PINNED))
def test_pinned_entries_match_the_published_table(k, p):
    generators, resolution, runs = PINNED[k, p]
    d = design(two_level(k), p)
    assert d.generators == generators
    assert d.resolution == resolution and d.run_count == runs


def test_letters_skip_i_as_the_tables_do():
    assert LETTERS == "ABCDEFGHJKLMNOP"
    d = design(two_level(9), 2)
    assert list(d.letters.values()) == list("ABCDEFGHJ")


def test_a_transcription_slip_is_caught_by_the_resolution_check():
    # 2^(7-3) with G=ABD instead of G=ACD (a slip) would still be resolution IV, but
    # G=AB would drop it to III: the check recomputes, it does not trust the table
    assert resolution_of(defining_relation(("E=ABC", "F=BCD", "G=AB"))) == 3
    with pytest.raises(ValueError, match="not of the form"):
        defining_relation(("ABC",))


# ---- full factorials ---------------------------------------------------------------------


@pytest.mark.parametrize("levels", [(2, 2, 2), (3, 2), (4, 3, 2), (2, 3, 4, 2), (3, 3, 3), (4,)])
def test_full_factorials_are_every_combination_balanced_and_orthogonal(levels):
    factors = [
        Factor(name=f"f{i}", levels=tuple(f"v{j}" for j in range(n))) for i, n in enumerate(levels)
    ]
    d = design(factors)
    assert d.run_count == math.prod(levels)
    assert d.run_ids == tuple(range(1, d.run_count + 1))
    assert set(d.coded) == set(product(*[(-1, 1) if n == 2 else tuple(range(n)) for n in levels]))
    assert balanced(d) and orthogonal(d)
    assert d.resolution is None and d.generators == () and d.aliases == ()
    # the first factor changes fastest; its first level is coded -1 (or 0)
    assert [row[0] for row in d.coded[: levels[0]]] == (
        [-1, 1] if levels[0] == 2 else list(range(levels[0]))
    )
    assert d.runs[0] == {f.name: f.levels[0] for f in factors}


def test_a_full_factorial_past_the_bound_is_refused():
    assert design(two_level(12)).run_count == MAX_RUNS
    for factors in (two_level(13), [*two_level(10), Factor(name="x", levels=tuple("abcdefgh"))]):
        with pytest.raises(InputError) as e:
            design(factors)
        assert e.value.field == "factor"
        assert "8,192 runs" in str(e.value) and f"{MAX_RUNS:,}" in str(e.value)


# ---- refusals ----------------------------------------------------------------------------


def test_a_refused_fraction_names_the_ones_that_exist():
    with pytest.raises(InputError) as e:
        design(two_level(5), 3)
    assert e.value.field == "fraction"
    message = str(e.value)
    assert message.startswith("fraction must be one of 1 (resolution V, 16 runs), 2 ")
    assert "for 5 two-level factors; got 3" in message
    with pytest.raises(InputError, match="none is tabulated for 2 two-level factors"):
        design(two_level(2), 1)


def test_a_fraction_with_a_three_level_factor_is_refused_naming_it():
    factors = [*two_level(3), Factor(name="mix", levels=("a", "b", "c"))]
    with pytest.raises(InputError) as e:
        design(factors, 1)
    assert e.value.field == "fraction" and "mix has 3" in str(e.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("lr", "NAME:LEVEL,LEVEL"),
        (":1,2", "must not be empty"),
        ("lr:1", "2 to 8 levels"),
        ("lr:1,2,3,4,5,6,7,8,9", "2 to 8 levels, got 9"),
        ("lr:1,1", "names level '1' twice"),
        ("lr:1,", "level ''"),
        ("run:1,2", "run table's own columns"),
        ("a,b:1,2", "without : , or quotes"),
    ],
)
def test_bad_factors_name_the_field_the_value_and_the_bound(text, words):
    with pytest.raises(InputError) as e:
        parse_factor(text)
    assert e.value.field == "factor" and words in str(e.value)


def test_factor_names_are_unique_and_bounded_in_count():
    with pytest.raises(InputError, match="LR is given twice"):
        design([parse_factor("lr:1,2"), parse_factor("LR:3,4")])
    with pytest.raises(InputError, match="at most 15 factors, got 16"):
        design(two_level(16))
    with pytest.raises(InputError, match="at least one"):
        design([])


# ---- aliasing and fold-over --------------------------------------------------------------


def test_the_alias_structure_lists_effects_up_to_two_factor_interactions():
    d = design(two_level(4), 1)  # D = ABC: I = ABCD
    aliases = {a.effect: a.aliased_with for a in d.aliases}
    assert aliases["A"] == () and aliases["D"] == ()  # A = BCD is not listed
    assert aliases["AB"] == ("CD",) and aliases["AD"] == ("BC",)
    d = design(two_level(5), 2)  # D = AB, E = AC
    aliases = {a.effect: a.aliased_with for a in d.aliases}
    assert aliases["A"] == ("BD", "CE") and aliases["D"] == ("AB",)
    assert aliases["BC"] == ("DE",)


@pytest.mark.parametrize(
    ("k", "p"), sorted(kp for kp, pub in PUBLISHED.items() if pub.resolution == 3)
)
def test_folding_over_a_resolution_iii_design_frees_the_main_effects(k, p):
    d = design(two_level(k), p)
    f = fold_over(d)
    assert f.coded == tuple(tuple(-c for c in row) for row in d.coded)
    assert f.run_ids[0] == d.run_count + 1 and f.combined_run_count == 2 * d.run_count
    both = d.coded + f.coded
    # main effects are clear of every two-factor interaction in the combined design
    for i in range(k):
        for a, b in combinations(range(k), 2):
            assert sum(row[i] * row[a] * row[b] for row in both) == 0
    assert f.combined_resolution is None or f.combined_resolution >= 4
    if (k, p) == (3, 1):
        assert f.combined_resolution is None and len(set(both)) == 8  # the full 2^3
    else:
        assert f.combined_resolution == 4


def test_a_full_factorial_has_nothing_to_fold_over():
    with pytest.raises(ValueError):
        fold_over(design(two_level(3)))


# ---- cost --------------------------------------------------------------------------------


def test_cost_is_runs_times_seeds_times_hours():
    c = cost(16, 3, 2.0, 4, 2.5)
    assert c.total_runs == 48 and c.gpu_hours == 96.0
    assert c.cost == 240.0 and c.days == 96.0 / 4 / 24
    c = cost(16, 3, None, 4, 2.5)
    assert c.gpu_hours is None and c.cost is None and c.days is None
    assert cost(16, 1, 1.0, 1, None).cost is None
    with pytest.raises(InputError) as e:
        cost(16, 0, 1.0, 1, None)
    assert e.value.field == "seeds"


# ---- analysis ----------------------------------------------------------------------------

NOISE = [0.30, -0.12, 0.05, -0.27, 0.18, -0.09, 0.22, -0.15, 0.01, -0.2, 0.11]


def known_table(seeds: int) -> tuple[Design, list[tuple[int, str, float]]]:
    """A 2^3 full factorial with metric = 10 + 2A - B + 0.5AB + noise from a fixed list."""
    d = design(two_level(3))
    rows = []
    for run_id, (a, b, _c) in zip(d.run_ids, d.coded, strict=True):
        for s in range(seeds):
            noise = NOISE[(run_id * 7 + s * 3) % len(NOISE)]
            rows.append((run_id, str(s), 10 + 2 * a - b + 0.5 * a * b + noise))
    return d, rows


def test_effects_recover_the_known_effects_within_the_noise():
    d, rows = known_table(seeds=4)
    r = effects(d, rows)
    est = {e.effect: e for e in r.effects}
    # an effect is mean(+1) - mean(-1): twice the model's coefficient
    truth = {"A": 4.0, "B": -2.0, "C": 0.0, "AB": 1.0, "AC": 0.0, "BC": 0.0}
    assert set(est) == set(truth)
    for name, value in truth.items():
        assert abs(est[name].estimate - value) <= 3 * est[name].standard_error, name
    # s^2 pooled within runs; SE = 2 s / sqrt(N) (Box, Hunter and Hunter, chapter 5)
    by_run: dict[int, list[float]] = {}
    for run, _, y in rows:
        by_run.setdefault(run, []).append(y)
    s2 = sum(statistics.variance(v) * (len(v) - 1) for v in by_run.values()) / (32 - 8)
    assert r.df == 24 and r.observations == 32
    assert r.pooled_sd == pytest.approx(math.sqrt(s2))
    assert est["A"].standard_error == pytest.approx(2 * math.sqrt(s2) / math.sqrt(32))
    assert est["A"].high_mean - est["A"].low_mean == pytest.approx(est["A"].estimate)


def test_unequal_seeds_use_the_general_standard_error():
    d, rows = known_table(seeds=3)
    rows = [row for row in rows if not (row[0] == 1 and row[1] == "2")]  # run 1: 2 seeds
    r = effects(d, rows)
    sizes = [2] + [3] * 7
    expected = r.pooled_sd * (2 / 8) * math.sqrt(sum(1 / n for n in sizes))
    assert r.effects[0].standard_error == pytest.approx(expected)
    assert r.seeds_per_run == (2, 3)


def test_one_seed_per_run_gives_no_standard_error():
    d, rows = known_table(seeds=1)
    r = effects(d, rows)
    assert r.pooled_sd is None and r.df == 0
    assert all(e.standard_error is None for e in r.effects)
    assert "no standard error" in r.notes[0]


def test_a_fraction_estimates_each_alias_set_once_and_names_its_aliases():
    d = design(two_level(4), 1)  # AB = CD, AC = BD, AD = BC
    rows = [(i, "0", float(i)) for i in d.run_ids]
    names = {e.effect: e.aliases for e in effects(d, rows).effects}
    assert names == {
        "A": (),
        "B": (),
        "C": (),
        "D": (),
        "AB": ("CD",),
        "AC": ("BD",),
        "AD": ("BC",),
    }
    d = design(two_level(3), 1)  # C = AB: interactions sit on main effects' columns
    names = {e.effect: e.aliases for e in effects(d, [(i, "0", 1.0) for i in d.run_ids]).effects}
    assert names == {"A": ("BC",), "B": ("AC",), "C": ("AB",)}


def lines(*texts: str) -> list[tuple[int, str]]:
    return list(enumerate(texts, start=1))


def test_bad_results_name_their_line():
    d = design(two_level(3), 1)  # 4 runs
    with pytest.raises(InputError, match="results line 2: run 9 is not in the design"):
        read_results(d, lines("1,0,0.5", "9,0,0.5"), "results")
    with pytest.raises(InputError, match="results line 1 metric must be a number, got 'abc'"):
        read_results(d, lines("1,0,abc"), "results")
    with pytest.raises(InputError, match="results line 1: run 1 has no metric"):
        read_results(d, lines("1,0,"), "results")
    with pytest.raises(InputError, match="expected run,seed,metric"):
        read_results(d, lines("1,0"), "results")
    rows = read_results(d, lines("run,seed,metric", "1,0,1", "2,0,1", "1,0,2"), "results")
    assert rows[0] == Result(run=1, seed="0", metric=1.0, line=2)
    with pytest.raises(InputError, match="results line 4: run 1 seed '0' is already on line 2"):
        effects(d, rows)
    with pytest.raises(InputError, match=r"2 of 4 runs have no metric \(run 3, 4\)"):
        effects(d, rows[:2])


def test_the_run_tables_own_rows_are_read_and_checked():
    d = design([parse_factor("lr:1e-4,3e-4"), parse_factor("wd:0,0.1")])
    table = ["run,lr,wd,seed,metric", "1,1e-4,0,7,0.5", "2,3e-4,0,7,0.6"]
    rows = read_results(d, lines(*table), "results")
    assert [(r.run, r.seed, r.metric) for r in rows] == [(1, "7", 0.5), (2, "7", 0.6)]
    with pytest.raises(InputError, match="run 1 is 1e-4, 0 in the design"):
        read_results(d, lines("1,3e-4,0,7,0.5"), "results")


# ---- the command -------------------------------------------------------------------------

EXAMPLE = [
    "design",
    "--factor",
    "lr:1e-4,3e-4",
    "--factor",
    "warmup:100,1000",
    "--factor",
    "wd:0,0.1",
    "--factor",
    "rank:8,16",
    "--factor",
    "mix:a,b",
    "--fraction",
    "1",
    "--seeds",
    "3",
    "--gpu-hours-per-run",
    "2",
    "--gpus",
    "4",
    "--price",
    "2.5",
]


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_design_json_contract(capsys):
    r = run_json(capsys, *EXAMPLE)
    names = ["lr", "warmup", "wd", "rank", "mix"]
    assert r["run_count"] == 16 and r["run_ids"] == list(range(1, 17))
    assert all(list(run) == names for run in r["runs"])  # a pure mapping, in factor order
    assert r["runs"][0] == {"lr": "1e-4", "warmup": "100", "wd": "0", "rank": "8", "mix": "b"}
    assert r["resolution"] == 5 and r["generators"] == ["E=ABCD"]
    assert r["defining_relation"] == ["ABCDE"]
    assert r["letters"] == dict(zip(names, "ABCDE", strict=True))
    assert all(a["aliased_with"] == [] for a in r["aliases"])
    assert len(r["aliases"]) == 5 + 10
    assert (r["seeds"], r["total_runs"]) == (3, 48)
    assert (r["gpu_hours"], r["cost"], r["days"]) == (96.0, 240.0, 1.0)
    assert r["effects"] is None and r["fold_over"] is None
    csv_lines = r["run_table_csv"].splitlines()
    assert csv_lines[0] == "run,lr,warmup,wd,rank,mix,seed,metric"
    assert len(csv_lines) == 1 + 48 and csv_lines[1] == "1,1e-4,100,0,8,b,,"
    assert isinstance(r["warnings"], list) and isinstance(r["notes"], list)


def test_design_json_leaves_out_what_its_inputs_do_not_give(capsys):
    r = run_json(capsys, "design", "--factor", "a:x,y", "--factor", "b:1,2,3")
    assert r["resolution"] is None and r["fraction"] is None and r["generators"] == []
    assert r["coded"][:3] == [[-1, 0], [1, 0], [-1, 1]]
    assert (r["gpu_hours"], r["cost"], r["days"]) == (None, None, None)
    assert r["notes"]


def test_design_json_with_results_gives_effects(capsys, tmp_path):
    argv = ["design", "--factor", "a:x,y", "--factor", "b:1,2"]
    rows = ["1,0,10", "2,0,12", "3,0,9", "4,0,12", "1,1,10.2", "2,1,12.2", "3,1,9.2", "4,1,12.2"]
    r = run_json(capsys, *argv, *[w for row in rows for w in ("--results", row)])
    effect = {e["effect"]: e for e in r["effects"]}
    assert effect["A"]["estimate"] == pytest.approx(2.5)
    assert effect["B"]["estimate"] == pytest.approx(-0.5)
    assert effect["AB"]["names"] == "a x b"
    assert r["analysis"]["observations"] == 8 and r["analysis"]["df"] == 4
    path = tmp_path / "filled.csv"
    path.write_text(r["run_table_csv"].splitlines()[0] + "\n" + "\n".join(rows) + "\n")
    again = run_json(capsys, *argv, "--results-file", str(path))
    assert again["effects"] == r["effects"]


def test_resolution_iii_json_offers_the_fold_over(capsys):
    r = run_json(capsys, *EXAMPLE[:11], "--fraction", "2")
    assert r["resolution"] == 3 and r["run_count"] == 8
    fo = r["fold_over"]
    assert fo["combined_run_count"] == 16 and fo["combined_resolution"] == 4
    assert fo["run_ids"] == list(range(9, 17))
    assert r["warnings"] and "resolution III" in r["warnings"][0]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (
            ["--factor", "a:1,2", "--factor", "b:1,2", "--factor", "c:1,2", "--fraction", "2"],
            "--fraction must be one of 1 ",
        ),
        (
            ["--factor", "a:1,2,3", "--factor", "b:1,2", "--factor", "c:1,2", "--fraction", "1"],
            "--fraction needs every factor at two levels; a has 3",
        ),
        (["--factor", "a"], "--factor must be NAME:LEVEL,LEVEL"),
        ([], "--factor: give at least one"),
        (["--factor", "a:1,2", "--results", "5,0,1"], "--results line 1: run 5 is not"),
        (["--factor", "a:1,2", "--results-file", "/nonexistent/x.csv"], "cannot be read"),
    ],
)
def test_bad_design_input_is_one_line_and_exit_2(capsys, argv, match):
    assert main(["design", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and match in err, err


def test_real_process_exits_2_without_traceback():
    done = subprocess.run(
        [sys.executable, "-m", "calculators", "design", "--factor", "a:1", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_the_table_reads_as_the_design(capsys):
    assert main(EXAMPLE) == 0
    out = capsys.readouterr().out
    assert out.startswith("2^(5-1) fraction, resolution V: 16 runs x 3 seeds = 48")
    assert "lr (A)" in out and "3e-4 (+1)" in out and "96.0 GPU-hours" in out


# ---- properties --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(PUBLISHED)), st.data())
def test_any_tabulated_fraction_is_balanced_and_orthogonal(kp, data):
    k, p = kp
    names = data.draw(
        st.lists(st.text("abcxyz_", min_size=1, max_size=6), min_size=k, max_size=k, unique=True)
    )
    factors = [Factor(name=n, levels=("lo", "hi")) for n in names]
    d = design(factors, p)
    assert balanced(d) and orthogonal(d)
    assert d.resolution == PUBLISHED[k, p].resolution
    # the runs' levels follow the codes
    assert all(
        run[f.name] == ("lo" if c < 0 else "hi")
        for run, row in zip(d.runs, d.coded, strict=True)
        for f, c in zip(factors, row, strict=True)
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 4), min_size=1, max_size=5))
def test_any_small_full_factorial_is_balanced_and_orthogonal(levels):
    factors = [
        Factor(name=f"f{i}", levels=tuple(str(j) for j in range(n))) for i, n in enumerate(levels)
    ]
    d = design(factors)
    assert d.run_count == math.prod(levels) and balanced(d) and orthogonal(d)


# The Tuning Playbook's roles (Godbole et al. 2023): nuisance factors are re-tuned for every
# run and multiply the runs; fixed factors are listed with the conclusion they narrow.


def test_nuisance_settings_multiply_the_runs_and_the_hours(capsys):
    r = run_json(
        capsys,
        "design",
        "--factor", "a:1,2", "--factor", "b:1,2", "--factor", "c:1,2",
        "--fraction", "1", "--seeds", "2", "--gpu-hours-per-run", "1.5",
        "--nuisance", "lr:3", "--nuisance", "warmup:2",
        "--fixed", "steps=2000",
    )  # fmt: skip
    # 2^(3-1) = 4 runs, x 2 seeds, x 3 x 2 nuisance settings = 48 runs of 1.5 GPU-hours
    assert r["tuned_settings"] == 6
    assert r["total_runs"] == 4 * 2 * 6 == 48
    assert r["gpu_hours"] == 48 * 1.5
    assert r["nuisance"] == [{"name": "lr", "settings": 3}, {"name": "warmup", "settings": 2}]
    assert r["fixed"] == [{"name": "steps", "value": "2000"}]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--nuisance", "lr", "--nuisance must be NAME:SETTINGS"),
        ("--nuisance", "lr:0", "--nuisance must be a positive integer"),
        ("--fixed", "steps", "--fixed must be NAME=VALUE"),
    ],
)
def test_bad_roles_are_one_line_naming_the_flag(capsys, flag, value, message):
    assert main(["design", "--factor", "a:1,2", "--factor", "b:1,2", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err


def test_the_same_nuisance_factor_twice_is_refused():
    from calculators.planning.design import parse_nuisance, tuned_settings

    with pytest.raises(InputError, match="each factor once"):
        tuned_settings([parse_nuisance("lr:3"), parse_nuisance("lr:2")])
    with pytest.raises(InputError, match="more than 10,000 runs"):
        tuned_settings([parse_nuisance(f"n{i}:100") for i in range(3)])


# ---- nuisance trials: each run's best trial ----------------------------------------------


def test_rows_with_trials_are_read_in_every_shape_and_mixed_rows_are_refused():
    d = design([Factor("rank", ("8", "16")), Factor("data", ("web", "curated"))])
    lines = [
        (1, "run,rank,data,trial,seed,metric"),
        (2, "1,8,web,lr=1e-4,0,2.0"),  # the run table's own row, trial filled
        (3, "2,lr=1e-4,0,2.1"),  # run,trial,seed,metric
    ]
    rows = read_results(d, lines, "results", trials=True)
    assert [(r.run, r.trial) for r in rows] == [(1, "lr=1e-4"), (2, "lr=1e-4")]
    # run,seed,metric still reads (a best trial chosen already)
    assert read_results(d, [(1, "3,0,2.2")], "results", trials=True)[0].trial == ""
    with pytest.raises(InputError, match="a trial on every line or on none"):
        effects(d, [(1, "0", 2.0, "a"), (2, "0", 2.0, "a"), (3, "0", 2.0), (4, "0", 2.0)])
    with pytest.raises(InputError, match="no trial"):
        read_results(d, [(1, "1,,0,2.0")], "results", trials=True)


def test_a_one_factor_design_reads_four_cells_as_run_trial_seed_metric():
    d = design([Factor("variant", ("control", "winner"))])
    rows = read_results(d, [(1, "1,lr=3e-4,7,0.5")], "results", trials=True)
    assert rows[0] == Result(run=1, seed="7", metric=0.5, line=1, trial="lr=3e-4")


def test_trial_is_a_reserved_factor_name():
    with pytest.raises(InputError, match="taken by the run table"):
        Factor("trial", ("a", "b"))


def test_the_same_seed_may_appear_once_per_trial():
    d = design([Factor("variant", ("control", "winner"))])
    rows = [(r, s, 1.0 + r, t) for r in (1, 2) for t in ("a", "b") for s in ("0", "1")]
    assert effects(d, rows).best_trials == {1: "a", 2: "a"}
    with pytest.raises(InputError, match="already on line"):
        effects(d, [*rows, (1, "0", 3.0, "a")])
