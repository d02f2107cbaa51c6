"""Speed: how long the calculators take, the figure that matters for recomputing a page
on every input change in Pyodide. Medians of repeated runs (shared, noisy machines).
"""

from __future__ import annotations

import timeit
from statistics import median

from calculators.memory.envelope import EnvelopeQuery, memory_envelope
from calculators.memory.kv_cache import max_context
from calculators.memory.weights import weight_bytes
from calculators.model.params import parameter_counts
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.training.step import TrainingQuery, max_micro_batch, training_memory

REPEATS = 7


def _median_ms(fn, number: int) -> float:
    times = timeit.repeat(fn, number=number, repeat=REPEATS)
    return 1000 * median(times) / number


def main() -> None:
    print("| calculation | median ms |")
    print("|---|---:|")
    for preset in ("llama-3.1-8b", "deepseek-v3"):
        config = load_preset(preset)
        spec = ModelSpec.from_hf_config(config)
        cases = {
            "read config.json": lambda c=config: ModelSpec.from_hf_config(c),
            "parameter counts": lambda s=spec: parameter_counts(s),
            "weights gguf-q4_k_m": lambda s=spec: weight_bytes(s, "gguf-q4_k_m"),
            "max context in 40 GiB": lambda s=spec: max_context(s, free_bytes=40 * 2**30),
            "envelope, 8k x 4, all cards": lambda s=spec: memory_envelope(
                s, EnvelopeQuery(context=8192, batch=4)
            ),
            "training step, LoRA 16, 4k": lambda s=spec: training_memory(
                s, TrainingQuery(seq_len=4096, lora_rank=16)
            ),
            "training: largest micro-batch on h100": lambda s=spec: max_micro_batch(
                s, TrainingQuery(seq_len=4096, zero_stage=3, gpus=8)
            ),
        }
        for name, fn in cases.items():
            print(f"| {preset}: {name} | {_median_ms(fn, 5):.2f} |")


if __name__ == "__main__":
    main()
