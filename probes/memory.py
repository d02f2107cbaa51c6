"""Measurement backends: the CUDA/ROCm caching allocator's statistics, and on CPU a
live-tensor-bytes tracker.

CUDA and ROCm (`torch.version.hip`; the same `torch.cuda` API): per phase, the peak of
allocated and reserved bytes (`torch.cuda.max_memory_allocated`/`max_memory_reserved`
after `reset_peak_memory_stats`), active bytes, allocation retries and OOM counts
(`torch.cuda.memory_stats`: `active_bytes.all.current`, `num_alloc_retries`,
`num_ooms`), and the context size from `mem_get_info` around initialisation.

CPU: `LiveTensorTracker`, a `TorchDispatchMode` that counts each untyped storage once,
when an op first returns it, and forgets it when the storage dies (a weakref finalizer
on the storage; PyTorch keeps one Python object per storage alive as long as the
storage). It gives the peak per phase and, at that peak, the bytes per category:
parameters, gradients, optimizer states, activations (alive from the forward pass
into backward) and temporaries (everything else).

A CPU build of torch answers `torch.cuda.memory_allocated()` with 0 and no error; the
CUDA backend refuses to start unless a CUDA or ROCm device is present, and refuses a
zero peak as a measurement.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

CATEGORIES = ("parameters", "gradients", "optimizer_states", "activations", "temporaries")


class MemoryLimitExceeded(torch.OutOfMemoryError):
    """Raised by the CPU tracker when live bytes pass `--memory-limit`: the OOM path."""


@dataclass
class PhaseMeasurement:
    """One phase: peak and end-of-phase bytes, and whatever else the backend knows."""

    name: str
    peak_bytes: int
    current_bytes: int
    extra: dict[str, Any] = field(default_factory=dict)
    by_category: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "peak_bytes": self.peak_bytes,
            "current_bytes": self.current_bytes,
            **self.extra,
            **({"peak_by_category": self.by_category} if self.by_category else {}),
        }


def _storage(t: torch.Tensor) -> torch.UntypedStorage | None:
    if not isinstance(t, torch.Tensor) or t.device.type == "meta":
        return None
    if hasattr(t, "to_local"):  # a DTensor (FSDP2): the local shard holds the memory
        t = t.to_local()
    try:
        st = t.untyped_storage()
        st.nbytes()
        return st
    except (RuntimeError, NotImplementedError):  # sparse / nested / wrapper tensors
        return None


def _nbytes(st: torch.UntypedStorage) -> int:
    try:
        return st.nbytes()
    except RuntimeError:
        return 0


def storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages (local shards for DTensors) behind `tensors`."""
    seen: dict[int, int] = {}
    for t in tensors:
        st = _storage(t)
        if st is not None:
            seen[id(st)] = _nbytes(st)
    return sum(seen.values())


