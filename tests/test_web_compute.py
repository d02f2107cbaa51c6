"""calculators.web.forms: form inputs give exactly the CLI's JSON; bad inputs name their field."""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.cli import build_parser, main
from calculators.commands import COMMANDS, DEFAULTS
from calculators.web import CALCULATORS, Field, FieldError, compute, evaluate
from calculators.web.forms import FILE_ROOT, Calculator, args_for, argv_for, calculator, clean
from tests.strategies import typed_text


def cli_json(argv: list[str]) -> object:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


def cli_argv(calc: Calculator, values: dict[str, object]) -> list[str]:
    """`argv_for`, with each file named by the path the page reads it from: the command the
    page shows names the reader's file alone (`--train mine.jsonl`), to run where it is."""
    argv = argv_for(calc, values)
    for f in calc.fields:
        if f.kind == "file" and values.get(f.name) is not None:
            argv[argv.index(f.flag) + 1] = str(values[f.name])
    return argv


def test_the_command_names_a_file_by_its_name_alone() -> None:
    calc = calculator("compare")
    values = clean(calc, {"predictions": "data/evaluation/digits/predictions.csv"})
    assert values["predictions"] == os.path.join(
        FILE_ROOT, "data/evaluation/digits/predictions.csv"
    )
    argv = argv_for(calc, values)
    assert argv[argv.index("--predictions") + 1] == "predictions.csv"


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_defaults_equal_the_cli(name: str) -> None:
    calc = calculator(name)
    argv = cli_argv(calc, clean(calc, {}))
    assert json.loads(json.dumps(compute(name))) == cli_json(argv)


def test_kv_cache_inputs_reach_the_calculator() -> None:
    r = compute("kv-cache", {"model": "llama-3.1-8b", "context": "32768", "batch": "8"})
    # Llama 3.1 8B: 32 layers x 2 (K, V) x 8 KV heads x 128 head_dim x 2 bytes (bf16)
    assert r["bytes_per_token"] == 32 * 2 * 8 * 128 * 2
    assert r["total_bytes"] == 8 * 32768 * r["bytes_per_token"]


def test_argv_repeats_lines_and_sets_flags() -> None:
    calc = calculator("budget")
    values = clean(calc, {"phase": "a:1:2\n\nb:3:4:2", "price": "3"})
    argv = argv_for(calc, values)
    assert argv[:5] == ["budget", "--phase", "a:1:2", "--phase", "b:3:4:2"]
    assert "--price" in argv and argv[argv.index("--price") + 1] == "3.0"
    env = argv_for(calculator("envelope"), clean(calculator("envelope"), {"include_mtp": True}))
    assert "--include-mtp" in env


@pytest.mark.parametrize(
    ("name", "field", "value", "words"),
    [
        ("kv-cache", "context", "-4", ["context", "-4", "at least 1"]),
        ("kv-cache", "context", "abc", ["context", "abc", "whole number"]),
        ("kv-cache", "kv_format", "fp3", ["kv_format", "fp3", "bf16"]),
        ("throughput", "mfu", "1.5", ["mfu", "1.5", "at most 1"]),
        ("budget", "price", "nan", ["price", "nan", "finite"]),
        ("kv-cache", "batch", "", ["batch", "required"]),
    ],
)
def test_bad_inputs_name_field_value_and_bound(
    name: str, field: str, value: str, words: list[str]
) -> None:
    with pytest.raises(FieldError) as e:
        compute(name, {field: value})
    assert e.value.field == field
    for word in words:
        assert word in str(e.value)


def test_errors_from_the_calculators_are_attributed_to_fields() -> None:
    with pytest.raises(FieldError) as e:
        compute("budget", {"price": "0"})
    assert e.value.field == "price"
    with pytest.raises(FieldError) as e:
        compute("seeds", {"a": "1,2", "b": "1,2,3"})
    assert e.value.field == "b"
    with pytest.raises(FieldError) as e:
        compute("kv-cache", {"allocation": "static", "max_length": "10"})
    assert e.value.field == "max_length"


def test_unknown_calculator_and_input() -> None:
    with pytest.raises(FieldError, match="calculator must be one of"):
        compute("nope")
    with pytest.raises(FieldError) as e:
        compute("kv-cache", {"bogus": "1"})
    assert e.value.field == "bogus"


@given(context=st.integers(min_value=1, max_value=200_000), batch=st.integers(1, 64))
def test_kv_cache_total_scales_with_batch(context: int, batch: int) -> None:
    one = compute("kv-cache", {"model": "qwen3-8b", "context": context, "batch": 1})
    many = compute("kv-cache", {"model": "qwen3-8b", "context": context, "batch": batch})
    assert many["total_bytes"] == batch * one["total_bytes"]


