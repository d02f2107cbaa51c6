"""The measured gap: the calculators' estimate against what a GPU showed, part by part.

A reader ran the model and read three figures of one process on one GPU:

  A = torch.cuda.max_memory_allocated()   the largest total of live tensors
  R = torch.cuda.max_memory_reserved()    the largest total of the caching allocator's
                                          segments (live tensors + cached free blocks)
  U = device used: nvidia-smi's / amd-smi's "used", or total - free from
      torch.cuda.mem_get_info(), read while the reservation is still held

and the estimate E is the sum of the allocation lines the calculators computed (the
inference envelope's weights + KV cache + activation workspace, or the training step's
peak phase). Then, exactly,

  U = E + (A - E) + (R - A) + (U - R)

  model error     = A - E   what the estimate did not foresee (or, negative, foresaw in
                            excess); no reserve line covers it
  allocator       = R - A   cached free blocks and fragmentation of the caching allocator,
                            compared with the `allocator_fragmentation` reserve line
                            (a fraction of the estimate, so the line is f x E)
  outside PyTorch = U - R   memory the allocator never sees: the CUDA/HIP context and
                            loaded kernels, NCCL/RCCL buffers, libraries that allocate
                            themselves, other processes; compared with the
                            `runtime_context` + `framework_overhead` reserve lines

A part is computed only when both of its ends are known (each measurement is optional).

Assumptions:
- A and R are peaks since the last torch.cuda.reset_peak_memory_stats() (or the process's
  start), taken on the same device. They may be reached at different moments; R - A is
  then the reservation beyond the largest allocation, which is what the fragmentation line
  must cover for the card to hold the peak (the envelope charges f x E on top of E).
- R >= A always holds for one process (every allocated block lives in a reserved segment),
  and U >= R when U is read while the segments are held (before torch.cuda.empty_cache());
  measurements that break either are refused, naming the field.
- nvidia-smi may count the driver's own reservation on some drivers; total - free from
  torch.cuda.mem_get_info() is measured against torch's total_memory, the figure the card
  catalog uses (`calculators.memory.gpus`).
- cuBLAS workspaces are taken from PyTorch's allocator (inside A), yet the
  `framework_overhead` line that counts them is compared with U - R: the comparison is
  generous by those workspaces (up to ~128 MiB, `calculators.memory.reserves`).

Sources:
- PyTorch docs, CUDA semantics > Memory management: "PyTorch uses a caching memory
  allocator ... the unused memory managed by the allocator will still show as if used in
  nvidia-smi. You can use memory_allocated() and max_memory_allocated() to monitor memory
  occupied by tensors, and use memory_reserved() and max_memory_reserved() to monitor the
  total amount of memory managed by the caching allocator"
  (https://pytorch.org/docs/stable/notes/cuda.html#memory-management), and its
  PYTORCH_CUDA_ALLOC_CONF options (expandable_segments).
- torch.cuda.memory_allocated / max_memory_allocated / memory_reserved /
  max_memory_reserved / mem_get_info docs
  (https://pytorch.org/docs/stable/generated/torch.cuda.memory_allocated.html,
  https://pytorch.org/docs/stable/generated/torch.cuda.memory_reserved.html,
  https://pytorch.org/docs/stable/generated/torch.cuda.mem_get_info.html).
- c10/cuda/CUDACachingAllocator.cpp: the "allocated_bytes" and "reserved_bytes" stats
  behind those calls, block splitting and rounding
  (https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDACachingAllocator.cpp).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from calculators.errors import InputError, shown
from calculators.limits import MAX_MEMORY_GIB
from calculators.memory.reserves import Line
from calculators.units import GIB, MIB, format_gib

Unit = Literal["GiB", "MiB"]

# Bytes per unit a reader enters a measurement in (nvidia-smi and amd-smi print MiB).
UNIT_BYTES: dict[str, int] = {"GiB": GIB, "MiB": MIB}

# One measurement is at most one card's memory: the bound every card input shares
# (`calculators.limits.MAX_MEMORY_GIB`, one PiB), here in bytes.
MAX_MEASURED_BYTES = MAX_MEMORY_GIB * GIB

MEASUREMENTS = ("allocated", "reserved", "device_used")

# Reserve lines (`calculators.memory.reserves`) each part is compared with.
ALLOCATOR_RESERVES = ("allocator_fragmentation",)
OUTSIDE_RESERVES = ("runtime_context", "framework_overhead")


def _both(n_bytes: int) -> str:
    """'23,622,320,128 bytes (22.00 GiB)': the exact figure and the readable one."""
    return f"{n_bytes:,} bytes ({format_gib(n_bytes)})"


def measured_bytes(field: str, value: float | None, unit: str) -> int | None:
    """A measurement typed in `unit` (GiB or MiB) as whole bytes, rounded to the nearest
    byte: round(value x 2^30) or round(value x 2^20); None left out.

    InputError naming `field` unless `value` is a finite number in [0, one PiB].
    """
    if unit not in UNIT_BYTES:
        raise InputError("unit", f"unit must be one of {', '.join(UNIT_BYTES)}; got {shown(unit)}")
    if value is None:
        return None
    real = isinstance(value, int | float) and not isinstance(value, bool)
    if not real or not math.isfinite(value) or value < 0:
        raise InputError(
            field, f"{field} must be a finite, non-negative number of {unit}, got {shown(value)}"
        )
    per_unit = UNIT_BYTES[unit]
    bound = MAX_MEASURED_BYTES // per_unit
    if value > bound:
        raise InputError(
            field, f"{field} must be at most {bound:,} {unit} (one PiB), got {value:g}"
        )
    return round(value * per_unit)


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What one process showed on one GPU, in bytes; None where not measured.

    allocated:   torch.cuda.max_memory_allocated()
    reserved:    torch.cuda.max_memory_reserved()
    device_used: nvidia-smi / amd-smi "used", or total - free of torch.cuda.mem_get_info()

    Each is an int in [0, MAX_MEASURED_BYTES]; reserved >= allocated and device_used >=
    reserved (>= allocated when reserved is not given), since every allocated block lives
    in a reserved segment and every segment in the device's used memory.
    """

    allocated: int | None = None
    reserved: int | None = None
    device_used: int | None = None

    def __post_init__(self) -> None:
        for name in MEASUREMENTS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(
                    name, f"{name} must be a non-negative integer of bytes, got {shown(value)}"
                )
            if value > MAX_MEASURED_BYTES:
                raise InputError(
                    name,
                    f"{name} must be at most {MAX_MEASURED_BYTES:,} bytes (one PiB), got {value:,}",
                )
        a, r, u = self.allocated, self.reserved, self.device_used
        if a is not None and r is not None and r < a:
            raise InputError(
                "reserved",
                f"reserved must be at least allocated (the allocator reserves every block it "
                f"hands out): reserved {_both(r)} < allocated {_both(a)}; were both read on "
                f"the same device and process?",
            )
        below = ("reserved", r) if r is not None else ("allocated", a)
        if u is not None and below[1] is not None and u < below[1]:
            raise InputError(
                "device_used",
                f"device_used must be at least {below[0]}: device_used {_both(u)} < "
                f"{below[0]} {_both(below[1])}; read it while the reservation is held "
                f"(before torch.cuda.empty_cache()), on the same device, in the same unit",
            )


