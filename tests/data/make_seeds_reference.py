"""Writes seeds_reference.json: the reference values tests/test_seeds.py pins.

Not a test and not run by the test suite (the tests run in the browser's Python too,
which has neither scipy nor statsmodels). Reproduce with

    pip install scipy statsmodels mpmath
    python tests/data/make_seeds_reference.py

Sources, by table:
  t_sf, t_isf, paired  mpmath (50 digits): betainc, findroot
  nct                  scipy.stats.nct.cdf / sf
  power                statsmodels.stats.power.TTestPower().power (rows where it is finite;
                       it returns NaN where scipy's nct.cdf(-c) underflows, so those
                       rows take scipy.stats.nct.sf(c, df, nc) + sf(c, df, -nc), the
                       same quantity, and are marked)
  mde                  the root of that power (scipy.optimize.brentq, xtol 1e-15);
                       TTestPower().solve_power is not used: it is loose (~1e-6) and in
                       9 cells of this grid returns its fallback 10.0
  seeds_needed         the smallest n with that power >= the target, scanning n
  quadrature           mpmath quad of E_Z[P(χ²_ν < ν (Z + λ)² / c²)] for large λ
"""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from importlib.metadata import version
from pathlib import Path

import mpmath as mp
import numpy as np
from scipy import stats
from scipy.optimize import brentq
from statsmodels.stats.power import TTestPower

warnings.filterwarnings("ignore")
mp.mp.dps = 50
OUT = Path(__file__).with_name("seeds_reference.json")
TP = TTestPower()


def mp_sf(t, nu):
    t, nu = mp.mpf(t), mp.mpf(nu)
    return mp.betainc(nu / 2, mp.mpf(1) / 2, 0, nu / (nu + t * t), regularized=True) / 2


def mp_isf(p, nu):
    p, nu = mp.mpf(p), mp.mpf(nu)
    guess = float(stats.t.isf(float(p), float(nu)))
    if not np.isfinite(guess) or guess <= 0:
        guess = 1.0
    # scipy's isf is only a start: it is wrong by up to 2x below 1e-100
    f = lambda lt: mp.log(mp_sf(mp.exp(lt), nu)) - mp.log(p)  # noqa: E731
    return mp.exp(mp.findroot(f, mp.log(guess), tol=mp.mpf(10) ** -40))


def ref_power(dz, n, alpha):
    df, lam = n - 1, dz * np.sqrt(n)
    c = stats.t.isf(alpha / 2, df)
    return float(stats.nct.sf(c, df, lam) + stats.nct.sf(c, df, -lam))


def miss_integrand(nu, lam, c):
    """z -> φ(z) Q(ν/2, ν (z + λ)² / (2 c²)): P(|T'| <= c) = ∫ of it over z."""

    def f(z):
        return mp.npdf(z) * mp.gammainc(
            nu / 2, nu * (z + lam) ** 2 / (2 * c * c), mp.inf, regularized=True
        )

    return f


def old_seeds_needed(dz, alpha, power):
    """The central-t rule the code had before (for the 'one short' cells)."""
    n = 2
    while True:
        df = n - 1
        mde = (stats.t.isf(alpha / 2, df) + stats.t.ppf(power, df)) / np.sqrt(n)
        if mde <= dz:
            return n
        n += 1


