"""design: full and two-level fractional factorial ablation designs, their aliasing, cost,
a run table to fill, and the effects read back from it (`calculators.planning.design`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import PRICE, UsageError
from calculators.errors import shown
from calculators.limits import MAX_GPU_HOURS_PER_RUN, MAX_GPUS
from calculators.planning.design import (
    CENTRE,
    MAX_CENTRE_POINTS,
    MAX_RESULT_ROWS,
    MAX_SEEDS,
    Analysis,
    Design,
    centre_levels,
    cost,
    design,
    effects,
    fold_over,
    parse_factor,
    parse_fixed,
    parse_nuisance,
    read_results,
    roman,
    run_table_header,
    tuned_settings,
)
from calculators.render import table
from calculators.web.half_normal import half_normal_svg
from calculators.web.render import (
    GRID_MAX_ROWS,
    html_table,
    run_grid_svg,
    summary,
)
from calculators.web.text import csv_row, escape

# The run table's CSV lists one row per run and seed up to this many rows; past it, one
# row per run (copy each once per seed).
MAX_CSV_ROWS = 4_096


def _names(word: str, letters: dict[str, str]) -> str:
    """An effect in factor names: 'AB' is 'lr x warmup'."""
    by_letter = {v: k for k, v in letters.items()}
    return " x ".join(by_letter[c] for c in word)


def _code(code: int, levels: int) -> str:
    return f"{code:+d}" if levels == 2 else str(code)


def _run_table_csv(
    d: Design, seeds: int, centre: dict[str, str], points: int, settings: int, trials: str
) -> tuple[str, bool]:
    """The run table to fill (empty seed and metric, and trial with nuisance factors):
    one row per run, nuisance trial and seed, then one per centre point and trial, when
    that stays within MAX_CSV_ROWS rows; else one row per run. Whether it has every row."""
    tries = settings if trials else 1
    every = (d.run_count * seeds + points) * tries <= MAX_CSV_ROWS
    blank = [""] * (2 if trials else 1)
    lines = [csv_row(run_table_header(d, trials))]
    for run_id, run in zip(d.run_ids, d.runs, strict=True):
        row = csv_row([run_id, *(run[f.name] for f in d.factors), *blank, ""])
        lines += [row] * (seeds * tries if every else 1)
    if centre:
        row = csv_row([CENTRE, *(centre[f.name] for f in d.factors), *blank, ""])
        lines += [row] * (points * tries if every else 1)
    return "".join(lines), every


def _results(args: Args, d: Design, trials: bool) -> tuple[Analysis | None, str]:
    """The analysis of --results lines or of --results-file; None when neither is given."""
    if args.results and args.results_file is not None:
        raise UsageError("give --results or --results-file, not both", "results_file")
    if args.results_file is not None:
        try:
            with open(args.results_file, encoding="utf-8") as f:
                text = f.read(MAX_RESULT_ROWS * 200)
        except (OSError, UnicodeDecodeError) as e:
            reason = getattr(e, "strerror", None) or "not UTF-8 text"
            raise UsageError(
                f"results_file {shown(args.results_file)} cannot be read: {reason}",
                "results_file",
            ) from None
        field = "results_file"
        lines = list(enumerate(text.splitlines(), start=1))
    elif args.results:
        field = "results"
        lines = list(enumerate(args.results, start=1))
    else:
        return None, ""
    centre = args.centre_points > 0
    rows = read_results(d, lines, field, centre=centre, trials=trials)
    return effects(d, rows, field, centre_points=args.centre_points, goal=args.goal), field


def run(args: Args) -> tuple[dict[str, Any], str]:
    factors = [parse_factor(text) for text in args.factor]
    d = design(factors, args.fraction)
    nuisance = [parse_nuisance(text) for text in args.nuisance]
    fixed = [parse_fixed(text) for text in args.fixed]
    settings = tuned_settings(nuisance)
    centre = centre_levels(d) if args.centre_points else {}
    c = cost(
        d.run_count,
        args.seeds,
        args.gpu_hours_per_run,
        args.gpus,
        args.price,
        settings,
        args.centre_points,
    )
    trials = "trial" if nuisance else ""
    analysis, _field = _results(args, d, bool(nuisance))
    letters = d.letters
    warnings: list[str] = []
    notes: list[str] = []
    fold = None
    if d.resolution == 3:
        f = fold_over(d)
        fold = {
            "runs": list(f.runs),
            "run_ids": list(f.run_ids),
            "combined_run_count": f.combined_run_count,
            "combined_defining_relation": list(f.combined_defining_relation),
            "combined_resolution": f.combined_resolution,
        }
        warnings.append(
            "resolution III: each main effect is aliased with two-factor interactions "
            "(listed with it); a winner may be an interaction. The fold-over (every "
            "level swapped) separates them"
        )
    elif d.resolution == 4:
        warnings.append(
            "resolution IV: main effects are clear of two-factor interactions, but "
            "two-factor interactions are aliased with each other (listed)"
        )
    if args.gpu_hours_per_run is None:
        notes.append("GPU-hours, cost and days need the GPU-hours of one run (gpu_hours_per_run)")
    elif args.price is None:
        notes.append("the cost needs a price per GPU-hour (price)")
    csv_text, per_seed = _run_table_csv(d, args.seeds, centre, args.centre_points, settings, trials)
    if not per_seed:
        notes.append(
            f"the run table has one row per run (its rows would be above {MAX_CSV_ROWS:,}): "
            "copy each row once per seed"
            + (" and nuisance trial, and the centre row once per centre point" if trials else "")
        )
    if nuisance:
        notes.append(
            "fill the trial column with each line's nuisance setting (lr=3e-4): each run's "
            f"result is its best trial ({args.goal} is better), as the Tuning Playbook compares"
        )
    if analysis is not None:
        notes += analysis.notes
        low, high = analysis.seeds_per_run
        if low != high:
            warnings.append(
                f"runs have {low} to {high} seeds: each run counts once (the mean of its "
                "seeds), and the standard error allows for the unequal seeds"
            )
    data: dict[str, Any] = {
        "factors": [
            {"name": f.name, "letter": letters[f.name], "levels": list(f.levels)} for f in d.factors
        ],
        "letters": letters,
        "runs": list(d.runs),
        "run_ids": list(d.run_ids),
        "coded": [list(row) for row in d.coded],
        "run_count": d.run_count,
        "fraction": d.fraction,
        "resolution": d.resolution,
        "generators": list(d.generators),
        "defining_relation": list(d.defining_relation),
        "aliases": [
            {
                "effect": a.effect,
                "names": _names(a.effect, letters),
                "aliased_with": list(a.aliased_with),
                "aliased_with_names": [_names(w, letters) for w in a.aliased_with],
            }
            for a in d.aliases
        ],
        "fold_over": fold,
        "seeds": args.seeds,
        # the Tuning Playbook's roles: the design's factors are the scientific ones
        "nuisance": [{"name": n, "settings": k} for n, k in nuisance],
        "tuned_settings": settings,
        "fixed": [{"name": n, "value": v} for n, v in fixed],
        "centre_points": args.centre_points,
        "centre_levels": centre or None,
        "goal": args.goal,
        "total_runs": c.total_runs,
        "gpu_hours_per_run": args.gpu_hours_per_run,
        "gpus": args.gpus,
        "price": args.price,
        "gpu_hours": c.gpu_hours,
        "cost": c.cost,
        "days": c.days,
        "run_table_csv": csv_text,
        "effects": None,
        "contrasts": None,
        "analysis": None,
        "warnings": warnings,
        "notes": notes,
    }
    if analysis is not None:
        data["effects"] = [
            {
                "effect": e.effect,
                "names": _names(e.effect, letters),
                "estimate": e.estimate,
                "standard_error": e.standard_error,
                "low_mean": e.low_mean,
                "high_mean": e.high_mean,
                "aliases": list(e.aliases),
                "aliases_names": [_names(w, letters) for w in e.aliases],
            }
            for e in analysis.effects
        ]
        screen = analysis.lenth
        bend = analysis.curvature
        data["contrasts"] = [
            {
                "effect": e.effect,
                "names": _names(e.effect, letters),
                "estimate": e.estimate,
                "aliases": list(e.aliases),
                "beyond_me": None if screen is None else abs(e.estimate) > screen.me,
                "beyond_sme": None if screen is None else abs(e.estimate) > screen.sme,
            }
            for e in analysis.contrasts
        ]
        data["analysis"] = {
            "lenth": None
            if screen is None
            else {
                "contrasts": screen.m,
                "s0": screen.s0,
                "pse": screen.pse,
                "df": screen.df,
                "me": screen.me,
                "sme": screen.sme,
                "t_me": screen.t_me,
                "t_sme": screen.t_sme,
                "active": [e.effect for e in analysis.contrasts if abs(e.estimate) > screen.me],
                "active_names": ", ".join(
                    _names(e.effect, letters)
                    for e in analysis.contrasts
                    if abs(e.estimate) > screen.me
                )
                or "none",
            },
            "curvature": None
            if bend is None
            else {
                "factorial_mean": bend.factorial_mean,
                "centre_mean": bend.centre_mean,
                "estimate": bend.estimate,
                "standard_error": bend.standard_error,
                "t": bend.t,
                "df": bend.df,
                "p_value": bend.p_value,
                "centre_points": bend.n_centre,
            },
            "best_trials": None
            if analysis.best_trials is None
            else {
                (CENTRE if run == 0 else str(run)): trial
                for run, trial in sorted(analysis.best_trials.items())
            },
            "observations": analysis.observations,
            "pooled_sd": analysis.pooled_sd,
            "df": analysis.df,
            "grand_mean": analysis.grand_mean,
            "level_means": analysis.level_means,
            "seeds_per_run": list(analysis.seeds_per_run),
        }
    return data, _text(data)


def _kind(r: dict[str, Any]) -> str:
    """'full factorial' or '2^(5-1) fraction, resolution V'."""
    k = len(r["factors"])
    if r["fraction"] is None:
        return "full factorial"
    return f"2^({k}-{r['fraction']}) fraction, resolution {roman(r['resolution'])}"


def _head(r: dict[str, Any]) -> str:
    tuned = f" x {r['tuned_settings']:,} nuisance settings" if r["tuned_settings"] > 1 else ""
    runs = f"{r['run_count']:,} runs x {r['seeds']:,} seed{'s' if r['seeds'] != 1 else ''}"
    if r["centre_points"]:
        n = r["centre_points"]
        runs = f"({runs} + {n:,} centre point{'s' if n != 1 else ''})"
    return f"{_kind(r)}: {runs}{tuned} = {r['total_runs']:,} training runs"


def _screen_lines(r: dict[str, Any]) -> list[str]:
    """Lenth's margins and the curvature test in words, where the analysis has them."""
    a = r["analysis"]
    out = []
    if a["lenth"] is not None:
        L = a["lenth"]
        active = ", ".join(
            f"{c['names']} ({c['effect']})" for c in r["contrasts"] if c["beyond_me"]
        )
        out.append(
            f"Lenth's pseudo standard error {L['pse']:.4g} from {L['contrasts']:,} effects: "
            f"margin of error {L['me']:.4g}, simultaneous {L['sme']:.4g}; beyond the "
            f"margin: {active or 'none'}"
        )
    if a["curvature"] is not None:
        c = a["curvature"]
        out.append(
            f"Curvature (factorial mean - centre mean) {c['estimate']:.4g}, standard error "
            f"{c['standard_error']:.4g}, t {c['t']:.3g} on {c['df']:,} df, p = {c['p_value']:.2g}"
        )
    if a["best_trials"]:
        kept = ", ".join(f"{run}: {trial}" for run, trial in a["best_trials"].items())
        out.append(f"Best trial kept per run: {kept}")
    return out


