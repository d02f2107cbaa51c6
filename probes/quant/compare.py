"""quant-compare: the llama.cpp KL-divergence comparison of weight (and KV-cache) formats.

Method (ggml-org/llama.cpp tools/perplexity/README.md and perplexity.cpp, commit
050fc7f3): the tokens are cut into non-overlapping chunks of `--ctx`; each chunk is run
through the 16-bit reference and through each quantized copy of it; in every chunk the
second half of the positions is scored (each has at least ctx/2 tokens of context), and the
statistics of `probes.quant.divergence` are taken over all scored positions, the same
positions for every format.

The reference is the model built from the config (seeded initialisation, or after
`--train-steps` AdamW steps on the tokens themselves, in fp32, so that its predictions
are peaked and the formats' differences measurable), then cast to `--dtype` (bf16 or fp16).
Each format quantizes a copy of that reference (`probes.quant.layouts`); each KV format
runs the reference with its keys and values rounded (`probes.quant.kv`). The weights' bytes
in memory (`probes.quant.storage`) are compared with `calculators.memory.weights` for the
calculators' format of the same layout.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib.util
import math
import os
from typing import Any

import torch

from calculators.memory.weights import weight_bytes
from calculators.model.spec import ModelSpec
from calculators.render import table
from probes.quant.divergence import PositionStats, position_stats, summarize
from probes.quant.kv import KV_NOTES, check_kv_format, kv_rounding
from probes.quant.layouts import apply_format, check_format, import_torchao
from probes.quant.storage import weights_bytes
from probes.quant.tokens import (
    MAX_TOKENS,
    check_counts,
    read_tokens,
    scored_positions,
)
from probes.report import Phases
from probes.setup import CONFIG_DIR, build, load_config, model_loss
from probes.time_to_quality import byte_model

VERSION = "1"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
MIN_CTX = 8
MAX_TRAIN_STEPS = 100_000
MAX_LOGITS_BYTES = 4 * 2**30  # the reference's float32 logits kept for every scored position
EVAL_BATCH = 8  # chunks per forward pass
TRAIN_BATCH = 8  # windows per training step
METHOD_SOURCE = (
    "ggml-org/llama.cpp tools/perplexity/perplexity.cpp (kl_divergence, log_softmax with "
    "kl_divergence_result) and tools/perplexity/README.md, commit 050fc7f3"
)
TINY_NOTE = (
    "measured on CPU with a tiny config: these figures exercise the method's mechanics "
    "(formats applied, statistics, bytes), not the quality of a real model in these formats"
)


def _flag_list(flag: str, value: str | None) -> list[str]:
    items = [s.strip() for s in (value or "").split(",") if s.strip()]
    if len(set(items)) != len(items):
        raise ValueError(f"{flag} lists an id twice: {value!r}")
    return items


def check_flags(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Weight and KV format ids; ValueError naming the flag, value and bound otherwise."""
    if not args.tokens:
        raise ValueError("--tokens FILE is required (a .txt read as bytes, or token ids)")
    formats = _flag_list("--formats", args.formats)
    kv = _flag_list("--kv-formats", args.kv_formats)
    if not formats and not kv:
        raise ValueError("--formats (or --kv-formats) must name at least one format")
    for f in formats:
        check_format(f)
    for k in kv:
        check_kv_format(k)
    if args.dtype not in DTYPES:
        raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got {args.dtype!r}")
    if args.ctx < MIN_CTX:
        raise ValueError(f"--ctx must be at least {MIN_CTX}, got {args.ctx}")
    if not 1 <= args.max_tokens <= MAX_TOKENS:
        raise ValueError(
            f"--max-tokens must be between 1 and {MAX_TOKENS:,}, got {args.max_tokens}"
        )
    if not 0 <= args.train_steps <= MAX_TRAIN_STEPS:
        raise ValueError(
            f"--train-steps must be between 0 and {MAX_TRAIN_STEPS:,}, got {args.train_steps}"
        )
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise ValueError(f"--lr must be a positive number, got {args.lr}")
    return formats, kv


