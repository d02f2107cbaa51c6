"""Flags several probes share, and how the flags are read into the probes' inputs."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch comes with it: imported when a probe runs, not to parse flags
    from probes.train_step import StepSettings


def model_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", metavar="PATH", help="a config.json, or a tiny config's name")
    src.add_argument("--model", metavar="PRESET", help="a calculators preset")
    p.add_argument("--hf", action="store_true", help="build transformers' own class (needs it)")


def common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", help="cuda or cpu (default: the GPU when there is one)")
    p.add_argument("--out", metavar="FILE", help="write the JSON report here")
    p.add_argument("--json", action="store_true", help="print the report instead of a table")
    p.add_argument("--seed", type=int, default=0, help="random seed")


def step_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--micro-batch", type=int, default=2, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=128, help="tokens per sequence")
    p.add_argument(
        "--precision",
        default="fp32",
        help="fp32|amp-bf16|amp-fp16|bf16-fp32-master|bf16 "
        "(bf16-mixed, the old name of bf16-fp32-master, is still read)",
    )
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


def device(args: argparse.Namespace) -> str:
    from probes.memory import default_device

    return args.device or default_device()


@contextlib.contextmanager
def backend(args: argparse.Namespace, device: str) -> Iterator[Any]:
    from probes.memory import make_backend

    with make_backend(device, getattr(args, "memory_limit", None)) as b:
        yield b


def spec(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from probes.setup import load_spec

    return load_spec(args.config, args.model)


def spec_or_checkpoint(
    args: argparse.Namespace, pretrained: str | None
) -> tuple[Any, dict[str, Any]]:
    """`spec(args)`, or the config.json of the checkpoint folder `pretrained` when the
    flags named one (`--config DIR`)."""
    if pretrained is not None:
        args = argparse.Namespace(config=os.path.join(pretrained, "config.json"), model=None)
    return spec(args)


def step_settings(args: argparse.Namespace) -> StepSettings:
    from probes.train_step import StepSettings

    return StepSettings(
        micro_batch=args.micro_batch,
        seq_len=args.seq_len,
        precision=args.precision,
        optimizer=args.optimizer,
        optimizer_impl=args.optimizer_impl,
        checkpointing=args.checkpointing,
        attention=args.attention,
        lora_rank=args.lora_rank,
        lora_targets=tuple(t for t in args.lora_targets.split(",") if t),
        steps=args.steps,
        seed=args.seed,
    )
