"""InputError carries its field as data; renaming swaps only the words that name it."""

from calculators.errors import QUOTE_LIMIT, InputError, shown


def test_field_is_data_and_the_message_names_it():
    e = InputError("price_per_gpu_hour", "price_per_gpu_hour must be a positive number, got 0")
    assert isinstance(e, ValueError)
    assert e.field == "price_per_gpu_hour" and e.subject == "price_per_gpu_hour"
    r = e.renamed("price", "--price")
    assert (r.field, str(r)) == ("price", "--price must be a positive number, got 0")


def test_renaming_leaves_a_message_that_does_not_start_with_its_subject():
    e = InputError("phase", "phase 'x': runs must be a positive integer, got 0", subject="")
    assert str(e.renamed("phase", "--phase")) == str(e)


def test_long_values_are_shown_short():
    assert shown("abc") == "'abc'"
    long = shown("x" * 20_000)
    assert len(long) <= QUOTE_LIMIT + 30 and long.endswith("(20,002 characters)")