class LiveTensorTracker(TorchDispatchMode):
    """Live tensor bytes on CPU: each storage counted once, freed with the storage.

    memory_limit: when live bytes exceed it, the op that crossed it raises
    `MemoryLimitExceeded` (an `torch.OutOfMemoryError`), so the probes' OOM path can be
    exercised on CPU.
    """

    def __init__(self, memory_limit: int | None = None) -> None:
        super().__init__()
        self.memory_limit = memory_limit
        # id(storage) -> (allocation id, bytes). PyTorch keeps one Python object per storage
        # for the storage's life, so its id is stable (addresses are not: a resize moves it)
        # and the finalizer removes the entry before the id can be reused.
        self.live: dict[int, tuple[int, int]] = {}
        self._next_id = 0
        self.current = 0
        self.peak = 0
        self._peak_live: dict[int, int] = {}
        self._peak_pending = False
        self._resize: Any = None

    # -- bookkeeping ---------------------------------------------------------------
    def _free(self, key: int, uid: int) -> None:
        entry = self.live.get(key)
        if entry is None or entry[0] != uid:
            return
        self._settle_peak()
        del self.live[key]
        self.current -= entry[1]

    def _settle_peak(self) -> None:
        if self._peak_pending:
            self._peak_live = self.snapshot()
            self._peak_pending = False

    def _grow(self, n: int) -> None:
        self.current += n
        if self.current > self.peak:
            self.peak = self.current
            self._peak_pending = True
        if self.memory_limit is not None and self.current > self.memory_limit:
            raise MemoryLimitExceeded(
                f"live tensor bytes {self.current} exceed the memory limit {self.memory_limit}"
            )

    def _resized(self, st: torch.UntypedStorage, old: int) -> None:
        """FSDP frees and refills its unsharded parameters with storage.resize_ (no op)."""
        entry = self.live.get(id(st))
        if entry is None:
            return
        new = _nbytes(st)
        self.live[id(st)] = (entry[0], new)
        if new < old:
            self._settle_peak()
            self.current -= old - new
        else:
            self._grow(new - old)

    def snapshot(self) -> dict[int, int]:
        """Allocation id -> bytes of every live storage."""
        return dict(self.live.values())

    def ids(self, tensors: Iterable[torch.Tensor]) -> set[int]:
        """Allocation ids of the (tracked) storages of `tensors`."""
        out = set()
        for t in tensors:
            st = _storage(t)
            if st is not None and id(st) in self.live:
                out.add(self.live[id(st)][0])
        return out

    def _add(self, t: torch.Tensor) -> None:
        st = _storage(t)
        if st is None or id(st) in self.live:
            return
        n = _nbytes(st)
        uid = self._next_id
        self._next_id += 1
        self.live[id(st)] = (uid, n)  # 0-byte storages too: FSDP resizes them later
        weakref.finalize(st, self._free, id(st), uid)
        self._grow(n)

    def __enter__(self) -> LiveTensorTracker:
        original = torch.UntypedStorage.resize_
        tracker = self

        def resize_(st: torch.UntypedStorage, size: int) -> Any:
            old = _nbytes(st)
            out = original(st, size)
            tracker._resized(st, old)
            return out

        self._resize = original
        torch.UntypedStorage.resize_ = resize_  # type: ignore[method-assign]
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        if self._resize is not None:
            torch.UntypedStorage.resize_ = self._resize  # type: ignore[method-assign]
            self._resize = None
        super().__exit__(*exc)

    def adopt(self, tensors: Iterable[torch.Tensor]) -> None:
        """Count tensors that exist already (parameters made before tracking began)."""
        for t in tensors:
            self._add(t)

    def reset_peak(self) -> None:
        self.peak = self.current
        self._peak_live = self.snapshot()
        self._peak_pending = False

    def peak_live(self) -> dict[int, int]:
        """Storage key -> bytes of every storage alive at the peak."""
        if self._peak_pending:
            return self.snapshot()
        return self._peak_live

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self._add(t)
        return out


@dataclass
class Categorizer:
    """Storage keys of each category, filled in by the probe as it learns them."""

    parameters: set[int] = field(default_factory=set)
    gradients: set[int] = field(default_factory=set)
    optimizer_states: set[int] = field(default_factory=set)
    activations: set[int] = field(default_factory=set)

    def split(self, keys: Iterable[int], sizes: dict[int, int]) -> dict[str, int]:
        out = dict.fromkeys(CATEGORIES, 0)
        for k in keys:
            n = sizes.get(k, 0)
            if k in self.parameters:
                out["parameters"] += n
            elif k in self.gradients:
                out["gradients"] += n
            elif k in self.optimizer_states:
                out["optimizer_states"] += n
            elif k in self.activations:
                out["activations"] += n
            else:
                out["temporaries"] += n
        return out


