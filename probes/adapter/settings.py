"""The adapter probe's settings, read from its flags and checked before anything is built:
a bad value ends the run with one line naming the flag, the value and the bound. No torch."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass

# The checks, in the order they run; their ids key `details.checks` in the report.
CHECKS = ("counts", "update", "reload", "merge")
TITLES = {
    "counts": "What trains: parameter counts",
    "update": "An update changes the adapter only",
    "reload": "Save, reload in a new process, same logits",
    "merge": "Merged weights give the adapter's logits",
}
# Formats the probe builds the frozen base in: a torch dtype, or a bitsandbytes layer
# (calculators/memory/formats.py holds the same ids and their bits per weight).
TORCH_FORMATS = ("fp32", "bf16", "fp16")
BNB_FORMATS = ("int8", "nf4", "nf4-dq", "fp4", "fp4-dq")
BASE_FORMATS = TORCH_FORMATS + BNB_FORMATS
MAX_RANK = 4096  # far above any published LoRA rank; a bound, not a recommendation


@dataclass(frozen=True, kw_only=True)
class AdapterSettings:
    """What the four checks need.

    lora_rank, lora_alpha: the adapter's rank r and alpha (scale alpha / r); alpha
                  defaults to r, a scale of 1, as the probes' own LoRALinear.
    lora_targets: the project's target names: module names, all-attention or all-linear
                  (calculators/training/lora.py).
    base_format:  the frozen base's format: fp32, bf16, fp16, or a bitsandbytes format.
    micro_batch, seq_len: the fixed batch's shape (training steps and logits).
    lr:           AdamW's learning rate for the update check, whose two steps make the
                  adapter that checks 3 and 4 compare: it must move the logits by more
                  than the merge limit (2e-2 does on the tiny configs in bf16, 1e-3 not).
    seed:         seeds the random base weights, the adapter's init and the batches.
    pretrained:   a local checkpoint folder (config.json and safetensors), else None.
    adapter:      a saved adapter folder to check instead of training a fresh one.
    save_adapter: where to keep the adapter the probe trains (default: a temporary folder).
    """

    lora_rank: int | None
    lora_alpha: float | None = None
    lora_targets: tuple[str, ...] = ("all-attention",)
    base_format: str = "bf16"
    micro_batch: int = 2
    seq_len: int = 32
    lr: float = 2e-2
    seed: int = 0
    pretrained: str | None = None
    adapter: str | None = None
    save_adapter: str | None = None

    def __post_init__(self) -> None:
        if self.lora_rank is None and self.adapter is None:
            raise ValueError("lora-rank is required (or --adapter DIR, a saved adapter)")
        if self.lora_rank is not None:
            _int_in("lora-rank", self.lora_rank, 1, MAX_RANK)
        if self.lora_alpha is not None and (
            not math.isfinite(self.lora_alpha) or not 0 < self.lora_alpha <= 1e6
        ):
            raise ValueError(f"lora-alpha must be a number above 0 to 1e6, got {self.lora_alpha!r}")
        if not self.lora_targets:
            raise ValueError("lora-targets must name at least one module, got ''")
        if self.base_format not in BASE_FORMATS:
            raise ValueError(
                f"base-format must be one of {', '.join(BASE_FORMATS)}, got {self.base_format!r}"
            )
        _int_in("micro-batch", self.micro_batch, 1, 4096)
        _int_in("seq-len", self.seq_len, 2, 1_048_576)
        if not math.isfinite(self.lr) or not 0 < self.lr <= 1.0:
            raise ValueError(f"lr must be a number above 0 to 1, got {self.lr!r}")
        if self.adapter is not None and not os.path.isfile(
            os.path.join(self.adapter, "adapter_config.json")
        ):
            raise ValueError(f"adapter {self.adapter!r} is not a saved adapter folder")

    @property
    def alpha(self) -> float:
        assert self.lora_rank is not None
        return self.lora_rank if self.lora_alpha is None else self.lora_alpha

    @property
    def quantized(self) -> bool:
        return self.base_format in BNB_FORMATS


def _int_in(flag: str, v: object, low: int, high: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ValueError(f"{flag} must be an integer from {low:,} to {high:,}, got {v!r}")


def read_settings(args: argparse.Namespace) -> AdapterSettings:
    """The flags as settings; ValueError naming the flag on a bad value."""
    if not args.hf:
        raise ValueError(
            "the adapter probe builds transformers' own class for PEFT: add --hf "
            "(needs transformers and peft)"
        )
    pretrained = None
    if args.config is not None and os.path.isdir(args.config):
        if not os.path.isfile(os.path.join(args.config, "config.json")):
            raise ValueError(f"config {args.config!r} is a folder without config.json")
        pretrained = args.config
    return AdapterSettings(
        lora_rank=args.lora_rank,
        lora_alpha=args.lora_alpha,
        lora_targets=tuple(t for t in args.lora_targets.split(",") if t),
        base_format=args.base_format,
        micro_batch=args.micro_batch,
        seq_len=args.seq_len,
        lr=args.lr,
        seed=args.seed,
        pretrained=pretrained,
        adapter=args.adapter,
        save_adapter=args.save_adapter,
    )
