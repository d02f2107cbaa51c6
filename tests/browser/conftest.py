"""Fixtures for the browser tests: the real site, built with `mkdocs build --strict` into a
temporary folder, served on 127.0.0.1 (random port), driven by Debian's headless Chromium.

Every page fixture blocks requests to any host but 127.0.0.1 and fails the test if one was
tried, or if the console logged an error; it saves a screenshot under test-artifacts/.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if re.match(r"(WARNING|ERROR)\b", line)]
    assert warnings == []
    return out


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {  # noqa: RUF012 - the base class's own attribute
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".wasm": "application/wasm",
        ".json": "application/json",
    }

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def base_url(site_dir: Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(site_dir))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    assert executable, "chromium is missing: `make chromium` installs Debian's package"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Watched:
    """A page with what it tried outside 127.0.0.1 and what its console reported."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.external: list[str] = []
        self.errors: list[str] = []


def _watch(page: Page) -> Watched:
    w = Watched(page)

    def route(r):  # type: ignore[no-untyped-def]
        if urlsplit(r.request.url).hostname == "127.0.0.1" or r.request.url.startswith(
            ("data:", "blob:")
        ):
            r.continue_()
        else:
            w.external.append(r.request.url)
            r.abort()

    page.context.route("**/*", route)
    page.on("console", lambda m: w.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    return w


def _artifact_name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name) + ".png"


def _open(browser: Browser, request: pytest.FixtureRequest, **options: object) -> Iterator[Watched]:
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **options})
    w = _watch(context.new_page())
    yield w
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        w.page.screenshot(path=str(ARTIFACTS / _artifact_name(request)), full_page=True)
    finally:
        context.close()
    assert w.external == [], f"requests outside 127.0.0.1: {w.external}"
    assert w.errors == [], f"console errors: {w.errors}"


@pytest.fixture
def watched(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Watched]:
    """A page with JavaScript, as readers get it."""
    yield from _open(browser, request)


@pytest.fixture
def phone(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Watched]:
    """A page with JavaScript on a phone's screen, 375 CSS pixels wide."""
    yield from _open(browser, request, viewport={"width": 375, "height": 800})


@pytest.fixture
def no_js(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Watched]:
    """A page with JavaScript off: what is there before (or without) Pyodide."""
    yield from _open(browser, request, java_script_enabled=False)
