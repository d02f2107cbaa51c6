"""GRADED per-example scores of the SIMULATED extractors: each output's field F1.

    python docs/data/evaluation/make_field_scores.py [--out DIR]   # default: next to it

Reads `extraction/predictions.jsonl` (written by `make_extraction.py`: generated sentences,
simulated outputs) and writes DIR/field-scores/scores.csv, columns `id,a,b`: for each
row, the field F1 of extractor a's output and of b's, 2 TP / (2 TP + FP + FN) over that
output's fields, counted as `calculators.evaluation.extraction` counts them for the whole
file (a wrong value is one FP and one FN; an output that is not a JSON object has no
field; strings compared exactly). An output with every field right scores 1, one with one
wrong field of seven 12/14, an invalid one 0. This is the shape of any graded score per
example (a token F1, a ROUGE, a judge's grade): the error-analysis guide compares the two
columns with the paired bootstrap (`compare --task scores`). Each F1 is written with
`repr` of its float, so the file has the same bytes on any Python 3.11+.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from calculators.evaluation.extraction import (  # noqa: E402
    parse_output,
    parse_reference,
    same_value,
)

SOURCE = HERE / "extraction" / "predictions.jsonl"


def field_f1(reference: dict[str, Any], output: Any) -> float:
    """2 TP / (2 TP + FP + FN) over one output's non-null fields (1 where neither the
    reference nor the output holds a field)."""
    ref = {k: v for k, v in reference.items() if v is not None}
    parsed = parse_output(output)
    out = {} if parsed is None else {k: v for k, v in parsed.items() if v is not None}
    tp = sum(1 for k, v in ref.items() if k in out and same_value(v, out[k]))
    fn = len(ref) - tp
    fp = sum(1 for k, v in out.items() if k not in ref or not same_value(ref[k], v))
    return 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 1.0


def build() -> str:
    lines = ["id,a,b"]
    for text in SOURCE.read_text(encoding="utf-8").splitlines():
        row = json.loads(text)
        ref = parse_reference(row["gold"])
        lines.append(f"{row['id']},{field_f1(ref, row['a'])!r},{field_f1(ref, row['b'])!r}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write field-scores/ into")
    args = parser.parse_args(argv)
    folder = args.out / "field-scores"
    folder.mkdir(parents=True, exist_ok=True)
    text = build()
    (folder / "scores.csv").write_bytes(text.encode("utf-8"))
    print(f"{folder / 'scores.csv'}: {len(text.encode('utf-8')):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