def _parsed(argv: list[str]) -> dict[str, object]:
    args = vars(build_parser().parse_args(argv))
    assert args.pop("run") is COMMANDS[args.pop("command")]
    return args


def _value(f: Field) -> st.SearchStrategy[object]:
    """Valid form values for field `f`, as the page sends them (strings) or typed."""
    if f.kind == "int":
        return st.integers(int(f.minimum or 0), int(min(f.maximum or 10**6, 10**9))).map(str)
    if f.kind == "float":
        lo, hi = float(f.minimum or 0), float(min(f.maximum or 1e6, 1e9))
        return st.floats(lo, hi, allow_nan=False).map(repr)
    if f.kind == "choice":
        return st.sampled_from(f.choices)
    if f.kind == "bool":
        return st.booleans()
    words = st.text("abcxyz_,.:=0123456789", min_size=1, max_size=12)
    if f.kind == "lines":
        return st.lists(words, max_size=3).map("\n".join)
    return words


@st.composite
def _form_inputs(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    name = draw(st.sampled_from(sorted(CALCULATORS)))
    inputs = {}
    for f in CALCULATORS[name].fields:
        if draw(st.booleans()):
            inputs[f.name] = draw(_value(f))
    return name, inputs


@given(_form_inputs())
def test_args_equal_what_the_cli_parses_from_the_same_command_line(
    case: tuple[str, dict[str, object]],
) -> None:
    name, inputs = case
    calc = calculator(name)
    values = clean(calc, inputs)
    assert vars(args_for(calc, values)) == _parsed(cli_argv(calc, values))


def test_a_value_in_exponent_form_with_a_dash_reaches_its_flag() -> None:
    # found by the property above: argparse reads "--gain -5e-324" as a flag with no value
    calc = calculator("eval-size")
    values = clean(calc, {"gain": "-5e-324"})
    argv = argv_for(calc, values)
    assert "--gain=-5e-324" in argv
    assert _parsed(argv)["gain"] == vars(args_for(calc, values))["gain"]


def test_args_do_not_share_the_default_lists() -> None:
    calc = calculator("budget")
    args = args_for(calc, clean(calc, {"phase": "a:1:2", "price": "3"}))
    assert args.phase == ["a:1:2"] and DEFAULTS["budget"]["phase"] == []
    assert args.package is not DEFAULTS["budget"]["package"]


@pytest.mark.parametrize(
    ("name", "inputs", "field", "words"),
    [
        # visible memory 0 and an unknown frozen-base format got a general message before
        ("envelope", {"memory_gib": "0"}, "memory_gib", ["Visible memory", "positive"]),
        ("training", {"lora_rank": "8", "base_format": "nf5"}, "base_format", ["Frozen", "nf5"]),
        ("training", {"memory_gib": "0"}, "memory_gib", ["Visible memory"]),
        ("budget", {"price": "0"}, "price", ["Price (price) must be a positive number"]),
        ("budget", {"phase": "a:0:1"}, "phase", ["phase a: runs must be a positive integer"]),
        ("budget", {"package": "0:1:5"}, "package", ["package days must be a positive"]),
        ("batch", {"global_batch": "100", "micro_batch": "3", "gpus": "4"}, "global_batch", []),
        ("kv-cache", {"free_gib": "1e300"}, "free_gib", ["Free memory", "at most"]),
    ],
)
def test_calculator_errors_are_shown_at_the_field_typed_into(name, inputs, field, words):
    with pytest.raises(FieldError) as e:
        compute(name, inputs)
    assert e.value.field == field
    for word in words:
        assert word in str(e.value), str(e.value)
    assert "price_per_gpu_hour" not in str(e.value) and "visible_bytes" not in str(e.value)


def test_whole_number_fields_take_scientific_notation_as_the_cli_does():
    assert compute("throughput", {"tokens": "1e9"})["training"]["tokens"] == 10**9


_TYPED = typed_text(newlines=True)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(CALCULATORS)), data=st.data())
def test_anything_typed_gives_a_result_or_a_message_at_a_field(name, data):
    calc = CALCULATORS[name]
    inputs = {}
    for f in calc.fields:
        if data.draw(st.booleans()):
            inputs[f.name] = data.draw(_TYPED if f.kind != "choice" else _value(f))
    answer = evaluate(name, inputs)
    if answer["ok"]:
        json.loads(answer["result_json"], parse_constant=lambda c: pytest.fail(f"{c}"))
        assert "Traceback" not in answer["html"]
    else:
        assert answer["field"] in {"", *(f.name for f in calc.fields)}
        assert "Traceback" not in answer["message"] and len(answer["message"]) < 500