def _roles(r: dict[str, Any]) -> list[str]:
    """The Tuning Playbook's roles in words: what is compared, re-tuned, and held."""
    out = ["Scientific factors (compared): " + ", ".join(f["name"] for f in r["factors"])]
    if r["nuisance"]:
        each = ", ".join(f"{n['name']} over {n['settings']:,} settings" for n in r["nuisance"])
        out.append(
            f"Nuisance factors (re-tuned for every run): {each}: each run becomes "
            f"{r['tuned_settings']:,} runs"
        )
    if r["fixed"]:
        held = ", ".join(f"{f['name']} = {f['value']}" for f in r["fixed"])
        out.append(f"Fixed factors (the conclusion holds for these only): {held}")
    return out


def _cost_line(r: dict[str, Any]) -> str:
    if r["gpu_hours"] is None:
        return "GPU-hours: give the GPU-hours of one run"
    line = (
        f"{r['gpu_hours']:,.1f} GPU-hours ({r['total_runs']:,} x "
        f"{r['gpu_hours_per_run']:,g}), {r['days']:,.2f} days on {r['gpus']:,} "
        f"GPU{'s' if r['gpus'] != 1 else ''}"
    )
    if r["cost"] is not None:
        line += f", {r['cost']:,.2f} USD at {r['price']:,.2f} USD per GPU-hour"
    return line