def dumps(out: dict) -> str:
    """JSON with one row per line, so that a changed value is a one-line diff."""
    lines = ["{", f' "versions": {json.dumps(out["versions"])},']
    tables = [k for k in out if k != "versions"]
    for i, name in enumerate(tables):
        lines.append(f' "{name}": {{"source": {json.dumps(out[name]["source"])}, "rows": [')
        body = [f"  {json.dumps(row)}" for row in out[name]["rows"]]
        lines.append(",\n".join(body))
        lines.append(" ]}" + ("," if i < len(tables) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    out: dict = {
        "versions": {k: version(k) for k in ("scipy", "statsmodels", "mpmath", "numpy")},
    }
    # t upper tail, including tails far below the smallest double (log10 only).
    rows = []
    for df in (1, 2, 3, 4, 10, 30, 100, 1000, 100_000):
        for t in (0.0, 0.3, 1.0, 2.0, 2.5, 5.0, 12.0, 40.0, 1e3, 1e10, 1e50, 1e200, 1e300):
            sf = mp_sf(t, df)
            rows.append([t, df, float(sf), float(mp.log10(sf))])
    out["t_sf"] = {"source": f"mpmath {version('mpmath')} betainc, 50 digits", "rows": rows}
    rows = []
    for df in (1, 2, 3, 5, 10, 33, 99, 1000, 100_000):
        for p in (0.45, 0.25, 0.1, 0.025, 1e-3, 1e-6, 5e-11, 1e-20, 1e-100, 1e-300):
            rows.append([p, df, float(mp_isf(p, df))])
    out["t_isf"] = {"source": f"mpmath {version('mpmath')} findroot on betainc", "rows": rows}

    rows, worst = [], 0.0
    for df in (1, 2, 3, 5, 10, 30, 1000, 100_000):
        for nc in (-40.0, -8.0, -1.5, 0.5, 2.0, 5.0, 15.0, 40.0):
            for t in (-20.0, -1.0, 0.5, 1.5, 3.0, 8.0, 30.0, 45.0):
                cdf, sf = float(stats.nct.cdf(t, df, nc)), float(stats.nct.sf(t, df, nc))
                if np.isfinite(cdf) and np.isfinite(sf):
                    rows.append([t, df, nc, cdf, sf])
                    worst = max(worst, abs(cdf + sf - 1))
    out["nct"] = {
        "source": f"scipy.stats.nct.cdf / nct.sf, scipy {version('scipy')}",
        "rows": rows,
    }
    print("nct rows", len(rows), "max |cdf + sf - 1|", worst)

    rows, fallback = [], 0
    for dz in (0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0):
        for n in (2, 3, 4, 5, 8, 10, 20, 34, 100, 1000, 10_000):
            for alpha in (1e-6, 0.01, 0.05, 0.1, 0.5):
                sm = float(TP.power(dz, n, alpha))
                if np.isfinite(sm):
                    assert abs(sm - ref_power(dz, n, alpha)) < 1e-14
                    rows.append([dz, n, alpha, sm, "statsmodels"])
                else:
                    fallback += 1
                    rows.append([dz, n, alpha, ref_power(dz, n, alpha), "scipy"])
    out["power"] = {
        "source": f"statsmodels.stats.power.TTestPower().power, statsmodels "
        f"{version('statsmodels')} (rows marked scipy: scipy.stats.nct.sf(c, df, nc) + "
        f"nct.sf(c, df, -nc), scipy {version('scipy')}, where statsmodels gives NaN)",
        "rows": rows,
    }
    print("power rows", len(rows), "scipy fallback", fallback)

    rows = []
    for n in range(2, 31):
        for alpha in (0.01, 0.05, 0.1):
            for power in (0.5, 0.8, 0.9, 0.95):
                dz = brentq(
                    lambda d, n=n, a=alpha, p=power: ref_power(d, n, a) - p,
                    1e-3,
                    200.0,
                    xtol=1e-15,
                    rtol=1e-15,
                )
                rows.append([n, alpha, power, dz])
    out["mde"] = {
        "source": f"scipy.optimize.brentq (xtol 1e-15) on TTestPower().power, i.e. "
        f"scipy.stats.nct.sf(c, df, nc) + nct.sf(c, df, -nc); scipy {version('scipy')}, "
        f"statsmodels {version('statsmodels')}",
        "rows": rows,
    }

    rows = []
    for dz in (0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0):
        for alpha in (0.01, 0.05, 0.1):
            for power in (0.5, 0.8, 0.9, 0.95):
                n = 2
                while ref_power(dz, n, alpha) < power:
                    n += 1
                rows.append([dz, alpha, power, n, old_seeds_needed(dz, alpha, power)])
    out["seeds_needed"] = {
        "source": f"smallest n with TTestPower().power >= power (scipy {version('scipy')}, "
        f"statsmodels {version('statsmodels')}); the last column is the central-t rule "
        f"the code used before",
        "rows": rows,
    }

    rows = []
    for nu, alpha, lam in (
        (1, 0.001, 800.0),
        (1, 1e-10, 6e9),
        (1, 1e-10, 4e10),
        (2, 1e-6, 3000.0),
        (3, 1e-10, 5000.0),
        (6, 1e-10, 300.0),
        (10, 1e-10, 60.0),
    ):
        miss = mp.quad(
            miss_integrand(mp.mpf(nu), mp.mpf(lam), mp_isf(alpha / 2, nu)), mp.linspace(-40, 40, 81)
        )
        rows.append([nu, alpha, lam, float(miss)])
    out["quadrature"] = {
        "source": f"mpmath {version('mpmath')} quad (50 digits) of "
        "E_Z[Q(ν/2, ν (Z + λ)² / (2 c²))], c = t_isf(alpha/2, ν): the miss probability",
        "rows": rows,
    }

    rows = []
    cases = [
        ((0, 0, 0, 0, 0), (1, 1.000001, 0.999999, 1.0000005, 0.9999995)),
        (tuple([0] * 30), tuple(1 + i * 1e-15 for i in range(30))),
        ((0.80, 0.82, 0.79, 0.81, 0.80), (0.82, 0.83, 0.81, 0.84, 0.81)),
        ((1e-170, 3e-170, 2e-170), (0.0, 0.0, 5e-170)),
        ((1e200, 0.0, -3e199), (0.0, 0.0, 1e200)),
    ]
    for a, b in cases:
        d = [Fraction(repr(y)) - Fraction(repr(x)) for x, y in zip(a, b, strict=True)]
        n = len(d)
        mean = sum(d) / n
        var = sum((x - mean) ** 2 for x in d) / (n - 1)
        mean_mp = mp.mpf(mean.numerator) / mean.denominator
        var_mp = mp.mpf(var.numerator) / var.denominator
        sd = mp.sqrt(var_mp)
        t = mean_mp / (sd / mp.sqrt(n))
        p = 2 * mp_sf(abs(t), n - 1)
        rows.append(
            [list(a), list(b), float(mean_mp), float(sd), float(t), float(p), float(mp.log10(p))]
        )
    out["paired"] = {
        "source": f"exact rationals of the typed scores, mpmath {version('mpmath')} "
        "betainc (50 digits): [a, b, mean, sd, t, p, log10 p]",
        "rows": rows,
    }
    OUT.write_text(dumps(out))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
