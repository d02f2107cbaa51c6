"""CLI tables."""

from calculators.render import table


def test_table_aligns_columns():
    out = table(["line", "GiB"], [["weights", "14.96"], ["kv", "4.00"]])
    assert out.splitlines() == [
        "line       GiB",
        "-------  -----",
        "weights  14.96",
        "kv        4.00",
    ]


def test_text_columns_are_left_aligned():
    out = table(
        ["line", "GiB", "basis"], [["weights", "14.96", "all tensors"], ["kv", "4.00", "x"]]
    )
    assert out.splitlines()[2:] == [
        "weights  14.96  all tensors",
        "kv        4.00  x",
    ]
