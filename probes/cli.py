"""`python -m probes PROBE`: env, weights, kv-cache, train-step, accumulation, checkpoint,
throughput, fit, compare.

Each measuring probe builds the model from the same config.json (or preset) the
calculators read, measures its phase, asks the calculators for their estimate, prints
a table and, with `--out FILE`, writes a JSON report (`probes.report`). A run that fails
or is interrupted still writes its report, with status error, oom or interrupted.
Bad input: one line `error: ...` on stderr and exit status 2. Each subcommand, its flags
and what it runs are declared in one module of `probes.commands`; this module parses and
runs a probe inside its report.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from probes.commands import PROBES as DECLARED
from probes.report import Phases, environment, finish, new_report, render, write

# The subcommands, in order, and each measuring probe's report version.
PROBES = tuple(DECLARED)
VERSIONS = {name: p.version for name, p in DECLARED.items() if p.body is not None}


def writes_report(args: argparse.Namespace) -> bool:
    """Helper processes (the checkpoint's resumed child, ranks > 0) leave it to rank 0."""
    return getattr(args, "role", "driver") == "driver" and getattr(args, "_rank", 0) == 0


class UsageError(Exception):
    """A bad command line, reported in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: one subcommand per declared probe."""
    parser = _Parser(prog="python -m probes", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="probe", required=True, parser_class=_Parser)
    for probe in DECLARED.values():
        probe.flags(sub.add_parser(probe.name, help=probe.help))
    return parser


def _sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _resend_swallowed_stop(previous: Callable[[Any], object]) -> Callable[[Any], None]:
    """An unraisable-exception hook that sends SIGTERM again when the interpreter dropped
    the KeyboardInterrupt `_sigterm` raised: a signal handled while a finalizer runs (the
    live-tensor tracker's weakref callbacks run all the time) raises inside the finalizer,
    where Python prints the exception and goes on, and the run would not stop (seen once in
    a clean-clone run: the interrupted probe ran on until the test's timeout). Sent again,
    the handler runs at the next bytecode outside the finalizer. Anything else goes to
    `previous`."""

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, KeyboardInterrupt) and str(exc).startswith("signal "):
            os.kill(os.getpid(), signal.SIGTERM)
            return
        previous(unraisable)

    return hook


def _device(args: argparse.Namespace) -> str:
    from probes.memory import default_device

    d = args.device or default_device()
    if d not in ("cpu", "cuda") and not d.startswith("cuda:"):
        raise UsageError(f"--device must be cuda or cpu, got {d!r}")
    return d


def run_probe(args: argparse.Namespace, argv: Sequence[str] = ()) -> int:
    """Run the probe's body inside a report that is written whatever happens."""
    report = new_report(args.probe, VERSIONS[args.probe], ["python", "-m", "probes", *argv])
    # the flags as given, until the probe reports its own inputs (a run stopped early keeps these)
    report["inputs"] = {
        k: v for k, v in vars(args).items() if not k.startswith("_") and k not in ("out", "json")
    }
    if report["inputs"].get("config") or report["inputs"].get("model"):
        report["inputs"]["model"] = report["inputs"].get("model") or report["inputs"]["config"]
    phases = Phases()
    status, error, code = "ok", None, 0
    text = ""
    try:
        device = _device(args) if hasattr(args, "device") else None
        report["environment"] = environment(device)
        body = DECLARED[args.probe].body
        assert body is not None  # a probe without a body has its own main
        sections = body(args, phases)
        text = sections.pop("text", "")
        for key, value in sections.items():
            if key in ("environment",):
                report[key].update(value)
            else:
                report[key] = value
        status = report["details"].pop("status", "ok")
        if status != "ok":
            error = report["details"].get("error", status)
            code = 1
    except UsageError:
        raise
    except ValueError as e:
        status, error, code = "error", str(e), 2
    except KeyboardInterrupt as e:
        status, error, code = (
            "interrupted",
            f"interrupted ({e or 'SIGINT'}) in {phases.current}",
            130,
        )
    except Exception as e:
        import torch

        if isinstance(e, torch.OutOfMemoryError):
            status, error, code = "oom", f"out of memory in phase {phases.current}: {e}", 1
            report["details"]["oom_phase"] = phases.current
        else:
            status, error, code = "error", f"{type(e).__name__}: {e}", 1
    finish(report, status, error)
    if getattr(args, "out", None) and writes_report(args):
        write(report, args.out)
    if code == 2:
        print(f"error: {error}", file=sys.stderr)
    elif not writes_report(args):
        if error:
            print(f"error: {error}", file=sys.stderr)
    elif args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report, text))
        if error:
            print(f"error: {error}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (a scheduler's or `timeout`'s) ends the run like Ctrl-C: its report says so
    previous_hook = sys.unraisablehook
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm)
        sys.unraisablehook = _resend_swallowed_stop(previous_hook)
    try:
        args = build_parser().parse_args(argv)
        own_main = DECLARED[args.probe].main
        if own_main is not None:
            return own_main(args)
        return run_probe(args, argv)
    except (UsageError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        sys.unraisablehook = previous_hook


if __name__ == "__main__":
    sys.exit(main())
