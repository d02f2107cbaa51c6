"""Each lesson states how long it takes as tests/lesson_reading_time.py measures it."""

from __future__ import annotations

import json

import pytest

from tests.lesson_reading_time import (
    SENTENCE,
    lessons,
    measured_minutes,
    sentence,
    stated,
)


@pytest.mark.parametrize("path", lessons(), ids=lambda p: p.name)
def test_the_lesson_states_its_measured_time(path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    first = "".join(notebook["cells"][0]["source"])
    found = SENTENCE.search(first)
    assert found, f"{path.name}: no '**Time:** about N minutes to read and run' in its first cell"
    rerun = "rerun: python -m tests.lesson_reading_time --write"
    assert found.group(0) == sentence(notebook), rerun


def test_the_measure_counts_words_and_cells_apart_by_path() -> None:
    words = " ".join(["word"] * 400)  # two minutes at 200 a minute
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": words},
            {"cell_type": "code", "metadata": {}, "source": "x = 1"},  # 3 words + half a minute
            {"cell_type": "code", "metadata": {"tags": ["going-deeper"]}, "source": ""},
        ]
    }
    assert measured_minutes(notebook) == (pytest.approx(2 + 3 / 200 + 0.5), 0.5)
    assert sentence(notebook) == (
        "**Time:** about 5 minutes to read and run (5 more with the Going deeper blocks)."
    )


def test_stated_minutes_round_up_to_five() -> None:
    assert [stated(m) for m in (0, 0.1, 5, 5.01, 23.5, 30)] == [0, 5, 5, 10, 25, 30]
