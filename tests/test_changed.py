"""`make check`'s selection (tests/changed.py): the fast modules always, a slow module only
when a file it covers changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import changed
from tests.changed import ROOT, fast_tests, selection

FILES = [
    "calculators/memory/kv_cache.py",
    "probes/adapter/model.py",
    "probes/report.py",
    "docs/hooks/kernodeck.py",
    "tests/test_kv_cache.py",
    "tests/test_probes_adapter.py",
    "tests/test_probes_report.py",
    "tests/test_probes_cli.py",
    "tests/test_web_hook.py",
    "tests/test_notebook_cache.py",
    "tests/browser/test_site.py",
]


def _repo(tmp_path: Path) -> Path:
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    env = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    subprocess.run(["git", *env, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    return tmp_path


def test_a_clean_tree_runs_the_fast_modules_only(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert selection("HEAD", root) == ["tests/test_kv_cache.py", "tests/test_web_hook.py"]


def test_a_changed_probe_adds_its_module_and_the_cli(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "probes/adapter/model.py").write_text("x = 2\n")
    assert selection("HEAD", root)[2:] == [
        "tests/test_probes_adapter.py",
        "tests/test_probes_cli.py",
    ]


def test_an_untracked_file_and_the_hooks_count(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "docs/hooks/new.py").write_text("")
    assert selection("HEAD", root)[2:] == ["tests/test_notebook_cache.py"]


def test_mapping_by_name() -> None:
    assert changed.tests_for("calculators/memory/kv_cache.py") == ["tests/test_kv_cache.py"]
    assert "tests/test_probes_report.py" in changed.tests_for("probes/report.py")
    assert changed.tests_for("tests/browser/test_site.py") == []  # `make test` runs the browser


def test_the_fast_set_leaves_out_exactly_the_slow_kinds() -> None:
    fast = set(fast_tests())
    every = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").glob("test_*.py")}
    slow = every - fast
    assert "tests/test_kv_cache.py" in fast and "tests/test_cli.py" in fast
    assert {"tests/test_probes_adapter.py", "tests/test_evaluation_examples.py"} <= slow
    assert all(
        Path(p).name.startswith(
            (
                "test_probes_",
                "test_evaluation_examples",
                "test_adaptation_contribution",
                "test_tinylm",
                "test_notebook_cache",
            )
        )
        for p in slow
    )
