"""The CPU live-tensor tracker and the CUDA backend's refusal to measure without a GPU."""

from __future__ import annotations

import pytest

from probes.memory import (
    CPUBackend,
    CudaBackend,
    LiveTensorTracker,
    MemoryLimitExceeded,
    make_backend,
)
from tests.probes_helpers import torch


def test_each_storage_counts_once_and_leaves_with_it() -> None:
    with LiveTensorTracker() as t:
        a = torch.empty(1000, dtype=torch.float32)  # 4000 bytes
        view = a.view(10, 100)  # same storage: not counted again
        b = a[::2].clone()  # new storage: 2000 bytes
        assert t.current == 6000
        del a
        assert t.current == 6000  # the view keeps the storage alive
        del view
        assert t.current == 2000
        del b
        assert t.current == 0
        assert t.peak == 6000


def test_peak_per_phase_and_its_live_set() -> None:
    with LiveTensorTracker() as t:
        keep = torch.ones(256)  # 1024 bytes
        tmp = torch.ones(512)  # 2048 bytes
        del tmp
        t.reset_peak()
        assert t.peak == 1024
        x = torch.zeros(128)  # 512 bytes
        assert t.peak == 1536
        assert sorted(t.peak_live().values()) == [512, 1024]
        del keep, x


def test_memory_limit_raises_an_out_of_memory_error() -> None:
    with LiveTensorTracker(memory_limit=10_000) as t:
        a = torch.empty(2000)  # 8000 bytes: fits
        with pytest.raises(torch.OutOfMemoryError, match="exceed the memory limit 10000"):
            torch.empty(1000)  # 12000 bytes: over
        assert t.current == 8000  # the failed tensor was freed with the exception
        del a
    assert issubclass(MemoryLimitExceeded, torch.OutOfMemoryError)


def test_categories_split_the_peak_exactly() -> None:
    with CPUBackend() as b:
        w = torch.nn.Parameter(torch.ones(100))
        b.categories.parameters |= b.ids([w])
        b.start()
        act = w * 2
        m = b.end("phase")
        b.categorize(m)
    assert m.by_category["parameters"] == 400
    assert m.by_category["temporaries"] == 400
    assert sum(m.by_category.values()) == m.peak_bytes == 800
    del act


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
def test_cuda_backend_refuses_without_a_gpu() -> None:
    # a CPU build answers torch.cuda.memory_allocated() with 0: never a measurement
    assert torch.cuda.memory_allocated() == 0
    with pytest.raises(ValueError, match="torch sees no CUDA or ROCm device"):
        CudaBackend("cuda")
    with pytest.raises(ValueError, match="device must be cuda or cpu"):
        make_backend("tpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm device")
def test_cuda_backend_measures_an_allocation() -> None:
    b = CudaBackend("cuda")
    b.start()
    x = torch.empty(2**20, device="cuda")
    m = b.end("alloc")
    assert m.peak_bytes >= 4 * 2**20
    assert m.extra["ooms"] == 0
    assert b.context["context_bytes"] > 0
    del x


def test_storage_resize_is_followed() -> None:
    # FSDP frees an unsharded parameter with untyped_storage().resize_(0), no aten op
    with LiveTensorTracker() as t:
        x = torch.empty(1000)
        x.untyped_storage().resize_(0)
        assert t.current == 0
        x.untyped_storage().resize_(800)
        assert t.current == 800 and t.peak == 4000
        del x
        assert t.current == 0
