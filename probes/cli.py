"""`python -m probes PROBE`: env, weights, kv-cache, train-step, accumulation, checkpoint,
throughput, fit, compare.

Each measuring probe builds the model from the same config.json (or preset) the
calculators read, measures its phase, asks the calculators for their estimate, prints
a table and, with `--out FILE`, writes a JSON report (`probes.report`). A run that fails
or is interrupted still writes its report, with status error, oom or interrupted.
Bad input: one line `error: ...` on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from probes.report import environment, finish, new_report, write

PROBES = (
    "env",
    "weights",
    "kv-cache",
    "train-step",
    "accumulation",
    "checkpoint",
    "throughput",
    "fit",
    "compare",
)


VERSIONS = {name: "1" for name in PROBES if name != "compare"}


class Phases:
    """The phase a probe is in, for the report of a run that stops there."""

    def __init__(self) -> None:
        self.current = "setup"


def writes_report(args: argparse.Namespace) -> bool:
    """Helper processes (the checkpoint's resumed child, ranks > 0) leave it to rank 0."""
    return getattr(args, "role", "driver") == "driver" and getattr(args, "_rank", 0) == 0


class UsageError(Exception):
    """A bad command line, reported in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _model_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", metavar="PATH", help="a config.json, or a tiny config's name")
    src.add_argument("--model", metavar="PRESET", help="a calculators preset")
    p.add_argument("--hf", action="store_true", help="build transformers' own class (needs it)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", help="cuda or cpu (default: the GPU when there is one)")
    p.add_argument("--out", metavar="FILE", help="write the JSON report here")
    p.add_argument("--json", action="store_true", help="print the report instead of a table")
    p.add_argument("--seed", type=int, default=0, help="random seed")


def _step_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--micro-batch", type=int, default=2, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=128, help="tokens per sequence")
    p.add_argument("--precision", default="fp32", help="fp32|amp-bf16|amp-fp16|bf16-mixed|bf16")
    p.add_argument("--optimizer", default="adamw", help="adamw|sgd|sgd-momentum|adafactor|...")
    p.add_argument("--optimizer-impl", default="foreach", help="foreach|for-loop|fused")
    p.add_argument("--checkpointing", default="none", help="none|full|selective")
    p.add_argument("--attention", default="sdpa", help="sdpa|eager")
    p.add_argument("--lora-rank", type=int, help="LoRA rank (default: full fine-tuning)")
    p.add_argument(
        "--lora-targets",
        default="all-attention",
        help="module names, all-attention or all-linear",
    )
    p.add_argument("--steps", type=int, default=2, help="steps; the last is measured (>= 2)")
    p.add_argument("--memory-limit", type=int, metavar="BYTES", help="OOM above this many bytes")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m probes", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="probe", required=True, parser_class=_Parser)

    p = sub.add_parser("env", help="torch, device, driver and allocator settings")
    _common(p)

    p = sub.add_parser("weights", help="parameters and weight bytes of the built model")
    _model_args(p)
    _common(p)
    p.add_argument("--format", default="fp32", help="fp32|bf16|fp16")

    p = sub.add_parser("kv-cache", help="KV cache held after a prefill")
    _model_args(p)
    _common(p)
    p.add_argument("--context", type=int, required=True, help="tokens per sequence")
    p.add_argument("--batch", type=int, default=1, help="sequences")
    p.add_argument("--kv-format", default="fp32", help="fp32|bf16|fp16 (the model's dtype)")

    p = sub.add_parser("train-step", help="training-step memory, phase by phase")
    _model_args(p)
    _common(p)
    _step_args(p)
    p.add_argument("--strategy", default="single", help="single|ddp|fsdp (under torchrun)")
    p.add_argument("--snapshot", metavar="FILE", help="CUDA memory snapshot for memory_viz")

    p = sub.add_parser("accumulation", help="accumulated gradient vs one large batch")
    _model_args(p)
    _common(p)
    p.add_argument("--micro-batch", type=int, default=2, help="sequences per micro-batch")
    p.add_argument("--accumulation", type=int, default=4, help="micro-batches per update")
    p.add_argument("--seq-len", type=int, default=32, help="tokens per sequence")
    p.add_argument("--precision", default="fp32", help="fp32|bf16")
    p.add_argument("--strategy", default="single", help="single|ddp (under torchrun)")

    p = sub.add_parser("checkpoint", help="save, resume in a new process, compare bitwise")
    _model_args(p)
    _common(p)
    p.add_argument("--micro-batch", type=int, default=2, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=32, help="tokens per sequence")
    p.add_argument("--steps", type=int, default=3, help="steps before the checkpoint (N)")
    p.add_argument("--more-steps", type=int, default=3, help="steps after resuming (M)")
    p.add_argument("--omit", default="", help="leave this piece out of the checkpoint")
    p.add_argument("--dir", help="checkpoint folder (default: a temporary one)")
    p.add_argument("--role", default="driver", help=argparse.SUPPRESS)

    p = sub.add_parser("throughput", help="training tokens/s, MFU and decode tokens/s")
    _model_args(p)
    _common(p)
    _step_args(p)
    p.add_argument("--gpu", help="catalog card for the peak (default: detected)")
    p.add_argument("--context", type=int, default=128, help="decode context, tokens")
    p.add_argument("--batch", type=int, default=1, help="decode sequences")
    p.add_argument("--decode-tokens", type=int, default=16, help="tokens to decode")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps")

    p = sub.add_parser("fit", help="largest micro-batch (or context) that fits, by bisection")
    _model_args(p)
    _common(p)
    _step_args(p)
    p.add_argument("--search", default="micro-batch", help="micro-batch|seq-len")
    p.add_argument("--max", type=int, default=4096, help="upper bound of the search")

    p = sub.add_parser("compare", help="markdown table and CSV of reports")
    p.add_argument("reports", nargs="*", help="report files")
    p.add_argument("--csv", default="comparison.csv", help="CSV output file")
    return parser


def _sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


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
        from probes import probes_impl

        device = _device(args) if hasattr(args, "device") else None
        report["environment"] = environment(device)
        sections = probes_impl.BODIES[args.probe](args, phases)
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
        from probes.probes_impl import render

        print(render(report, text))
        if error:
            print(f"error: {error}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (a scheduler's or `timeout`'s) ends the run like Ctrl-C: its report says so
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm)
    try:
        args = build_parser().parse_args(argv)
        if args.probe == "compare":
            from probes.compare import compare

            print(compare(args.reports, args.csv))
            print(f"\nCSV written to {args.csv}")
            return 0
        return run_probe(args, argv)
    except (UsageError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
