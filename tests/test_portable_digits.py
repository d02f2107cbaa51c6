"""The calculators give the same digits whichever Python adds their floats.

CPython 3.11 (the command line here) adds floats in `sum()` one after another; from 3.12
(the browser's Pyodide runs 3.14) `sum()` carries a compensation term (Neumaier), so the
last digit of a float sum can differ: 0.6 + 3.6 + 0.3 + 1.6 + 0.8 is 6.8999999999999995
one way and 6.9 the other. The page recomputes in Pyodide and must agree with the
command line, so every float total in calculators/ is math.fsum's correctly rounded sum
or an exact sum of rationals. This runs every recorded page example under both ways of
adding and asks for the recorded result each time. (The C library's transcendental
functions differ in the last digit too; the ones a result depends on are computed in
decimal arithmetic, as `normal_cdf` and `chi_square_1_sf`, and the Pyodide run of
test_behaviour_kept holds them.)
"""

from __future__ import annotations

import builtins
import json
import math
from pathlib import Path
from typing import Any

import pytest

from calculators.web import compute

RECORD = json.loads((Path(__file__).parent / "data" / "behaviour.json").read_text())
_BUILTIN_SUM = builtins.sum


def _naive_sum(iterable: Any, /, start: Any = 0) -> Any:
    """sum() as CPython 3.11 adds: left to right, each step rounded."""
    total = start
    for x in iterable:
        total = total + x
    return total


def _compensated_sum(iterable: Any, /, start: Any = 0) -> Any:
    """sum() as CPython 3.12+ adds floats (Objects/bltinmodule.c, builtin_sum_impl): exact
    integers until the first float, then Neumaier's compensated sum; anything else as
    before."""
    items = list(iterable)
    values = [start, *items]
    if not all(isinstance(v, int | float) for v in values) or all(
        isinstance(v, int) for v in values
    ):
        return _naive_sum(items, start)
    exact, i = 0, 0
    while not isinstance(values[i], float):
        exact += values[i]
        i += 1
    high, low = float(exact), 0.0
    for v in values[i:]:
        x = float(v)
        t = high + x
        low += (high - t) + x if abs(high) >= abs(x) else (x - t) + high
        high = t
    return high + low if low and math.isfinite(low) else high


def test_the_two_ways_of_adding_differ():
    # the case that broke the page against the command line: the check can fail
    parts = [0.6, 3.6, 0.3, 1.6, 0.8]
    assert _naive_sum(parts) == 6.8999999999999995
    assert _compensated_sum(parts) == 6.9 == math.fsum(parts)
    assert _compensated_sum([1, 2, 3]) == 6 and isinstance(_compensated_sum([1, 2]), int)


@pytest.mark.parametrize("way", [_naive_sum, _compensated_sum], ids=["3.11", "3.12+"])
def test_every_page_example_is_the_same_whichever_way_floats_are_added(
    way: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(builtins, "sum", way)
    differing = []
    for entry in RECORD["pages"]:
        got = json.loads(json.dumps(compute(entry["name"], entry["inputs"])))
        if got != entry["result"]:
            differing.append(f"{entry['where']}:{entry['name']}")
    monkeypatch.setattr(builtins, "sum", _BUILTIN_SUM)
    assert differing == []