def _logits(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    out = model(ids)
    return (out.logits if hasattr(out, "logits") else out).float()


def scored_logits(model: torch.nn.Module, chunks: torch.Tensor) -> torch.Tensor:
    """float32 logits (chunks x scored positions, vocab) of the second half of each chunk."""
    ctx = chunks.shape[1]
    first = ctx // 2
    parts = []
    model.eval()
    with torch.no_grad():
        for batch in chunks.split(EVAL_BATCH):
            logits = _logits(model, batch)[:, first : ctx - 1]
            parts.append(logits.reshape(-1, logits.shape[-1]).cpu())
    return torch.cat(parts)


def scored_targets(chunks: torch.Tensor) -> torch.Tensor:
    """The next tokens the scored positions predict."""
    ctx = chunks.shape[1]
    return chunks[:, ctx // 2 + 1 :].reshape(-1).cpu()


def train(
    model: torch.nn.Module, tokens: torch.Tensor, args: argparse.Namespace, device: str
) -> dict[str, Any]:
    """`--train-steps` AdamW steps (fp32, constant --lr) on windows of the tokens."""
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed)
    window = args.ctx  # inputs and next tokens within one chunk's length
    high = tokens.numel() - window + 1
    offsets = torch.arange(window)
    losses = []
    model.train()
    for _ in range(args.train_steps):
        rows = tokens[torch.randint(0, high, (TRAIN_BATCH,), generator=gen)[:, None] + offsets]
        rows = rows.to(device)
        loss = model_loss(model, rows[:, :-1], rows[:, 1:], "mean")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach().item())
    del opt
    return {
        "steps": args.train_steps,
        "optimizer": "adamw (torch defaults), fp32",
        "lr": args.lr,
        "windows_per_step": TRAIN_BATCH,
        "window_tokens": window,
        "data": "windows of the --tokens themselves, offsets from a CPU generator seeded --seed",
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "why": "a randomly initialised tiny model predicts near-uniform distributions, so "
        "every format's KL is near 0; training peaks the distributions",
    }


