"""The GPU catalog, as data: capacity, visible memory, bandwidth and dense peaks.

Conventions every entry follows (so one GPU can be compared with another):

- `memory_vendor` is the vendor's capacity figure verbatim, unit included ("80 GB HBM3").
- `memory_bytes` reads that figure as GiB (2**30 bytes). The vendor's "GB" on these parts
  is binary: an "80 GB" H100 is five 16 GiB HBM stacks, and `nvidia-smi` on an A100 80GB
  reports exactly 81920 MiB. HBM parts with a disabled or partly fused stack (H100 NVL,
  H200, B200) count the enabled capacity the vendor sells, not the stacks on the package.
- `visible_bytes` is what `torch.cuda.get_device_properties(0).total_memory` returns, i.e.
  `cudaDeviceProp.totalGlobalMem` / `hipDeviceProp_t.totalGlobalMem`, taken from public
  `deviceQuery` or PyTorch outputs. On current NVIDIA drivers it is a few hundred MiB below
  the `nvidia-smi` total, because the driver keeps a "Reserved" slice of the framebuffer
  that CUDA never offers; the `nvidia-smi` figure is quoted in `visible_source` beside it.
  Both numbers move slightly with the driver version; the driver seen is named.
- `bandwidth_gb_s` is the vendor's peak memory bandwidth in decimal GB/s.
- TFLOPS are dense (no 2:4 sparsity). Where a datasheet gives only the sparse figure
  (marked "with sparsity"), the dense figure is half of it; where an architecture
  whitepaper gives the dense figure itself, that is used. Consumer cards (RTX) use the
  BF16/FP8 tensor rate with FP32 accumulate from NVIDIA's architecture whitepapers.
- MI250X is two graphics compute dies (GCDs) that software sees as two devices; its vendor
  figures are for the whole card, its `visible_bytes` is one device (see that entry).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from calculators.checks import positive_int, positive_number
from calculators.errors import InputError, shown

Vendor = Literal["nvidia", "amd"]
Runtime = Literal["cuda", "hip"]

_GIB = 2**30
_MIB = 2**20

# Which runtime a vendor's cards are driven by; a mismatch is a typo in the table.
_RUNTIME_OF_VENDOR: dict[str, str] = {"nvidia": "cuda", "amd": "hip"}
_ID_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

# Permalink prefix of the public deviceQuery / nvidia-smi / rocminfo dumps used below.
_THAMADA = (
    "https://github.com/thamada/nvidia-smi/blob/c4c8a463a61e4ac67e3d7956da104b302760a498/gls/"
)
_ACHATBOT = (
    "https://github.com/ai-bot-pro/achatbot/blob/298019b35ebdd32d4ec0daae998b2308099ba77c/"
    "deploy/modal/src/llm/vllm/vlm/skywork_r1v.py"
)


def _require_text(field: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class GPU:
    """One accelerator model, with its vendor figures and the memory software sees.

    id:                 catalog key, lowercase words joined by '-', e.g. "h100-sxm".
    name:               marketing name with form factor and capacity.
    vendor, runtime:    "nvidia"/"cuda" or "amd"/"hip".
    memory_vendor:      vendor's capacity figure verbatim, with its unit.
    memory_bytes:       that figure read as GiB (see the module docstring).
    visible_bytes:      torch `total_memory` of one device; at most `memory_bytes`.
    visible_source:     where `visible_bytes` was seen, or how it was derived.
    bandwidth_gb_s:     vendor peak memory bandwidth, decimal GB/s.
    bf16_dense_tflops:  dense BF16 tensor peak (FP32 accumulate on consumer cards).
    fp8_dense_tflops:   dense FP8 tensor peak, or None without FP8 tensor cores.
    source:             datasheet(s) and whitepaper(s) the vendor figures come from.
    """

    id: str
    name: str
    vendor: Vendor
    runtime: Runtime
    memory_vendor: str
    memory_bytes: int
    visible_bytes: int
    visible_source: str
    bandwidth_gb_s: float
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None
    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID_PATTERN.fullmatch(self.id):
            raise ValueError(f"id must be lowercase letters/digits joined by '-', got {self.id!r}")
        for field in ("name", "memory_vendor", "visible_source", "source"):
            _require_text(field, getattr(self, field))
        if self.vendor not in _RUNTIME_OF_VENDOR:
            raise ValueError(
                f"vendor must be one of {sorted(_RUNTIME_OF_VENDOR)}, got {self.vendor!r}"
            )
        expected_runtime = _RUNTIME_OF_VENDOR[self.vendor]
        if self.runtime != expected_runtime:
            raise ValueError(
                f"runtime must be {expected_runtime!r} for vendor {self.vendor!r}, "
                f"got {self.runtime!r}"
            )
        positive_int("memory_bytes", self.memory_bytes)
        positive_int("visible_bytes", self.visible_bytes)
        if self.visible_bytes > self.memory_bytes:
            raise ValueError(
                f"visible_bytes must be at most memory_bytes ({self.memory_bytes}), "
                f"got {self.visible_bytes}"
            )
        positive_number("bandwidth_gb_s", self.bandwidth_gb_s)
        positive_number("bf16_dense_tflops", self.bf16_dense_tflops)
        if self.fp8_dense_tflops is not None:
            positive_number("fp8_dense_tflops", self.fp8_dense_tflops)

    @property
    def memory_gib(self) -> float:
        """Physical capacity in GiB (2**30 bytes)."""
        return self.memory_bytes / _GIB

    @property
    def visible_gib(self) -> float:
        """Software-visible capacity in GiB (2**30 bytes)."""
        return self.visible_bytes / _GIB


GPUS: tuple[GPU, ...] = (
    GPU(
        id="h100-sxm",
        name="NVIDIA H100 SXM5 80GB",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="80 GB HBM3",
        # Five active 16 GiB HBM3 stacks.
        memory_bytes=80 * _GIB,
        visible_bytes=85_045_477_376,
        visible_source=(
            "deviceQuery on 'NVIDIA H100 80GB HBM3', driver 565.57.01 / CUDA 12.7: "
            "'Total amount of global memory: 81106 MBytes (85045477376 bytes)', "
            f"{_THAMADA}H100SXMx8_deviceQuery.py . nvidia-smi total on the same card: "
            "81559MiB, e.g. https://github.com/NVIDIA/nccl/issues/1264 . Other public "
            "PyTorch outputs show total_memory 81008-81090 MiB on other drivers."
        ),
        bandwidth_gb_s=3350.0,
        bf16_dense_tflops=989.4,
        fp8_dense_tflops=1978.9,
        source=(
            "NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 'H100 SXM5': "
            "peak BF16 989.4 / FP8 1978.9 TFLOPS dense "
            "(https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper); "
            "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: 80GB, 3.35TB/s "
            "(https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)"
        ),
    ),
    GPU(
        id="h100-pcie",
        name="NVIDIA H100 PCIe 80GB",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="80 GB HBM2e",
        memory_bytes=80 * _GIB,
        visible_bytes=85_045_477_376,
        visible_source=(
            "no linkable public torch/deviceQuery output found; nvaccelinfo 'Global Memory "
            "Size: 85045477376' for 'NVIDIA H100 PCIe' on driver 565.57.01 appears in "
            "public GitHub text whose repository the search index does not name, and it "
            "equals the H100 SXM deviceQuery figure on the same driver "
            f"({_THAMADA}H100SXMx8_deviceQuery.py). nvidia-smi total 81559MiB, as on SXM."
        ),
        bandwidth_gb_s=2000.0,
        bf16_dense_tflops=756.5,
        fp8_dense_tflops=1513.0,
        source=(
            "NVIDIA H100 Tensor Core GPU datasheet (2022), H100 PCIe: BF16 1,513 and FP8 "
            "3,026 TFLOPS with sparsity, 'specifications 1/2 lower without sparsity', "
            "80GB, 2TB/s (https://resources.nvidia.com/en-us-tensor-core/"
            "nvidia-tensor-core-gpu-datasheet); H100 PCIe product brief PB-11133-001_v02 "
            "(memory bandwidth greater than 2,000 GB/s); the Hopper whitepaper rounds "
            "BF16 to 756"
        ),
    ),
    GPU(
        id="h100-nvl",
        name="NVIDIA H100 NVL 94GB",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="94 GB HBM3",
        # Six 16 GiB stacks on the package (6144-bit bus); 94 GiB of them enabled.
        memory_bytes=94 * _GIB,
        visible_bytes=99_861_594_112,
        visible_source=(
            "deviceQuery on 'NVIDIA H100 NVL', CUDA 12.4 driver (550.54.14): 'Total amount "
            f"of global memory: 95235 MBytes (99861594112 bytes)', {_THAMADA}"
            "H100NVLx2_deviceQuery.py . nvidia-smi total 95830MiB at "
            "https://github.com/NVIDIA/gpu-admin-tools/issues/4"
        ),
        bandwidth_gb_s=3900.0,
        bf16_dense_tflops=835.5,
        fp8_dense_tflops=1670.5,
        source=(
            "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL: BF16 1,671 and FP8 3,341 "
            "TFLOPS with sparsity (halved for dense), 94GB, 3.9TB/s "
            "(https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)"
        ),
    ),
    GPU(
        id="h200",
        name="NVIDIA H200 SXM 141GB",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="141 GB HBM3e",
        # Six 24 GiB HBM3e stacks (144 GiB) on the package; 141 GiB enabled.
        memory_bytes=141 * _GIB,
        # PyTorch prints total_memory // 2**20 as "MB", so this is exact to 1 MiB below.
        visible_bytes=143_156 * _MIB,
        visible_source=(
            "PyTorch \"_CudaDeviceProperties(name='NVIDIA H200', major=9, minor=0, "
            f'total_memory=143156MB, ...)" (MiB, floored) in {_ACHATBOT} . nvidia-smi '
            "total 143771MiB appears in public GitHub text (H200 NVL, driver 580.126.20) "
            "whose repository the search index does not name."
        ),
        bandwidth_gb_s=4800.0,
        bf16_dense_tflops=989.5,
        fp8_dense_tflops=1979.0,
        source=(
            "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: BF16 1,979 and FP8 3,958 "
            "TFLOPS with sparsity (halved for dense), 141GB HBM3e, 4.8TB/s "
            "(https://www.nvidia.com/en-us/data-center/h200/)"
        ),
    ),
    GPU(
        id="a100-40gb",
        name="NVIDIA A100 SXM4 40GB",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="40 GB HBM2",
        # Five active 8 GiB HBM2 stacks; nvidia-smi shows exactly 40960 MiB.
        memory_bytes=40 * _GIB,
        visible_bytes=42_298_834_944,
        visible_source=(
            "deviceQuery on 'NVIDIA A100-SXM4-40GB', CUDA 12.2 driver: 'Total amount of "
            "global memory: 40339 MBytes (42298834944 bytes)' at "
            "https://github.com/bottlerocket-os/bottlerocket/pull/3873 . nvidia-smi total "
            "40960MiB, listed at https://github.com/modal-labs/modal-client/pull/2797"
        ),
        bandwidth_gb_s=1555.0,
        bf16_dense_tflops=312.0,
        fp8_dense_tflops=None,
        source=(
            "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
            "(624 with sparsity), A100 40GB SXM 1,555GB/s, no FP8 "
            "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
            "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)"
        ),
    ),
    GPU(
        id="a100-80gb",
        name="NVIDIA A100 SXM4 80GB",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="80 GB HBM2e",
        # Five active 16 GiB HBM2e stacks; nvidia-smi shows exactly 81920 MiB.
        memory_bytes=80 * _GIB,
        visible_bytes=85_100_068_864,
        visible_source=(
            "deviceQuery on 'NVIDIA A100-SXM4-80GB', CUDA 12.5 driver (555.42.02): 'Total "
            f"amount of global memory: 81158 MBytes (85100068864 bytes)', {_THAMADA}"
            "A100SXMx4_deviceQuery.py . nvidia-smi total 81920MiB at "
            "https://github.com/NVIDIA/mig-parted/issues/31"
        ),
        bandwidth_gb_s=2039.0,
        bf16_dense_tflops=312.0,
        fp8_dense_tflops=None,
        source=(
            "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
            "(624 with sparsity), A100 80GB SXM 2,039GB/s, no FP8 "
            "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
            "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)"
        ),
    ),
    GPU(
        id="l40s",
        name="NVIDIA L40S",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="48 GB GDDR6 with ECC",
        # 48 GiB of GDDR6; inline ECC (on by default) is why software sees about 45 GiB.
        memory_bytes=48 * _GIB,
        visible_bytes=47_803_596_800,
        visible_source=(
            "deviceQuery on 'NVIDIA L40S', ECC enabled, CUDA 12.4 driver (550.127.05): "
            "'Total amount of global memory: 45589 MBytes (47803596800 bytes)', "
            f"{_THAMADA}L40S_deviceQuery.py . nvidia-smi total 46068MiB ({_THAMADA}"
            "L40S_smi.py; also https://github.com/modal-labs/modal-client/pull/2797)"
        ),
        bandwidth_gb_s=864.0,
        bf16_dense_tflops=362.05,
        fp8_dense_tflops=733.0,
        source=(
            "NVIDIA L40S GPU datasheet: BF16 Tensor Core 362.05 | 733 (sparse), FP8 Tensor "
            "Core 733 | 1,466 (sparse) TFLOPS, 48GB GDDR6 with ECC, 864GB/s "
            "(https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413)"
        ),
    ),
    GPU(
        id="l4",
        name="NVIDIA L4",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="24 GB GDDR6",
        memory_bytes=24 * _GIB,
        visible_bytes=23_570_219_008,
        visible_source=(
            "deviceQuery on 'NVIDIA L4', ECC enabled, CUDA 12.4 driver: 'Total amount of "
            f"global memory: 22478 MBytes (23570219008 bytes)', {_THAMADA}L4_deviceQuery.py"
            f" . nvidia-smi total 23034MiB ({_THAMADA}L4_smi.py, driver 550.90.07; also "
            "https://github.com/modal-labs/modal-client/pull/2797)"
        ),
        bandwidth_gb_s=300.0,
        bf16_dense_tflops=121.0,
        fp8_dense_tflops=242.5,
        source=(
            "NVIDIA L4 Tensor Core GPU datasheet: BF16 Tensor Core 242 and FP8 Tensor Core "
            "485 TFLOPS with sparsity (halved for dense), 24GB, 300GB/s "
            "(https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet)"
        ),
    ),
    GPU(
        id="a10g",
        name="NVIDIA A10G (AWS EC2 G5)",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="24 GB GDDR6",
        memory_bytes=24 * _GIB,
        visible_bytes=22_587 * _MIB,
        visible_source=(
            "PyTorch \"_CudaDeviceProperties(name='NVIDIA A10G', major=8, minor=6, "
            'total_memory=22587MB, multi_processor_count=80, ...)" (torch 2.15 dev, '
            "cu130) in public GitHub text whose repository the search index does not "
            "name; MiB, floored. nvidia-smi total 23028MiB (driver 535.247.01) at "
            "https://github.com/NVIDIA/DCGM/issues/232"
        ),
        bandwidth_gb_s=600.0,
        bf16_dense_tflops=70.0,
        fp8_dense_tflops=None,
        source=(
            "UNCERTAIN: NVIDIA publishes no A10G datasheet and AWS gives only '24 GB' per "
            "GPU (https://aws.amazon.com/ec2/instance-types/g5/). Baseten, 'NVIDIA A10 vs "
            "A10G for ML model inference' (https://www.baseten.co/blog/"
            "nvidia-a10-vs-a10g-for-ml-model-inference/): same 24 GB GDDR6 and 600 GB/s "
            "as the A10, less tensor compute than the A10's 125 TFLOPS BF16 (NVIDIA A10 "
            "datasheet). 70 TFLOPS is derived, not published: 80 SMs (torch "
            "multi_processor_count) x 1.71 GHz boost x 512 dense BF16 FLOP/clk/SM, the "
            "GA10x FP32-accumulate rate that gives the RTX 3090's 71 TFLOPS in NVIDIA's "
            "GA102 whitepaper. Ampere has no FP8."
        ),
    ),
    GPU(
        id="rtx-4090",
        name="NVIDIA GeForce RTX 4090",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="24 GB GDDR6X",
        memory_bytes=24 * _GIB,
        visible_bytes=25_386_352_640,
        visible_source=(
            "deviceQuery on 'NVIDIA GeForce RTX 4090', CUDA 12.4 driver (550.127.05): "
            "'Total amount of global memory: 24210 MBytes (25386352640 bytes)', "
            f"{_THAMADA}RTX4090_deviceQuery.py . nvidia-smi total 24564MiB at "
            "https://github.com/RLinf/RLinf/issues/255"
        ),
        bandwidth_gb_s=1008.0,
        bf16_dense_tflops=165.2,
        fp8_dense_tflops=330.3,
        source=(
            "NVIDIA Ada GPU Architecture whitepaper, GeForce RTX 4090 column: peak BF16 "
            "Tensor TFLOPS with FP32 accumulate 165.2 dense (330.4 sparse), peak FP8 Tensor "
            "TFLOPS with FP32 accumulate 330.3 dense (660.6 sparse), 24 GB GDDR6X, "
            "1008 GB/s (https://images.nvidia.com/aem-dam/Solutions/geforce/ada/"
            "nvidia-ada-gpu-architecture.pdf). GeForce runs FP32-accumulate tensor math at "
            "half the FP16-accumulate rate, hence the FP32-accumulate figures."
        ),
    ),
    GPU(
        id="rtx-3090",
        name="NVIDIA GeForce RTX 3090",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="24 GB GDDR6X",
        memory_bytes=24 * _GIB,
        visible_bytes=25_327_697_920,
        visible_source=(
            "deviceQuery on 'NVIDIA GeForce RTX 3090', CUDA 12.6 driver (560.35.03): "
            "'Total amount of global memory: 24154 MBytes (25327697920 bytes)', "
            f"{_THAMADA}RTX3090_deviceQuery.py . nvidia-smi total 24576MiB at "
            "https://github.com/noonghunna/club-3090/issues/390"
        ),
        bandwidth_gb_s=936.0,
        bf16_dense_tflops=71.0,
        fp8_dense_tflops=None,
        source=(
            "NVIDIA Ampere GA102 GPU Architecture whitepaper, GeForce RTX 3090 column: peak "
            "BF16 Tensor TFLOPS with FP32 accumulate 71 dense (142 sparse), 24 GB GDDR6X, "
            "936 GB/s (https://www.nvidia.com/content/PDF/"
            "nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf). Ampere has no FP8."
        ),
    ),
    GPU(
        id="mi300x",
        name="AMD Instinct MI300X",
        vendor="amd",
        runtime="hip",
        memory_vendor="192 GB HBM3",
        # Eight 24 GiB HBM3 stacks.
        memory_bytes=192 * _GIB,
        visible_bytes=206_141_652_992,
        visible_source=(
            "hipDeviceProp totalGlobalMem 196592 MiB and rocminfo GPU pool 'Size: "
            "201310208(0xbffc000) KB' (= 206141652992 bytes, 16 MiB under 192 GiB) on bare-"
            f"metal MI300X, {_THAMADA}MI300X_x4_deviceQuery.py and {_THAMADA}"
            "MI300X_x4_rocminfo.py; same pool size at "
            "https://github.com/ROCm/rocm-examples/issues/187 . Cloud SR-IOV VFs "
            "('MI300X VF') report less: rocm-smi VRAM Total 205822885888 B in public text."
        ),
        bandwidth_gb_s=5300.0,
        bf16_dense_tflops=1307.4,
        fp8_dense_tflops=2614.9,
        source=(
            "AMD Instinct MI300X accelerator data sheet: peak BF16 1307.4 TFLOPS (2614.9 "
            "with sparsity), peak FP8 2614.9 TFLOPS (5229.8 with sparsity), 192 GB HBM3, "
            "5.3 TB/s (https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/"
            "data-sheets/amd-instinct-mi300x-data-sheet.pdf)"
        ),
    ),
    GPU(
        id="mi325x",
        name="AMD Instinct MI325X",
        vendor="amd",
        runtime="hip",
        memory_vendor="256 GB HBM3E",
        # Eight 32 GiB HBM3E stacks.
        memory_bytes=256 * _GIB,
        visible_bytes=256 * _GIB - 16 * _MIB,
        visible_source=(
            "not seen in a public output; derived from 256 GiB less the 16 MiB that the "
            "MI300X (same CDNA3 dies and driver) keeps out of its rocminfo/HIP total "
            "(201310208 KB under 192 GiB, see the mi300x entry)"
        ),
        bandwidth_gb_s=6000.0,
        bf16_dense_tflops=1307.4,
        fp8_dense_tflops=2614.9,
        source=(
            "AMD Instinct MI325X accelerator data sheet: peak BF16 1307.4 TFLOPS, peak FP8 "
            "2614.9 TFLOPS dense (same compute as MI300X), 256 GB HBM3E, 6 TB/s "
            "(https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html)"
        ),
    ),
    GPU(
        id="mi250x",
        name="AMD Instinct MI250X (two GCDs, each one 64 GB device)",
        vendor="amd",
        runtime="hip",
        memory_vendor="128 GB HBM2e",
        # Eight 16 GiB HBM2e stacks, four per GCD; the whole card's capacity.
        memory_bytes=128 * _GIB,
        # One GCD: what torch.cuda device 0 sees. The card is two such devices.
        visible_bytes=64 * _GIB - 16 * _MIB,
        visible_source=(
            "per GCD, since ROCm exposes each of the two GCDs as its own device; not seen "
            "in a public output tied to MI250X; derived as 64 GiB less 16 MiB, the MI300X "
            "carve-out (see mi300x). That value, 67092480 KB, does appear as a rocminfo "
            "COARSE GRAINED pool in public text for an unnamed 64 GB CDNA device."
        ),
        bandwidth_gb_s=3276.8,
        bf16_dense_tflops=383.0,
        fp8_dense_tflops=None,
        source=(
            "AMD Instinct MI250X specifications (whole card, both GCDs): peak BF16 383.0 "
            "TFLOPS, 128 GB HBM2e, peak memory bandwidth 3.2768 TB/s, no FP8 "
            "(https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html)"
        ),
    ),
    GPU(
        id="b200",
        name="NVIDIA B200 (HGX B200) 180GB",
        vendor="nvidia",
        runtime="cuda",
        memory_vendor="180 GB HBM3e",
        # HGX/DGX B200 ship 180 GB per GPU (1,440 GB per 8-GPU board); launch material
        # said 192 GB, the eight-stack package size. Enabled capacity counted, as GiB.
        memory_bytes=180 * _GIB,
        visible_bytes=182_642 * _MIB,
        visible_source=(
            "PyTorch \"_CudaDeviceProperties(name='NVIDIA B200', major=10, minor=0, "
            f'total_memory=182642MB, ...)" (MiB, floored) in {_ACHATBOT} . On another '
            "B200/driver, nvidia-smi total 183359 MiB and torch.cuda.mem_get_info total "
            "182633 MiB at https://github.com/unslothai/unsloth/pull/8669"
        ),
        bandwidth_gb_s=7700.0,
        bf16_dense_tflops=2250.0,
        fp8_dense_tflops=4500.0,
        source=(
            "NVIDIA HGX platform specifications, HGX B200 per-GPU column: FP16/BF16 Tensor "
            "Core 4.5 PFLOPS and FP8/FP6 9 PFLOPS with sparsity (halved for dense), "
            "180GB HBM3E, 7.7TB/s (https://www.nvidia.com/en-us/data-center/hgx/). The DGX "
            "B200 datasheet instead gives 64TB/s for 8 GPUs (8 TB/s each); 7.7 TB/s kept "
            "as the per-GPU figure NVIDIA states."
        ),
    ),
)

_BY_ID: dict[str, GPU] = {gpu.id: gpu for gpu in GPUS}
# A duplicate id would silently shadow a card in the lookup; fail at import instead.
if len(_BY_ID) != len(GPUS):
    raise ValueError("GPUS has duplicate ids")


def get_gpu(gpu_id: str) -> GPU:
    """The catalog entry for `gpu_id`; ValueError naming the known ids otherwise."""
    try:
        return _BY_ID[gpu_id]
    except (KeyError, TypeError):
        known = ", ".join(_BY_ID)
        raise InputError("gpu", f"gpu must be one of {known}; got {shown(gpu_id)}") from None
