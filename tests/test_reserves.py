"""Tests for the default reserve lines: pinned defaults, sources, lookup and validation."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.memory.reserves import ReserveDefault, default_reserves

MIB = 2**20
RUNTIMES = ("cuda", "hip")
EXPECTED_IDS = ("runtime_context", "allocator_fragmentation", "framework_overhead")

# The chosen defaults; their reasons and sources live in calculators/memory/reserves.py.
PINNED = {
    ("cuda", "runtime_context"): ("bytes", 768 * MIB),
    ("cuda", "allocator_fragmentation"): ("fraction", 0.05),
    ("cuda", "framework_overhead"): ("bytes", 512 * MIB),
    ("hip", "runtime_context"): ("bytes", 1024 * MIB),
    ("hip", "allocator_fragmentation"): ("fraction", 0.05),
    ("hip", "framework_overhead"): ("bytes", 1152 * MIB),
}

ALL_LINES = [(runtime, line) for runtime in RUNTIMES for line in default_reserves(runtime)]


def _valid_kwargs(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "test_line",
        "label": "Test line",
        "kind": "bytes",
        "value": 64 * MIB,
        "applies_to": "each process",
        "rationale": "test fixture",
        "source": "test fixture",
    }
    base.update(overrides)
    return base


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_each_runtime_has_the_three_named_lines_in_order(runtime: str) -> None:
    lines = default_reserves(runtime)  # type: ignore[arg-type]
    assert isinstance(lines, tuple)
    assert tuple(line.id for line in lines) == EXPECTED_IDS


@pytest.mark.parametrize(("key", "expected"), sorted(PINNED.items()))
def test_pinned_defaults(key: tuple[str, str], expected: tuple[str, int | float]) -> None:
    runtime, line_id = key
    kind, value = expected
    line = {line.id: line for line in default_reserves(runtime)}[line_id]  # type: ignore[arg-type]
    assert line.kind == kind
    assert line.value == value
    if kind == "bytes":
        assert type(line.value) is int


@pytest.mark.parametrize(
    ("runtime", "line"), ALL_LINES, ids=[f"{r}-{line.id}" for r, line in ALL_LINES]
)
def test_every_line_is_documented(runtime: str, line: ReserveDefault) -> None:
    for text in (line.label, line.applies_to, line.rationale, line.source):
        assert text.strip()
    assert "http" in line.source


@pytest.mark.parametrize(
    ("runtime", "line"), ALL_LINES, ids=[f"{r}-{line.id}" for r, line in ALL_LINES]
)
def test_values_fit_their_kind(runtime: str, line: ReserveDefault) -> None:
    if line.kind == "bytes":
        assert type(line.value) is int
        assert line.value > 0
    else:
        assert line.kind == "fraction"
        assert 0 < line.value < 1


def test_fragmentation_line_says_what_it_scales() -> None:
    for runtime in RUNTIMES:
        line = default_reserves(runtime)[1]  # type: ignore[arg-type]
        assert line.id == "allocator_fragmentation"
        assert "weights + KV cache + activations" in line.applies_to


def test_cuda_context_default_sits_above_the_public_measurements() -> None:
    # Largest bare lazy-loading context cited: 612 MiB on a B200.
    line = default_reserves("cuda")[0]
    assert line.id == "runtime_context"
    assert line.value >= 612 * MIB
    assert "CUDA_MODULE_LOADING=LAZY" in line.rationale


def test_hip_context_default_says_it_is_uncertain() -> None:
    assert "UNCERTAIN" in default_reserves("hip")[0].rationale


def test_cuda_framework_overhead_cites_pytorch_cublas_workspace() -> None:
    line = default_reserves("cuda")[2]
    assert "CublasHandlePool.cpp" in line.source
    # 32 MiB per (handle, stream) on sm90+: the default must hold several.
    assert line.value >= 4 * 32 * MIB


def test_default_reserves_error_names_runtime_value_and_known() -> None:
    with pytest.raises(ValueError) as excinfo:
        default_reserves("rocm")  # type: ignore[arg-type]
    message = str(excinfo.value)
    assert message.startswith("runtime must be one of")
    assert "'rocm'" in message
    for runtime in RUNTIMES:
        assert runtime in message


@given(st.text().filter(lambda text: text not in RUNTIMES))
def test_default_reserves_rejects_every_unknown_runtime(runtime: str) -> None:
    with pytest.raises(ValueError, match="runtime must be one of"):
        default_reserves(runtime)  # type: ignore[arg-type]


def test_lines_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        default_reserves("cuda")[0].value = 0  # type: ignore[misc]


def test_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        ReserveDefault(*_valid_kwargs().values())  # type: ignore[misc]


def test_valid_fixture_builds() -> None:
    line = ReserveDefault(**_valid_kwargs())  # type: ignore[arg-type]
    assert line.value == 64 * MIB


@given(st.integers(max_value=0))
def test_bytes_value_must_be_positive(value: int) -> None:
    with pytest.raises(ValueError, match=f"value must be a positive integer .*got {value}"):
        ReserveDefault(**_valid_kwargs(value=value))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [1.5, 0.5, True, "512 MiB"])
def test_bytes_value_must_be_an_int(value: object) -> None:
    with pytest.raises(ValueError) as excinfo:
        ReserveDefault(**_valid_kwargs(value=value))  # type: ignore[arg-type]
    assert str(excinfo.value).startswith("value must be a positive integer")
    assert f"got {value!r}" in str(excinfo.value)


@given(st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_fractions_strictly_between_zero_and_one_are_accepted(value: float) -> None:
    line = ReserveDefault(**_valid_kwargs(kind="fraction", value=value))  # type: ignore[arg-type]
    assert line.value == value


@pytest.mark.parametrize("value", [0, 0.0, 1, 1.0, -0.1, 1.5, float("nan"), float("inf"), True])
def test_fraction_value_must_lie_in_the_open_unit_interval(value: object) -> None:
    with pytest.raises(ValueError) as excinfo:
        ReserveDefault(**_valid_kwargs(kind="fraction", value=value))  # type: ignore[arg-type]
    message = str(excinfo.value)
    assert message.startswith("value must be a fraction strictly between 0 and 1")
    assert f"got {value!r}" in message


def test_kind_must_be_known() -> None:
    with pytest.raises(ValueError, match=r"kind must be one of .* got 'percent'"):
        ReserveDefault(**_valid_kwargs(kind="percent"))  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["label", "applies_to", "rationale", "source"])
@pytest.mark.parametrize("value", ["", "  ", None])
def test_text_fields_must_be_non_empty(field: str, value: object) -> None:
    with pytest.raises(ValueError) as excinfo:
        ReserveDefault(**_valid_kwargs(**{field: value}))  # type: ignore[arg-type]
    assert str(excinfo.value) == f"{field} must be a non-empty string, got {value!r}"


@pytest.mark.parametrize("bad_id", ["", "RuntimeContext", "runtime-context", "_x", "x_"])
def test_id_must_be_snake_case(bad_id: str) -> None:
    with pytest.raises(ValueError, match="id must be"):
        ReserveDefault(**_valid_kwargs(id=bad_id))  # type: ignore[arg-type]
