"""throughput: training tokens/s and MFU, and decode tokens/s, on the device at hand.

Training: `--warmup` untimed steps, then `--steps` timed ones (synchronised on CUDA);
tokens/s = steps x micro_batch x seq_len / seconds. MFU = tokens/s x FLOPs per token / the
catalog's dense BF16 peak of the detected card (`calculators.memory.gpus`, matched by name;
`--gpu` chooses one). FLOPs per token: `training_flops_per_token(spec, seq_len)` (6 N +
attention) for full training; with `--lora-rank`, `frozen_base_training_flops_per_token`
(4 N + 6 N_a + attention, N_a the adapter parameters the probe itself created), since a
frozen base computes no weight gradients (both in `calculators.training.throughput`).
Without a catalog card (a CPU) MFU is not reported: there is no peak to divide by.

Decode: a prefill of `--context` tokens for `--batch` sequences, then `--decode-tokens`
single-token steps with a KV cache; decode tokens/s = batch x tokens / seconds. The
estimate is the roofline bound of `calculators.training.throughput.inference_bounds` (an upper
bound: measured / estimate is the fraction of it reached).

The report's `details.budget_inputs` holds the measured MFU and tokens/s per GPU, the
inputs of `python -m calculators throughput --mfu` and the budget calculator.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch

from calculators.memory.gpus import GPUS, get_gpu
from calculators.model.spec import ModelSpec
from calculators.training.throughput import (
    frozen_base_training_flops_per_token,
    inference_bounds,
    training_flops_per_token,
)
from probes.report import Phases
from probes.setup import Trainer, apply_lora, batches, build
from probes.train_step import StepSettings

VERSION = "1"


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def card_for(device_name: str, total_memory: int) -> str | None:
    """The catalog id whose model token ("h100", "mi300x", "4090") is a word of the device
    name, the closest in visible memory when several are (H100 SXM and PCIe look alike to
    torch: pass --gpu to choose); None when no card matches."""
    words = set(device_name.lower().replace("-", " ").split())
    found = [g for g in GPUS if g.id.split("-")[-1 if g.id.startswith("rtx") else 0] in words]
    if not found:
        return None
    return min(found, key=lambda g: abs(g.visible_bytes - total_memory)).id


def detect_card(device: str, gpu: str | None) -> str | None:
    """The catalog id: `--gpu`, else the card matching the CUDA/ROCm device."""
    if gpu is not None:
        return get_gpu(gpu).id
    if not device.startswith("cuda"):
        return None
    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    return card_for(props.name, props.total_memory)


def step_flops_per_token(
    spec: ModelSpec, seq_len: int, adapter_parameters: int | None
) -> tuple[int, str]:
    """(FLOPs per token of the step that was timed, its formula): 6 N + attention when every
    parameter trains, 4 N + 6 N_a + attention when only `adapter_parameters` adapters
    train on a frozen base (calculators.training.throughput, where both are derived)."""
    if adapter_parameters is None:
        return training_flops_per_token(spec, seq_len), "6 N + 3 x attention (full training)"
    return (
        frozen_base_training_flops_per_token(spec, seq_len, adapter_parameters),
        "4 N + 6 N_a + 3 x attention (LoRA, base frozen)",
    )


def training_rate(
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    device: str,
    warmup: int,
    phases: Phases,
) -> dict[str, Any]:
    phases.current = "training"
    model = build(
        spec,
        config,
        device=device,
        precision=s.precision,
        attention=s.attention,
        checkpointing=s.checkpointing,
        seed=s.seed,
    )
    adapters = None if s.lora_rank is None else apply_lora(model, s.lora_rank, s.lora_targets)
    trainer = Trainer(
        model,
        precision=s.precision,
        optimizer=s.optimizer,
        optimizer_impl=s.optimizer_impl,
        device=device,
    )
    data = batches(spec.vocab_size, s.micro_batch, s.seq_len, device, seed=s.seed)

    def step() -> None:
        ids, labels = next(data)
        trainer.zero_grad()
        trainer.backward(trainer.forward(ids, labels))
        trainer.optimizer_step()

    for _ in range(warmup):
        step()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(s.steps):
        step()
    _sync(device)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "tokens_per_second": s.steps * s.micro_batch * s.seq_len / seconds,
        "adapter_parameters": adapters,
    }


def decode_rate(
    spec: ModelSpec,
    device: str,
    dtype: torch.dtype,
    context: int,
    batch: int,
    tokens: int,
    phases: Phases,
) -> dict[str, float]:
    from probes.model import build_model

    phases.current = "decode"
    model = build_model(spec, device=device, dtype=dtype).eval()
    ids = torch.randint(0, spec.vocab_size, (batch, context), device=device)
    with torch.no_grad():
        model.start_decoding()
        logits = model(ids)
        nxt = logits[:, -1:].argmax(-1)
        _sync(device)
        t0 = time.perf_counter()
        for i in range(tokens):
            nxt = model(nxt, past=context + i)[:, -1:].argmax(-1)
        _sync(device)
        seconds = time.perf_counter() - t0
        model.stop_decoding()
    return {"seconds": seconds, "tokens_per_second": batch * tokens / seconds}


def throughput_probe(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    device: str,
    phases: Phases,
) -> dict[str, Any]:
    for name in ("context", "batch", "decode_tokens"):
        if getattr(args, name) < 1:
            raise ValueError(f"{name.replace('_', '-')} must be a positive integer")
    if args.warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {args.warmup}")
    card = detect_card(device, args.gpu)
    train = training_rate(spec, config, s, device, args.warmup, phases)
    bf16 = ("bf16", "bf16-fp32-master", "amp-bf16")
    dtype = torch.bfloat16 if s.precision in bf16 else torch.float32
    decode = decode_rate(spec, device, dtype, args.context, args.batch, args.decode_tokens, phases)
    adapters = train["adapter_parameters"]
    flops_per_token, formula = step_flops_per_token(spec, s.seq_len, adapters)
    measured: dict[str, float] = {
        "training_tokens_per_second": train["tokens_per_second"],
        "decode_tokens_per_second": decode["tokens_per_second"],
        "training_flops_per_second": train["tokens_per_second"] * flops_per_token,
    }
    estimate: dict[str, float] = {}
    units = {
        "training_tokens_per_second": "tokens/s",
        "decode_tokens_per_second": "tokens/s",
        "training_flops_per_second": "FLOP/s",
        "mfu": "ratio",
    }
    details: dict[str, Any] = {
        "card": card,
        "flops_per_token": flops_per_token,
        "flops_per_token_formula": formula,
        "adapter_parameters": adapters,
        "training_seconds": train["seconds"],
        "decode_seconds": decode["seconds"],
    }
    if card is not None and device.startswith("cuda"):
        peak = get_gpu(card).bf16_dense_tflops * 1e12
        measured["mfu"] = measured["training_flops_per_second"] / peak
        fmt = "bf16" if dtype == torch.bfloat16 else "fp32"
        bounds = inference_bounds(
            spec, gpu=card, context=args.context, batch=args.batch, weights_format=fmt
        )
        estimate["decode_tokens_per_second"] = bounds.decode_tokens_per_second
        estimate["training_flops_per_second"] = peak
        details["peak_flops_per_second"] = peak
        details["decode_bound"] = bounds.decode_bound
    else:
        details["mfu"] = "not reported: no catalog peak for this device (a CPU, or --gpu unset)"
    details["budget_inputs"] = {
        "mfu": measured.get("mfu"),
        "training_tokens_per_second_per_gpu": measured["training_tokens_per_second"],
        "command": (
            f"python -m calculators throughput --model MODEL --gpu {card} "
            f"--mfu {measured['mfu']:.3f} --seq-len {s.seq_len}"
            + (
                ""
                if adapters is None
                else f" --lora-rank {s.lora_rank} --lora-targets {','.join(s.lora_targets)}"
            )
            if "mfu" in measured
            else None
        ),
    }
    text = f"training flops per token {flops_per_token:,}; card {card or 'none (no MFU)'}"
    return {
        "inputs": {
            "model": spec.name,
            "model_type": spec.model_type,
            "micro_batch": s.micro_batch,
            "seq_len": s.seq_len,
            "precision": s.precision,
            "steps": s.steps,
            "warmup": args.warmup,
            "context": args.context,
            "batch": args.batch,
            "decode_tokens": args.decode_tokens,
            "device": device,
            "lora_rank": s.lora_rank,
            "lora_targets": list(s.lora_targets) if s.lora_rank is not None else None,
        },
        "estimate": estimate,
        "measured": measured,
        "units": {k: units[k] for k in {**estimate, **measured}},
        "details": details,
        "text": text,
    }
