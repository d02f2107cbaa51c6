"""What a probe declares, once: its subcommand, its flags and what it runs.

A probe is one module of `probes.commands` holding a `PROBE`; `python -m probes` derives
its subcommands from them (`probes.cli`). Declarations import no torch: `--help`, bad
flags and `probes compare` answer on machines without it, and the body imports what it
measures with.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probes.report import Phases


@dataclass(frozen=True, kw_only=True)
class Probe:
    """A probe, declared once.

    name:    the subcommand (`python -m probes NAME`).
    help:    its line in `python -m probes --help`.
    flags:   adds its flags to its subcommand's parser.
    body:    a measuring probe: (flags, the phase tracker) -> the report's sections
             (inputs, estimate, measured, units, details, and `text` for the table); run
             inside a report that is written whatever happens (`probes.cli.run_probe`).
    main:    a probe that writes no report of its own (compare): flags -> exit status.
    version: the report's probe version.
    order:   its place in the command line's list.
    """

    name: str
    help: str
    flags: Callable[[argparse.ArgumentParser], None]
    body: Callable[[argparse.Namespace, Phases], dict[str, Any]] | None = None
    main: Callable[[argparse.Namespace], int] | None = None
    version: str = "1"
    order: int = 100

    def __post_init__(self) -> None:
        if (self.body is None) == (self.main is None):
            raise ValueError(f"probe {self.name}: declare exactly one of body and main")