@dataclass(frozen=True, kw_only=True)
class GapPart:
    """One part of the gap between the estimate and the device's used memory.

    id:               model_error | allocator | outside_pytorch
    bytes:            the difference of its two ends (only model_error can be negative)
    share_of_estimate: bytes / the estimate's bytes
    reserve_id, reserve_bytes: the reserve line(s) that should cover it (ids joined by
                      '+'), None for the model error, which no line covers
    within_reserve:   bytes <= reserve_bytes; None where there is no line
    meaning, action:  what the part usually is and what to do about it
    """

    id: str
    label: str
    bytes: int
    share_of_estimate: float
    reserve_id: str | None
    reserve_bytes: int | None
    within_reserve: bool | None
    meaning: str
    action: str


@dataclass(frozen=True, kw_only=True)
class MemoryGap:
    """The estimate, the measurements and the parts of the gap that could be computed.

    notes: one line per part not computed, naming the measurement it needs.
    """

    estimate_lines: tuple[Line, ...]
    estimate_bytes: int
    measured: Measured
    model_error: GapPart | None
    allocator: GapPart | None
    outside_pytorch: GapPart | None
    notes: tuple[str, ...]

    @property
    def parts(self) -> tuple[GapPart, ...]:
        """The computed parts, from the estimate up to the device's used memory."""
        found = (self.model_error, self.allocator, self.outside_pytorch)
        return tuple(p for p in found if p is not None)


