"""presets: the shipped model presets (`calculators.model.presets`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator
from calculators.model.presets import get_preset, preset_ids
from calculators.render import table


def run(args: Args) -> tuple[Any, str]:
    rows = [get_preset(pid) for pid in preset_ids()]
    data = [vars(p) for p in rows]
    return data, table(["preset", "Hugging Face repository"], [[p.id, p.hf_repo] for p in rows])


CALCULATOR = Calculator(
    name="presets",
    title="Model presets",
    summary="The public config.json files shipped with the calculators.",
    help="shipped model presets",
    inputs=(),
    run=run,
    order=9,
)