class CPUBackend:
    """Phases measured by a `LiveTensorTracker` entered for the whole probe."""

    kind = "cpu-live-tensors"

    def __init__(self, memory_limit: int | None = None) -> None:
        self.tracker = LiveTensorTracker(memory_limit)
        self.categories = Categorizer()
        self._peaks: dict[str, dict[int, int]] = {}

    def __enter__(self) -> CPUBackend:
        self.tracker.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.tracker.__exit__(*exc)

    def start(self) -> None:
        self.tracker.reset_peak()

    def ids(self, tensors: Iterable[torch.Tensor]) -> set[int]:
        return self.tracker.ids(tensors)

    def current(self) -> int:
        return self.tracker.current

    def end(self, name: str) -> PhaseMeasurement:
        self._peaks[name] = self.tracker.peak_live()
        return PhaseMeasurement(
            name=name, peak_bytes=self.tracker.peak, current_bytes=self.tracker.current
        )

    def categorize(self, m: PhaseMeasurement) -> None:
        """Fill `m.by_category` from the categories known now."""
        live = self._peaks[m.name]
        m.by_category = self.categories.split(live, live)
        assert sum(m.by_category.values()) == m.peak_bytes, (m.by_category, m.peak_bytes)


class CudaBackend:
    """The caching allocator's statistics on CUDA or ROCm, per phase."""

    kind = "cuda-allocator"

    def __init__(self, device: str, memory_limit: int | None = None) -> None:
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r}: torch sees no CUDA or ROCm device")
        self.device = torch.device(device)
        self.categories = Categorizer()
        # used memory before this process creates its context: NVML / amdsmi, which do not
        # initialise CUDA (torch.cuda.device_memory_used, torch >= 2.5); None when unavailable
        used_before = _device_memory_used(self.device)
        torch.cuda.init()
        torch.empty(1, device=self.device)  # the context exists once something is allocated
        free, total = torch.cuda.mem_get_info(self.device)
        used_after = total - free
        self.context = {
            "total_bytes": int(total),
            "used_before_init_bytes": used_before,
            "free_after_init_bytes": int(free),
            # this process's context: used after minus used before, minus torch's own cache;
            # without the "before" figure, other processes' memory is included
            "context_bytes": int(
                used_after - (used_before or 0) - torch.cuda.memory_reserved(self.device)
            ),
        }
        if memory_limit is not None:
            torch.cuda.set_per_process_memory_fraction(min(1.0, memory_limit / total), self.device)

    def __enter__(self) -> CudaBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def ids(self, tensors: Iterable[torch.Tensor]) -> set[int]:
        return set()

    def start(self) -> None:
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)

    def current(self) -> int:
        return int(torch.cuda.memory_allocated(self.device))

    def end(self, name: str) -> PhaseMeasurement:
        torch.cuda.synchronize(self.device)
        stats = torch.cuda.memory_stats(self.device)
        peak = int(torch.cuda.max_memory_allocated(self.device))
        if peak == 0:
            raise RuntimeError(
                f"phase {name}: the allocator reports 0 bytes, which is not a measurement "
                "(a CPU build of torch, or the wrong device)"
            )
        free, _ = torch.cuda.mem_get_info(self.device)
        return PhaseMeasurement(
            name=name,
            peak_bytes=peak,
            current_bytes=int(torch.cuda.memory_allocated(self.device)),
            extra={
                "max_reserved_bytes": int(torch.cuda.max_memory_reserved(self.device)),
                "active_bytes": int(stats.get("active_bytes.all.current", 0)),
                "alloc_retries": int(stats.get("num_alloc_retries", 0)),
                "ooms": int(stats.get("num_ooms", 0)),
                "free_bytes": int(free),
            },
        )

    def categorize(self, m: PhaseMeasurement) -> None:
        """The allocator does not know categories; left empty on CUDA."""


def _device_memory_used(device: torch.device) -> int | None:
    try:
        return int(torch.cuda.device_memory_used(device))
    except Exception:  # no NVML / amdsmi, or an older torch: unknown, never guessed
        return None


def make_backend(device: str, memory_limit: int | None = None) -> CPUBackend | CudaBackend:
    if device == "cpu":
        return CPUBackend(memory_limit)
    if device.startswith("cuda"):
        return CudaBackend(device, memory_limit)
    raise ValueError(f"device must be cuda or cpu, got {device!r}")


def default_device() -> str:
    """The GPU when there is one (CUDA or ROCm), else the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def dump_snapshot(path: str) -> None:
    """Write the allocator's history for https://pytorch.org/memory_viz (CUDA only)."""
    torch.cuda.memory._dump_snapshot(path)


def record_history() -> None:
    torch.cuda.memory._record_memory_history(max_entries=100_000)
