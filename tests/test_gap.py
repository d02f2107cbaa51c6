"""The measured gap (calculators.memory.gap and the `gap` command): hand-checked
decompositions, refused measurements naming their field, the parts summing to the device's
used memory, and the command's JSON and one-line errors."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.cli import main
from calculators.commands.gap import gap_segments, html
from calculators.errors import InputError
from calculators.memory.gap import MAX_MEASURED_BYTES, Measured, measured_bytes, memory_gap
from calculators.memory.reserves import Line, reserve_lines
from calculators.web import FieldError, compute

GIB = 2**30
MIB = 2**20


def line(line_id: str, n_bytes: int) -> Line:
    return Line(id=line_id, label=line_id, bytes=n_bytes, basis="test", source="test")


# An estimate of 10 GiB weights + 2 GiB KV cache + 1 GiB activations = 13 GiB.
ESTIMATE = (line("weights", 10 * GIB), line("kv_cache", 2 * GIB), line("activations", 1 * GIB))
E = 13 * GIB
# CUDA's reserve lines on 13 GiB: 5% fragmentation = ceil(0.05 x 13,958,643,712)
# = ceil(697,932,185.6) = 697,932,186 bytes; context 768 MiB + framework 512 MiB = 1280 MiB.
RESERVES = reserve_lines("cuda", E, {})
FRAGMENTATION = 697_932_186
CONTEXT_LINES = 1280 * MIB


def test_the_reserve_lines_are_the_ones_worked_out_above() -> None:
    by_id = {r.id: r.bytes for r in RESERVES}
    assert by_id["allocator_fragmentation"] == FRAGMENTATION == math.ceil(0.05 * E)
    assert by_id["runtime_context"] + by_id["framework_overhead"] == CONTEXT_LINES


def test_a_measurement_within_every_line() -> None:
    # allocated 14 GiB, reserved 14.5 GiB, device used 15.75 GiB
    measured = Measured(allocated=14 * GIB, reserved=29 * GIB // 2, device_used=63 * GIB // 4)
    r = memory_gap(ESTIMATE, RESERVES, measured)
    assert r.estimate_bytes == E
    assert [p.id for p in r.parts] == ["model_error", "allocator", "outside_pytorch"]
    # 14 - 13 = 1 GiB, 1/13 of the estimate; no reserve line covers it
    assert r.model_error is not None
    assert r.model_error.bytes == 1 * GIB
    assert r.model_error.share_of_estimate == pytest.approx(1 / 13)
    assert (r.model_error.reserve_id, r.model_error.within_reserve) == (None, None)
    assert "more than the estimate" in r.model_error.meaning
    # 14.5 - 14 = 0.5 GiB = 536,870,912 bytes <= 697,932,186
    assert r.allocator is not None
    assert r.allocator.bytes == 536_870_912
    assert r.allocator.reserve_id == "allocator_fragmentation"
    assert r.allocator.reserve_bytes == FRAGMENTATION
    assert r.allocator.within_reserve is True
    # 15.75 - 14.5 = 1.25 GiB = 1280 MiB: exactly the two context lines, so within
    assert r.outside_pytorch is not None
    assert r.outside_pytorch.bytes == 1280 * MIB == CONTEXT_LINES
    assert r.outside_pytorch.reserve_id == "runtime_context+framework_overhead"
    assert r.outside_pytorch.within_reserve is True
    assert r.notes == ()


def test_parts_above_their_lines_say_what_to_do() -> None:
    # allocated 13 GiB (no model error), reserved 14 GiB, device used 16 GiB
    r = memory_gap(
        ESTIMATE, RESERVES, Measured(allocated=E, reserved=14 * GIB, device_used=16 * GIB)
    )
    assert r.model_error is not None and r.model_error.bytes == 0
    assert r.model_error.meaning == "PyTorch allocated exactly the estimate."
    # 1 GiB > 697,932,186 bytes; 1/13 = 0.0769..., rounded up to 0.077
    assert r.allocator is not None and r.allocator.bytes == GIB
    assert r.allocator.within_reserve is False
    assert "expandable_segments:True" in r.allocator.action
    assert "torch.cuda.empty_cache()" in r.allocator.action
    assert "--reserve allocator_fragmentation=0.077" in r.allocator.action
    # 2 GiB > 1280 MiB; framework_overhead to cover it: 2048 - 768 = 1280 MiB
    assert r.outside_pytorch is not None and r.outside_pytorch.bytes == 2 * GIB
    assert r.outside_pytorch.within_reserve is False
    assert "another process" in r.outside_pytorch.action
    assert "NCCL" in r.outside_pytorch.action
    assert f"--reserve framework_overhead={1280 * MIB}" in r.outside_pytorch.action


def test_allocated_below_the_estimate_is_a_negative_part_said_so() -> None:
    r = memory_gap(ESTIMATE, RESERVES, Measured(allocated=12 * GIB))
    assert r.model_error is not None
    assert r.model_error.bytes == -1 * GIB  # 12 - 13
    assert r.model_error.share_of_estimate == pytest.approx(-1 / 13)
    assert "less than the estimate" in r.model_error.meaning


def test_a_part_needs_both_its_ends() -> None:
    r = memory_gap(ESTIMATE, RESERVES, Measured(allocated=14 * GIB))
    assert [p.id for p in r.parts] == ["model_error"]
    assert r.allocator is None and r.outside_pytorch is None
    assert r.notes == (
        "Allocator part (reserved - allocated) not computed: give reserved.",
        "Outside-PyTorch part (device used - reserved) not computed: give reserved and "
        "device_used.",
    )
    r = memory_gap(ESTIMATE, RESERVES, Measured(reserved=14 * GIB, device_used=15 * GIB))
    assert [p.id for p in r.parts] == ["outside_pytorch"]
    assert r.outside_pytorch is not None and r.outside_pytorch.bytes == GIB
    assert r.notes[0] == "Model error (allocated - estimate) not computed: give allocated."
    assert memory_gap(ESTIMATE, RESERVES, Measured()).parts == ()


def test_without_reserve_lines_nothing_is_compared() -> None:
    r = memory_gap(ESTIMATE, [], Measured(allocated=E, reserved=14 * GIB, device_used=15 * GIB))
    assert all(p.reserve_id is None and p.within_reserve is None for p in r.parts)


def test_an_empty_estimate_is_refused() -> None:
    with pytest.raises(InputError) as e:
        memory_gap([], RESERVES, Measured())
    assert e.value.field == "estimate_lines"


# ---- measurements: units and bounds ----------------------------------------------------


def test_measurements_in_gib_and_mib_are_whole_bytes() -> None:
    assert measured_bytes("allocated", 20, "GiB") == 21_474_836_480  # 20 x 2^30
    assert measured_bytes("allocated", 0.5, "GiB") == 536_870_912
    # nvidia-smi's 81559MiB: 81,559 x 1,048,576
    assert measured_bytes("device_used", 81559, "MiB") == 85_520_809_984
    assert measured_bytes("reserved", 22.85, "GiB") == round(22.85 * GIB)
    assert measured_bytes("reserved", None, "MiB") is None
    assert measured_bytes("reserved", 0, "GiB") == 0


@pytest.mark.parametrize(
    ("field", "value", "unit", "words"),
    [
        ("allocated", -1.0, "GiB", ["allocated", "non-negative", "GiB", "-1.0"]),
        ("reserved", float("nan"), "GiB", ["reserved", "finite", "nan"]),
        ("device_used", float("inf"), "MiB", ["device_used", "finite", "inf"]),
        ("allocated", True, "GiB", ["allocated", "True"]),
        ("allocated", 2.0**20 + 1, "GiB", ["allocated", "at most 1,048,576 GiB", "1.04858e+06"]),
        ("reserved", 2.0**30 + 1, "MiB", ["reserved", "at most 1,073,741,824 MiB"]),
        ("allocated", 1.0, "KiB", ["unit", "GiB, MiB", "'KiB'"]),
    ],
)
def test_bad_measurements_name_field_value_and_bound(field, value, unit, words) -> None:
    with pytest.raises(InputError) as e:
        measured_bytes(field, value, unit)
    assert e.value.field == (field if unit != "KiB" else "unit")
    for word in words:
        assert word in str(e.value), str(e.value)


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        (
            {"allocated": 22 * GIB, "reserved": 21 * GIB},
            "reserved",
            [
                "reserved must be at least allocated",
                "22,548,578,304 bytes (21.00 GiB)",  # reserved, 21 x 2^30
                "23,622,320,128 bytes (22.00 GiB)",  # allocated, 22 x 2^30
            ],
        ),
        (
            {"allocated": 20 * GIB, "reserved": 22 * GIB, "device_used": 21 * GIB},
            "device_used",
            ["device_used must be at least reserved", "(21.00 GiB)", "(22.00 GiB)"],
        ),
        (
            {"allocated": 22 * GIB, "device_used": 21 * GIB},
            "device_used",
            ["device_used must be at least allocated", "(21.00 GiB)", "(22.00 GiB)"],
        ),
        ({"allocated": -1}, "allocated", ["allocated", "non-negative", "-1"]),
        ({"reserved": 1.5}, "reserved", ["reserved", "integer", "1.5"]),
        ({"device_used": True}, "device_used", ["device_used", "True"]),
        (
            {"device_used": MAX_MEASURED_BYTES + 1},
            "device_used",
            ["device_used must be at most 1,125,899,906,842,624 bytes (one PiB)"],
        ),
    ],
)
def test_inconsistent_measurements_are_refused_at_their_field(kwargs, field, words) -> None:
    with pytest.raises(InputError) as e:
        Measured(**kwargs)
    assert e.value.field == field
    for word in words:
        assert word in str(e.value), str(e.value)


# ---- the parts always sum to the device's used memory ----------------------------------

BYTES = st.integers(min_value=0, max_value=2**44)


@given(
    lines=st.lists(st.integers(min_value=1, max_value=2**40), min_size=1, max_size=6),
    allocated=BYTES,
    cached=BYTES,
    outside=BYTES,
    fraction=st.floats(min_value=0, max_value=0.99),
)
def test_estimate_plus_parts_is_the_device_used(lines, allocated, cached, outside, fraction):
    estimate = [line(f"l{i}", b) for i, b in enumerate(lines)]
    reserves = reserve_lines("hip", sum(lines), {"allocator_fragmentation": fraction})
    reserved, used = allocated + cached, allocated + cached + outside
    measured = Measured(allocated=allocated, reserved=reserved, device_used=used)
    r = memory_gap(estimate, reserves, measured)
    assert r.model_error is not None and r.allocator is not None
    assert r.outside_pytorch is not None
    total = r.estimate_bytes + r.model_error.bytes + r.allocator.bytes + r.outside_pytorch.bytes
    assert total == used
    assert r.allocator.bytes == cached >= 0 and r.outside_pytorch.bytes == outside >= 0
    assert r.allocator.within_reserve == (cached <= math.ceil(fraction * sum(lines)))
    # the chart's bar: never negative, and it ends at the device's used memory
    segments = gap_segments({"measured": _measured_json(measured), "estimate_bytes": sum(lines)})
    assert all(b >= 0 for _, b in segments)
    assert sum(b for _, b in segments) == used


def _measured_json(m: Measured) -> dict[str, int | None]:
    return {
        "allocated_bytes": m.allocated,
        "reserved_bytes": m.reserved,
        "device_used_bytes": m.device_used,
    }


# ---- the command ---------------------------------------------------------------------


def run_json(capsys, *argv: str) -> dict:
    assert main(["gap", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def one_error_line(capsys, *argv: str) -> str:
    assert main(["gap", *argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert captured.out == ""
    return lines[0]


INFERENCE = ("--model", "llama-3.1-8b", "--context", "8192", "--batch", "4")


def test_inference_json(capsys) -> None:
    data = run_json(
        capsys, *INFERENCE, "--allocated", "20", "--reserved", "21", "--device-used", "22"
    )
    assert set(data) == {
        "workload",
        "model",
        "gpu",
        "runtime",
        "estimate_lines",
        "estimate_bytes",
        "measured",
        "parts",
        "reserve_lines",
        "warnings",
        "notes",
    }
    assert (data["workload"], data["model"], data["runtime"]) == (
        "inference",
        "llama-3.1-8b",
        "cuda",
    )
    lines = {x["id"]: x["bytes"] for x in data["estimate_lines"]}
    assert list(lines) == ["weights", "kv_cache", "activations"]
    # Llama 3.1 8B: 8,030,261,248 parameters x 2 bytes (bf16); KV: 4 sequences x 8192
    # tokens x 131,072 bytes per token (32 layers x 2 x 8 KV heads x 128 x 2 bytes) = 4 GiB
    assert lines["weights"] == 2 * 8_030_261_248
    assert lines["kv_cache"] == 4 * 8192 * 131_072 == 4 * GIB
    envelope = run_json_of(capsys, "envelope", *INFERENCE)
    assert lines["activations"] == next(x["bytes"] for x in envelope if x["id"] == "activations")
    estimate = sum(lines.values())
    assert data["estimate_bytes"] == estimate
    assert data["measured"] == {
        "allocated_bytes": 20 * GIB,
        "reserved_bytes": 21 * GIB,
        "device_used_bytes": 22 * GIB,
    }
    parts = {p["id"]: p for p in data["parts"]}
    assert list(parts) == ["model_error", "allocator", "outside_pytorch"]
    # the estimate is 22.09 GiB: allocated 20 GiB is below it
    assert parts["model_error"]["bytes"] == 20 * GIB - estimate < 0
    assert parts["allocator"]["bytes"] == GIB
    assert parts["allocator"]["reserve_bytes"] == math.ceil(0.05 * estimate)
    assert parts["allocator"]["within_reserve"] is True
    assert parts["outside_pytorch"]["bytes"] == GIB
    assert parts["outside_pytorch"]["reserve_bytes"] == (768 + 512) * MIB
    assert parts["outside_pytorch"]["within_reserve"] is True
    assert set(parts["allocator"]) == {
        "id",
        "label",
        "bytes",
        "share_of_estimate",
        "reserve_id",
        "reserve_bytes",
        "within_reserve",
        "meaning",
        "action",
    }
    assert data["notes"] == [] and data["warnings"] == []


def run_json_of(capsys, command: str, *argv: str) -> list[dict]:
    assert main([command, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["lines"]


def test_the_reader_s_reserve_lines_and_unit_are_used(capsys) -> None:
    data = run_json(
        capsys,
        *INFERENCE,
        "--unit",
        "MiB",
        "--allocated",
        "22000",
        "--reserved",
        "23024",
        "--gpu",
        "mi300x",
        "--reserve",
        "allocator_fragmentation=0.01",
    )
    assert data["runtime"] == "hip"
    assert data["measured"]["allocated_bytes"] == 22000 * MIB
    allocator = data["parts"][1]
    assert allocator["bytes"] == 1024 * MIB  # 23,024 - 22,000 MiB
    assert allocator["reserve_bytes"] == math.ceil(0.01 * data["estimate_bytes"])
    assert allocator["within_reserve"] is False
    assert data["notes"] == [
        "Outside-PyTorch part (device used - reserved) not computed: give device_used."
    ]
    # HIP's context lines: 1024 MiB + 1152 MiB
    reserves = {x["id"]: x["bytes"] for x in data["reserve_lines"]}
    assert reserves["runtime_context"] + reserves["framework_overhead"] == 2176 * MIB


def test_training_estimate_is_the_step_s_peak(capsys) -> None:
    argv = ("--model", "gpt2", "--micro-batch", "2", "--seq-len", "512")
    assert main(["training", *argv, "--json"]) == 0
    training = json.loads(capsys.readouterr().out)
    data = run_json(capsys, "--workload", "training", *argv, "--allocated", "3")
    assert data["estimate_bytes"] == training["per_gpu_bytes"]["peak"]
    assert sum(x["bytes"] for x in data["estimate_lines"]) == data["estimate_bytes"]
    assert all(x["bytes"] > 0 for x in data["estimate_lines"])
    assert data["parts"][0]["bytes"] == 3 * GIB - training["per_gpu_bytes"]["peak"]
    # the fragmentation line is 5% of the peak, as the training calculator charges it
    frag = next(x for x in training["reserves"] if x["id"] == "allocator_fragmentation")
    assert {x["id"]: x["bytes"] for x in data["reserve_lines"]}["allocator_fragmentation"] == (
        frag["bytes"]
    )


@pytest.mark.parametrize("checkpointing", ["none", "full"])
@pytest.mark.parametrize("impl", ["foreach", "fused"])
def test_training_lines_sum_to_every_peak_phase(capsys, checkpointing, impl) -> None:
    argv = ("--model", "qwen3-8b", "--seq-len", "4096", "--micro-batch", "4")
    flags = ("--checkpointing", checkpointing, "--optimizer-impl", impl)
    assert main(["training", *argv, *flags, "--json"]) == 0
    peak = json.loads(capsys.readouterr().out)["per_gpu_bytes"]["peak"]
    data = run_json(capsys, "--workload", "training", *argv, *flags)
    assert sum(x["bytes"] for x in data["estimate_lines"]) == data["estimate_bytes"] == peak


def test_the_text_is_a_table(capsys) -> None:
    argv = [*INFERENCE, "--allocated", "20", "--reserved", "21", "--device-used", "22"]
    assert main(["gap", *argv]) == 0
    out = capsys.readouterr().out
    assert re.search(r"Model error \(allocated - estimate\)\s+-2\.09 GiB\s+-9\.4%\s+none", out)
    assert re.search(r"allocator_fragmentation \(1\.10 GiB\)\s+yes", out)


def test_the_page_draws_no_negative_bar() -> None:
    r = compute(
        "gap",
        {"context": "8192", "batch": "4", "allocated": "20", "reserved": "21", "device_used": "22"},
    )
    segments = gap_segments(r)
    assert segments[0][0].startswith("allocated (2.09 GiB below the estimate)")
    assert [b for _, b in segments] == [20 * GIB, GIB, GIB]
    page = html(r)
    assert "a negative part: in the table, not drawn" in page
    assert "-2.09 GiB" in page and "<svg" in page
    assert not re.search(r'width="-', page)


def test_a_page_error_is_shown_at_the_field() -> None:
    # the page's example allocated is 22.85 GiB
    with pytest.raises(FieldError) as e:
        compute("gap", {"reserved": "1"})
    assert e.value.field == "reserved"
    assert "Peak reserved (reserved) must be at least allocated" in str(e.value)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (
            [*INFERENCE, "--allocated", "22", "--reserved", "21"],
            r"^error: --reserved must be at least allocated .*\(21\.00 GiB\) < allocated "
            r".*\(22\.00 GiB\)",
        ),
        (
            [*INFERENCE, "--reserved", "22", "--device-used", "21"],
            r"^error: --device-used must be at least reserved",
        ),
        ([*INFERENCE, "--allocated", "-1"], r"--allocated must be a finite, non-negative"),
        ([*INFERENCE, "--device-used", "nan"], r"--device-used: must be a finite number"),
        ([*INFERENCE, "--reserved", "inf"], r"--reserved: must be a finite number"),
        ([*INFERENCE, "--allocated", "2e6"], r"--allocated must be at most 1,048,576 GiB"),
        (["--model", "llama-3.1-8b", "--allocated", "3"], r"--context is needed"),
        ([*INFERENCE, "--unit", "KiB"], r"--unit must be one of GiB, MiB; got 'KiB'"),
        ([*INFERENCE, "--reserve", "allocator_fragmentation=2"], r"reserve"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, match) -> None:
    assert re.search(match, one_error_line(capsys, *argv))