def _aliased(a: dict[str, Any]) -> list[str]:
    """An effect's aliases in names and letters: 'lr x warmup (AB)'."""
    return [f"{n} ({w})" for w, n in zip(a["aliased_with"], a["aliased_with_names"], strict=True)]


def _alias_lines(r: dict[str, Any]) -> list[str]:
    """The alias structure in words, one line per effect that has aliases."""
    out = []
    for a in r["aliases"]:
        if a["aliased_with"]:
            others = " and ".join(
                f"{n} ({w})"
                for w, n in zip(a["aliased_with"], a["aliased_with_names"], strict=True)
            )
            out.append(f"{a['names']} ({a['effect']}) is aliased with {others}")
    return out


def _cells(r: dict[str, Any], i: int) -> list[str]:
    run, row = r["runs"][i], r["coded"][i]
    return [
        f"{run[f['name']]} ({_code(code, len(f['levels']))})"
        for f, code in zip(r["factors"], row, strict=True)
    ]


def _effect_rows(r: dict[str, Any]) -> list[list[str]]:
    return [
        [
            f"{e['names']} ({e['effect']})",
            f"{e['estimate']:.4g}",
            "n/a" if e["standard_error"] is None else f"{e['standard_error']:.4g}",
            ", ".join(e["aliases_names"]) or "-",
        ]
        for e in r["effects"]
    ]


