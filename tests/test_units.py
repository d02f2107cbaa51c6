"""Display units: the GiB label matches the 2^30 divisor."""

import pytest

from calculators.errors import InputError
from calculators.memory.gpus import get_gpu
from calculators.units import (
    GIB,
    HEADROOM_DIGITS,
    MIB,
    format_count,
    format_gib,
    format_headroom,
    gib,
    gib_to_bytes,
)


def test_gib_is_two_to_the_thirtieth():
    assert GIB == 1_073_741_824
    assert MIB == 1_048_576
    assert gib(3 * GIB) == 3.0


def test_format_gib_labels_gib():
    # 16,060,522,496 bytes (Llama-3.1-8B in bf16) is 14.96 GiB but 16.06 GB.
    assert format_gib(16_060_522_496) == "14.96 GiB"
    assert format_gib(0) == "0.00 GiB"


def test_counts_use_decimal_suffixes():
    assert format_count(8_030_261_248) == "8.03B"
    assert format_count(124_439_808) == "124.44M"
    assert format_count(4096) == "4.10K"
    assert format_count(12) == "12"


def test_gib_to_bytes_is_exact_and_bounded():
    assert gib_to_bytes("memory_gib", 24) == 24 * 2**30
    assert gib_to_bytes("memory_gib", 0.5) == 2**29
    assert gib_to_bytes("free_gib", 0, allow_zero=True) == 0
    # int(value * GIB) raised OverflowError on these before
    for bad, words in (
        (float("inf"), "at most 1,048,576 GiB"),
        (1e300, "at most 1,048,576 GiB"),
        (float("nan"), "positive number of GiB"),
        (0, "positive number of GiB"),
        (-1, "positive number of GiB"),
    ):
        with pytest.raises(InputError, match=words) as e:
            gib_to_bytes("memory_gib", bad)
        assert e.value.field == "memory_gib"


def test_headroom_is_shown_to_a_tenth_of_a_gib():
    # headroom is visible memory minus an estimate; the visible memory of one card moves
    # with the driver (the H100 SXM's catalog entry quotes total_memory of 81008-81090 MiB
    # besides its own 85045477376 bytes), so a hundredth of a GiB would claim more than
    # that spread supports
    assert HEADROOM_DIGITS == 1
    assert format_headroom(int(12.64 * GIB)) == "12.6 GiB"
    assert format_headroom(int(12.66 * GIB)) == "12.7 GiB"
    assert format_headroom(-int(0.26 * GIB)) == "-0.3 GiB"
    assert format_headroom(0) == "0.0 GiB"
    h100 = get_gpu("h100-sxm")
    assert h100.visible_bytes == 85_045_477_376
    assert "total_memory 81008-81090 MiB on other drivers" in h100.visible_source
    spread = h100.visible_bytes - 81008 * MIB  # about 97 MiB
    # the printed step is no finer than that spread: a tenth of a GiB is 102.4 MiB
    assert spread <= 10**-HEADROOM_DIGITS * GIB
    assert spread > 10 ** -(HEADROOM_DIGITS + 1) * GIB
