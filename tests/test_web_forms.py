"""calculators.web.forms: every CLI subcommand with a page is declared, names are its flags."""

from __future__ import annotations

import argparse

import pytest

from calculators.cli import real_number, whole_number
from calculators.web import CALCULATORS
from tests.cli_helpers import subparser


def _flags(command: str) -> set[str]:
    return {o for a in subparser(command)._actions for o in a.option_strings}


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_every_field_is_a_cli_flag(name: str) -> None:
    calc = CALCULATORS[name]
    flags = _flags(calc.command)
    for f in calc.fields:
        assert f.flag in flags, f.flag
        assert f.name == f.flag[2:].replace("-", "_")


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_fields_are_complete(name: str) -> None:
    for f in CALCULATORS[name].fields:
        assert f.label and f.help
        if f.kind == "choice":
            assert f.default in f.choices
        if f.kind in ("int", "float") and f.default is not None:
            assert f.minimum is not None and f.maximum is not None
            assert f.minimum <= f.default <= f.maximum
        if f.unit == "GiB":
            assert f.name.endswith("_gib")


def test_the_site_covers_the_cli_calculators() -> None:
    expected = {
        "weights",
        "kv-cache",
        "envelope",
        "training",
        "throughput",
        "batch",
        "budget",
        "seeds",
    }
    assert expected <= set(CALCULATORS)


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_field_kinds_match_the_parsers_types(name: str) -> None:
    calc = CALCULATORS[name]
    actions = {a.dest: a for a in subparser(calc.command)._actions}
    for f in calc.fields:
        a = actions[f.name]
        if f.kind == "bool":
            assert isinstance(a, argparse._StoreTrueAction), f.name
        elif f.kind == "lines":
            assert isinstance(a, argparse._AppendAction), f.name
        else:
            expected = {"int": whole_number, "float": real_number}.get(f.kind)
            assert a.type is expected, f.name
