"""Display units: the GiB label matches the 2^30 divisor."""

import pytest

from calculators.errors import InputError
from calculators.units import GIB, MIB, format_count, format_gib, gib, gib_to_bytes


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
