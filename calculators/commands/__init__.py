"""The calculators, one module each, and what is derived from their declarations.

Every module of this package that holds a `CALCULATOR` (a
`calculators.commands.declaration.Calculator`) is a calculator: `python -m calculators`
gets a subcommand for it and, when it declares `html`, the site gets a form. Adding a
calculator is adding one module here (plus its page and its tests).

`CALCULATORS` holds them by name, in their declared order; `COMMANDS` their functions;
`DEFAULTS` every flag's default per subcommand; `run` runs one and names the input an
error is about. A calculator's module is imported when it is first asked for.

No argparse here: the browser imports this package.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from functools import cache
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


# Modules of this package that are not calculators.
_NOT_CALCULATORS = frozenset({"__init__", "declaration", "shared"})


class _Registry(Mapping[str, Any]):
    """The calculators by name, each module imported when its calculator is first asked for.

    A calculator's name is its module's (kv_cache.py is kv-cache), so the names come from
    a listing of the package's folder without importing anything: a page that shows one
    calculator imports that calculator's modules only (every import costs in Pyodide, where
    it is done on each page load). Iterating imports them all, in their declared order.
    `derive` turns a declaration into the value this mapping gives (the declaration itself,
    its `run`, its defaults).
    """

    def __init__(self, derive: Callable[[Calculator], Any] = lambda c: c) -> None:
        folder = os.listdir(os.path.dirname(__file__))
        stems = {os.path.splitext(f)[0] for f in folder if f.endswith(".py")}
        self._names = frozenset(s.replace("_", "-") for s in stems - _NOT_CALCULATORS)
        self._derive = derive

    def __getitem__(self, name: str) -> Any:
        return self._derive(_declaration(name, self._names))

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        names = self._names
        return iter(sorted(names, key=lambda n: (_declaration(n, names).order, n)))

    def __len__(self) -> int:
        return len(self._names)


@cache
def _module_calculator(name: str) -> Calculator:
    calculator = import_module(f"{__name__}.{name.replace('-', '_')}").CALCULATOR
    if calculator.name != name:  # the name is read from the file: they must agree
        raise ImportError(f"{calculator.name!r} is declared in the module of {name!r}")
    return calculator


def _declaration(name: str, names: frozenset[str]) -> Calculator:
    if name not in names:
        raise KeyError(name)
    return _module_calculator(name)


CALCULATORS: Mapping[str, Calculator] = _Registry()
COMMANDS: Mapping[str, Callable[[Args], tuple[Any, str]]] = _Registry(lambda c: c.run)
# Every flag's default by destination; None where a flag is optional or required (the CLI
# parser enforces required flags and exclusive groups). Lists are fresh copies each time.
DEFAULTS: Mapping[str, dict[str, Any]] = _Registry(lambda c: c.defaults())


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