_EFFECT_HEAD = ["effect", "estimate", "standard error", "aliased with"]


def _text(r: dict[str, Any]) -> str:
    head = ["run", *(f"{f['name']} ({f['letter']})" for f in r["factors"])]
    rows = [[str(run_id), *_cells(r, i)] for i, run_id in enumerate(r["run_ids"])]
    parts = [_head(r)]
    if r["generators"]:
        parts.append(
            "Generators: "
            + ", ".join(r["generators"])
            + "; defining relation I = "
            + " = ".join(r["defining_relation"])
        )
    parts += ["", table(head, rows), ""]
    aliases = _alias_lines(r)
    if r["fraction"] is not None:
        parts += (
            ["Aliases (up to two-factor interactions):", *aliases]
            if aliases
            else ["No main effect or two-factor interaction shares its column with another."]
        )
    parts += _roles(r)
    parts.append(_cost_line(r))
    if r["fold_over"] is not None:
        fo = r["fold_over"]
        resolution = fo["combined_resolution"]
        parts.append(
            f"Fold-over: {len(fo['runs']):,} more runs (every level swapped) make "
            f"{fo['combined_run_count']:,} runs of "
            + ("the full factorial" if resolution is None else f"resolution {roman(resolution)}")
        )
    if r["effects"] is not None:
        a = r["analysis"]
        sd = "n/a" if a["pooled_sd"] is None else f"{a['pooled_sd']:.4g} (df {a['df']:,})"
        parts += [
            "",
            f"Effects from {a['observations']:,} results: grand mean {a['grand_mean']:.4g}, "
            f"seed-to-seed sd {sd}",
            table(_EFFECT_HEAD, _effect_rows(r)),
            *_screen_lines(r),
        ]
    parts.append(
        "The run table to fill, as CSV: the run_table_csv field of --json; read it back "
        "with --results-file PATH (or --results RUN,SEED,METRIC, repeated)"
    )
    parts += [f"Warning: {w}" for w in r["warnings"]]
    parts += [f"Note: {n}" for n in r["notes"]]
    return "\n".join(parts)


