"""Display units: the GiB label matches the 2^30 divisor."""

from calculators.units import GIB, MIB, format_count, format_gib, gib


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
