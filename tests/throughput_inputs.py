"""Throughput-calculator inputs that more than one test computes: the fine-tuning guide's
example run (its `tpfull` block, and `tp` with a rank-16 all-linear LoRA on top), held to
the page by tests/test_adaptation_guides.py."""

from __future__ import annotations

# Llama 3.1 8B, 100M tokens of 2,048, on one H100 at an MFU of 0.3
LLAMA_8B_ONE_H100 = {
    "model": "llama-3.1-8b",
    "tokens": "100000000",
    "seq_len": "2048",
    "gpus": "1",
    "gpu": "h100-sxm",
    "mfu": "0.3",
}
LORA_16_ALL_LINEAR_INPUTS = {"lora_rank": "16", "lora_targets": "all-linear"}