def html(r: dict[str, Any]) -> str:
    factors = r["factors"]
    parts = [summary(f"{_head(r)}. {_cost_line(r)}.")]
    parts += [f'<p class="kd-note">{escape(line)}.</p>' for line in _roles(r)]
    parts.append(
        run_grid_svg(
            [(f["name"], f["levels"]) for f in factors],
            r["coded"],
            letters=[f["letter"] for f in factors],
            run_ids=r["run_ids"],
        )
    )
    head = ["run", *(f"{f['name']} ({f['letter']})" for f in factors), "seed", "metric"]
    shown_runs = min(len(r["run_ids"]), GRID_MAX_ROWS)
    rows = [[str(r["run_ids"][i]), *_cells(r, i), "", ""] for i in range(shown_runs)]
    caption = "Runs to make: levels, with their codes"
    if shown_runs < len(r["run_ids"]):
        caption += f" (the first {shown_runs:,} of {len(r['run_ids']):,}; the CSV has all)"
    parts.append(html_table(head, rows, caption=caption))
    if r["fraction"] is not None:
        words = "; ".join(r["generators"])
        relation = " = ".join(r["defining_relation"])
        parts.append(
            f'<p class="kd-note">Generators {escape(words)}; defining relation '
            f"I = {escape(relation)}.</p>"
        )
        lines = _alias_lines(r)
        parts.append(
            html_table(
                ["effect", "aliased with (up to two-factor interactions)"],
                [
                    [
                        f"{a['names']} ({a['effect']})",
                        ", ".join(
                            f"{n} ({w})"
                            for w, n in zip(a["aliased_with"], a["aliased_with_names"], strict=True)
                        )
                        or "nothing up to two-factor interactions",
                    ]
                    for a in r["aliases"]
                ],
                caption=f"Aliases: {len(lines):,} of {len(r['aliases']):,} effects share "
                "their column with another",
            )
        )
    if r["fold_over"] is not None:
        fo = r["fold_over"]
        resolution = fo["combined_resolution"]
        parts.append(
            summary(
                f"Fold-over: run the {len(fo['runs']):,} runs with every level swapped "
                f"(runs {fo['run_ids'][0]:,} to {fo['run_ids'][-1]:,}); both halves make "
                f"{fo['combined_run_count']:,} runs of "
                + (
                    "the full factorial."
                    if resolution is None
                    else f"resolution {roman(resolution)}."
                )
            )
        )
    if r["effects"] is not None:
        a = r["analysis"]
        sd = (
            "no seed-to-seed sd (one seed per run)"
            if a["pooled_sd"] is None
            else f"seed-to-seed sd {a['pooled_sd']:.4g} ({a['df']:,} degrees of freedom)"
        )
        parts.append(
            html_table(
                _EFFECT_HEAD,
                _effect_rows(r),
                caption=f"Effects from {a['observations']:,} results; {sd}",
            )
        )
        parts += [summary(line + ".") for line in _screen_lines(r)]
        if a["lenth"] is not None:
            L = a["lenth"]
            parts.append(
                half_normal_svg(
                    [(f"{c['names']} ({c['effect']})", c["estimate"]) for c in r["contrasts"]],
                    pse=L["pse"],
                    me=L["me"],
                    sme=L["sme"],
                    title="Half-normal plot of the effects, with Lenth's margins of error",
                )
            )
    parts.append(
        '<p class="kd-note">The run table as CSV, to fill in (save it as a .csv file):</p>'
        f'<pre class="kd-csv">{escape(r["run_table_csv"])}</pre>'
    )
    return "".join(parts)


