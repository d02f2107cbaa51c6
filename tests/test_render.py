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
