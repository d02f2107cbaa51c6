"""Tests for the GPU catalog: pinned datasheet values, invariants, lookup and validation."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.memory.gpus import GPU, GPUS, get_gpu

GIB = 2**30
MIB = 2**20

EXPECTED_IDS = {
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200",
    "a100-40gb",
    "a100-80gb",
    "l40s",
    "l4",
    "a10g",
    "rtx-4090",
    "rtx-3090",
    "mi300x",
    "mi325x",
    "mi250x",
    "b200",
}

# (id, BF16 dense TFLOPS, FP8 dense TFLOPS, bandwidth GB/s, vendor capacity), each from the
# document named in the comment; sparse-only datasheet figures are halved.
DATASHEET = [
    # NVIDIA H100 whitepaper Table 3 (SXM5 989.4 / 1978.9); H100 datasheet 3.35TB/s.
    ("h100-sxm", 989.4, 1978.9, 3350.0, "80 GB HBM3"),
    # NVIDIA H100 datasheet, PCIe: 1,513 / 3,026 with sparsity; 2TB/s.
    ("h100-pcie", 756.5, 1513.0, 2000.0, "80 GB HBM2e"),
    # NVIDIA H100 datasheet, NVL: 1,671 / 3,341 with sparsity; 94GB; 3.9TB/s.
    ("h100-nvl", 835.5, 1670.5, 3900.0, "94 GB HBM3"),
    # NVIDIA H200 datasheet: 1,979 / 3,958 with sparsity; 141GB; 4.8TB/s.
    ("h200", 989.5, 1979.0, 4800.0, "141 GB HBM3e"),
    # NVIDIA A100 datasheet: BF16 312 dense; 40GB 1,555GB/s; 80GB SXM 2,039GB/s; no FP8.
    ("a100-40gb", 312.0, None, 1555.0, "40 GB HBM2"),
    ("a100-80gb", 312.0, None, 2039.0, "80 GB HBM2e"),
    # NVIDIA L40S datasheet: BF16 362.05 | 733, FP8 733 | 1,466; 864GB/s.
    ("l40s", 362.05, 733.0, 864.0, "48 GB GDDR6 with ECC"),
    # NVIDIA L4 datasheet: BF16 242*, FP8 485* (with sparsity); 300GB/s.
    ("l4", 121.0, 242.5, 300.0, "24 GB GDDR6"),
    # No NVIDIA A10G datasheet: Baseten A10 vs A10G (600 GB/s) and a derived 70 TFLOPS.
    ("a10g", 70.0, None, 600.0, "24 GB GDDR6"),
    # NVIDIA Ada whitepaper, RTX 4090, FP32 accumulate: BF16 165.2, FP8 330.3; 1008 GB/s.
    ("rtx-4090", 165.2, 330.3, 1008.0, "24 GB GDDR6X"),
    # NVIDIA GA102 whitepaper, RTX 3090, BF16 with FP32 accumulate 71; 936 GB/s.
    ("rtx-3090", 71.0, None, 936.0, "24 GB GDDR6X"),
    # AMD MI300X data sheet: BF16 1307.4, FP8 2614.9; 5.3 TB/s.
    ("mi300x", 1307.4, 2614.9, 5300.0, "192 GB HBM3"),
    # AMD MI325X data sheet: same compute as MI300X; 6 TB/s.
    ("mi325x", 1307.4, 2614.9, 6000.0, "256 GB HBM3E"),
    # AMD MI250X specifications: BF16 383.0; 3.2768 TB/s; no FP8.
    ("mi250x", 383.0, None, 3276.8, "128 GB HBM2e"),
    # NVIDIA HGX B200 per GPU: BF16 4.5 PF and FP8 9 PF with sparsity; 7.7TB/s.
    ("b200", 2250.0, 4500.0, 7700.0, "180 GB HBM3e"),
]

PHYSICAL_GIB = {
    "h100-sxm": 80,
    "h100-pcie": 80,
    "h100-nvl": 94,
    "h200": 141,
    "a100-40gb": 40,
    "a100-80gb": 80,
    "l40s": 48,
    "l4": 24,
    "a10g": 24,
    "rtx-4090": 24,
    "rtx-3090": 24,
    "mi300x": 192,
    "mi325x": 256,
    "mi250x": 128,
    "b200": 180,
}

# torch total_memory / deviceQuery totalGlobalMem as seen in the outputs the catalog cites.
VISIBLE = {
    "h100-sxm": 85_045_477_376,
    "h100-nvl": 99_861_594_112,
    "h200": 143_156 * MIB,
    "a100-40gb": 42_298_834_944,
    "a100-80gb": 85_100_068_864,
    "l40s": 47_803_596_800,
    "l4": 23_570_219_008,
    "a10g": 22_587 * MIB,
    "rtx-4090": 25_386_352_640,
    "rtx-3090": 25_327_697_920,
    "mi300x": 206_141_652_992,
    "b200": 182_642 * MIB,
}

# nvidia-smi "MiB" totals quoted in visible_source (verified in the cited outputs).
NVIDIA_SMI_MIB = {
    "h100-sxm": "81559MiB",
    "h100-pcie": "81559MiB",
    "h100-nvl": "95830MiB",
    "h200": "143771MiB",
    "a100-40gb": "40960MiB",
    "a100-80gb": "81920MiB",
    "l40s": "46068MiB",
    "l4": "23034MiB",
    "a10g": "23028MiB",
    "rtx-4090": "24564MiB",
    "rtx-3090": "24576MiB",
}


def _valid_kwargs(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "test-gpu",
        "name": "Test GPU 8GB",
        "vendor": "nvidia",
        "runtime": "cuda",
        "memory_vendor": "8 GB GDDR6",
        "memory_bytes": 8 * GIB,
        "visible_bytes": 7 * GIB,
        "visible_source": "test fixture",
        "bandwidth_gb_s": 100.0,
        "bf16_dense_tflops": 10.0,
        "fp8_dense_tflops": None,
        "source": "test fixture",
    }
    base.update(overrides)
    return base


def test_catalog_has_exactly_the_expected_cards() -> None:
    assert {gpu.id for gpu in GPUS} == EXPECTED_IDS


def test_ids_are_unique() -> None:
    ids = [gpu.id for gpu in GPUS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.id)
def test_every_entry_names_its_sources(gpu: GPU) -> None:
    assert gpu.source.strip()
    assert gpu.visible_source.strip()
    assert gpu.name.strip()
    # A vendor source is a document someone can open, and so is a visible figure unless
    # the entry says it was derived.
    assert "http" in gpu.source
    assert "http" in gpu.visible_source or "not seen in a public output" in gpu.visible_source


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.id)
def test_bytes_are_positive_ints_and_visible_fits_in_physical(gpu: GPU) -> None:
    for value in (gpu.memory_bytes, gpu.visible_bytes):
        assert type(value) is int
        assert value > 0
    assert gpu.visible_bytes <= gpu.memory_bytes


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.id)
def test_vendor_and_runtime_agree(gpu: GPU) -> None:
    assert (gpu.vendor, gpu.runtime) in {("nvidia", "cuda"), ("amd", "hip")}


@pytest.mark.parametrize(("gpu_id", "bf16", "fp8", "bandwidth", "vendor_memory"), DATASHEET)
def test_datasheet_values(
    gpu_id: str, bf16: float, fp8: float | None, bandwidth: float, vendor_memory: str
) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.bf16_dense_tflops == pytest.approx(bf16)
    if fp8 is None:
        assert gpu.fp8_dense_tflops is None
    else:
        assert gpu.fp8_dense_tflops == pytest.approx(fp8)
    assert gpu.bandwidth_gb_s == pytest.approx(bandwidth)
    assert gpu.memory_vendor == vendor_memory


def test_datasheet_table_covers_the_catalog() -> None:
    assert {row[0] for row in DATASHEET} == EXPECTED_IDS
    assert set(PHYSICAL_GIB) == EXPECTED_IDS


@pytest.mark.parametrize(("gpu_id", "gib"), sorted(PHYSICAL_GIB.items()))
def test_physical_capacity_reads_vendor_gb_as_gib(gpu_id: str, gib: int) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.memory_bytes == gib * GIB
    assert gpu.memory_gib == gib


@pytest.mark.parametrize(("gpu_id", "visible"), sorted(VISIBLE.items()))
def test_visible_bytes_match_public_outputs(gpu_id: str, visible: int) -> None:
    assert get_gpu(gpu_id).visible_bytes == visible


@pytest.mark.parametrize(("gpu_id", "smi"), sorted(NVIDIA_SMI_MIB.items()))
def test_nvidia_smi_total_is_quoted_and_above_the_cuda_total(gpu_id: str, smi: str) -> None:
    gpu = get_gpu(gpu_id)
    assert smi in gpu.visible_source
    # The driver keeps a reserved slice that CUDA's total excludes (a few hundred MiB).
    smi_bytes = int(smi.removesuffix("MiB")) * MIB
    assert 0 < smi_bytes - gpu.visible_bytes < 1024 * MIB


def test_a100_80gb_nvidia_smi_total_is_exactly_80_gib() -> None:
    # Evidence that the vendor's "80 GB" is binary: nvidia-smi shows 81920 MiB.
    assert get_gpu("a100-80gb").memory_bytes == 81920 * MIB


def test_mi250x_visible_is_one_of_two_gcds() -> None:
    gpu = get_gpu("mi250x")
    assert gpu.visible_bytes <= gpu.memory_bytes // 2
    assert "GCD" in gpu.visible_source


def test_a10g_source_states_its_uncertainty() -> None:
    assert "UNCERTAIN" in get_gpu("a10g").source


def test_consumer_cards_use_fp32_accumulate_figures() -> None:
    for gpu_id in ("rtx-4090", "rtx-3090"):
        assert "FP32 accumulate" in get_gpu(gpu_id).source


def test_get_gpu_returns_the_entry() -> None:
    for gpu in GPUS:
        assert get_gpu(gpu.id) is gpu


def test_get_gpu_error_names_field_value_and_known_ids() -> None:
    with pytest.raises(ValueError, match="gpu") as excinfo:
        get_gpu("h100-sxm6")
    message = str(excinfo.value)
    assert "'h100-sxm6'" in message
    for gpu_id in EXPECTED_IDS:
        assert gpu_id in message


@given(st.text().filter(lambda text: text not in EXPECTED_IDS))
def test_get_gpu_rejects_every_unknown_id(gpu_id: str) -> None:
    with pytest.raises(ValueError, match="gpu must be one of"):
        get_gpu(gpu_id)


def test_get_gpu_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="gpu must be one of"):
        get_gpu(["h100-sxm"])  # type: ignore[arg-type]


def test_entries_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        GPUS[0].memory_bytes = 1  # type: ignore[misc]


def test_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        GPU(*_valid_kwargs().values())  # type: ignore[misc]


def test_valid_fixture_builds() -> None:
    gpu = GPU(**_valid_kwargs())  # type: ignore[arg-type]
    assert gpu.visible_gib == 7


@given(st.integers(max_value=0))
def test_memory_bytes_must_be_positive(value: int) -> None:
    with pytest.raises(ValueError, match=f"memory_bytes must be a positive integer, got {value}"):
        GPU(**_valid_kwargs(memory_bytes=value))  # type: ignore[arg-type]


@given(st.integers(max_value=0))
def test_visible_bytes_must_be_positive(value: int) -> None:
    with pytest.raises(ValueError, match=f"visible_bytes must be a positive integer, got {value}"):
        GPU(**_valid_kwargs(visible_bytes=value))  # type: ignore[arg-type]


@given(st.integers(min_value=1, max_value=2**40))
def test_visible_bytes_cannot_exceed_memory_bytes(excess: int) -> None:
    memory = 8 * GIB
    pattern = rf"visible_bytes must be at most memory_bytes \({memory}\), got {memory + excess}"
    with pytest.raises(ValueError, match=pattern):
        GPU(**_valid_kwargs(memory_bytes=memory, visible_bytes=memory + excess))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("memory_bytes", 8.0 * GIB),
        ("memory_bytes", True),
        ("visible_bytes", "7 GiB"),
        ("bandwidth_gb_s", 0.0),
        ("bandwidth_gb_s", -1.0),
        ("bandwidth_gb_s", float("nan")),
        ("bf16_dense_tflops", float("inf")),
        ("bf16_dense_tflops", False),
        ("fp8_dense_tflops", 0.0),
        ("source", ""),
        ("visible_source", "   "),
        ("name", None),
        ("memory_vendor", ""),
    ],
)
def test_invalid_fields_are_rejected_with_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ValueError) as excinfo:
        GPU(**_valid_kwargs(**{field: value}))  # type: ignore[arg-type]
    message = str(excinfo.value)
    assert message.startswith(f"{field} must be")
    assert f"got {value!r}" in message


@pytest.mark.parametrize("bad_id", ["", "H100", "h100_sxm", "-h100", "h100-", "h 100"])
def test_id_must_be_a_lowercase_slug(bad_id: str) -> None:
    with pytest.raises(ValueError, match="id must be"):
        GPU(**_valid_kwargs(id=bad_id))  # type: ignore[arg-type]


def test_vendor_must_be_known() -> None:
    with pytest.raises(ValueError, match=r"vendor must be one of .* got 'intel'"):
        GPU(**_valid_kwargs(vendor="intel"))  # type: ignore[arg-type]


def test_runtime_must_match_vendor() -> None:
    with pytest.raises(ValueError, match="runtime must be 'hip' for vendor 'amd', got 'cuda'"):
        GPU(**_valid_kwargs(vendor="amd", runtime="cuda"))  # type: ignore[arg-type]


def test_replace_revalidates() -> None:
    with pytest.raises(ValueError, match="visible_bytes must be at most memory_bytes"):
        dataclasses.replace(get_gpu("h100-sxm"), memory_bytes=1)
