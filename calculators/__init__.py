"""The calculators: the single source of every figure on the site, in pure standard-library
Python that runs unchanged in CPython and in the browser under Pyodide.

Laid out by domain:

- `model`: the model as the calculators see it: config.json reading, families, the
  tensor inventory, parameter counts, the shipped presets;
- `memory`: number formats, weights, KV cache, inference activations, reserves, the
  GPU catalog and the inference envelope;
- `training`: training-step memory (precision policies, optimizers, saved activations,
  LoRA, data parallelism), effective batch and throughput;
- `planning`: campaign budgets;
- `statistics`: Student's t and the seed statistics;
- `commands`: one module per calculator, each declaring its inputs once, from which the
  command line (`cli`) and the pages (`web`) are derived;
- and the shared pieces: `errors`, `limits`, `parsing`, `decimals`, `units`, `checks`,
  `render` (plain-text tables).
"""
