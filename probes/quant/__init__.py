"""Quantization quality: the llama.cpp KL-divergence method on the reader's model and tokens.

`python -m probes quant-compare` (`probes.commands.quant_compare`) runs a 16-bit reference
and each weight format (and KV-cache format) over the same tokens and reports, per format,
the mean KL divergence from the reference, top-token agreement, the change in the
probability of the text's next token, perplexity, and the weights' bytes in memory against
the calculators' estimate.

| module | what |
|---|---|
| `tokens.py` | the tokens file (bytes of a .txt, or token ids) and its chunks |
| `divergence.py` | per-position KL, top-1 agreement, delta-p, percentiles, perplexity |
| `layouts.py` | each weight format applied to a model's linears: torchao, float8, simulated |
| `storage.py` | bytes a model's weights hold in memory, storages counted once |
| `kv.py` | KV-cache values rounded through fp8 where a cache would store them |
| `compare.py` | the probe: reference, formats, report |
"""
