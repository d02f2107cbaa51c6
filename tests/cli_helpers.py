"""Shared helper of the tests that hold the pages' forms and the commands to the CLI parser."""

from __future__ import annotations

import argparse

from calculators.cli import build_parser


def subparsers() -> dict[str, argparse.ArgumentParser]:
    """The CLI's parser of each subcommand, by name."""
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return dict(sub.choices)  # type: ignore[arg-type]


def subparser(command: str) -> argparse.ArgumentParser:
    """The CLI's parser for subcommand `command`."""
    return subparsers()[command]
