"""Command line: `python -m calculators SUBCOMMAND` (weights, kv-cache, envelope, training,
throughput, batch, budget, seeds, presets, gpus, formats).

Tables by default, `--json` for machines. Bad input of any kind ends with one line
on stderr, `error: ...` naming the field and the value, and exit status 2.
Each subcommand and its flags are derived from a calculator declared in
calculators.commands; this module only parses.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from calculators.commands import CALCULATORS, Calculator, UsageError, run
from calculators.errors import QUOTE_LIMIT, InputError
from calculators.parsing import parse_float, parse_int

__all__ = ["UsageError", "build_parser", "main", "real_number", "whole_number"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse quotes a bad value whole ("invalid choice: '...'"); keep the line short
        if len(message) > 4 * QUOTE_LIMIT:
            message = f"{message[: 3 * QUOTE_LIMIT]}... ({len(message):,} characters)"
        raise UsageError(message)


def whole_number(text: str) -> int:
    """argparse type for whole numbers: 4096, 4_096, 1e9 (calculators.parsing)."""
    try:
        return parse_int("value", text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("value ")) from None


def real_number(text: str) -> float:
    """argparse type for finite numbers."""
    try:
        return parse_float("value", text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("value ")) from None


# The type of each kind of input that takes a value; choices and text stay strings.
_TYPES = {"int": whole_number, "float": real_number}

# A value that starts with '-' and a digit: a negative number or a list of numbers
# (--a -1.2,0.3). argparse takes "-1.2,0.3" for an unknown option, so such a value is
# attached to its flag as --a=-1.2,0.3 before parsing.
_NEGATIVE = re.compile(r"-\.?\d")


def _attach_negative_values(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    for word in argv:
        if out and _NEGATIVE.match(word) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def _add(p: argparse.ArgumentParser, calc: Calculator) -> None:
    """The subcommand's flags, derived from the calculator's declared inputs."""
    groups: dict[str, Any] = {}
    for i in calc.inputs:
        target: Any = p
        if i.group is not None:
            if i.group not in groups:
                required = any(j.required for j in calc.inputs if j.group == i.group)
                groups[i.group] = p.add_mutually_exclusive_group(required=required)
            target = groups[i.group]
        kwargs: dict[str, Any] = {"help": i.help}
        if i.kind == "bool":
            kwargs["action"] = "store_true"
        else:
            if i.kind == "lines":
                kwargs["action"] = "append"
            if i.kind in _TYPES:
                kwargs["type"] = _TYPES[i.kind]
            if i.metavar is not None or i.kind == "file":
                kwargs["metavar"] = i.metavar or "FILE"
            if i.required and i.group is None:
                kwargs["required"] = True
        target.add_argument(i.flag, **kwargs)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=calc.run, **calc.defaults())


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: one subcommand per declared calculator."""
    parser = _Parser(prog="python -m calculators", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for calc in CALCULATORS.values():
        _add(sub.add_parser(calc.name, help=calc.help), calc)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0, or 2 for bad input)."""
    if argv is None:
        argv = sys.argv[1:]
    try:
        args = build_parser().parse_args(_attach_negative_values(argv))
        data, text = run(args.command, args)
        # strict JSON: a NaN or an infinity is a bug to report, never output to parse
        out = json.dumps(data, indent=2, allow_nan=False) if args.json else text
    except ValueError as e:  # InputError, UsageError, and any other bad value
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0
