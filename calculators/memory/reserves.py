"""Default reserve lines of the GPU memory envelope, as data, one table per runtime.

The envelope starts from what one device offers software (`GPU.visible_bytes`, i.e.
torch's `total_memory`, which already excludes the driver's reserved framebuffer) and
subtracts named lines; none of them is a hidden multiplier. A line is either fixed bytes
per process per device (`kind="bytes"`) or a fraction of the allocations it names in
`applies_to` (`kind="fraction"`). Callers show each line and let users override it.

Defaults are meant to be a little above typical measurements, so that a plan that fits
on paper also fits on the card; each line's `rationale` gives the numbers it rests on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from calculators.checks import fraction, non_negative_int
from calculators.errors import InputError, shown
from calculators.units import format_gib

Kind = Literal["bytes", "fraction"]
Runtime = Literal["cuda", "hip"]

_MIB = 2**20
_KINDS = ("bytes", "fraction")
_ID_PATTERN = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")


@dataclass(frozen=True, kw_only=True)
class ReserveDefault:
    """One default reserve line.

    id:          snake_case key, e.g. "runtime_context".
    label:       short text shown in the envelope table.
    kind:        "bytes" (fixed, per process per device) or "fraction" (of `applies_to`).
    value:       int bytes for "bytes"; a float in (0, 1) for "fraction".
    applies_to:  what the line scales with, or where a fixed line is charged.
    rationale:   why this value, with the measurements behind it.
    source:      where those measurements and rules come from (URLs).
    """

    id: str
    label: str
    kind: Kind
    value: int | float
    applies_to: str
    rationale: str
    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID_PATTERN.fullmatch(self.id):
            raise ValueError(f"id must be lowercase letters/digits joined by '_', got {self.id!r}")
        for field in ("label", "applies_to", "rationale", "source"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{field} must be a non-empty string, got {value!r}")
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {list(_KINDS)}, got {self.kind!r}")
        value = self.value
        if self.kind == "bytes":
            # bool is an int subclass; it is never a byte count.
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"value must be a positive integer of bytes for kind 'bytes', got {value!r}"
                )
        elif (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0 < value < 1
        ):
            raise ValueError(
                f"value must be a fraction strictly between 0 and 1 for kind 'fraction', "
                f"got {value!r}"
            )


# The caching allocator is the same code on both runtimes (ROCm builds of PyTorch hipify
# c10/cuda/CUDACachingAllocator.cpp), so one fragmentation line serves both tables.
_ALLOCATOR_FRAGMENTATION = ReserveDefault(
    id="allocator_fragmentation",
    label="Caching-allocator fragmentation",
    kind="fraction",
    value=0.05,
    applies_to=(
        "weights + KV cache + activations (all bytes the PyTorch caching allocator hands out)"
    ),
    rationale=(
        "PyTorch keeps freed blocks cached and splits cached segments; memory that is "
        "reserved but not allocated is lost to new requests that do not fit a free block. "
        "Sizes are rounded (512 B minimum, 2 MiB for requests over 1 MiB; small requests "
        "share 2 MiB segments, 1-10 MiB ones 20 MiB segments). Public OOM reports show the "
        "reserved-but-unallocated gap from 0.33 GiB on 68.83 GiB allocated (0.5%, vLLM "
        "steady state) to 2.63 GiB on 28.34 GiB (9.3%, SDXL with CUDA graphs). 5% sits "
        "between them; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True shrinks it, so "
        "users who set it may lower this line."
    ),
    source=(
        "PyTorch docs, CUDA semantics > Memory management and PYTORCH_CUDA_ALLOC_CONF "
        "(https://pytorch.org/docs/stable/notes/cuda.html#memory-management); "
        "E. Yang, 'When does fragmentation occur in the CUDA caching allocator?' "
        "(https://github.com/pytorch/devlogs/blob/main/content/eager/"
        "2026-06-01-cuda-caching-allocator.md); rounding constants kMinBlockSize, "
        "kSmallSize, kSmallBuffer, kLargeBuffer, kRoundLarge in c10/cuda/"
        "CUDACachingAllocator.cpp (https://github.com/pytorch/pytorch/blob/main/c10/cuda/"
        "CUDACachingAllocator.cpp); gaps from https://github.com/vllm-project/vllm/issues/"
        "27508 and https://github.com/siliconflow/onediff/pull/1041"
    ),
)

_CUDA_RESERVES: tuple[ReserveDefault, ...] = (
    ReserveDefault(
        id="runtime_context",
        label="CUDA context and loaded kernels",
        kind="bytes",
        value=768 * _MIB,
        applies_to="each process on each GPU it uses (fixed, not scaled)",
        rationale=(
            "The first CUDA call creates a context holding driver state and the kernel "
            "images loaded so far; PyTorch's allocator never sees it. With lazy module "
            "loading (CUDA_MODULE_LOADING=LAZY, PyTorch's default since 1.13 on CUDA >= "
            "11.7) public measurements are 287,047,680 B used after one small tensor on the "
            "PR that made LAZY the default (666,632,192 B eager), 256 MiB on an RTX 3090, "
            "~300-400 MB per PyTorch maintainers, 426 MiB on an RTX 6000 Ada and 612 MiB on "
            "a B200. Lazily loaded kernels (attention, GEMM variants) add to it as "
            "a model first runs, so the default is the largest measurement plus ~150 MiB."
        ),
        source=(
            "https://github.com/pytorch/pytorch/pull/86509 (LAZY default, 287,047,680 vs "
            "666,632,192 bytes); https://github.com/pytorch/pytorch/issues/109888 and "
            "https://github.com/pytorch/pytorch/issues/107667 (ptrblck: ~400 MB / ~300 MB "
            "with lazy loading, >1000 MB before CUDA 11.7); "
            "https://github.com/invoke-ai/InvokeAI/issues/9413 (RTX 3090, 256 MiB); "
            "https://github.com/unslothai/unsloth-zoo/pull/1053 (RTX 6000 Ada, 426 MiB); "
            "https://github.com/unslothai/unsloth/pull/8669 (B200, 612 MiB)"
        ),
    ),
    _ALLOCATOR_FRAGMENTATION,
    ReserveDefault(
        id="framework_overhead",
        label="cuBLAS/cuDNN workspaces and NCCL buffers",
        kind="bytes",
        value=512 * _MIB,
        applies_to="each process on each GPU it uses, with one NCCL communicator (fixed)",
        rationale=(
            "PyTorch gives every (cuBLAS handle, stream) pair a workspace from its "
            "allocator: 32 MiB on sm90+ (':4096:8') and 8 MiB + 128 KiB (':4096:2:16:8') "
            "before, unless CUBLAS_WORKSPACE_CONFIG says otherwise; cuBLASLt shares it by "
            "default. A few streams cost up to ~128 MiB. An NCCL communicator adds its "
            "channel buffers outside the allocator; a public multi-GPU torchrec run on "
            "A100 80GB shows nvidia-smi used minus torch reserved = 6753 - 5964 = 789 MiB, "
            "which holds the context (~300-400 MiB) plus NCCL and friends. 512 MiB covers "
            "one communicator and the workspaces; add more per extra communicator "
            "(TP + DP + PP groups) or for cuDNN convolution workspaces."
        ),
        source=(
            "PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize "
            "(default 4096*8*1024 on sm90, else 4096*1024*2 + 16*1024*8) and "
            "getCUDABlasLtWorkspaceSize (unified workspace) "
            "(https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/"
            "CublasHandlePool.cpp); PyTorch docs, Reproducibility > cuBLAS "
            "(https://pytorch.org/docs/stable/notes/randomness.html); "
            "https://github.com/meta-pytorch/torchrec/pull/3580 (used vs reserved)"
        ),
    ),
)

_HIP_RESERVES: tuple[ReserveDefault, ...] = (
    ReserveDefault(
        id="runtime_context",
        label="HIP runtime context and loaded code objects",
        kind="bytes",
        value=1024 * _MIB,
        applies_to="each process on each GPU it uses (fixed, not scaled)",
        rationale=(
            "UNCERTAIN: no public measurement of a bare HIP context on MI300X was found. "
            "vLLM's ROCm CI notes that PyTorch's initialization overhead is larger on ROCm "
            "than on CUDA, and LUMI's AI guide tracks the HIP context as memory PyTorch "
            "does not report. 1 GiB is taken as a margin above the CUDA default (768 MiB); "
            "measure with torch.cuda.mem_get_info() right after the first allocation on "
            "the target ROCm version and replace."
        ),
        source=(
            "https://github.com/vllm-project/vllm/pull/43236 (ROCm init overhead larger "
            "than CUDA); https://github.com/Lumi-supercomputer/LUMI-AI-Guide/issues/111 "
            "(HIP context and RCCL buffers not visible to PyTorch)"
        ),
    ),
    _ALLOCATOR_FRAGMENTATION,
    ReserveDefault(
        id="framework_overhead",
        label="hipBLASLt workspace and RCCL buffers",
        kind="bytes",
        value=1152 * _MIB,
        applies_to="each process on each GPU it uses, with one RCCL communicator (fixed)",
        rationale=(
            "PyTorch's ROCm build gives hipBLASLt a 76 MiB workspace by default "
            "(HIPBLASLT_WORKSPACE_SIZE). RCCL communicator memory is outside the "
            "allocator: measured on LUMI (MI250X) at about 1 GiB for the first "
            "communicator plus ~0.65 GiB per additional communicator per rank. 1 GiB + "
            "76 MiB, rounded up to 1.125 GiB, covers one communicator; add ~0.65 GiB per "
            "extra TP/DP/PP group. The LUMI figure includes its Slingshot (CXI) network "
            "plugin; single-node xGMI jobs may need less."
        ),
        source=(
            "PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp, parseCUDABlasLtWorkspaceSize "
            "('Use 76 MB for hipBLASLt') (https://github.com/pytorch/pytorch/blob/main/"
            "aten/src/ATen/cuda/CublasHandlePool.cpp); "
            "https://github.com/Lumi-supercomputer/LUMI-AI-Guide/issues/111 (RCCL ~1 GiB "
            "initial + ~0.65 GiB per additional communicator)"
        ),
    ),
)

_RESERVES_BY_RUNTIME: dict[str, tuple[ReserveDefault, ...]] = {
    "cuda": _CUDA_RESERVES,
    "hip": _HIP_RESERVES,
}


def default_reserves(runtime: Runtime) -> tuple[ReserveDefault, ...]:
    """The default reserve lines for `runtime`, in display order."""
    try:
        return _RESERVES_BY_RUNTIME[runtime]
    except (KeyError, TypeError):
        known = ", ".join(_RESERVES_BY_RUNTIME)
        raise InputError(
            "runtime", f"runtime must be one of {known}; got {shown(runtime)}"
        ) from None


@dataclass(frozen=True, kw_only=True)
class Line:
    """One line of a memory budget: bytes, how they were obtained, and the source."""

    id: str
    label: str
    bytes: int
    basis: str
    source: str


def check_reserve_overrides(overrides: Mapping[str, int | float]) -> None:
    """ValueError unless every key is a reserve id and every value fits that line's kind."""
    known = {r.id: r for r in default_reserves("cuda")}
    for rid, value in overrides.items():
        if rid not in known:
            raise InputError(
                "reserve", f"reserve must be one of {', '.join(known)}; got {shown(rid)}"
            )
        try:
            if known[rid].kind == "fraction":
                fraction(rid, value)
            else:
                non_negative_int(rid, value)
        except InputError as e:
            raise InputError("reserve", f"reserve {e}") from None


def reserve_lines(
    runtime: Runtime,
    demand: int,
    overrides: Mapping[str, int | float],
    *,
    demand_label: str | None = None,
) -> list[Line]:
    """The reserve lines of `runtime` on top of `demand` bytes of allocations.

    A fixed line is its bytes; a fraction line is ceil(fraction x demand), described as
    a share of `demand_label` (default: the line's own `applies_to`). `overrides`
    replaces a default by id and the line says so.
    """
    lines = []
    for r in default_reserves(runtime):
        value = overrides.get(r.id, r.value)
        overridden = r.id in overrides
        if r.kind == "fraction":
            amount = math.ceil(value * demand)
            basis = f"{value:.1%} of {demand_label or r.applies_to}, {format_gib(demand)}"
        else:
            amount = int(value)
            basis = r.applies_to
        lines.append(
            Line(
                id=r.id,
                label=r.label,
                bytes=amount,
                basis=basis + (" (set by the user)" if overridden else ""),
                source="user input" if overridden else r.source,
            )
        )
    return lines
