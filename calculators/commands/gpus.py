"""gpus: the GPU catalog (`calculators.memory.gpus`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator
from calculators.memory.gpus import GPUS
from calculators.render import table
from calculators.units import format_gib


def run(args: Args) -> tuple[Any, str]:
    data = [vars(g) for g in GPUS]
    rows = [
        [
            g.id,
            g.memory_vendor,
            format_gib(g.visible_bytes),
            f"{g.bandwidth_gb_s:,.0f}",
            f"{g.bf16_dense_tflops:,.1f}",
            "-" if g.fp8_dense_tflops is None else f"{g.fp8_dense_tflops:,.1f}",
        ]
        for g in GPUS
    ]
    return data, table(
        ["gpu", "vendor memory", "visible", "GB/s", "BF16 TFLOPS", "FP8 TFLOPS"], rows
    )


CALCULATOR = Calculator(
    name="gpus",
    title="GPU catalog",
    summary="Each card's memory as vendor and software see it, bandwidth and peak FLOPS.",
    help="the GPU catalog",
    inputs=(),
    run=run,
    order=10,
)
