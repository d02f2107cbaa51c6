"""How a long computation says how far it has got.

On the command line nothing listens and `report` costs one test. In the browser the
worker installs a listener (`listen`) that posts each report to the page, which moves a
progress bar and restarts its watchdog: a computation that reports is not taken for a
hang. Callers report every few hundred items, not every item.
"""

from __future__ import annotations

from collections.abc import Callable

_listener: Callable[[int, int, str], object] | None = None


def listen(listener: Callable[[int, int, str], object] | None) -> None:
    """Send every later report to `listener(done, total, what)`; None stops listening."""
    global _listener
    _listener = listener


def report(done: int, total: int, what: str) -> None:
    """`done` of `total` items of the step `what` are finished."""
    if _listener is not None:
        _listener(done, total, what)
