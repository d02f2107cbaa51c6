"""A GENERATED extraction example: spec-sheet sentences, their gold JSON, and the raw
outputs of two SIMULATED extractors (no model was run).

    python docs/data/evaluation/make_extraction.py [--out DIR]   # default: next to it

Writes, into DIR/extraction/:

- `predictions.jsonl`: one row per sentence, with `id`, `input` (the sentence), `gold` (the
  fields as a JSON object), and `a` and `b`, the raw text each simulated extractor "output"
  (a string, which may not be valid JSON).
- `planted.json`: the error rates each simulated extractor was given, and every error it
  made, row by row, so that a comparison's counts can be checked against them.

The facts are real: the project's GPU catalog (`calculators.memory.gpus`, each entry with
its datasheet in `source`). For each card, four sentences state its name, vendor, memory,
memory type, bandwidth and dense BF16 (and FP8, where the card has it) peaks, in four
phrasings (one gives the bandwidth in TB/s, one is a table row). The gold object holds the
fields the sentence states: `name`, `vendor`, `memory_gb`, `memory_type`,
`bandwidth_gb_s`, `bf16_tflops` and, where the card has FP8, `fp8_tflops`.

The extractors are rules with seeded error rates (`ERRORS`), each applied to each row
independently: baseline `a` often keeps the TB/s figure where the sentence gives TB/s,
drops fields, writes the vendor in lower case, invents an FP8 figure for cards without
one, and emits malformed JSON (a cut-off object, Python's quotes, a trailing comma, prose
around it) in about one row in ten; candidate `b` fixes most of that but converts some
capacities to GiB (a new error). All of it is generated and must be presented as such.
Standard library only; the generator is SplitMix64, the same bytes on any Python 3.11+.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from calculators.memory.gpus import GPU, GPUS  # noqa: E402

SEED = 7
# Per extractor, the probability of each error on a row where it can happen.
ERRORS: dict[str, dict[str, float]] = {
    "a": {
        "malformed": 0.10,  # the output is not valid JSON
        "missing_field": 0.06,  # per field of the gold object
        "bandwidth_in_tb_s": 0.60,  # where the sentence gives TB/s: the TB/s number kept
        "vendor_lower_case": 0.15,
        "invented_fp8": 0.30,  # where the card has no FP8 figure
        "memory_in_gib": 0.0,
    },
    "b": {
        "malformed": 0.03,
        "missing_field": 0.03,
        "bandwidth_in_tb_s": 0.10,
        "vendor_lower_case": 0.0,
        "invented_fp8": 0.05,
        "memory_in_gib": 0.12,  # 80 GB read as 74.51 (80 / 1.073741824): GB taken as decimal
    },
}
MALFORMED_KINDS = ("cut off", "python quotes", "trailing comma", "prose around it")


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64 (OOPSLA 2014): a stream set by the seed alone."""

    def __init__(self, seed: int) -> None:
        self.state = seed & (2**64 - 1)

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def chance(self, p: float) -> bool:
        """True with probability p."""
        return (self.next64() >> 11) < p * 2**53

    def below(self, n: int) -> int:
        limit = (2**64 // n) * n
        while True:
            x = self.next64()
            if x < limit:
                return x % n


def _number(x: float) -> int | float:
    """A whole number as an int (3350, not 3350.0), as a datasheet writes it."""
    return int(x) if float(x).is_integer() else x


def gold_of(gpu: GPU) -> dict[str, Any]:
    """The fields a sentence about `gpu` states."""
    m = re.match(r"(\d+) GB (\S+)", gpu.memory_vendor)
    if m is None:
        raise ValueError(f"{gpu.id}: memory {gpu.memory_vendor!r} is not 'N GB TYPE'")
    gold: dict[str, Any] = {
        "name": gpu.name,
        "vendor": {"nvidia": "NVIDIA", "amd": "AMD"}[gpu.vendor],
        "memory_gb": int(m.group(1)),
        "memory_type": m.group(2),
        "bandwidth_gb_s": _number(gpu.bandwidth_gb_s),
        "bf16_tflops": _number(gpu.bf16_dense_tflops),
    }
    if gpu.fp8_dense_tflops is not None:
        gold["fp8_tflops"] = _number(gpu.fp8_dense_tflops)
    return gold


def sentences(g: dict[str, Any]) -> list[tuple[str, bool]]:
    """Four phrasings of the gold facts: (sentence, whether it gives the bandwidth in TB/s)."""
    fp8 = g.get("fp8_tflops")
    bw = g["bandwidth_gb_s"]
    tb = f"{bw / 1000:g}"
    return [
        (
            f"{g['name']}: {g['memory_gb']} GB of {g['memory_type']} memory, {bw:,} GB/s of "
            f"bandwidth, {g['bf16_tflops']} TFLOPS dense BF16"
            + (f" and {fp8} TFLOPS dense FP8." if fp8 is not None else ", no FP8 tensor cores."),
            False,
        ),
        (
            f"Spec sheet, {g['vendor']}. Product: {g['name']}. Memory: {g['memory_gb']} GB "
            f"{g['memory_type']}. Bandwidth: {tb} TB/s. Dense BF16: {g['bf16_tflops']} TFLOPS."
            + (f" Dense FP8: {fp8} TFLOPS." if fp8 is not None else ""),
            True,
        ),
        (
            f"From {g['vendor']}, the {g['name']} pairs {g['bf16_tflops']} dense BF16 "
            f"teraFLOPS with {g['memory_gb']} GB of {g['memory_type']} at {bw:,} GB/s"
            + (f"; FP8 reaches {fp8} teraFLOPS." if fp8 is not None else "."),
            False,
        ),
        (
            f"{g['name']} | {g['vendor']} | {g['memory_type']} {g['memory_gb']}GB | "
            f"{bw:,} GB/s | BF16 {g['bf16_tflops']} TFLOPS"
            + (f" | FP8 {fp8} TFLOPS" if fp8 is not None else ""),
            False,
        ),
    ]


def _malformed(rng: SplitMix64, obj: dict[str, Any]) -> tuple[str, str]:
    """A broken rendering of `obj`: (the text, the kind of breakage)."""
    kind = MALFORMED_KINDS[rng.below(len(MALFORMED_KINDS))]
    text = json.dumps(obj)
    if kind == "cut off":
        return text[: max(1, len(text) * 2 // 3)], kind
    if kind == "python quotes":
        return repr(obj), kind
    if kind == "trailing comma":
        return text[:-1] + ", }", kind
    return f"Here are the fields you asked for: {text} Let me know if you need more.", kind


def extract(
    rng: SplitMix64, gold: dict[str, Any], tb_s: bool, rates: dict[str, float]
) -> tuple[str, list[str]]:
    """One simulated extractor's raw output for a row, and the errors it made."""
    out = dict(gold)
    errors = []
    if tb_s and rng.chance(rates["bandwidth_in_tb_s"]):
        out["bandwidth_gb_s"] = _number(round(gold["bandwidth_gb_s"] / 1000, 4))
        errors.append("bandwidth_in_tb_s")
    if rng.chance(rates["memory_in_gib"]):
        out["memory_gb"] = round(gold["memory_gb"] / 1.073741824, 2)
        errors.append("memory_in_gib")
    if rng.chance(rates["vendor_lower_case"]):
        out["vendor"] = gold["vendor"].lower()
        errors.append("vendor_lower_case")
    if "fp8_tflops" not in gold and rng.chance(rates["invented_fp8"]):
        out["fp8_tflops"] = _number(round(gold["bf16_tflops"] * 2, 1))
        errors.append("invented_fp8")
    for field in gold:
        if rng.chance(rates["missing_field"]):
            del out[field]
            errors.append(f"missing_field:{field}")
    if rng.chance(rates["malformed"]):
        text, kind = _malformed(rng, out)
        errors.append(f"malformed:{kind}")
        return text, errors
    return json.dumps(out), errors


def build() -> dict[str, str]:
    """The two files' text, by name."""
    rng = SplitMix64(SEED)
    rows = []
    made: list[dict[str, Any]] = []
    for gpu in GPUS:
        gold = gold_of(gpu)
        for k, (sentence, tb_s) in enumerate(sentences(gold), start=1):
            row_id = f"{gpu.id}/{k}"
            row: dict[str, Any] = {"id": row_id, "input": sentence, "gold": gold}
            errs: dict[str, Any] = {"id": row_id}
            for name, rates in ERRORS.items():
                row[name], errs[name] = extract(rng, gold, tb_s, rates)
            rows.append(row)
            made.append(errs)
    counts = {
        name: {
            kind: sum(e.split(":")[0] == kind for m in made for e in m[name])
            for kind in ERRORS[name]
        }
        for name in ERRORS
    }
    planted = {
        "generated": "simulated extractors: no model produced these outputs. The gold "
        "facts are the project's GPU catalog (calculators/memory/gpus.py, each entry with "
        "its datasheet); the sentences and the extractors' errors are generated by "
        f"make_extraction.py with seed {SEED}",
        "generated_by": "python docs/data/evaluation/make_extraction.py",
        "rows": len(rows),
        "error_rates": ERRORS,
        "error_counts": counts,
        "malformed_kinds": list(MALFORMED_KINDS),
        "errors_by_row": made,
    }
    return {
        "predictions.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
        "planted.json": json.dumps(planted, indent=1) + "\n",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write extraction/ into")
    args = parser.parse_args(argv)
    folder = args.out / "extraction"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in build().items():
        (folder / name).write_bytes(text.encode("utf-8"))
        print(f"{folder / name}: {len(text.encode('utf-8')):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
