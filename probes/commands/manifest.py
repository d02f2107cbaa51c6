"""manifest: record a run (its data, code, parameters, machine, outputs, metrics and
cost) around the reader's own command; tabulate runs for a decision; check that the
data and outputs are still what the run saw (`probes.manifest`). No torch is imported.

  python -m probes manifest run --out runs/ID.json [--data [NAME=]PATH ...]
      [--config PATH] [--param KEY=VALUE ...] [--seed N ...] [--price USD] [--gpus N]
      [--parent ID] [--outputs DIR] [--metrics FILE] [--allow-dirty] -- COMMAND ...
  python -m probes manifest table runs/*.json [--csv FILE] [--json] [--metric NAME ...]
  python -m probes manifest check runs/ID.json [--root DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

from probes.commands.declaration import Probe


def _run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE.json",
        help="the manifest to write; its name is the run id (a folder: a new id in it)",
    )
    p.add_argument(
        "--data",
        action="append",
        metavar="[NAME=]PATH",
        help="a data file or folder the run reads, hashed before it starts (repeat per split)",
    )
    p.add_argument("--config", metavar="PATH", help="the run's config file: hashed and kept")
    p.add_argument(
        "--param", action="append", metavar="KEY=VALUE", help="a parameter to record (repeat)"
    )
    p.add_argument("--seed", action="append", type=int, metavar="N", help="a seed the run uses")
    p.add_argument("--price", type=float, metavar="USD_PER_GPU_HOUR", help="price per GPU-hour")
    p.add_argument("--gpus", type=int, metavar="N", help="GPUs billed (default: those detected)")
    p.add_argument("--parent", metavar="ID", help="the run this one derives from (id or path)")
    p.add_argument(
        "--outputs",
        action="append",
        metavar="DIR",
        help="a folder the command writes: its files are hashed after the run (repeat)",
    )
    p.add_argument("--metrics", metavar="FILE", help="a JSON object the command writes")
    p.add_argument(
        "--allow-dirty",
        action="store_true",
        help="run with uncommitted changes to tracked files; their diff is saved as ID.diff",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")


def flags(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True)
    _run_flags(sub.add_parser("run", help="run a command and record its manifest"))
    t = sub.add_parser("table", help="one row per run: what changed, metrics, status, cost")
    t.add_argument("manifests", nargs="+", metavar="MANIFEST", help="manifest files")
    t.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    t.add_argument("--json", action="store_true", help="print the rows as JSON")
    t.add_argument("--metric", action="append", metavar="NAME", help="a metric column (repeat)")
    t.add_argument("--svg", metavar="FILE", help="also draw the runs' lineage as SVG")
    c = sub.add_parser("check", help="re-hash data and outputs; say what changed since")
    c.add_argument("manifests", nargs="+", metavar="MANIFEST", help="manifest files")
    c.add_argument("--root", metavar="DIR", help="read relative paths from DIR (default: cwd)")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON")


def _table(args: argparse.Namespace) -> int:
    from probes.manifest import read, rows
    from probes.manifest.table import render_csv, render_text

    runs = [read(p) for p in args.manifests]
    found = rows(runs, args.metric)
    if args.csv:
        with open(args.csv, "w", encoding="utf-8", newline="") as f:
            f.write(render_csv(found))
    if args.svg:
        from probes.manifest.diagram import lineage_svg

        with open(args.svg, "w", encoding="utf-8") as f:
            f.write(lineage_svg(runs))
    print(json.dumps(found, indent=2, allow_nan=False) if args.json else render_text(found))
    return 0


def _check(args: argparse.Namespace) -> int:
    from probes.manifest import check, read
    from probes.manifest.check import render

    results = {p: check(read(p), args.root) for p in args.manifests}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print("\n".join(render(p, found) for p, found in results.items()))
    same = all(f["state"] == "unchanged" for found in results.values() for f in found)
    return 0 if same else 1


def main(args: argparse.Namespace) -> int:
    try:
        if args.action == "run":
            from probes.manifest import run

            return run(args)
        return _table(args) if args.action == "table" else _check(args)
    except KeyboardInterrupt:  # the run's own signals are handled while its command runs
        what = "before the command started: no manifest written" if args.action == "run" else ""
        print(f"error: interrupted {what}".rstrip(), file=sys.stderr)
        return 130


PROBE = Probe(
    name="manifest",
    help="record a run's data, code, machine, outputs and cost; table and check runs",
    flags=flags,
    main=main,
    order=11,
)
