"""What a calculator declares, once: its inputs, how it computes, and how its result reads.

A calculator is one module of `calculators.commands` holding a `CALCULATOR`. From it are
derived the command line's subcommand and flags (`calculators.cli`), every flag's
default (`calculators.commands.DEFAULTS`), the page's form and the namespace the page
computes with (`calculators.web`), and the shared link's fields (the form's names).

No argparse here: the browser imports this module, and argparse alone costs about 60 ms
to import in Pyodide, where the standard library ships as source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# An argparse.Namespace or a types.SimpleNamespace with the calculator's DEFAULTS keys.
Args = Any

Kind = Literal["int", "float", "choice", "text", "lines", "bool", "file"]

_SAME = object()  # `example` not given: the page shows `default`


@dataclass(frozen=True, kw_only=True)
class Input:
    """One input: a flag of the command line and, when `page`, a field of the page's form.

    name:     the flag in snake_case (`--kv-format` is `kv_format`): the form field's
              name, the shared link's parameter and the namespace's attribute.
    label, unit, help: how the page and `--help` name and explain it.
    kind:     int | float | choice | text | bool (a switch) | lines (a flag repeated
              once per value; one value per line on the page) | file (a path on the
              command line; on the page, a file the reader picks, read by the browser and
              never sent anywhere: the worker gives the calculator its path).
    default:  the value when the flag is not given (None: left out).
    example:  the value the page's form starts with, where it is not `default` (the page
              shows a worked example; the command line asks nothing of the reader). For a
              file: its path under the site's docs/ folder, which the page starts with.
    minimum, maximum: bounds the page checks as the reader types (the calculators check
              their own at their dataclasses).
    choices:  the values of a choice (a select on the page).
    aliases:  retired names of choices, (old, current) pairs: an old link, command or
              form value still works and is read as the current one.
    optional: the page accepts it empty (then it is left out).
    required: the command line needs it (in a `group`: needs one of the group).
    group:    inputs of one group exclude each other on the command line (--config or
              --model).
    page:     shown in the page's form.
    metavar:  the command line's name for the value in `--help`.
    """

    name: str
    label: str
    kind: Kind
    help: str
    default: Any = None
    example: Any = _SAME
    unit: str = ""
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    optional: bool = False
    required: bool = False
    group: str | None = None
    page: bool = True
    metavar: str | None = None

    @property
    def flag(self) -> str:
        """The command line's flag: `kv_format` -> `--kv-format`."""
        return "--" + self.name.replace("_", "-")

    @property
    def page_default(self) -> Any:
        """The value the page's form starts with."""
        if self.example is not _SAME:
            return self.example
        return "" if self.kind == "lines" else self.default


@dataclass(frozen=True, kw_only=True)
class Calculator:
    """A calculator, declared once.

    name:     the subcommand (`python -m calculators NAME`) and the page calculator's name.
    title, summary: the page's name for it and one line on what it gives.
    help:     the subcommand's line in `python -m calculators --help`.
    inputs:   its inputs, in the page's order.
    run:      typed inputs (a namespace: `Args`) -> (the result as JSON data, the
              plain-text table the command line prints).
    html:     the JSON result -> its HTML (summary, chart, tables); None: no page.
    csv:      the JSON result -> the CSV the page's download gives, where a table serves
              the reader better than every field (a run table to fill); None: every
              field as `field,value` rows.
    tables:   the JSON result -> more CSV downloads by file stem ({"regressions": CSV}),
              where the result holds several tables a reader would open apart.
    renamed:  fields of the calculators' dataclasses that an input feeds under another
              name ({"price_per_gpu_hour": "price"}), so that an error names the input.
    order:    its place in the command line's list.
    """

    name: str
    title: str
    summary: str
    help: str
    inputs: tuple[Input, ...]
    run: Callable[[Args], tuple[Any, str]]
    html: Callable[[dict[str, Any]], str] | None = None
    csv: Callable[[dict[str, Any]], str] | None = None
    tables: Callable[[dict[str, Any]], dict[str, str]] | None = None
    renamed: dict[str, str] = field(default_factory=dict)
    order: int = 100

    def input(self, name: str) -> Input:
        """The input called `name`; KeyError if there is none."""
        for i in self.inputs:
            if i.name == name:
                return i
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        """Every flag's default, by name (`--json` included); lists are fresh copies."""
        out = {i.name: list(i.default) if i.kind == "lines" else i.default for i in self.inputs}
        return {**out, "json": False}
