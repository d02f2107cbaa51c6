"""Training: per-GPU memory of a training step (`step`, with `states` for precision
policies and optimizers and `activations` for the saved tensors), LoRA (`lora`), the
effective batch (`batch`) and training time and serving bounds (`throughput`)."""
