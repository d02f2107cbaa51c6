"""Fixtures for the browser tests: the real site, built once per run with `mkdocs build
--strict` (tests/site_build.py), served on 127.0.0.1 (random port), driven by Debian's
headless Chromium.

Every page fixture refuses requests to any host but 127.0.0.1 and fails the test if one was
tried, or if the console logged an error; it saves a screenshot under test-artifacts/.
Pages with JavaScript share one browser context per process (see `js_context`).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Request, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from tests import site_build

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # every host but this machine's is unknown to the browser: a page that reaches out fails,
    # and the request is still reported to the test (Watched.external)
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture(scope="session")
def site_dir() -> Path:
    """The site built once for the whole run (tests/site_build.py), strict and silent."""
    return site_build.wait(site_build.shared_dir())


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
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


def _executable() -> str:
    executable = shutil.which("chromium")
    assert executable, "chromium is missing: `make chromium` installs Debian's package"
    return executable


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Chromium for the pages without JavaScript: a fresh context for each."""
    b = playwright.chromium.launch(executable_path=_executable(), args=CHROMIUM_ARGS)
    yield b
    b.close()


@pytest.fixture(scope="session")
def js_context(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrowserContext]:
    """One context, kept for this process's tests, for the pages with JavaScript.

    Its HTTP cache keeps Pyodide's files and V8's compiled wasm from one test to the next, as
    a reader's browser does from one page to the next: a calculator page was ready in about
    1.8 s instead of 2.8 s with a fresh context (measured here; the cold first visit is the
    site-load benchmark's). Request interception would turn that cache off (Playwright
    disables it while a route is set), so other hosts are refused by the resolver and
    watched through request events instead. Each test gets a new page; cookies and storage
    are cleared after it.
    """
    context = playwright.chromium.launch_persistent_context(
        tmp_path_factory.mktemp("chromium-profile"),
        executable_path=_executable(),
        args=CHROMIUM_ARGS,
        viewport=DESKTOP,
    )
    for page in context.pages:  # the blank page a persistent context opens with
        page.close()
    yield context
    context.close()


class Watched:
    """A page with what it tried outside 127.0.0.1 and what its console reported."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.external: list[str] = []
        self.errors: list[str] = []

    def request(self, request: Request) -> None:
        url = request.url
        if urlsplit(url).hostname != "127.0.0.1" and not url.startswith(("data:", "blob:")):
            self.external.append(url)


def _watch(page: Page) -> Watched:
    w = Watched(page)
    # on the context: a dedicated worker's requests (Pyodide's files) are reported there
    page.context.on("request", w.request)
    page.on("console", lambda m: w.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    return w


def _artifact_name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name) + ".png"


def _finish(w: Watched, request: pytest.FixtureRequest) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    w.page.screenshot(path=str(ARTIFACTS / _artifact_name(request)), full_page=True)


def _check(w: Watched) -> None:
    assert w.external == [], f"requests outside 127.0.0.1: {w.external}"
    assert w.errors == [], f"console errors: {w.errors}"


def _on_shared(
    context: BrowserContext, request: pytest.FixtureRequest, viewport: dict[str, int]
) -> Iterator[Watched]:
    page = context.new_page()
    page.set_viewport_size(viewport)
    w = _watch(page)
    yield w
    try:
        _finish(w, request)
    finally:
        context.remove_listener("request", w.request)
        for other in context.pages:  # the test's page and any it opened
            if urlsplit(other.url).hostname == "127.0.0.1":
                with contextlib.suppress(PlaywrightError):
                    other.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            other.close()
        context.clear_cookies()
    _check(w)


@pytest.fixture
def watched(js_context: BrowserContext, request: pytest.FixtureRequest) -> Iterator[Watched]:
    """A page with JavaScript, as readers get it."""
    yield from _on_shared(js_context, request, DESKTOP)


@pytest.fixture
def phone(js_context: BrowserContext, request: pytest.FixtureRequest) -> Iterator[Watched]:
    """A page with JavaScript on a phone's screen, 375 CSS pixels wide."""
    yield from _on_shared(js_context, request, {"width": 375, "height": 800})


@pytest.fixture
def no_js(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Watched]:
    """A page with JavaScript off, in a fresh context: what is there before (or without)
    Pyodide."""
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    w = _watch(context.new_page())
    yield w
    try:
        _finish(w, request)
    finally:
        context.close()
    _check(w)