def _share(n_bytes: int, estimate: int) -> str:
    return f"{n_bytes / estimate:+.1%} of the estimate"


def _model_error(a: int, estimate: int) -> GapPart:
    error = a - estimate
    if error > 0:
        meaning = (
            f"PyTorch allocated {format_gib(error)} more than the estimate "
            f"({_share(error, estimate)}): tensors the calculator did not foresee."
        )
        action = (
            "Look for: eager attention (its batch x heads x s x s scores; use sdpa, or set "
            "attention to eager here), an fp32 copy (weights loaded without torch_dtype, "
            "logits cast to fp32 over the whole sequence), the optimizer's first step "
            "(its states are created then: measure from step 2), a different batch or "
            "length than entered, another runtime's buffers (a pre-allocated cache, CUDA "
            "graph pools). torch.cuda.memory_snapshot() lists every block with its stack."
        )
    elif error < 0:
        meaning = (
            f"PyTorch allocated {format_gib(-error)} less than the estimate "
            f"({_share(error, estimate)}): the estimate is conservative for this run."
        )
        action = (
            "Check that the run reached the batch and length entered (a dynamic cache holds "
            "only the tokens generated so far; the peak counts since the last "
            "reset_peak_memory_stats()) and that each estimated line applies (the activation "
            "workspace is one prefill step: the whole batch at once unless a prefill chunk "
            "is given, as vLLM and SGLang chunk it). Nothing to fix if the run "
            "is the one entered."
        )
    else:
        meaning = "PyTorch allocated exactly the estimate."
        action = "Nothing to do."
    return GapPart(
        id="model_error",
        label="Model error (allocated - estimate)",
        bytes=error,
        share_of_estimate=error / estimate,
        reserve_id=None,
        reserve_bytes=None,
        within_reserve=None,
        meaning=meaning,
        action=action,
    )


def _covering(reserves: dict[str, Line], ids: tuple[str, ...]) -> tuple[str | None, int | None]:
    """The reserve lines among `ids` that are given: their ids joined by '+' and bytes."""
    present = [i for i in ids if i in reserves]
    if not present:
        return None, None
    return "+".join(present), sum(reserves[i].bytes for i in present)


def _allocator(a: int, r: int, estimate: int, reserves: dict[str, Line]) -> GapPart:
    cached = r - a
    rid, line = _covering(reserves, ALLOCATOR_RESERVES)
    within = None if line is None else cached <= line
    meaning = (
        f"The caching allocator held {format_gib(cached)} beyond its largest allocation: "
        "freed blocks kept for reuse and the unused ends of split segments "
        "(fragmentation). PyTorch holds it, so no other process can use it, but no tensor "
        "does."
    )
    if within is False:
        # the measured share rounded up to 0.1%, so that the raised line covers it
        fraction = math.ceil(cached / estimate * 1000) / 1000
        set_line = (
            f" or raise the line to what was measured "
            f"(--reserve allocator_fragmentation={fraction:g})"
            if fraction < 1  # the line is a fraction in [0, 1)
            else ""
        )
        action = (
            "Above the fragmentation line: set PYTORCH_CUDA_ALLOC_CONF="
            "expandable_segments:True (segments grow in place instead of new ones being "
            "split), call torch.cuda.empty_cache() between phases of different shapes "
            "(evaluation and training, prompts of varied lengths), keep shapes steady "
            f"(pad to a few lengths){set_line}."
        )
    else:
        action = "Within the fragmentation line: nothing to do."
    return GapPart(
        id="allocator",
        label="Allocator cache and fragmentation (reserved - allocated)",
        bytes=cached,
        share_of_estimate=cached / estimate,
        reserve_id=rid,
        reserve_bytes=line,
        within_reserve=within,
        meaning=meaning,
        action=action,
    )


