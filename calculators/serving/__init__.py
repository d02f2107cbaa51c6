"""What a serving runtime (vLLM) accounts for when it starts: weights per rank,
memory outside PyTorch, the profiling run's activation peak, and the KV cache it then
allocates (`calculators.serving.startup`)."""
