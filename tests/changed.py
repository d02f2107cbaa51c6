"""The test files `make check` runs: the fast unit tests, and the tests of what changed.

    python -m tests.changed [BASE]

prints one path a line: every test module except the slow kinds (the browser, the probes'
PyTorch runs, the generators that retrain the guides' examples), then the slow modules
that cover a file changed against BASE (default HEAD: staged, unstaged and untracked
changes). A module is mapped to its tests by the suite's naming (one test module per
source module: `calculators/memory/kv_cache.py` -> `tests/test_kv_cache.py`,
`probes/adapter/...` -> `tests/test_probes_adapter.py`) and by the table below.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# Slow because they run PyTorch, scikit-learn or a browser; `make test` runs them all.
SLOW = (
    "test_probes_",
    "test_evaluation_examples",
    "test_adaptation_contribution",
    "test_tinylm",
    "test_notebook_cache",
)

# Changes whose tests are not named after them: path prefix -> test modules.
COVERED_BY = {
    "probes/": ["tests/test_probes_cli.py"],
    "docs/learn/": [
        "tests/test_tinylm.py",
        "tests/test_tinylm_forward.py",
        "tests/test_lessons_onramp.py",
        "tests/test_lessons_reading_time.py",
        "tests/test_notebook_going_deeper.py",
    ],
    "docs/data/learn/": ["tests/test_lessons_onramp.py"],
    "docs/data/adaptation/contribution/": ["tests/test_adaptation_contribution.py"],
    "docs/data/evaluation/": ["tests/test_evaluation_examples.py"],
    "docs/hooks/": [
        "tests/test_web_hook.py",
        "tests/test_notebook_cache.py",
        "tests/test_notebook_going_deeper.py",
    ],
    "tests/probes_helpers.py": ["tests/test_probes_cli.py"],
    "tests/page_blocks.py": [
        "tests/test_ablations_guide.py",
        "tests/test_budget_seed_pages.py",
        "tests/test_cost_at_equal_quality_page.py",
        "tests/test_quantization_guide.py",
        "tests/test_behaviour_kept.py",
    ],
}


def is_slow(path: Path) -> bool:
    return path.name.startswith(SLOW)


def fast_tests(root: Path = ROOT) -> list[str]:
    """Every test module outside tests/browser that is not slow."""
    return sorted(
        p.relative_to(root).as_posix() for p in (root / "tests").glob("test_*.py") if not is_slow(p)
    )


def changed_files(base: str = "HEAD", root: Path = ROOT) -> list[str]:
    """Files changed against `base`, with untracked files, relative to the repository."""

    def git(*args: str) -> list[str]:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        return [line for line in out.splitlines() if line]

    return sorted(
        set(git("diff", "--name-only", base))
        | set(git("ls-files", "--others", "--exclude-standard"))
    )


def tests_for(path: str, root: Path = ROOT) -> list[str]:
    """The test modules that cover one changed file (existing ones only)."""
    p = Path(path)
    found: list[str] = []
    if p.parts[:1] == ("tests",) and p.name.startswith("test_") and p.suffix == ".py":
        found.append(path)
    elif p.suffix == ".py" and p.parts[:1] == ("calculators",):
        found.append(f"tests/test_{p.stem}.py")
    elif p.parts[:1] == ("probes",):
        found += [f"tests/test_probes_{p.stem}.py"]
        if len(p.parts) > 2:  # probes/adapter/model.py -> tests/test_probes_adapter.py
            found.append(f"tests/test_probes_{p.parts[1]}.py")
    for prefix, covering in COVERED_BY.items():
        if path.startswith(prefix):
            found += covering
    return [f for f in dict.fromkeys(found) if (root / f).is_file() and "/browser/" not in f]


def selection(base: str = "HEAD", root: Path = ROOT) -> list[str]:
    chosen = fast_tests(root)
    for path in changed_files(base, root):
        chosen += [t for t in tests_for(path, root) if t not in chosen]
    return chosen


if __name__ == "__main__":
    print("\n".join(selection(sys.argv[1] if len(sys.argv) > 1 else "HEAD")))
