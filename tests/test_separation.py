"""calculators/statistics/separation.py: the separation of two published estimates in
standard errors, by hand on known values and on the llama.cpp scoreboard's figures, its
input errors, and its symmetry and scale invariance as properties."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.errors import InputError
from calculators.statistics.separation import METRICS, compare_rows, separation

ROOT = Path(__file__).resolve().parents[1]
SCOREBOARD = ROOT / "docs" / "data" / "adaptation" / "llama3-8b-scoreboard.json"


def test_separation_of_a_3_4_5_triangle() -> None:
    s = separation(1.0, 3.0, 6.0, 4.0)
    assert (s.difference, s.uncertainty, s.sigmas) == (5.0, 5.0, 1.0)


def test_separation_hand_checked_on_the_scoreboard() -> None:
    # llama.cpp README, LLaMA 3 8b Scoreboard: ΔPPL q4_0 0.468514 ± 0.007951, q3_K_L (WT 10m)
    # 0.439590 ± 0.008154; 0.028924 / sqrt(0.007951^2 + 0.008154^2) = 2.5397
    s = separation(0.468514, 0.007951, 0.439590, 0.008154)
    assert s.sigmas == pytest.approx(2.5397, abs=1e-4)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((1.0, -0.1, 2.0, 0.1), "a_uncertainty"),
        ((1.0, 0.1, 2.0, -0.1), "b_uncertainty"),
        ((float("nan"), 0.1, 2.0, 0.1), "a"),
        ((1.0, 0.1, float("inf"), 0.1), "b"),
        ((1.0, 0.0, 2.0, 0.0), "a_uncertainty"),
        ((True, 0.1, 2.0, 0.1), "a"),
    ],
)
def test_separation_rejects_bad_input_naming_the_field(args, field) -> None:
    with pytest.raises(InputError) as e:
        separation(*args)
    assert e.value.field == field


def test_compare_rows_names_an_unknown_row() -> None:
    with pytest.raises(InputError, match="q9_9"):
        compare_rows({"rows": []}, "q9_9", "q4_0")


FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
POSITIVE = st.floats(min_value=1e-6, max_value=1e6)


@given(a=FINITE, ua=POSITIVE, b=FINITE, ub=POSITIVE, k=st.floats(min_value=1e-3, max_value=1e3))
def test_separation_is_symmetric_and_scale_free(a, ua, b, ub, k) -> None:
    s, t = separation(a, ua, b, ub), separation(b, ub, a, ua)
    assert s.sigmas == pytest.approx(t.sigmas) and s.difference == -t.difference
    assert s.uncertainty >= max(ua, ub)  # combining never shrinks an uncertainty
    scaled = separation(k * a, k * ua, k * b, k * ub)
    assert scaled.sigmas == pytest.approx(s.sigmas, rel=1e-9, abs=1e-9)
    assert math.isfinite(s.sigmas)


def test_compare_rows_reads_every_metric_and_picks_the_better_side() -> None:
    board = json.loads(SCOREBOARD.read_text())
    out = compare_rows(board, "q8_0", "q6_K")
    assert set(out["metrics"]) == set(METRICS)
    kld = out["metrics"]["kld_mean"]
    # README scoreboard: KLD q8_0 0.001355 ± 0.000006, q6_K 0.005452 ± 0.000035
    assert kld["difference"] == pytest.approx(0.005452 - 0.001355)
    assert kld["uncertainty"] == pytest.approx(math.hypot(0.000006, 0.000035))
    assert kld["better"] == "q8_0"
    # mean Δp: higher (less negative) is better: q6_K -0.007 against q8_0 -0.019
    assert out["metrics"]["mean_delta_p_pct"]["better"] == "q6_K"
