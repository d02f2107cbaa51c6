"""quant-compare: weight and KV-cache formats against the 16-bit reference, by llama.cpp's
KL-divergence method, with the weights' bytes against the calculators (`probes.quant`)."""

from __future__ import annotations

import argparse
from typing import Any

from probes.commands import shared
from probes.commands.declaration import Probe
from probes.report import Phases


def flags(p: argparse.ArgumentParser) -> None:
    shared.model_args(p)
    shared.common(p)
    p.add_argument(
        "--formats",
        default="",
        help="weight formats, comma-separated: int8, nf4, gptq-int4 (or gptq-int4-g<N|none>), "
        "fp8-e4m3",
    )
    p.add_argument("--kv-formats", default="", help="KV-cache formats, comma-separated: fp8")
    p.add_argument(
        "--tokens",
        metavar="FILE",
        help="required: a .txt file (each byte one token, vocabulary 256), or token ids "
        "(a .json list or whitespace-separated integers)",
    )
    p.add_argument("--ctx", type=int, default=128, help="tokens per chunk (llama.cpp's -c)")
    p.add_argument(
        "--max-tokens", type=int, default=65536, help="score at most this many tokens of the file"
    )
    p.add_argument("--dtype", default="bf16", help="the reference's 16-bit dtype: bf16|fp16")
    p.add_argument(
        "--train-steps",
        type=int,
        default=0,
        help="first train the model this many AdamW steps on the tokens (tiny random models "
        "predict near-uniform distributions)",
    )
    p.add_argument("--lr", type=float, default=3e-3, help="learning rate of --train-steps")


def body(args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    from probes.quant.compare import quant_compare_probe
    from probes.quant.layouts import quiet_logs

    with quiet_logs():
        return quant_compare_probe(args, shared.device(args), phases)


PROBE = Probe(
    name="quant-compare",
    help="weight and KV formats against the 16-bit reference (KL, top-1, delta-p, bytes)",
    flags=flags,
    body=body,
    order=10,
)
