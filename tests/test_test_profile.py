"""`make test-profile`'s reading of a run (benchmarks/test_profile.py): test time by kind,
notebook times from the cache's entries."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import test_profile as tp

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.browser.test_site" name="test_a" time="3.5"/>
<testcase classname="tests.browser.test_site" name="test_b" time="2.5"/>
<testcase classname="tests.test_probes_adapter" name="test_c" time="1.25"/>
<testcase classname="tests.test_seeds" name="test_d" time="0.5"/>
<testcase classname="tests.test_seeds.TestGroup" name="test_e" time="0.25"/>
<testcase classname="tests.test_units" name="test_f" time="0.125"/>
</testsuite></testsuites>
"""


def test_tests_are_summed_by_kind(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    kinds = tp.test_time_by_kind(junit, {"tests.test_seeds"})
    assert kinds["browser (Chromium, Pyodide in the page)"] == {"seconds": 6.0, "tests": 2}
    assert kinds["probes (PyTorch)"] == {"seconds": 1.2, "tests": 1}  # 1.25 s, one decimal
    assert kinds[tp.HYPOTHESIS] == {"seconds": 0.8, "tests": 2}  # a class inside the module too
    assert kinds[tp.OTHER] == {"seconds": 0.1, "tests": 1}


def test_a_module_outside_every_kind_is_other() -> None:
    assert tp.kind_of("tests.test_units", set()) == tp.OTHER
    assert tp.kind_of("tests.test_tinylm", set()).startswith("generators")
    assert tp.kind_of("tests.test_tinylm_forward", set()) == tp.OTHER  # plain Python


def test_notebook_times_come_from_the_cache_entries_longest_first(tmp_path: Path) -> None:
    for i, (name, seconds) in enumerate([("docs/a.ipynb", 2.0), ("docs/b.ipynb", 9.5)]):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "e.json").write_text(
            json.dumps({"notebook": name, "seconds": seconds})
        )
    assert list(tp.notebook_seconds(tmp_path).items()) == [
        ("docs/b.ipynb", 9.5),
        ("docs/a.ipynb", 2.0),
    ]
