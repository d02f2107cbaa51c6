"""compare: estimate against measured, over many reports, as markdown and CSV
(`probes.compare`)."""

from __future__ import annotations

import argparse

from probes.commands.declaration import Probe


def flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("reports", nargs="*", help="report files")
    p.add_argument("--csv", default="comparison.csv", help="CSV output file")


def main(args: argparse.Namespace) -> int:
    from probes.compare import compare

    print(compare(args.reports, args.csv))
    print(f"\nCSV written to {args.csv}")
    return 0


PROBE = Probe(
    name="compare", help="markdown table and CSV of reports", flags=flags, main=main, order=9
)