CALCULATOR = Calculator(
    name="design",
    title="Ablation design",
    summary="Full and fractional factorial runs, their aliasing, cost, and effects from results.",
    help="ablation design: full and fractional factorial runs, aliasing, cost, effects",
    inputs=(
        Input(
            name="factor",
            label="Factors",
            kind="lines",
            default=(),
            example=(
                "data:web,curated\nlr:1e-4,3e-4\nwarmup:100,1000\nweight_decay:0,0.1\n"
                "lora_rank:8,16"
            ),
            optional=True,
            help="One per line, NAME:LEVEL,LEVEL[,...]: 2 to 8 levels, the first coded -1 "
            "and the second +1; up to 15 factors, lettered A, B, ... (no I) in this order.",
            metavar="NAME:LEVEL,LEVEL",
        ),
        Input(
            name="fraction",
            label="Fraction p of 2^(k-p)",
            kind="int",
            example=1,
            optional=True,
            minimum=1,
            maximum=11,
            help="Run 1/2^p of the two-level full factorial, with the published generators "
            "(resolution III or more); empty: the full factorial.",
        ),
        Input(
            name="seeds",
            label="Seeds per run",
            kind="int",
            default=1,
            example=3,
            minimum=1,
            maximum=MAX_SEEDS,
            help="Each run repeated with this many seeds; 2 or more measure seed noise.",
        ),
        Input(
            name="gpu_hours_per_run",
            label="GPU-hours per run",
            kind="float",
            example=2.0,
            optional=True,
            unit="GPU-hours",
            minimum=0,
            maximum=MAX_GPU_HOURS_PER_RUN,
            help="One training run (one seed); empty: no GPU-hours, days or cost.",
        ),
        Input(
            name="gpus",
            label="GPUs",
            kind="int",
            default=1,
            example=4,
            unit="GPUs",
            minimum=1,
            maximum=MAX_GPUS,
            help="Cards the runs share: one run after the other on all of them, scaling perfectly.",
        ),
        replace(
            PRICE,
            optional=True,
            required=False,
            help="An example hourly price; put your offer's. Empty: no cost.",
        ),
        Input(
            name="nuisance",
            label="Nuisance factors",
            kind="lines",
            default=(),
            optional=True,
            help="Re-tuned for every run, one NAME:SETTINGS per line (lr:3 tries 3 learning "
            "rates per run): they multiply the runs.",
            metavar="NAME:SETTINGS",
        ),
        Input(
            name="fixed",
            label="Fixed factors",
            kind="lines",
            default=(),
            optional=True,
            help="Held at one value, one NAME=VALUE per line (steps=2000): the conclusion "
            "holds for these values only.",
            metavar="NAME=VALUE",
        ),
        Input(
            name="centre_points",
            label="Centre points",
            kind="int",
            default=0,
            minimum=0,
            maximum=MAX_CENTRE_POINTS,
            help="Runs with every factor at the middle of its two levels (numeric factors "
            "only), one seed each: they test for curvature and measure the noise.",
        ),
        Input(
            name="goal",
            label="Better metric",
            kind="choice",
            default="lower",
            choices=("lower", "higher"),
            help="lower for a loss, higher for an accuracy: with nuisance trials, each "
            "run keeps its best trial.",
        ),
        Input(
            name="results",
            label="Results",
            kind="lines",
            default=(),
            optional=True,
            help="The filled table, one line each: run,seed,metric (run,trial,seed,metric "
            "with nuisance factors; run centre for a centre point), or the run table's "
            "rows with seed and metric filled: gives the effects.",
            metavar="RUN,SEED,METRIC",
        ),
        Input(
            name="results_file",
            label="Results file",
            kind="text",
            page=False,
            help="the filled run table as a CSV file (instead of --results)",
            metavar="PATH",
        ),
    ),
    run=run,
    html=html,
    csv=lambda r: r["run_table_csv"],
    order=13,
)
