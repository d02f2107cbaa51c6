"""The site, built once per test run and shared by every test process that needs it.

The first process that collects a test needing the site (a fixture `site_dir` or
`base_url`) starts `mkdocs build --strict` in the background, into a folder the whole run
shares (pytest-xdist's workers included); the unit tests go on meanwhile, and a test that
needs the site waits for the build. The build runs as `python tests/site_build.py FOLDER`,
which writes FOLDER/status.json when it ends, so any process can read the outcome.

Notebooks are executed by the build through docs/hooks/notebook_cache.py, which reuses an
execution only while everything it read is unchanged.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = "KERNODECK_TEST_RUN_DIR"  # the run's shared folder, set by tests/conftest.py
# a cold build (every notebook executed) took 73 s on 2 cores, 2026-12-05, measured by
# `python -m benchmarks.lesson_times` (docs/data/learn/notebook-times.json)
BUILD_TIMEOUT_S = 1800


_STARTED: list[subprocess.Popen[bytes]] = []


class SiteBuildError(AssertionError):
    """The build failed or warned: its log says why."""


def shared_dir() -> Path:
    return Path(os.environ[SHARED])


def start(shared: Path) -> bool:
    """Start the build unless a process of this run already did. True if this one did."""
    shared.mkdir(parents=True, exist_ok=True)
    try:
        # O_EXCL: exactly one process of the run wins, with no lock to leave behind
        fd = os.open(shared / "site.started", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    _STARTED.append(
        subprocess.Popen(
            [sys.executable, __file__, str(shared)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in pytest does not cut the build's log short
        )
    )
    return True


def finish() -> None:
    """Wait for a build this process started: a test of another process may need it."""
    while _STARTED:
        _STARTED.pop().wait(timeout=BUILD_TIMEOUT_S)


def wait(shared: Path, timeout_s: float = BUILD_TIMEOUT_S) -> Path:
    """The built site, once the build has ended; SiteBuildError if it failed or warned."""
    if not (shared / "site.started").exists():
        start(shared)
    status = shared / "status.json"
    deadline = time.monotonic() + timeout_s
    while not status.exists():
        if time.monotonic() > deadline:
            raise SiteBuildError(f"the site build did not end within {timeout_s:.0f} s")
        time.sleep(0.2)
    result = json.loads(status.read_text(encoding="utf-8"))
    log = (shared / "build.log").read_text(encoding="utf-8")
    if result["returncode"] != 0:
        raise SiteBuildError(f"mkdocs build failed ({result['returncode']}):\n{log[-6000:]}")
    warnings = [line for line in log.splitlines() if re.match(r"(WARNING|ERROR)\b", line)]
    if warnings:
        raise SiteBuildError("the build warned:\n" + "\n".join(warnings))
    return shared / "site"


def build(shared: Path) -> int:
    """Build into shared/site, the log into shared/build.log; status.json written last."""
    started = time.perf_counter()
    with open(shared / "build.log", "w", encoding="utf-8") as log:
        proc = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(shared / "site")],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            check=False,
        )
    seconds = time.perf_counter() - started
    tmp = shared / "status.json.tmp"
    tmp.write_text(json.dumps({"returncode": proc.returncode, "seconds": seconds}))
    os.replace(tmp, shared / "status.json")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(build(Path(sys.argv[1])))
