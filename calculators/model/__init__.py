"""The model as the calculators see it: a Hugging Face config.json read into a `ModelSpec`
(`spec`, `hf_config`, `families`), its tensor inventory (`tensors`), parameter counts
(`params`), the shipped presets (`presets`) and published checkpoint sizes
(`reference_sizes`)."""
