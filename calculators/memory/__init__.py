"""GPU memory for inference: number formats (`formats`, `gguf`), weights (`weights`), KV
cache (`kv_formats`, `kv_cache`), activation workspace (`activations`), reserve lines
(`reserves`), the GPU catalog (`gpus`) and the envelope against a card (`envelope`)."""
