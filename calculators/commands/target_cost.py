"""target-cost: the cost to reach a fixed quality target at the reader's prices, from the
published MLPerf Training rows (`calculators.planning.target_cost`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.limits import MAX_PRICE_PER_GPU_HOUR
from calculators.planning.target_cost import (
    DEFAULT_BENCHMARK,
    PACKAGE_DAYS,
    benchmarks,
    parse_prices,
    target_cost,
)
from calculators.render import table
from calculators.web.render import bar_chart_svg, html_table, summary

# The page's example: illustrative prices, not quotes.
EXAMPLE_PRICES = "H100=3.99\nH200=4.99\nA100=1.99\nGaudi=1.50"

_HEAD = [
    "option",
    "accelerators",
    "software stack",
    "USD per acc-hour",
    "GPU-hours to target",
    "USD to target",
    "USD fastest-slowest run",
    "minutes to target",
    "logged init, minutes",
    "USD per run with init",
]
_PACKAGE_HEAD = ["option", *(f"runs in {d} days" for d in PACKAGE_DAYS)]


def run(args: Args) -> tuple[dict[str, Any], str]:
    prices = parse_prices(args.price or ())
    r = target_cost(prices, default_price=args.default_price, benchmark=args.benchmark)
    data = {
        "benchmark": r.benchmark,
        "round": r.round,
        "quality_target": r.quality_target,
        "prices": dict(prices),
        "default_price": args.default_price,
        "accelerators": list(r.accelerators),
        "options": [asdict(o) for o in r.options],
        "cheapest": r.cheapest,
        "tied_with_cheapest": list(r.tied_with_cheapest),
        "warnings": list(r.warnings),
        "notes": list(r.notes),
    }
    text = [
        f"{r.benchmark} (MLPerf Training {r.round}), target: {r.quality_target}",
        *(f"WARNING: {w}" for w in r.warnings),
        table(_HEAD, _rows(data["options"])),
        "",
        _cheapest(data),
        "",
        "Runs to target back to back in a rental of the whole system:",
        table(_PACKAGE_HEAD, _package_rows(data["options"])),
        "",
        *(f"Note: {n}" for n in r.notes),
    ]
    return data, "\n".join(text)


def _usd(value: float | None, decimals: int | None = 2) -> str:
    return "-" if value is None or decimals is None else f"{value:,.{decimals}f}"


def _rows(options: list[dict[str, Any]]) -> list[list[str]]:
    """One line per option, each figure to the digits its runs support (`usd_decimals`,
    `gpu_hours_decimals`, `minutes_decimals`); the price as given, to the cent."""
    return [
        [
            o["id"],
            f"{o['accelerator']} x {o['accelerator_count']}",
            o["framework"] or "not stated",
            _usd(o["price_per_accelerator_hour"]),
            f"{o['gpu_hours_to_target']:,.{o['gpu_hours_decimals']}f}",
            _usd(o["cost_to_target_usd"], o["usd_decimals"]),
            "-"
            if o["fastest_run_cost_usd"] is None
            else f"{_usd(o['fastest_run_cost_usd'], o['usd_decimals'])}-"
            f"{_usd(o['slowest_run_cost_usd'], o['usd_decimals'])}",
            f"{o['wall_minutes']:,.{o['minutes_decimals']}f}",
            "-" if o["init_minutes"] is None else f"{o['init_minutes']:,.2f}",
            _usd(o["cost_with_init_usd"], o["usd_decimals"]),
        ]
        for o in options
    ]


def _package_rows(options: list[dict[str, Any]]) -> list[list[str]]:
    return [[o["id"], *(f"{p['runs_to_target']:,}" for p in o["packages"])] for o in options]


def _cheapest(r: dict[str, Any]) -> str:
    if r["cheapest"] is None:
        return "No option has a price: give NAME=USD_PER_HOUR lines or a default price."
    best = next(o for o in r["options"] if o["id"] == r["cheapest"])
    return (
        f"Cheapest to the target at these prices: {best['id']} "
        f"({best['accelerator_count']} accelerators, {best['framework'] or 'stack not stated'}), "
        f"{_usd(best['cost_to_target_usd'], best['usd_decimals'])} USD "
        f"({best['gpu_hours_to_target']:,.{best['gpu_hours_decimals']}f} "
        f"accelerator-hours x {best['price_per_accelerator_hour']:,.2f} USD), "
        f"{best['wall_minutes']:,.{best['minutes_decimals']}f} minutes."
        + (
            f" Within two standard errors of it, so not told apart by the published runs: "
            f"{', '.join(r['tied_with_cheapest'])}."
            if r["tied_with_cheapest"]
            else ""
        )
    )


def html(r: dict[str, Any]) -> str:
    priced = [o for o in r["options"] if o["cost_to_target_usd"] is not None]
    chart = (
        bar_chart_svg(
            [
                (
                    f"{o['id']} ({o['accelerator_count']} accelerators)",
                    o["cost_to_target_usd"],
                )
                for o in priced
            ],
            title="Cost to the quality target at your prices",
            value_format=lambda v: f"{v:,.3g} USD",
            unit_label="USD to target (GPU-hours to target x price per accelerator-hour)",
        )
        if priced
        else ""
    )
    return "".join(
        [
            summary(
                f"{r['benchmark']} (MLPerf Training {r['round']}), target "
                f"{r['quality_target']}. {_cheapest(r)}"
            ),
            chart,
            html_table(_HEAD, _rows(r["options"]), caption="Cost to target by system"),
            html_table(
                _PACKAGE_HEAD,
                _package_rows(r["options"]),
                caption="Runs to target back to back in a rental of the whole system",
            ),
        ]
    )


_BENCHMARKS = benchmarks()

CALCULATOR = Calculator(
    name="target-cost",
    title="Cost to a quality target",
    summary="What reaching MLPerf Training's fixed quality target costs on each published "
    "system at your price per accelerator-hour, and how many runs fit a 3-, 7- or 30-day "
    "rental.",
    help="cost to a fixed quality target from published MLPerf rows at your prices",
    inputs=(
        Input(
            name="price",
            label="Prices",
            kind="lines",
            default=(),
            example=EXAMPLE_PRICES,
            optional=True,
            help="One per line, NAME=USD_PER_HOUR: a part of the accelerator's name "
            "(case-insensitive, e.g. H100, Gaudi) and your price per accelerator-hour; the "
            "first line that matches an accelerator applies. The example prices are "
            "illustrative, not quotes.",
            metavar="NAME=USD_PER_HOUR",
        ),
        Input(
            name="default_price",
            label="Default price",
            kind="float",
            optional=True,
            unit="USD per accelerator-hour",
            minimum=0,
            maximum=MAX_PRICE_PER_GPU_HOUR,
            help="Price for the accelerators no line names; empty: those are left unpriced.",
        ),
        Input(
            name="benchmark",
            label="Benchmark",
            kind="choice",
            default=DEFAULT_BENCHMARK if DEFAULT_BENCHMARK in _BENCHMARKS else _BENCHMARKS[0],
            choices=_BENCHMARKS,
            help="MLPerf Training benchmark whose published rows are priced; compare "
            "systems of one size and one software stack.",
        ),
    ),
    run=run,
    html=html,
    order=14,
)
