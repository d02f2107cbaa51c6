"""calculators.commands: one table of flag defaults for the CLI parser and the pages."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from types import SimpleNamespace

import pytest

from calculators.cli import build_parser, main
from calculators.commands import COMMANDS, DEFAULTS
from tests.cli_helpers import subparser, subparsers


def test_every_subcommand_has_a_function_and_defaults() -> None:
    assert set(subparsers()) == set(COMMANDS) == set(DEFAULTS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_defaults_table_lists_every_flag_of_the_parser(command: str) -> None:
    dests = {a.dest for a in subparser(command)._actions if a.dest != "help"}
    assert dests == set(DEFAULTS[command])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_parser_takes_its_defaults_from_the_table(command: str) -> None:
    for action in subparser(command)._actions:
        if action.dest != "help":
            assert action.default == DEFAULTS[command][action.dest], action.dest


def test_a_command_runs_from_the_table_as_from_the_command_line() -> None:
    # Required flags aside, the table alone is a complete namespace for the function.
    args = SimpleNamespace(**{**DEFAULTS["kv-cache"], "model": "qwen3-8b", "context": 4096})
    data, _text = COMMANDS["kv-cache"](args)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["kv-cache", "--model", "qwen3-8b", "--context", "4096", "--json"]) == 0
    assert json.loads(out.getvalue()) == json.loads(json.dumps(data))
    # Qwen3-8B config.json: 36 layers x 2 (K, V) x 8 KV heads x head_dim 128 x 2 bytes (bf16)
    assert data["bytes_per_token"] == 36 * 2 * 8 * 128 * 2


def test_repeated_flags_do_not_grow_the_tables_lists() -> None:
    parsed = build_parser().parse_args(["budget", "--price", "2", "--phase", "a:1:2"])
    assert parsed.phase == ["a:1:2"]
    assert DEFAULTS["budget"]["phase"] == [] and DEFAULTS["budget"]["package"] == []
