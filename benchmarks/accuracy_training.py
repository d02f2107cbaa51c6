"""Accuracy: the training-step estimate against the CPU probe, over a matrix of tiny models.

For each configuration (tiny configs shipped in `probes/configs/`) this runs the
weights, kv-cache and train-step probes on the CPU and prints estimate vs measured for
every phase and model-state line: parameter counts, weights and KV-cache bytes must be
exact; the training-step peak is the 5% target. Run with `make bench`; `--out-dir DIR`
keeps the JSON reports (the committed CPU reports in docs/data/validation/ come from
`--out-dir docs/data/validation`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from typing import Any

from probes.cli import main as probe
from probes.report import read

# (name, config, extra train-step flags): dense GQA, qwen-style biases, gemma-style norms
# and windows, MoE (routed and shared), MLA, tied and untied, checkpointing on and off,
# LoRA, fp32 and 16-bit policies, AdamW and SGD, SDPA and eager.
MATRIX: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("llama-fp32", "tiny-llama", ()),
    ("llama-amp-bf16", "tiny-llama", ("--precision", "amp-bf16")),
    ("llama-lora8", "tiny-llama", ("--lora-rank", "8")),
    ("qwen2-tied-ckpt", "tiny-qwen2", ("--checkpointing", "full")),
    ("qwen3-bf16-ckpt", "tiny-qwen3", ("--precision", "bf16", "--checkpointing", "full")),
    ("gemma2-bf16-eager", "tiny-gemma2", ("--precision", "bf16", "--attention", "eager")),
    ("gemma3-fp32", "tiny-gemma3", ()),
    ("mixtral-bf16-mixed", "tiny-mixtral", ("--precision", "bf16-mixed")),
    ("qwen2moe-fp32", "tiny-qwen2-moe", ()),
    ("deepseek-v3-fp32", "tiny-deepseek-v3", ()),
    ("gpt2-sgd-momentum", "tiny-gpt2", ("--optimizer", "sgd-momentum")),
    ("phi3-for-loop", "tiny-phi3", ("--optimizer-impl", "for-loop")),
    ("llama-amp-bf16-ckpt", "tiny-llama", ("--precision", "amp-bf16", "--checkpointing", "full")),
    (
        "llama-eager-selective",
        "tiny-llama",
        ("--attention", "eager", "--checkpointing", "selective"),
    ),
    (
        "mixtral-lora4-experts",
        "tiny-mixtral",
        ("--lora-rank", "4", "--lora-targets", "gate_proj,up_proj,down_proj"),
    ),
)
STEP = ("--micro-batch", "4", "--seq-len", "128", "--device", "cpu")
PHASES = ("after_load", "after_forward", "backward_peak", "optimizer_step", "peak")
LINES = ("parameters", "gradients", "optimizer_states", "activations")
TARGET = 0.05


def _run(out_dir: str, name: str, *argv: str) -> dict[str, Any]:
    path = os.path.join(out_dir, f"cpu-{name}.json")
    code = probe([*argv, "--out", path])
    if code != 0:
        raise SystemExit(f"{name}: probe exited {code}")
    return read(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", help="keep the JSON reports here")
    args = parser.parse_args(argv)
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="accuracy-training-")
    os.makedirs(out_dir, exist_ok=True)
    exact_fail = []
    rows, peak_errors = [], []
    import contextlib
    import io

    for name, config, extra in MATRIX:
        with contextlib.redirect_stdout(io.StringIO()):
            w = _run(out_dir, f"weights-{name}", "weights", "--config", config, "--device", "cpu")
            kv = _run(
                out_dir,
                f"kv-{name}",
                "kv-cache",
                "--config",
                config,
                "--context",
                "160",
                "--batch",
                "2",
                "--kv-format",
                "bf16",
                "--device",
                "cpu",
            )
            t = _run(out_dir, f"train-{name}", "train-step", "--config", config, *STEP, *extra)
        for r, key in ((w, "parameters"), (w, "weight_bytes"), (kv, "kv_cache_bytes")):
            if r["measured"][key] != r["estimate"][key]:
                exact_fail.append(f"{name} {key}")
        cells = []
        for k in (*PHASES, *LINES):
            e, m = t["estimate"].get(k), t["measured"].get(k)
            cells.append("-" if not e or m is None else f"{m / e:.3f}")
        rows.append((name, t["estimate"]["peak"], t["measured"]["peak"], cells))
        peak_errors.append((abs(t["measured"]["peak"] / t["estimate"]["peak"] - 1), name))
    print("Training step on CPU (micro-batch 4, seq-len 128): measured / estimate")
    print("| config | estimated peak | measured peak | " + " | ".join((*PHASES, *LINES)) + " |")
    print("|---|---:|---:|" + "---:|" * (len(PHASES) + len(LINES)))
    for name, e, m, cells in rows:
        print(f"| {name} | {e:,} | {m:,} | " + " | ".join(cells) + " |")
    within = [n for err, n in peak_errors if err <= TARGET]
    print(
        f"\npeak within {TARGET:.0%}: {len(within)} of {len(rows)}; "
        f"worst {max(peak_errors)[0]:.1%} ({max(peak_errors)[1]})"
    )
    print(
        "parameter counts, weights and KV-cache bytes exact: "
        + ("all" if not exact_fail else "NOT for " + ", ".join(exact_fail))
    )
    print(
        "\nData parallel on CPU (torchrun, gloo, 2 ranks; tiny-llama, micro-batch 4): "
        "measured / estimate, largest rank"
    )
    print("| strategy | " + " | ".join((*PHASES, *LINES)) + " |")
    print("|---|" + "---:|" * (len(PHASES) + len(LINES)))
    for strategy in ("ddp", "fsdp"):
        path = os.path.join(out_dir, f"cpu-train-{strategy}-2ranks.json")
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "probes",
            "train-step",
            "--config",
            "tiny-llama",
            "--strategy",
            strategy,
            *STEP,
            "--out",
            path,
        ]
        subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        r = read(path)
        cells = [f"{r['ratio'][k]:.3f}" if k in r["ratio"] else "-" for k in (*PHASES, *LINES)]
        print(f"| {strategy} ({r['status']}) | " + " | ".join(cells) + " |")
    print(f"reports: {out_dir}")
    return 1 if exact_fail else 0


if __name__ == "__main__":
    raise SystemExit(main())
