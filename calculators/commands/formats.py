"""formats: the weights and KV cache formats (`calculators.memory.formats`,
`calculators.memory.kv_formats`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator
from calculators.memory.formats import FORMATS
from calculators.memory.kv_formats import KV_FORMATS
from calculators.render import table


def run(args: Args) -> tuple[Any, str]:
    data = {
        "weights": {fid: {"name": f.name, "source": f.source} for fid, f in FORMATS.items()},
        "kv": {
            fid: {"name": f.name, "bits_per_value": f.bits_per_value, "source": f.source}
            for fid, f in KV_FORMATS.items()
        },
    }
    text = table(["weights format", "name"], [[fid, f.name] for fid, f in FORMATS.items()])
    text += "\n\n" + table(
        ["kv format", "bits/value"],
        [[fid, f"{f.bits_per_value:g}"] for fid, f in KV_FORMATS.items()],
    )
    return data, text


CALCULATOR = Calculator(
    name="formats",
    title="Number formats",
    summary="Weights formats and KV cache formats, with their bits per value.",
    help="weights and KV formats",
    inputs=(),
    run=run,
    order=11,
)
