"""Command line: `python -m calculators SUBCOMMAND` (weights, kv-cache, envelope, training,
throughput, batch, budget, seeds, presets, gpus, formats).

Tables by default, `--json` for machines. Bad input of any kind ends with one line
on stderr, `error: ...` naming the field and the value, and exit status 2.
What each subcommand computes lives in calculators.commands; this module parses.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from calculators.commands import COMMANDS, DEFAULTS, UsageError, run
from calculators.errors import QUOTE_LIMIT, InputError
from calculators.parsing import parse_float, parse_int

__all__ = ["UsageError", "build_parser", "main", "real_number", "whole_number"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse quotes a bad value whole ("invalid choice: '...'"); keep the line short
        if len(message) > 4 * QUOTE_LIMIT:
            message = f"{message[: 3 * QUOTE_LIMIT]}... ({len(message):,} characters)"
        raise UsageError(message)


def whole_number(text: str) -> int:
    """argparse type for whole numbers: 4096, 4_096, 1e9 (calculators.parsing)."""
    try:
        return parse_int("value", text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("value ")) from None


def real_number(text: str) -> float:
    """argparse type for finite numbers."""
    try:
        return parse_float("value", text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("value ")) from None


# A value that starts with '-' and a digit: a negative number or a list of numbers
# (--a -1.2,0.3). argparse takes "-1.2,0.3" for an unknown option, so such a value is
# attached to its flag as --a=-1.2,0.3 before parsing.
_NEGATIVE = re.compile(r"-\.?\d")


def _attach_negative_values(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    for word in argv:
        if out and _NEGATIVE.match(word) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def _defaults(p: argparse.ArgumentParser, command: str) -> None:
    """The subcommand's function and its flags' defaults, from calculators.commands."""
    defaults = {k: list(v) if isinstance(v, list) else v for k, v in DEFAULTS[command].items()}
    p.set_defaults(run=COMMANDS[command], **defaults)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m calculators", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def model_args(p: argparse.ArgumentParser, *, params: bool = False) -> None:
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json")
        src.add_argument("--model", metavar="PRESET", help="a shipped preset (see `presets`)")
        if params:
            src.add_argument("--params", type=whole_number, help="parameter count only: no shapes")
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def card_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--gpu", help="catalog card (see `gpus`)")
        p.add_argument("--memory-gib", type=real_number, help="visible memory of a card not listed")
        p.add_argument("--runtime", help="cuda or hip, with --memory-gib")
        p.add_argument(
            "--reserve",
            action="append",
            metavar="ID=VALUE",
            help="override a reserve line, e.g. runtime_context=536870912",
        )

    def kv_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--context", type=whole_number, required=True, help="tokens per sequence")
        p.add_argument("--batch", type=whole_number, help="concurrent sequences")
        p.add_argument("--kv-format", help="KV cache format (see `formats`)")
        p.add_argument("--allocation", help="dynamic, paged or static")
        p.add_argument("--block-size", type=whole_number, help="paged block, tokens")
        p.add_argument("--max-length", type=whole_number, help="static cache length, tokens")
        p.add_argument("--mla-layout", help="latent or expanded (MLA)")

    def format_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--format", help="weights format (see `formats`)")
        p.add_argument(
            "--keep-unquantized",
            metavar="ROLES",
            help="comma-separated GGUF roles kept in float, e.g. token_embd,output",
        )

    p = sub.add_parser("weights", help="parameter counts and weights memory")
    model_args(p)
    format_args(p)
    _defaults(p, "weights")

    p = sub.add_parser("kv-cache", help="KV cache memory, and what fits in free memory")
    model_args(p)
    kv_args(p)
    p.add_argument("--free-gib", type=real_number, help="free memory for the cache, GiB")
    _defaults(p, "kv-cache")

    p = sub.add_parser("envelope", help="inference memory envelope against a card")
    model_args(p)
    format_args(p)
    kv_args(p)
    card_args(p)
    p.add_argument("--prefill-chunk", type=whole_number, help="tokens per prefill step if chunked")
    p.add_argument("--attention", help="sdpa (flash) or eager")
    p.add_argument("--include-mtp", action="store_true", help="load MTP modules too")
    _defaults(p, "envelope")

    p = sub.add_parser("training", help="training-step memory per GPU, phase by phase")
    model_args(p, params=True)
    card_args(p)
    p.add_argument("--micro-batch", type=whole_number, help="sequences per GPU per step")
    p.add_argument("--seq-len", type=whole_number, help="tokens per sequence")
    p.add_argument("--precision", help="fp32, amp-bf16, amp-fp16, bf16-mixed or bf16")
    p.add_argument("--optimizer", help="adamw, adamw-8bit, sgd, sgd-momentum or adafactor")
    p.add_argument("--optimizer-impl", help="foreach, for-loop or fused")
    p.add_argument("--checkpointing", help="none, full or selective")
    p.add_argument("--attention", help="sdpa (flash) or eager")
    p.add_argument("--dropout", action="store_true", help="attention and residual dropout on")
    p.add_argument(
        "--capacity-factor", type=real_number, help="MoE expert capacity (default dropless)"
    )
    p.add_argument("--lora-rank", type=whole_number, help="LoRA rank (default: full fine-tuning)")
    p.add_argument(
        "--lora-targets",
        help="comma-separated module names, all-attention or all-linear",
    )
    p.add_argument("--base-format", help="frozen base format under LoRA, e.g. nf4-dq (QLoRA)")
    p.add_argument(
        "--zero", type=whole_number, help="ZeRO stage 0-3 (default 0: DDP when --gpus > 1)"
    )
    p.add_argument(
        "--fsdp", help="full-shard (= ZeRO-3) or shard-grad-op (= ZeRO-2), instead of --zero"
    )
    p.add_argument("--gpus", type=whole_number, help="data-parallel GPUs")
    p.add_argument("--ddp-bucket-view", action="store_true", help="DDP gradient_as_bucket_view")
    p.add_argument("--prefetch", type=whole_number, help="ZeRO-3/FSDP units gathered ahead")
    _defaults(p, "training")

    p = sub.add_parser("throughput", help="training time at an MFU, decode/prefill bounds")
    model_args(p)
    p.add_argument("--gpu", help="catalog card (see `gpus`)")
    p.add_argument("--gpus", type=whole_number, help="GPUs training together")
    p.add_argument("--tokens", type=whole_number, help="training tokens")
    p.add_argument("--seq-len", type=whole_number, help="training sequence length")
    p.add_argument("--mfu", type=real_number, help="model FLOPs utilisation, (0, 1]")
    p.add_argument("--precision", help="bf16 or fp8 tensor peak")
    p.add_argument("--format", help="weights format for decoding")
    kv_args(p)
    _defaults(p, "throughput")

    p = sub.add_parser("batch", help="effective batch: sequences and tokens per update")
    p.add_argument(
        "--micro-batch", type=whole_number, required=True, help="sequences per GPU per step"
    )
    p.add_argument("--accumulation", type=whole_number, help="micro-batches per update")
    p.add_argument("--gpus", type=whole_number, help="data-parallel ranks")
    p.add_argument("--seq-len", type=whole_number, required=True, help="tokens per sequence slot")
    p.add_argument("--global-batch", type=whole_number, help="target sequences per update")
    p.add_argument("--mean-tokens", type=whole_number, help="mean real tokens per padded sequence")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _defaults(p, "batch")

    p = sub.add_parser("budget", help="campaign GPU-hours, days, cost and packages")
    p.add_argument(
        "--phase",
        action="append",
        metavar="NAME:RUNS:GPU_HOURS[:GPUS]",
        help="a phase; repeat in order (default: an example campaign); GPU_HOURS may be "
        "tokens=N, derived from --model/--config, --gpu, --mfu and --seq-len",
    )
    p.add_argument("--config", metavar="PATH", help="config.json, for tokens= phases")
    p.add_argument("--model", metavar="PRESET", help="a preset, for tokens= phases")
    p.add_argument("--gpu", help="catalog card, for tokens= phases")
    p.add_argument("--mfu", type=real_number, help="MFU, for tokens= phases")
    p.add_argument("--seq-len", type=whole_number, help="sequence, for tokens= phases")
    p.add_argument("--gpus", type=whole_number, help="GPUs rented in parallel")
    p.add_argument("--price", type=real_number, required=True, help="USD per GPU-hour")
    p.add_argument("--margin", type=real_number, help="share of runs redone")
    p.add_argument("--decisions", type=whole_number, help="useful results, for cost per decision")
    p.add_argument(
        "--package",
        action="append",
        metavar="DAYS:GPUS:USD",
        help="a rental offer to compare (default: 3/7/30-day examples)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _defaults(p, "budget")

    p = sub.add_parser("seeds", help="paired seed statistics: interval, MDE, seeds needed")
    p.add_argument("--a", metavar="SCORES", help="variant A scores, one per seed: 0.81,0.80")
    p.add_argument("--b", metavar="SCORES", help="variant B scores, same seeds, same order")
    p.add_argument("--confidence", type=real_number, help="interval level")
    p.add_argument("--sd-difference", type=real_number, help="sd of per-seed differences")
    p.add_argument("--seeds", type=whole_number, help="seeds for the minimum detectable effect")
    p.add_argument("--effect", type=real_number, help="gap to detect: how many seeds it needs")
    p.add_argument("--alpha", type=real_number, help="two-sided test level")
    p.add_argument("--power", type=real_number, help="probability to detect")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _defaults(p, "seeds")

    for name, text in (
        ("presets", "shipped model presets"),
        ("gpus", "the GPU catalog"),
        ("formats", "weights and KV formats"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        _defaults(p, name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0, or 2 for bad input)."""
    if argv is None:
        argv = sys.argv[1:]
    try:
        args = build_parser().parse_args(_attach_negative_values(argv))
        data, text = run(args.command, args)
        # strict JSON: a NaN or an infinity is a bug to report, never output to parse
        out = json.dumps(data, indent=2, allow_nan=False) if args.json else text
    except ValueError as e:  # InputError, UsageError, and any other bad value
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0