def _outside(r: int, u: int, estimate: int, reserves: dict[str, Line]) -> GapPart:
    outside = u - r
    rid, line = _covering(reserves, OUTSIDE_RESERVES)
    within = None if line is None else outside <= line
    meaning = (
        f"{format_gib(outside)} of the device is used outside PyTorch's allocator: the "
        "CUDA/HIP context and the kernels loaded so far, NCCL/RCCL communicator buffers, "
        "memory a library allocates itself, and any other process on the card (a device's "
        "used memory counts every process)."
    )
    if within is False:
        context = reserves.get("runtime_context")
        framework = outside - context.bytes if context is not None else None
        set_line = (
            f", or raise the framework_overhead line to what was measured "
            f"(--reserve framework_overhead={framework})"
            if framework is not None and framework > 0
            else ""
        )
        action = (
            "Above the context lines: look for another process on the card (nvidia-smi "
            "--query-compute-apps=pid,used_memory --format=csv), count the NCCL "
            "communicators (each process group adds its own buffers), and look for memory "
            "allocated outside PyTorch (a library's own cudaMalloc or memory pool, a graph "
            f"captured outside torch.cuda.graph's pool){set_line}."
        )
    else:
        action = "Within the context lines: nothing to do."
    return GapPart(
        id="outside_pytorch",
        label="Outside PyTorch (device used - reserved)",
        bytes=outside,
        share_of_estimate=outside / estimate,
        reserve_id=rid,
        reserve_bytes=line,
        within_reserve=within,
        meaning=meaning,
        action=action,
    )


def _missing(part: str, needs: tuple[str, ...], measured: Measured) -> str:
    absent = [n for n in needs if getattr(measured, n) is None]
    return f"{part} not computed: give {' and '.join(absent)}."


def memory_gap(
    estimate_lines: Sequence[Line], reserves: Sequence[Line], measured: Measured
) -> MemoryGap:
    """The gap between the estimate and the measurements, part by part.

    estimate_lines: the allocation lines the estimate sums (already computed by the
                    workload's calculator); E = sum of their bytes, which must be > 0.
    reserves:       the reserve lines of the runtime the run used (ids from
                    `calculators.memory.reserves`), with the reader's overrides.
    measured:       A, R, U in bytes (any may be None).

      model_error     = A - E   (no reserve line)
      allocator       = R - A   against allocator_fragmentation (f x E)
      outside_pytorch = U - R   against runtime_context + framework_overhead
      E + model_error + allocator + outside_pytorch = U   when all three are given

    Each part's share_of_estimate is its bytes / E. See the module docstring for the
    assumptions and sources.
    """
    lines = tuple(estimate_lines)
    estimate = sum(line.bytes for line in lines)
    if estimate <= 0:
        raise InputError(
            "estimate_lines", f"the estimate must be positive bytes, got {estimate:,} bytes"
        )
    by_id = {line.id: line for line in reserves}
    a, r, u = measured.allocated, measured.reserved, measured.device_used
    notes = []
    model_error = allocator = outside = None
    if a is not None:
        model_error = _model_error(a, estimate)
    else:
        notes.append(_missing("Model error (allocated - estimate)", ("allocated",), measured))
    if a is not None and r is not None:
        allocator = _allocator(a, r, estimate, by_id)
    else:
        notes.append(
            _missing("Allocator part (reserved - allocated)", ("allocated", "reserved"), measured)
        )
    if r is not None and u is not None:
        outside = _outside(r, u, estimate, by_id)
    else:
        notes.append(
            _missing(
                "Outside-PyTorch part (device used - reserved)",
                ("reserved", "device_used"),
                measured,
            )
        )
    return MemoryGap(
        estimate_lines=lines,
        estimate_bytes=estimate,
        measured=measured,
        model_error=model_error,
        allocator=allocator,
        outside_pytorch=outside,
        notes=tuple(notes),
    )


__all__ = [
    "MAX_MEASURED_BYTES",
    "UNIT_BYTES",
    "GapPart",
    "Measured",
    "MemoryGap",
    "measured_bytes",
    "memory_gap",
]
