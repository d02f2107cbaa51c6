"""The calculators, one module each, and what is derived from their declarations.

Every module of this package that holds a `CALCULATOR` (a
`calculators.commands.declaration.Calculator`) is a calculator: `python -m calculators`
gets a subcommand for it and, when it declares `html`, the site gets a form. Adding a
calculator is adding one module here (plus its page and its tests).

`CALCULATORS` holds them by name, in their declared order; `COMMANDS` their functions;
`DEFAULTS` every flag's default per subcommand; `run` runs one and names the input an
error is about.

No argparse here: the browser imports this package.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib import import_module
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.shared import UsageError
from calculators.errors import InputError

__all__ = [
    "CALCULATORS",
    "COMMANDS",
    "DEFAULTS",
    "Args",
    "Calculator",
    "Input",
    "UsageError",
    "run",
]


def _declared() -> dict[str, Calculator]:
    """The CALCULATOR of every module of this package, by name, in declared order.

    The modules are listed from the package's folder: a listing is cheaper than pkgutil
    in Pyodide, where every import of the standard library is compiled from source.
    """
    found = []
    for file in sorted(os.listdir(os.path.dirname(__file__))):
        stem, ext = os.path.splitext(file)
        if ext != ".py" or stem == "__init__":
            continue
        calculator = getattr(import_module(f"{__name__}.{stem}"), "CALCULATOR", None)
        if calculator is not None:
            found.append(calculator)
    return {c.name: c for c in sorted(found, key=lambda c: (c.order, c.name))}


CALCULATORS: dict[str, Calculator] = _declared()
COMMANDS: dict[str, Callable[[Args], tuple[Any, str]]] = {
    name: c.run for name, c in CALCULATORS.items()
}
# Every flag's default by destination; None where a flag is optional or required (the CLI
# parser enforces required flags and exclusive groups). Lists are copied before use.
DEFAULTS: dict[str, dict[str, Any]] = {name: c.defaults() for name, c in CALCULATORS.items()}


def run(command: str | Calculator, args: Args) -> tuple[Any, str]:
    """Run a calculator (by name or declaration); an InputError names its own input.

    The calculators' dataclasses name a bad value by their field (price_per_gpu_hour);
    the reader typed it into the calculator's input (--price): the declaration's
    `renamed` maps one to the other, and the message then starts with the flag.
    """
    calculator = CALCULATORS[command] if isinstance(command, str) else command
    inputs = {i.name for i in calculator.inputs}
    try:
        return calculator.run(args)
    except InputError as e:
        name = calculator.renamed.get(e.field, e.field)
        if name in inputs and e.subject:
            raise e.renamed(name, "--" + name.replace("_", "-")) from None
        if name in inputs:
            raise InputError(name, str(e), subject="") from None
        raise
