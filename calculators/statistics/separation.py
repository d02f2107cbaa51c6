"""How far apart two published estimates are, in units of their combined uncertainty.

Two estimates a ± u_a and b ± u_b, each `±` one standard error, are set against each
other as independent:

  difference    d = b - a
  uncertainty   u = sqrt(u_a^2 + u_b^2)
  separation    z = |d| / u          (in standard errors, "sigmas")

Assumption: the two errors are independent. Two quantized files scored on the same tokens
against the same reference are not: their per-token errors are correlated, and with a
positive correlation rho the true uncertainty of the difference is
sqrt(u_a^2 + u_b^2 - 2 rho u_a u_b), smaller than u, so z understates the separation.
Only the pair's own paired run (one file against the other, token by token) gives the
exact figure; a published table of each file against the reference does not.

Which uncertainty to use matters more than the formula. A perplexity's own `±` is mostly
the spread of difficulty between the tokens of the text, which is the same for every file
scored on it; the difference from the reference (llama.cpp's ΔPPL, "estimated on logits,
then propagated") is paired token by token with the reference, and its `±` leaves that
shared spread out. Compare two files through their paired differences, never through
their absolute perplexities' uncertainties.

Source: llama.cpp, tools/perplexity/README.md (how each `±` of its scoreboard is
estimated: a Gaussian per-token distribution and error propagation); the propagation of
independent errors in quadrature is the standard one (e.g. JCGM 100:2008, GUM, section
5.1.2, with all correlation coefficients zero).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from math import hypot, isfinite
from typing import Any, Literal

from calculators.errors import InputError, shown

__all__ = ["METRICS", "Separation", "compare_rows", "pair_file", "separation"]

Better = Literal["lower", "higher"]

# The scoreboard's metrics with a published `±`, and which direction is better
# (docs/data/adaptation/llama3-8b-scoreboard.json, its `units`).
METRICS: dict[str, tuple[str, Better]] = {
    "ppl": ("perplexity", "lower"),
    "delta_ppl": ("PPL(quantized) - PPL(FP16), paired with the reference", "lower"),
    "kld_mean": ("mean KL divergence from the FP16 distribution, nats", "lower"),
    "mean_delta_p_pct": ("mean change of the correct token's probability, points", "higher"),
    "rms_delta_p_pct": ("RMS change of the correct token's probability, points", "lower"),
}


@dataclass(frozen=True, kw_only=True)
class Separation:
    """b - a, its uncertainty sqrt(u_a^2 + u_b^2) and |b - a| over it (sigmas)."""

    difference: float
    uncertainty: float
    sigmas: float

    def relative_to(self, a: float) -> float | None:
        """The difference as a fraction of `a` (None when a is 0)."""
        return self.difference / a if a else None


def _estimate(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not isfinite(value):
        raise InputError(name, f"{name} must be a finite number, got {shown(value)}")
    return float(value)


def separation(a: float, a_uncertainty: float, b: float, b_uncertainty: float) -> Separation:
    """Separation of b from a: (b - a), sqrt(u_a^2 + u_b^2), |b - a| / sqrt(...)."""
    a, b = _estimate("a", a), _estimate("b", b)
    ua = _estimate("a_uncertainty", a_uncertainty)
    ub = _estimate("b_uncertainty", b_uncertainty)
    for name, u in (("a_uncertainty", ua), ("b_uncertainty", ub)):
        if u < 0:
            raise InputError(name, f"{name} must be at least 0, got {u!r}")
    u = hypot(ua, ub)
    if u == 0:
        raise InputError("a_uncertainty", "a_uncertainty and b_uncertainty are both 0")
    return Separation(difference=b - a, uncertainty=u, sigmas=abs(b - a) / u)


def _row(scoreboard: dict[str, Any], row_id: str) -> dict[str, Any]:
    for row in scoreboard["rows"]:
        if row["id"] == row_id:
            return row
    raise InputError("row", f"row {shown(row_id)} is not in the scoreboard")


def compare_rows(scoreboard: dict[str, Any], first: str, second: str) -> dict[str, Any]:
    """Each metric of METRICS for rows `first` and `second` of a scoreboard: both values,
    second - first (also as a fraction of first), the combined uncertainty, the separation
    in sigmas and the better row."""
    a, b = _row(scoreboard, first), _row(scoreboard, second)
    metrics: dict[str, Any] = {}
    for key, (label, better) in METRICS.items():
        s = separation(a[key], a[f"{key}_uncertainty"], b[key], b[f"{key}_uncertainty"])
        lower = first if a[key] < b[key] else second
        higher = second if lower == first else first
        metrics[key] = {
            "label": label,
            "better_is": better,
            "first": a[key],
            "second": b[key],
            "difference": s.difference,
            "relative_difference": s.relative_to(a[key]),
            "uncertainty": s.uncertainty,
            "sigmas": s.sigmas,
            "better": lower if better == "lower" else higher,
        }
    return {"first": first, "second": second, "metrics": metrics}


def pair_file(scoreboard_path: str, first: str, second: str) -> str:
    """The JSON text of `compare_rows` for two rows of the scoreboard file at
    `scoreboard_path` (a path under docs/data/), with how it was made."""
    with open(scoreboard_path, encoding="utf-8") as f:
        scoreboard = json.load(f)
    out = {
        "title": f"{first} against {second}: each published metric's separation",
        "computed_by": "python -m calculators.statistics.separation "
        f"{scoreboard_path} {first} {second}",
        "scoreboard": scoreboard_path,
        "scoreboard_source": scoreboard["source"],
        "assumption": "the two rows' errors taken as independent (uncertainties added in "
        "quadrature); both rows are scored on the same tokens, so a positive correlation "
        "would make the true separation larger",
        **compare_rows(scoreboard, first, second),
    }
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # regenerate a committed pair file
    sys.stdout.write(pair_file(*sys.argv[1:4]))
