"""Campaign budget: phases add up, packages cover or not, the schedule sums to the total;
comparison phases: seeds tied to a minimum detectable effect, control runs, the margin
rounded per phase."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.planning.budget import (
    EXAMPLE_DISCOUNTS,
    SCHEDULE_MAX_PERIODS,
    Campaign,
    Package,
    Phase,
    campaign_budget,
    example_packages,
    schedule_period_days,
)
from calculators.planning.comparison import (
    EXAMPLE_PHASES,
    SeedPlan,
    comparison_phase,
    seed_count,
)
from calculators.statistics.seeds import minimum_detectable_effect, seeds_needed


def test_worked_example():
    # 12 experiments of 6 GPU-hours on 4 GPUs with a 20% margin: ceil(12 x 0.2) = 3 reruns,
    # 15 runs x 6 = 90 GPU-hours; 3 waves of runs then 1 wave of reruns, 4 x 6 h = 24 h.
    c = Campaign(
        phases=(Phase(name="experiments", runs=12, gpu_hours_per_run=6.0),),
        gpus=4,
        price_per_gpu_hour=2.5,
        margin=0.2,
        decisions=3,
    )
    r = campaign_budget(c)
    (p,) = r.phases
    assert (p.runs, p.reruns, p.concurrent) == (12, 3, 4)
    assert p.gpu_hours == 90.0
    assert p.margin_gpu_hours == 18.0
    assert p.wall_hours == 24.0
    assert r.cost_usd == 225.0
    assert r.cost_per_decision == 75.0
    assert r.wall_days == 1.0


def test_multi_gpu_runs_share_the_rented_gpus():
    # 8 GPUs, runs on 4 GPUs each: 2 at once; one run is 16 GPU-hours = 4 h wall clock.
    c = Campaign(
        phases=(Phase(name="pretrain", runs=4, gpu_hours_per_run=16.0, gpus_per_run=4),),
        gpus=8,
        price_per_gpu_hour=1.0,
        margin=0.0,
    )
    (p,) = campaign_budget(c).phases
    assert p.concurrent == 2
    assert p.wall_hours == 2 * 4.0


def test_packages_cover_by_days_and_gpus():
    phases = (Phase(name="long", runs=1, gpu_hours_per_run=100.0),)  # 100 h on one GPU
    c = Campaign(
        phases=phases,
        gpus=1,
        price_per_gpu_hour=2.0,
        margin=0.0,
        packages=(
            Package(days=3, gpus=1, price_usd=100.0, label="3 days"),
            Package(days=7, gpus=1, price_usd=200.0, label="7 days"),
            Package(days=30, gpus=2, price_usd=900.0, label="30 days"),
        ),
    )
    r = campaign_budget(c)
    by_days = {k.days: k for k in r.packages}
    assert not by_days[3].covers and by_days[3].slack_hours == 72 - 100
    assert by_days[7].covers and by_days[7].slack_hours == 168 - 100
    assert r.cheapest_covering.days == 7
    narrow = Campaign(
        phases=phases,
        gpus=2,
        price_per_gpu_hour=2.0,
        packages=(Package(days=30, gpus=1, price_usd=1.0, label="one GPU"),),
    )
    assert not campaign_budget(narrow).packages[0].covers
    assert campaign_budget(narrow).cheapest_covering is None


def test_example_packages_are_labelled_examples():
    pk = example_packages(4, 2.0)
    assert [k.days for k in pk] == [3, 7, 30]
    for k in pk:
        assert "example" in k.label and "not a quote" in k.label
        assert k.price_usd == pytest.approx(k.days * 24 * 4 * 2.0 * (1 - EXAMPLE_DISCOUNTS[k.days]))


def test_schedule_is_day_by_day():
    r = campaign_budget(Campaign(phases=EXAMPLE_PHASES, gpus=4, price_per_gpu_hour=2.0))
    assert len(r.schedule) == -(-r.wall_hours // 24)
    assert sum(sum(day.values()) for day in r.schedule) == pytest.approx(r.gpu_hours)
    assert next(iter(r.schedule[0])) == "initial check"


PHASES = st.lists(
    st.builds(
        Phase,
        name=st.sampled_from(["a", "b", "c", "d"]),
        runs=st.integers(1, 50),
        gpu_hours_per_run=st.floats(0.1, 200),
        gpus_per_run=st.integers(1, 4),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=50, deadline=None)
@given(phases=PHASES, gpus=st.integers(4, 32), margin=st.floats(0, 1), price=st.floats(0.1, 20))
def test_totals_are_the_sum_of_their_phases(phases, gpus, margin, price):
    r = campaign_budget(
        Campaign(phases=tuple(phases), gpus=gpus, price_per_gpu_hour=price, margin=margin)
    )
    assert r.gpu_hours == pytest.approx(sum(p.gpu_hours for p in r.phases))
    assert r.wall_hours == pytest.approx(sum(p.wall_hours for p in r.phases))
    assert r.cost_usd == pytest.approx(r.gpu_hours * price)
    assert sum(sum(d.values()) for d in r.schedule) == pytest.approx(r.gpu_hours)
    assert r.margin_gpu_hours >= 0
    # more GPUs never lengthen the campaign
    more = campaign_budget(
        Campaign(phases=tuple(phases), gpus=gpus + 4, price_per_gpu_hour=price, margin=margin)
    )
    assert more.wall_hours <= r.wall_hours + 1e-9


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Phase(name="x", runs=0, gpu_hours_per_run=1), "x: runs must be a positive"),
        (lambda: Phase(name="x", runs=1, gpu_hours_per_run=-2), "gpu_hours_per_run must be a"),
        (lambda: Phase(name="", runs=1, gpu_hours_per_run=1), "phase name must be"),
        (lambda: Campaign(phases=(), gpus=1, price_per_gpu_hour=1), "phases must list"),
        (lambda: Campaign(phases=EXAMPLE_PHASES, gpus=0, price_per_gpu_hour=1), "gpus must be"),
        (lambda: Campaign(phases=EXAMPLE_PHASES, gpus=1, price_per_gpu_hour=0), "price_per_gpu"),
        (
            lambda: Campaign(phases=EXAMPLE_PHASES, gpus=1, price_per_gpu_hour=1, margin=-0.1),
            "margin must be a number in",
        ),
        (
            lambda: Campaign(
                phases=(Phase(name="big", runs=1, gpu_hours_per_run=1, gpus_per_run=8),),
                gpus=4,
                price_per_gpu_hour=1,
            ),
            r"big: gpus_per_run must be at most gpus \(4\), got 8",
        ),
        (lambda: Package(days=0, gpus=1, price_usd=1, label="x"), "package days must be"),
    ],
)
def test_bad_inputs_name_the_field(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_phase_hours_derived_from_throughput():
    from calculators.model.presets import load_preset
    from calculators.model.spec import ModelSpec
    from calculators.planning.budget import phase_from_tokens
    from calculators.training.throughput import training_time

    spec = ModelSpec.from_hf_config(load_preset("llama-3.1-8b"))
    phase = phase_from_tokens(
        "sft",
        runs=3,
        tokens_per_run=10**9,
        spec=spec,
        seq_len=4096,
        gpu="h100-sxm",
        mfu=0.4,
        gpus_per_run=4,
    )
    t = training_time(spec, tokens=10**9, seq_len=4096, gpu="h100-sxm", gpus=4, mfu=0.4)
    assert phase.gpu_hours_per_run == t.gpu_hours
    # GPU-hours = tokens x FLOPs per token / (peak x MFU), whatever the GPU count.
    assert phase.gpu_hours_per_run == pytest.approx(
        10**9 * t.flops_per_token / (t.peak_flops_per_gpu * 0.4) / 3600
    )
    assert (phase.runs, phase.gpus_per_run) == (3, 4)


def test_reruns_round_the_margin_as_typed():
    # 100 runs at 7%: 7 reruns; ceil(100 * 0.07) is 8 in binary floating point
    r = campaign_budget(
        Campaign(
            phases=(Phase(name="a", runs=100, gpu_hours_per_run=1.0),),
            gpus=1,
            price_per_gpu_hour=1.0,
            margin=0.07,
        )
    )
    assert r.phases[0].reruns == 7


@settings(max_examples=200, deadline=None)
@given(runs=st.integers(1, 10_000), hundredths=st.integers(0, 999))
def test_reruns_are_the_exact_ceiling(runs, hundredths):
    margin = float(f"{hundredths / 100:.2f}")
    r = campaign_budget(
        Campaign(
            phases=(Phase(name="a", runs=runs, gpu_hours_per_run=1.0),),
            gpus=1,
            price_per_gpu_hour=1.0,
            margin=margin,
        )
    )
    assert r.phases[0].reruns == -(-runs * hundredths // 100)


LONG_PHASES = st.lists(
    st.builds(
        Phase,
        name=st.sampled_from(["a", "b", "c"]),
        runs=st.integers(1, 1_000_000),
        gpu_hours_per_run=st.floats(0.01, 1e9),
        gpus_per_run=st.integers(1, 2),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=100, deadline=None)
@given(phases=LONG_PHASES, gpus=st.integers(2, 64))
def test_schedule_of_any_length_is_bounded_and_sums_to_the_total(phases, gpus):
    r = campaign_budget(Campaign(phases=tuple(phases), gpus=gpus, price_per_gpu_hour=1.0))
    assert 1 <= len(r.schedule) <= SCHEDULE_MAX_PERIODS
    period = r.schedule_period_days
    assert period in (1, 7, 30) or period % 365 == 0
    # the shortest period that keeps the rows bounded
    assert len(r.schedule) == -(-r.wall_hours // (24 * period))
    total = sum(sum(row.values()) for row in r.schedule)
    assert total == pytest.approx(r.gpu_hours, rel=1e-9)


def test_schedule_periods_by_campaign_length():
    assert schedule_period_days(24 * 60) == 1
    assert schedule_period_days(24 * 61) == 7
    assert schedule_period_days(24 * 7 * 61) == 30
    assert schedule_period_days(24 * 30 * 61) == 365
    assert schedule_period_days(24 * 365 * 61) == 730


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Phase(name="a", runs=1, gpu_hours_per_run=1e300), "at most 1e"),
        (lambda: Phase(name="a", runs=10**7, gpu_hours_per_run=1), "runs must be at most"),
        (lambda: Package(days=10**6, gpus=1, price_usd=1, label="x"), "days must be at most"),
        (
            lambda: Campaign(phases=EXAMPLE_PHASES, gpus=1, price_per_gpu_hour=1, margin=10),
            r"margin must be a number in \[0, 10.0\)",
        ),
    ],
)
def test_bounds_are_refused_with_their_field(make, match):
    with pytest.raises(InputError, match=match) as e:
        make()
    assert e.value.field in ("phase", "package", "margin")


# --- Comparison phases: seeds tied to a minimum detectable effect, control runs, and the
# margin rounded per phase (calculators.planning.comparison).


def _one(phase, gpus=1, margin=0.2):
    return campaign_budget(
        Campaign(phases=(phase,), gpus=gpus, price_per_gpu_hour=1.0, margin=margin)
    )


def test_comparison_phase_adds_one_control_per_seed():
    # 3 arms x 4 seeds = 12 runs and 4 control runs: 16 runs, ceil(16 x 0.2) = 4 reruns,
    # 20 x 6 = 120 GPU-hours, of which the controls' 4 x 6 = 24.
    phase = comparison_phase("experiments", arms=3, seeds=4, gpu_hours_per_run=6.0)
    assert (phase.runs, phase.control_runs) == (12, 4)
    r = _one(phase)
    (p,) = r.phases
    assert (p.runs, p.control_runs, p.reruns) == (12, 4, 4)
    assert p.gpu_hours == 120.0 and p.control_gpu_hours == 24.0
    assert (r.control_runs, r.control_gpu_hours) == (4, 24.0)
    assert p.wall_hours == 20 * 6.0  # one GPU: every run in turn
    # four GPUs: 4 waves of runs and controls together, then 1 wave of reruns
    assert _one(phase, gpus=4).phases[0].wall_hours == 5 * 6.0


def test_margin_is_rounded_up_in_each_phase():
    # The example campaign at 0.2: runs and control runs 2, 12 + 4, 12 + 4, 1, 1 give exact
    # shares 0.4, 3.2, 3.2, 0.2, 0.2, rounded up per phase to 1, 4, 4, 1, 1 = 11 reruns; one
    # rounding over the campaign's 36 runs would give ceil(7.2) = 8. The rounding adds
    # 0.6 x 1 + 0.8 x 6 + 0.8 x 0.5 + 0.8 x 2 + 0.8 x 1 = 8.2 GPU-hours over the exact 20%.
    r = campaign_budget(Campaign(phases=EXAMPLE_PHASES, gpus=1, price_per_gpu_hour=1.0))
    assert [p.runs for p in r.phases] == [2, 12, 12, 1, 1]
    assert [p.control_runs for p in r.phases] == [0, 4, 4, 0, 0]
    assert [p.reruns for p in r.phases] == [1, 4, 4, 1, 1]
    assert [p.reruns_exact for p in r.phases] == pytest.approx([0.4, 3.2, 3.2, 0.2, 0.2])
    assert (r.reruns, r.pooled_reruns) == (11, 8)
    assert r.rounding_gpu_hours == pytest.approx(8.2)
    assert r.margin_gpu_hours == pytest.approx(
        r.rounding_gpu_hours
        + sum(0.2 * (p.runs + p.control_runs) * p.gpu_hours_per_run for p in EXAMPLE_PHASES)
    )


def test_the_example_compares_arms_with_a_control_on_the_seeds_of_its_stated_gain():
    # The default campaign's experiments and evaluation are comparison phases: three arms
    # and one control, on the seeds tied to a minimum detectable effect of two points, not a
    # run count without controls.
    import json
    from pathlib import Path

    from calculators.planning.comparison import (
        EXAMPLE_ARMS,
        EXAMPLE_DETECT,
        EXAMPLE_SD_DIFFERENCE,
        EXAMPLE_SEEDS,
    )
    from calculators.web import compute

    plan = seed_count(SeedPlan(sd_difference=EXAMPLE_SD_DIFFERENCE, detect=EXAMPLE_DETECT))
    assert plan.seeds == EXAMPLE_SEEDS and (EXAMPLE_ARMS, EXAMPLE_DETECT) == (3, 0.02)
    assert plan.minimum_detectable_effect <= EXAMPLE_DETECT
    assert minimum_detectable_effect(EXAMPLE_SD_DIFFERENCE, EXAMPLE_SEEDS - 1) > EXAMPLE_DETECT
    for name, hours in (("experiments", 6.0), ("evaluation", 0.5)):
        (phase,) = [p for p in EXAMPLE_PHASES if p.name == name]
        assert phase == comparison_phase(
            name, arms=EXAMPLE_ARMS, seeds=EXAMPLE_SEEDS, gpu_hours_per_run=hours
        )
    others = [p for p in EXAMPLE_PHASES if p.name not in ("experiments", "evaluation")]
    assert len(others) == 3 and all(p.control_runs == 0 for p in others)
    # the spread: the seed variability guide's ten paired seeds, as the pages' |raw| writes it
    digits = Path(__file__).resolve().parents[1] / "docs" / "data" / "evaluation" / "digits"
    seeds = json.loads((digits / "seeds.json").read_text(encoding="utf-8"))
    pilot = compute("seeds", {k: ",".join(map(repr, seeds[k])) for k in "ab"})
    assert float(f"{pilot['paired']['sd_difference']:g}") == EXAMPLE_SD_DIFFERENCE


@settings(max_examples=100, deadline=None)
@given(phases=PHASES, margin=st.floats(0, 3))
def test_per_phase_rounding_is_bounded(phases, margin):
    r = campaign_budget(
        Campaign(phases=tuple(phases), gpus=4, price_per_gpu_hour=1.0, margin=margin)
    )
    # each phase rounds up by less than one of its runs; never below one pooled rounding
    for p, q in zip(r.phases, phases, strict=True):
        assert 0 <= p.reruns - p.reruns_exact < 1 + 1e-9
        assert 0 <= p.rounding_gpu_hours < q.gpu_hours_per_run * (1 + 1e-9)
    assert r.pooled_reruns <= r.reruns < r.pooled_reruns + len(phases)


def test_seed_count_is_the_seeds_calculators():
    # the budget imports the seeds calculator's functions: same n, same MDE
    plan = seed_count(SeedPlan(sd_difference=0.0073, detect=0.02))
    assert plan.seeds == seeds_needed(0.02, 0.0073)
    assert plan.minimum_detectable_effect == minimum_detectable_effect(0.0073, plan.seeds)
    # the smallest n: its MDE reaches the gain asked, one seed fewer does not
    assert plan.minimum_detectable_effect <= 0.02
    assert minimum_detectable_effect(0.0073, plan.seeds - 1) > 0.02
    given_seeds = seed_count(SeedPlan(sd_difference=0.0073, seeds=3))
    assert given_seeds.detect is None
    assert given_seeds.minimum_detectable_effect == minimum_detectable_effect(0.0073, 3)


# G*Power 3.1 (Faul et al. 2007, Behavior Research Methods 39:175), "t tests - Means:
# difference from constant (matched pairs)", a priori, two tails, alpha 0.05, power 0.80:
# total sample size 34 for dz = 0.5 and 10 for dz = 1.0; the budget's comparison phase of
# 2 arms then has 2 n runs and n control runs.
@pytest.mark.parametrize(("dz", "n"), [(0.5, 34), (1.0, 10)])
def test_seeds_per_arm_match_gpower(dz, n):
    seeds = seed_count(SeedPlan(sd_difference=1.0, detect=dz)).seeds
    assert seeds == n
    phase = comparison_phase("c", arms=2, seeds=seeds, gpu_hours_per_run=1.0)
    assert (phase.runs, phase.control_runs) == (2 * n, n)


@settings(max_examples=40, deadline=None)
@given(sd=st.floats(0.001, 1.0), n=st.integers(2, 60), more=st.integers(1, 40))
def test_more_seeds_never_a_larger_mde(sd, n, more):
    few = seed_count(SeedPlan(sd_difference=sd, seeds=n))
    many = seed_count(SeedPlan(sd_difference=sd, seeds=n + more))
    assert many.minimum_detectable_effect <= few.minimum_detectable_effect


@settings(max_examples=40, deadline=None)
@given(
    sd=st.floats(0.001, 1.0),
    ratio=st.floats(0.3, 5.0),
    shrink=st.floats(0.5, 1.0),
    arms=st.integers(1, 4),
    gpus=st.integers(1, 8),
    margin=st.floats(0, 1),
)
def test_a_smaller_target_never_fewer_seeds_or_gpu_hours(sd, ratio, shrink, arms, gpus, margin):
    large = sd * ratio
    small = large * shrink

    def plan(detect):
        n = seed_count(SeedPlan(sd_difference=sd, detect=detect)).seeds
        phase = comparison_phase("c", arms=arms, seeds=n, gpu_hours_per_run=2.0)
        budget = campaign_budget(
            Campaign(phases=(phase,), gpus=gpus, price_per_gpu_hour=1.0, margin=margin)
        )
        return n, budget

    n_large, b_large = plan(large)
    n_small, b_small = plan(small)
    assert n_small >= n_large
    assert b_small.gpu_hours >= b_large.gpu_hours
    assert b_small.control_gpu_hours >= b_large.control_gpu_hours
    assert b_small.wall_hours >= b_large.wall_hours


@pytest.mark.parametrize(
    ("make", "field", "match"),
    [
        (lambda: SeedPlan(sd_difference=0.01), "detect", "give exactly one"),
        (lambda: SeedPlan(sd_difference=0.01, detect=0.02, seeds=3), "detect", "exactly one"),
        (lambda: seed_count(SeedPlan(sd_difference=-1, detect=0.02)), "sd_difference", "-1"),
        (lambda: seed_count(SeedPlan(sd_difference=0.01, seeds=1)), "seeds", "at least 2"),
        (lambda: seed_count(SeedPlan(sd_difference=1, detect=1e-9)), "effect", "max_seeds"),
        (
            lambda: comparison_phase("x", arms=0, seeds=3, gpu_hours_per_run=1),
            "phase",
            "x: arms must be a positive",
        ),
        (
            lambda: Phase(name="x", runs=1, gpu_hours_per_run=1, control_runs=-1),
            "phase",
            "x: control_runs must be a non-negative",
        ),
        (
            lambda: Phase(name="x", runs=5, gpu_hours_per_run=1, control_runs=4, arms=3, seeds=4),
            "phase",
            "x: arms 3 and seeds 4 must give runs = arms x seeds",
        ),
    ],
)
def test_bad_comparison_inputs_name_the_field(make, field, match):
    with pytest.raises(InputError, match=match) as e:
        make()
    assert e.value.field == field


EXPERIMENTS = ["budget", "--price", "2", "--phase", "e:arms=3:6"]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (EXPERIMENTS, "arms= needs the seeds per arm: --detect"),
        ([*EXPERIMENTS, "--detect", "0.02"], "--detect needs --sd-difference"),
        ([*EXPERIMENTS, "--seeds", "3"], "--seeds needs --sd-difference"),
        (
            [*EXPERIMENTS, "--sd-difference", "0.01", "--seeds", "3", "--detect", "0.02"],
            "--seeds and --detect exclude each other",
        ),
        ([*EXPERIMENTS, "--sd-difference", "0.01", "--seeds", "1"], "seeds"),
        (
            [
                "budget",
                "--price",
                "2",
                "--phase",
                "e:arms=0:6",
                "--sd-difference",
                "1",
                "--seeds",
                "3",
            ],
            "e: arms must be a positive",
        ),
        ([*EXPERIMENTS, "--sd-difference", "1", "--detect", "1e-9"], "detect"),
    ],
)
def test_bad_comparison_flags_are_one_line_and_exit_2(capsys, argv, match):
    from calculators.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert match in err[0]


def test_cli_comparison_phase_json(capsys):
    import json

    from calculators.cli import main

    argv = [*EXPERIMENTS, "--sd-difference", "0.0073", "--detect", "0.02", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    s = data["seed_count"]
    assert s["seeds"] == seeds_needed(0.02, 0.0073)
    assert s["minimum_detectable_effect"] == minimum_detectable_effect(0.0073, s["seeds"])
    (p,) = data["phases"]
    n = s["seeds"]
    assert (p["arms"], p["seeds"], p["runs"], p["control_runs"]) == (3, n, 3 * n, n)
    assert data["control_gpu_hours"] == 6 * s["seeds"]
    assert main(argv[:-1]) == 0  # the text names every line
    text = capsys.readouterr().out
    assert "Seeds per arm: the gain to detect 0.02 needs" in text
    assert "Control runs:" in text and "Rerun margin:" in text


def test_the_example_campaign_runs_its_comparisons_on_the_seeds_asked_for():
    # with no phase typed, a seed plan given (--sd-difference with --detect or --seeds)
    # sizes the example's comparisons; the printed plan and the table agree
    from calculators.web import compute

    asked = compute("budget", {"price": "2.5", "sd_difference": "0.02", "detect": "0.02"})
    seeds = asked["seed_count"]["seeds"]
    assert seeds == seeds_needed(0.02, 0.02) > 4
    for p in asked["phases"]:
        if p["arms"]:
            assert (p["seeds"], p["runs"], p["control_runs"]) == (seeds, 3 * seeds, seeds)
    six = compute("budget", {"price": "2.5", "sd_difference": "0.02", "seeds": "6"})
    assert [p["seeds"] for p in six["phases"] if p["arms"]] == [6, 6]


def test_the_example_campaign_takes_the_spread_level_and_power_given():
    # with no phase typed, a spread, a level or a power given alone re-plans the example's
    # own gain (0.02) on them, rather than being accepted and ignored
    from calculators.web import compute

    power = compute("budget", {"price": "2.5", "power": "0.95"})
    assert power["seed_count"]["power"] == 0.95
    seeds = power["seed_count"]["seeds"]
    assert seeds == seeds_needed(0.02, power["seed_count"]["sd_difference"], power=0.95) > 4
    assert [p["seeds"] for p in power["phases"] if p["arms"]] == [seeds, seeds]
    spread = compute("budget", {"price": "2.5", "sd_difference": "0.02"})
    assert spread["seed_count"]["sd_difference"] == 0.02
    assert spread["seed_count"]["seeds"] == seeds_needed(0.02, 0.02)
