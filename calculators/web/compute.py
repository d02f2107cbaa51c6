"""Run a calculator from form inputs: the same CLI code path, so the page, the command line
and the tests compute identical JSON.

`compute(name, inputs)` checks every input against its declared bounds first, so a bad
value is reported at its field (`FieldError`), then runs the subcommand's function from
calculators.commands with the namespace the CLI parser would build for the same command
line (`args_for`; the tests hold the two equal); an error the calculators raise is
attributed to the field its message names. Argparse stays out of the browser's path.
"""

from __future__ import annotations

import math
import re
from types import SimpleNamespace
from typing import Any

from calculators.commands import COMMANDS, DEFAULTS, UsageError
from calculators.web.forms import CALCULATORS, Calculator, Field


class FieldError(ValueError):
    """A bad input: `field` is the input's name ('' when no single field is to blame)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def calculator(name: str) -> Calculator:
    """The declared calculator `name`; FieldError naming the known ones otherwise."""
    try:
        return CALCULATORS[name]
    except KeyError:
        known = ", ".join(CALCULATORS)
        raise FieldError("", f"calculator must be one of {known}; got {name!r}") from None


def _number(f: Field, raw: object) -> int | float:
    text = str(raw).strip().replace("_", "")
    try:
        value: int | float = int(text) if f.kind == "int" else float(text)
    except ValueError:
        kind = "a whole number" if f.kind == "int" else "a number"
        raise FieldError(f.name, f"{f.label} ({f.name}) must be {kind}, got {raw!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise FieldError(f.name, f"{f.label} ({f.name}) must be finite, got {raw!r}")
    unit = f" {f.unit}" if f.unit else ""
    if f.minimum is not None and value < f.minimum:
        raise FieldError(
            f.name, f"{f.label} ({f.name}) must be at least {f.minimum:,}{unit}, got {raw!r}"
        )
    if f.maximum is not None and value > f.maximum:
        raise FieldError(
            f.name, f"{f.label} ({f.name}) must be at most {f.maximum:,}{unit}, got {raw!r}"
        )
    return value


def clean(calc: Calculator, inputs: dict[str, Any]) -> dict[str, Any]:
    """Typed inputs: defaults filled in, empty optional fields None; FieldError if bad."""
    unknown = sorted(set(inputs) - {f.name for f in calc.fields})
    if unknown:
        raise FieldError(unknown[0], f"{calc.name} has no input {unknown[0]!r}")
    out: dict[str, Any] = {}
    for f in calc.fields:
        raw = inputs.get(f.name, f.default)
        if f.kind == "bool":
            out[f.name] = raw in (True, "true", "on", "1", 1)
            continue
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if not f.optional:
                raise FieldError(f.name, f"{f.label} ({f.name}) is required")
            out[f.name] = None
            continue
        if f.kind in ("int", "float"):
            out[f.name] = _number(f, raw)
        elif f.kind == "choice":
            if raw not in f.choices:
                raise FieldError(
                    f.name,
                    f"{f.label} ({f.name}) must be one of {', '.join(f.choices)}; got {raw!r}",
                )
            out[f.name] = raw
        else:
            out[f.name] = str(raw).strip()
    return out


def argv_for(calc: Calculator, values: dict[str, Any]) -> list[str]:
    """The command line that computes the same result: `python -m calculators ARGV`."""
    argv = [calc.command]
    for f in calc.fields:
        value = values.get(f.name)
        if value is None or value is False:
            continue
        if f.kind == "bool":
            argv.append(f.flag)
        elif f.kind == "lines":
            for line in str(value).splitlines():
                if line.strip():
                    argv += [f.flag, line.strip()]
        else:
            argv += [f.flag, str(value)]
    return argv


def _blame(calc: Calculator, message: str) -> str:
    """The field a calculator's error message names first, '' if none."""
    found: list[tuple[int, int, int, str]] = []
    for f in calc.fields:
        for n in (f.flag, f.name, f.name.replace("_", " ")):
            whole = re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", message)
            # a longer dataclass field named after the input: price -> price_per_gpu_hour
            prefix = re.search(rf"(?<![\w-]){re.escape(n)}_\w", message)
            for rank, m in ((0, whole), (1, prefix)):
                if m:
                    found.append((rank, m.start(), -len(n), f.name))
    return min(found)[3] if found else ""


def args_for(calc: Calculator, values: dict[str, Any]) -> SimpleNamespace:
    """The namespace `python -m calculators` parses from `argv_for(calc, values)`: every
    flag of the command at its default, then the given fields (`values` from `clean`)."""
    args = {k: list(v) if isinstance(v, list) else v for k, v in DEFAULTS[calc.command].items()}
    for f in calc.fields:
        value = values.get(f.name)
        if value is None or value is False:
            continue
        if f.kind == "lines":
            lines = [line.strip() for line in str(value).splitlines() if line.strip()]
            args[f.name] = args[f.name] + lines
        else:
            args[f.name] = value
    return SimpleNamespace(**args)


def compute(name: str, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-able result of calculator `name` for `inputs` (names as in the forms).

    Equal to `python -m calculators <command> ... --json` for the same values.
    """
    calc = calculator(name)
    values = clean(calc, inputs or {})
    try:
        data, _text = COMMANDS[calc.command](args_for(calc, values))
    except (UsageError, ValueError) as e:
        raise FieldError(_blame(calc, str(e)), str(e)) from None
    return data
