"""Accuracy: computed weights bytes against published checkpoint sizes.

Prints a markdown table (computed, published, error) and the median and worst
absolute error. Run with `make bench`.
"""

from __future__ import annotations

from statistics import median

from calculators.memory.weights import weight_bytes
from calculators.model.presets import load_preset
from calculators.model.reference_sizes import PUBLISHED_SIZES
from calculators.model.spec import ModelSpec


def main() -> None:
    print("| checkpoint | format | computed bytes | published bytes | error |")
    print("|---|---|---:|---:|---:|")
    errors = []
    for pub in PUBLISHED_SIZES:
        spec = ModelSpec.from_hf_config(load_preset(pub.preset))
        computed = weight_bytes(spec, pub.format_id).total_bytes
        err = (computed - pub.bytes) / pub.bytes
        errors.append(abs(err))
        print(f"| {pub.what} | {pub.format_id} | {computed:,} | {pub.bytes:,} | {err:+.2%} |")
    print(
        f"\n{len(errors)} checkpoints: median |error| {median(errors):.2%}, worst {max(errors):.2%}"
    )


if __name__ == "__main__":
    main()