def _file_facts(path: str) -> dict[str, Any]:
    with open(path, "rb") as f:
        data = f.read()
    return {"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _model(args: argparse.Namespace) -> tuple[ModelSpec, dict[str, Any], dict[str, Any], str]:
    config, name = load_config(args.config, args.model)
    if args.tokens.endswith(".txt"):
        spec, config, original = byte_model(config, name)
        scheme = {
            "scheme": "bytes: each byte of the .txt file is one token (0-255)",
            "vocab_size": spec.vocab_size,
            "config_vocab_size": original,
            "note": f"the model is the config's architecture with vocab_size {spec.vocab_size} "
            f"instead of {original}: embedding and output rows only",
        }
    else:
        spec = ModelSpec.from_hf_config(config, name=name)
        scheme = {"scheme": "token ids", "vocab_size": spec.vocab_size}
    return spec, config, scheme, name


def _entry_text(entries: list[dict[str, Any]]) -> str:
    rows = []
    for e in entries:
        dp = e["delta_p"]
        rows.append(
            [
                e["id"],
                e["applied_by"]
                + (" (simulated)" if e["simulated"] and e["applied_by"] != "simulated" else ""),
                f"{e['kl_mean']:.4g}",
                f"{100 * e['top1_agreement']:.2f}%",
                f"{100 * dp['p1']:+.3f}% / {100 * dp['median']:+.3f}% / {100 * dp['p99']:+.3f}%",
                f"{e['ppl_ratio']:.4f}",
                f"{e['weights_bytes_measured']:,}",
                f"{e['weights_bytes_estimate']:,} ({e['estimate_format']})",
            ]
        )
    head = ["format", "applied by", "mean KL", "same top", "dp 1%/50%/99%", "PPL ratio",
            "weights bytes", "estimate"]  # fmt: skip
    return table(head, rows)


def quant_compare_probe(args: argparse.Namespace, device: str, phases: Phases) -> dict[str, Any]:
    formats, kv_formats = check_flags(args)
    # transformers imports torchao when it is installed; import it first, quietly
    torchao = import_torchao()
    spec, config, tokenisation, name = _model(args)
    limit = spec.max_position_embeddings
    if limit is not None and args.ctx > limit:
        raise ValueError(f"--ctx {args.ctx} is past the model's {limit} positions")
    tok = read_tokens(args.tokens, vocab=spec.vocab_size, max_tokens=args.max_tokens)
    n_chunks = check_counts(args.tokens, len(tok.ids), args.ctx)
    positions = n_chunks * scored_positions(args.ctx)
    if positions * spec.vocab_size * 4 > MAX_LOGITS_BYTES:
        raise ValueError(
            f"--max-tokens {args.max_tokens:,}: {positions:,} scored positions x vocabulary "
            f"{spec.vocab_size:,} float32 logits exceed {MAX_LOGITS_BYTES // 2**30} GiB; "
            "give fewer tokens"
        )
    ids = torch.tensor(tok.ids, dtype=torch.long)
    chunks = ids[: n_chunks * args.ctx].view(n_chunks, args.ctx).to(device)
    targets = scored_targets(chunks)

    phases.current = "reference"
    model = build(spec, config, device=device, precision="fp32", hf=args.hf, seed=args.seed)
    training = train(model, ids, args, device) if args.train_steps else None
    reference = model.to(DTYPES[args.dtype]).eval()
    ref_logits = scored_logits(reference, chunks)
    ref_self = summarize(position_stats(ref_logits, ref_logits, targets))
    ref_bytes = weights_bytes(reference)
    ref_estimate = weight_bytes(spec, args.dtype).total_bytes

    entries: list[dict[str, Any]] = []
    for fid in formats:
        phases.current = f"format {fid}"
        quantized = copy.deepcopy(reference)
        applied = apply_format(quantized, fid)
        stats = position_stats(ref_logits, scored_logits(quantized, chunks), targets)
        measured_bytes = weights_bytes(quantized)
        estimate = weight_bytes(spec, applied.estimate_id).total_bytes
        del quantized
        entries.append(
            {
                "id": fid,
                "kind": "weights",
                "applied_by": applied.applied_by,
                "simulated": applied.simulated,
                **_figures(stats),
                "weights_bytes_measured": measured_bytes,
                "weights_bytes_estimate": estimate,
                "weights_bytes_difference": measured_bytes - estimate,
                "estimate_format": applied.estimate_id,
                "layout": applied.layout,
                "notes": applied.notes,
                "tensors": applied.tensors,
                "left_in_float": applied.left_in_float,
            }
        )
    for kv in kv_formats:
        phases.current = f"kv format {kv}"
        with kv_rounding(reference, kv, args.hf):
            stats = position_stats(ref_logits, scored_logits(reference, chunks), targets)
        entries.append(
            {
                "id": f"kv-{kv}",
                "kind": "kv",
                "kv_format": kv,
                "applied_by": "simulated",
                "simulated": True,
                **_figures(stats),
                "weights_bytes_measured": ref_bytes,
                "weights_bytes_estimate": ref_estimate,
                "weights_bytes_difference": ref_bytes - ref_estimate,
                "estimate_format": args.dtype,
                "layout": "weights as the reference; keys (after RoPE) and values rounded "
                "through float8_e4m3fn, scale 1.0, where the cache stores them",
                "notes": list(KV_NOTES),
            }
        )

    phases.current = "summary"
    tiny = bool(args.config) and os.path.isfile(os.path.join(CONFIG_DIR, f"{args.config}.json"))
    note = (
        TINY_NOTE
        if tiny and device == "cpu"
        else (
            "the figures describe this model on these tokens; formats marked simulated "
            "approximate the library a reader would run (see each entry's notes)"
        )
    )
    # The calculators' bytes stay in each entry of details.formats, not in `estimate`: a
    # report's `ratio` feeds probes.margins as the calculators' error, and torchao's int8 and
    # NF4 layouts differ from the bitsandbytes layouts the calculators model by design.
    measured: dict[str, Any] = {
        "reference_ppl": ref_self["ppl"],
        "reference_weights_bytes": ref_bytes,
        "positions": positions,
    }
    units: dict[str, str] = {
        "reference_ppl": "perplexity (exp of nats per token)",
        "reference_weights_bytes": "bytes",
        "positions": "scored positions",
    }
    for e in entries:
        p = e["id"]
        measured |= {
            f"{p}_kl_mean": e["kl_mean"],
            f"{p}_top1_agreement": e["top1_agreement"],
            f"{p}_delta_p_mean": e["delta_p"]["mean"],
            f"{p}_ppl_ratio": e["ppl_ratio"],
            f"{p}_weights_bytes": e["weights_bytes_measured"],
        }
        units |= {
            f"{p}_kl_mean": "nats",
            f"{p}_top1_agreement": "fraction",
            f"{p}_delta_p_mean": "probability",
            f"{p}_ppl_ratio": "ratio",
            f"{p}_weights_bytes": "bytes",
        }
    details: dict[str, Any] = {
        "note": note,
        "method": {
            "source": METHOD_SOURCE,
            "chunks": f"{n_chunks} non-overlapping chunks of {args.ctx} tokens; in each, "
            f"positions {args.ctx // 2}..{args.ctx - 2} are scored "
            f"({scored_positions(args.ctx)} per chunk)",
            "differences": "reference log-probabilities kept in float32 and whole (llama.cpp "
            "stores 16-bit log-probs and drops ln P < -16); no BOS token",
            "delta_p": "Q(t) - P(t) of the text's next token t, as a fraction (llama.cpp "
            "prints percent); percentiles by linear interpolation as llama.cpp",
        },
        "reference": {
            "dtype": args.dtype,
            "ppl": ref_self["ppl"],
            "tokens": len(tok.ids),
            "tokens_in_file": tok.total,
            "chunks": n_chunks,
            "positions": positions,
            "self_kl_mean": ref_self["kl_mean"],
            "self_top1_agreement": ref_self["top1_agreement"],
            "weights_bytes_measured": ref_bytes,
            "weights_bytes_estimate": ref_estimate,
        },
        "formats": entries,
        "training": training,
        "tokenisation": tokenisation,
        "tokens": _file_facts(args.tokens),
        "libraries": {
            "torchao": None if torchao is None else torchao.__version__,
            "bitsandbytes": (
                "installed"
                if importlib.util.find_spec("bitsandbytes")
                else "not installed: no bitsandbytes formats are applied (int8 and nf4 run through "
                "torchao; their bytes are compared with the bitsandbytes layouts)"
            ),
        },
        "bytes": (
            "weights_bytes_measured: the distinct storages behind every parameter and "
            "persistent buffer (probes.quant.storage); weights_bytes_estimate: "
            "calculators.memory.weights for estimate_format; both per entry of formats, "
            "kept out of `estimate` so that layout differences do not enter probes.margins"
        ),
        "units": {
            "kl_mean": "nats per position",
            "top1_agreement": "fraction of positions (0..1)",
            "delta_p": "probability (fraction, not percent)",
            "ppl": "exp(mean negative log-likelihood, nats per token)",
            "weights_bytes": "bytes",
        },
    }
    return {
        "inputs": {
            "model": name,
            "model_type": spec.model_type,
            "hf": args.hf,
            "tokens": args.tokens,
            "ctx": args.ctx,
            "max_tokens": args.max_tokens,
            "formats": formats,
            "kv_formats": kv_formats,
            "dtype": args.dtype,
            "train_steps": args.train_steps,
            "lr": args.lr,
            "seed": args.seed,
            "device": device,
        },
        "estimate": {},
        "measured": measured,
        "units": units,
        "details": details,
        "text": _entry_text(entries) + "\n" + note,
    }


def _figures(stats: PositionStats) -> dict[str, Any]:
    s = summarize(stats)
    return {
        "kl_mean": s["kl_mean"],
        "kl_mean_stderr": s["kl_mean_stderr"],
        "kl": s["kl"],
        "top1_agreement": s["top1_agreement"],
        "top1_agreement_stderr": s["top1_agreement_stderr"],
        "delta_p": s["delta_p"],
        "delta_p_rms": s["delta_p_rms"],
        "ppl": s["ppl"],
        "ppl_ratio": s["ppl_ratio"],
    }


__all__ = ["quant_compare_probe"]
