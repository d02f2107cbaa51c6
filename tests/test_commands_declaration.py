"""calculators.commands: each calculator is one module, and the command line, the defaults
and the page's form are derived from its declaration alone."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from calculators.cli import UsageError, _add, _Parser, build_parser
from calculators.commands import CALCULATORS, DEFAULTS, Calculator, Input, run
from calculators.errors import InputError
from calculators.web.forms import CALCULATORS as PAGES
from calculators.web.forms import _page, args_for, clean
from tests.cli_helpers import subparser

ROOT = Path(__file__).resolve().parents[1]
COMMANDS_DIR = ROOT / "calculators" / "commands"


def test_every_module_of_the_package_is_a_calculator_but_the_shared_ones() -> None:
    modules = {p.stem for p in COMMANDS_DIR.glob("*.py")} - {"__init__", "declaration", "shared"}
    assert {name.replace("-", "_") for name in CALCULATORS} == modules
    assert len({c.order for c in CALCULATORS.values()}) == len(CALCULATORS)


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_the_command_line_and_the_pages_know_no_calculator_by_name(name: str) -> None:
    # declared once: what the CLI and the site know of a calculator comes from its module
    pattern = re.compile(rf"""["']{re.escape(name)}["']""")
    derived = [ROOT / "calculators" / "cli.py", *(ROOT / "calculators" / "web").glob("*.py")]
    assert [p.name for p in derived if pattern.search(p.read_text(encoding="utf-8"))] == []


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_the_parser_has_exactly_the_declared_flags(name: str) -> None:
    calc = CALCULATORS[name]
    flags = {o for a in subparser(name)._actions for o in a.option_strings}
    assert flags == {"-h", "--help", "--json", *(i.flag for i in calc.inputs)}
    assert DEFAULTS[name] == calc.defaults()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_form_has_exactly_the_page_inputs_in_order(name: str) -> None:
    declared = [i for i in CALCULATORS[name].inputs if i.page]
    fields = PAGES[name].fields
    assert [f.name for f in fields] == [i.name for i in declared]
    assert [f.default for f in fields] == [i.page_default for i in declared]
    assert all(
        f.label == i.label and f.help == i.help for f, i in zip(fields, declared, strict=True)
    )


def _toy_run(args: argparse.Namespace) -> tuple[dict[str, object], str]:
    if args.size is not None and args.size > 10:
        raise InputError("size_in_units", "size_in_units must be at most 10, got 11")
    data = {"size": args.size, "ratio": args.ratio, "lines": args.line, "on": args.on}
    return data, str(data)


# A calculator nobody ships: what one new module declares, and all that it declares.
TOY = Calculator(
    name="toy",
    title="Toy",
    summary="A calculator declared in a test.",
    help="a toy",
    inputs=(
        Input(
            name="config",
            label="Config",
            kind="text",
            help="a file",
            group="src",
            required=True,
            page=False,
        ),
        Input(
            name="model",
            label="Model",
            kind="choice",
            choices=("a", "b"),
            example="a",
            help="a model",
            group="src",
            required=True,
        ),
        Input(
            name="size",
            label="Size",
            kind="int",
            minimum=1,
            maximum=20,
            optional=True,
            help="a size",
        ),
        Input(
            name="ratio",
            label="Ratio",
            kind="float",
            default=0.5,
            minimum=0,
            maximum=1,
            help="a ratio",
        ),
        Input(name="line", label="Lines", kind="lines", default=(), optional=True, help="repeated"),
        Input(name="on", label="On", kind="bool", default=False, help="a switch"),
    ),
    run=_toy_run,
    html=lambda r: f"<p>{r}</p>",
    renamed={"size_in_units": "size"},
)


def test_a_new_declaration_gets_its_flags_and_its_form() -> None:
    parser = _Parser()
    _add(parser, TOY)
    argv = ["--model", "b", "--size", "1e1", "--line", "x", "--line", "y", "--on"]
    args = parser.parse_args(argv)
    assert (args.model, args.size, args.ratio, args.line, args.on) == ("b", 10, 0.5, ["x", "y"], 1)
    with pytest.raises(UsageError, match="one of the arguments --config --model is required"):
        parser.parse_args([])
    with pytest.raises(UsageError, match="not allowed with argument"):
        parser.parse_args(["--config", "c", "--model", "a"])
    page = _page(TOY)
    assert [f.name for f in page.fields] == ["model", "size", "ratio", "line", "on"]
    assert page.field("model").default == "a" and page.field("line").default == ""
    values = clean(page, {"size": "3", "line": "p\nq"})
    assert vars(args_for(page, values)) == {
        "config": None,
        "model": "a",
        "size": 3,
        "ratio": 0.5,
        "line": ["p", "q"],
        "on": False,
        "json": False,
    }


def test_an_error_is_named_by_the_input_it_came_from() -> None:
    parser = argparse.ArgumentParser()
    _add(parser, TOY)
    args = parser.parse_args(["--model", "a", "--size", "11"])
    with pytest.raises(InputError) as e:
        run(TOY, args)
    assert e.value.field == "size"
    assert str(e.value) == "--size must be at most 10, got 11"


def test_the_browser_path_imports_no_argparse() -> None:
    # argparse costs about 60 ms to import in Pyodide; the page never parses a command line
    sources = [
        p.read_text(encoding="utf-8")
        for p in [*COMMANDS_DIR.glob("*.py"), *(ROOT / "calculators" / "web").glob("*.py")]
    ]
    assert not any(re.search(r"^\s*import argparse|^from argparse", s, re.M) for s in sources)
    assert build_parser().prog == "python -m calculators"
    assert os.path.basename(__file__) == "test_commands_declaration.py"


def test_a_page_imports_only_the_calculator_it_shows() -> None:
    # every import is compiled and run on each page load in Pyodide: the kv-cache page
    # must not pay for the training-step memory, the budget or the seed statistics
    code = (
        "import json, sys\n"
        "from calculators.web import run_json\n"
        "assert json.loads(run_json('kv-cache', '{}'))['ok']\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('calculators'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    loaded = set(json.loads(out.stdout))
    assert {"calculators.commands.kv_cache", "calculators.memory.kv_cache"} <= loaded
    for other in ("training", "budget", "seeds", "envelope", "throughput", "weights"):
        assert f"calculators.commands.{other}" not in loaded
    assert "calculators.training.step" not in loaded
    assert "calculators.statistics.student_t" not in loaded
