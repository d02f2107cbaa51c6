"""The page's forms, derived from the calculators' declarations, and how a form's inputs
are computed: the same code path as the command line, so the page, the command line and
the tests compute identical JSON.

A page shows the inputs a calculator declares with `page`, in their declared order; a
field's `default` is the value the form starts with (the declaration's `example` where it
has one), its `name` is the CLI flag in snake_case, so a form, a shared link and the
command line all speak the same names.

`compute(name, inputs)` checks every input against its declared bounds first, so a bad
value is reported at its field (`FieldError`), then runs the subcommand from
calculators.commands with the namespace the CLI parser would build for the same command
line (`args_for`; the tests hold the two equal). An error the calculators raise carries
the input it blames as data (`InputError.field`); the page shows it at that field, named
by the field's label. Argparse stays out of the browser's path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from types import SimpleNamespace
from typing import Any

from calculators.commands import CALCULATORS as DECLARED
from calculators.commands import run
from calculators.commands.declaration import Calculator as Declared
from calculators.commands.declaration import Input
from calculators.errors import InputError, shown
from calculators.parsing import parse_float, parse_int

# One field of a form: the declared input, with the form's starting value as `default`.
Field = Input

# Where a file input's relative path is read from: the site's docs/ folder, which holds the
# example files the pages start with (the build reads them there; the browser's worker
# writes the example and the reader's own files under its own folder and sets this to it).
FILE_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "docs")


@dataclass(frozen=True, kw_only=True)
class Calculator:
    """A calculator as the site shows it: the CLI subcommand and its form's fields."""

    name: str
    title: str
    command: str
    fields: tuple[Field, ...]
    summary: str
    declaration: Declared

    def field(self, name: str) -> Field:
        """The field `name`; KeyError if the calculator has none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        """Every field's default, by name."""
        return {f.name: f.default for f in self.fields}


def _page(declared: Declared) -> Calculator:
    """The form of a declared calculator: its page inputs, starting at their examples."""
    return Calculator(
        name=declared.name,
        title=declared.title,
        command=declared.name,
        summary=declared.summary,
        fields=tuple(replace(i, default=i.page_default) for i in declared.inputs if i.page),
        declaration=declared,
    )


class _Pages(Mapping[str, Calculator]):
    """The forms of the calculators that have a page, by name; like the declarations, a
    calculator is imported when its form is first asked for (a page shows one)."""

    def __getitem__(self, name: str) -> Calculator:
        return _form(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in DECLARED and DECLARED[name].html is not None

    def __iter__(self) -> Iterator[str]:
        return (name for name in DECLARED if DECLARED[name].html is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@cache
def _form(name: str) -> Calculator:
    if name not in DECLARED or DECLARED[name].html is None:
        raise KeyError(name)
    return _page(DECLARED[name])


CALCULATORS: Mapping[str, Calculator] = _Pages()


# A bad input: `field` is the input's name ('' when no single field is to blame).
FieldError = InputError


def calculator(name: str) -> Calculator:
    """The declared calculator `name`; FieldError naming the known ones otherwise."""
    try:
        return CALCULATORS[name]
    except KeyError:
        known = ", ".join(CALCULATORS)
        raise FieldError("", f"calculator must be one of {known}; got {shown(name)}") from None


def _named(f: Field) -> str:
    """How a message names field `f`: the label the reader sees, and the input's name
    (the CLI flag in snake_case), e.g. "Price (price)"."""
    return f"{f.label} ({f.name})"


def _number(f: Field, raw: object) -> int | float:
    """The field's number, read as the CLI reads its flag (calculators.parsing)."""
    parse = parse_int if f.kind == "int" else parse_float
    try:
        value: int | float = parse(f.name, str(raw))
    except InputError as e:
        raise e.renamed(f.name, _named(f)) from None
    unit = f" {f.unit}" if f.unit else ""
    if f.minimum is not None and value < f.minimum:
        raise FieldError(
            f.name, f"{_named(f)} must be at least {f.minimum:,}{unit}, got {shown(raw)}"
        )
    if f.maximum is not None and value > f.maximum:
        raise FieldError(
            f.name, f"{_named(f)} must be at most {f.maximum:,}{unit}, got {shown(raw)}"
        )
    return value


def clean(calc: Calculator, inputs: dict[str, Any]) -> dict[str, Any]:
    """Typed inputs: defaults filled in, empty optional fields None; FieldError if bad."""
    unknown = sorted(set(inputs) - {f.name for f in calc.fields})
    if unknown:
        raise FieldError(unknown[0], f"{calc.name} has no input {shown(unknown[0])}")
    out: dict[str, Any] = {}
    for f in calc.fields:
        raw = inputs.get(f.name, f.default)
        if f.kind == "bool":
            out[f.name] = raw in (True, "true", "on", "1", 1)
            continue
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if not f.optional:
                raise FieldError(f.name, f"{_named(f)} is required")
            out[f.name] = None
            continue
        if f.kind in ("int", "float"):
            out[f.name] = _number(f, raw)
        elif f.kind == "choice":
            raw = dict(f.aliases).get(raw, raw)
            if raw not in f.choices:
                raise FieldError(
                    f.name, f"{_named(f)} must be one of {', '.join(f.choices)}; got {shown(raw)}"
                )
            out[f.name] = raw
        elif f.kind == "file":
            out[f.name] = os.path.join(FILE_ROOT, str(raw).strip())
        else:
            out[f.name] = str(raw).strip()
    return out


def _flag_and_value(flag: str, value: str) -> list[str]:
    """`--flag value`, or `--flag=value` for a value that starts with a dash: argparse
    (3.11) reads `-1e-3` after a flag as another option, since only plain negative
    numbers like -0.001 escape that."""
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


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
                    argv += _flag_and_value(f.flag, line.strip())
        elif f.kind == "file":  # the reader's own copy of the file has its name, not our path
            argv += [f.flag, os.path.basename(str(value))]
        else:
            argv += _flag_and_value(f.flag, str(value))
    return argv


def args_for(calc: Calculator, values: dict[str, Any]) -> SimpleNamespace:
    """The namespace `python -m calculators` parses from `argv_for(calc, values)`: every
    flag of the command at its default, then the given fields (`values` from `clean`)."""
    args = calc.declaration.defaults()
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
        data, _text = run(calc.declaration, args_for(calc, values))
    except InputError as e:
        known = {f.name: f for f in calc.fields}
        if e.field in known and e.subject:
            raise e.renamed(e.field, _named(known[e.field])) from None
        raise InputError(e.field if e.field in known else "", str(e), subject="") from None
    except ValueError as e:  # a bad value no single input is to blame for
        raise FieldError("", str(e)) from None
    return data
