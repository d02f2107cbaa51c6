"""What the whole suite shares: the run's folder, the site built once, thread settings for
parallel workers, the order that lets the site build while the unit tests run, and the
hypothesis profiles.

`make test` runs this suite with pytest-xdist on every core (`-n auto`); plain `pytest`
runs it in one process. Either way the site is built once per run (tests/site_build.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import settings

from tests import site_build

# PROFILE=thorough (e.g. `PROFILE=thorough make test`): every property test draws ten times
# the examples it draws in the everyday run, its own `max_examples` included. The everyday
# counts are sized so that the whole hypothesis share of `make test` takes well under a
# minute; the thorough run is for before a release or after changing a calculator's core.
#
# No deadline in either: a deadline is a timed test, and speed is measured in benchmarks/.
# With both cores busy (make test runs the Pyodide run beside the Python suite) one
# example of a correct test took 285 ms against hypothesis's default 200 ms.
THOROUGH = os.environ.get("PROFILE", "") == "thorough"
THOROUGH_FACTOR = 10
settings.register_profile("everyday", deadline=None)
settings.register_profile("thorough", deadline=None, max_examples=100 * THOROUGH_FACTOR)
settings.load_profile("thorough" if THOROUGH else "everyday")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers whose OpenMP pools each take every core spin against each other (the
    # notebook cache measured 13 s against 232 s for one notebook beside another): one
    # thread a worker, sleeping when idle. Set before any test module imports torch.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_SITE_FIXTURES = {"site_dir", "base_url"}
_OWNED = pytest.StashKey[str]()  # the run folder this process made, removed at its end


def pytest_configure(config: pytest.Config) -> None:
    # The controller (or the only process) makes the run's folder; workers inherit it.
    if not hasattr(config, "workerinput") and site_build.SHARED not in os.environ:
        os.environ[site_build.SHARED] = tempfile.mkdtemp(prefix="kd-test-run-")
        config.stash[_OWNED] = os.environ[site_build.SHARED]


def pytest_unconfigure(config: pytest.Config) -> None:
    site_build.finish()
    owned = config.stash.get(_OWNED, None)
    if owned is not None:
        started = os.path.join(owned, "site.started")
        status = os.path.join(owned, "status.json")
        if os.path.exists(started) and not os.path.exists(status):
            return  # a build started by a worker still writes here: leave it the folder
        shutil.rmtree(owned, ignore_errors=True)
        os.environ.pop(site_build.SHARED, None)


def _scale_examples(items: list[pytest.Item]) -> None:
    """A test's own `@settings(max_examples=N)` becomes N * THOROUGH_FACTOR."""
    seen: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is None or id(test) in seen:  # parametrized items share one function
            continue
        seen.add(id(test))
        if own.max_examples < 100 * THOROUGH_FACTOR:
            test._hypothesis_internal_use_settings = settings(
                own, max_examples=own.max_examples * THOROUGH_FACTOR
            )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if THOROUGH:
        _scale_examples(items)
    # Tests that need the built site run last (stable order otherwise), so that the build,
    # started as soon as collection ends, overlaps the unit tests instead of blocking them.
    items.sort(key=lambda item: bool(_SITE_FIXTURES & set(getattr(item, "fixturenames", ()))))


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    if any(_SITE_FIXTURES & set(getattr(i, "fixturenames", ())) for i in session.items):
        site_build.start(site_build.shared_dir())
