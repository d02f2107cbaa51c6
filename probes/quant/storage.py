"""Bytes a model's weights hold in memory, quantized tensors' scales and zero points included.

Every parameter and persistent buffer (a state_dict entry: rotary tables registered
non-persistent are not weights) is reduced to the plain tensors that hold its data; a
tensor subclass (torchao's Int8Tensor, NF4Tensor) is opened with `__tensor_flatten__`,
recursively. Each distinct storage counts once, with all its bytes
(`untyped_storage().nbytes()`): tied embeddings are one storage, and a small view that
keeps a larger storage alive is charged that storage, as the allocator is.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn


def plain_tensors(t: torch.Tensor) -> Iterator[torch.Tensor]:
    """The plain tensors holding `t`'s data (itself, or its subclass's inner tensors)."""
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is not None and type(t) not in (torch.Tensor, nn.Parameter):
        names, _ = t.__tensor_flatten__()
        for name in names:
            yield from plain_tensors(getattr(t, name))
        return
    yield t


def weight_tensors(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """(name, tensor) of every parameter and persistent buffer."""
    for mod_name, module in model.named_modules():
        prefix = f"{mod_name}." if mod_name else ""
        for name, p in module.named_parameters(recurse=False):
            yield prefix + name, p
        skip = getattr(module, "_non_persistent_buffers_set", set())
        for name, b in module.named_buffers(recurse=False):
            if b is not None and name not in skip:
                yield prefix + name, b


def weights_bytes(model: nn.Module) -> int:
    """Bytes of the distinct storages behind the model's weights (see the module)."""
    seen: set[tuple[str, int]] = set()
    total = 0
    for _, t in weight_tensors(model):
        for leaf in plain_tensors(t):
            storage = leaf.untyped_storage()
            key = (str(leaf.device), storage.data_ptr())
            if key in seen:
                continue
            seen.add(key)
            total += storage.nbytes()
    return total
