"""Run the reader's command as a child process, stdio inherited, and say how it ended,
forwarding the signals that stop a run.

The command runs in the manifest's own process group, as uv's `uv run` does
(astral-sh/uv PR #11009): a Ctrl-C typed at the terminal reaches both processes, so the
manifest does not send a second SIGINT to the command, which many training loops read
as "stop now, skip the checkpoint". A SIGINT that cannot have come from the terminal
(this process is not in the terminal's foreground group, or it is the second one) is
forwarded, as are SIGTERM and SIGHUP, which a scheduler, `kill` or `timeout` send to one
process only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# a command that ends by one of these was stopped from outside, not by a fault of its own
STOPPING = frozenset(FORWARDED)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How the command ended.

    status:         ok (exit 0), failed (non-zero exit, or it could not start),
                    interrupted (a stopping signal reached the manifest or ended the
                    command), killed (another signal ended it: SIGKILL from the
                    out-of-memory killer, SIGSEGV, ...).
    returncode:     the exit code, negative for a signal as Python reports it; None when
                    the command never started.
    signal:         the name of the signal that ended the command, or None.
    interrupted_by: the first stopping signal the manifest received, or None.
    error:          why the command did not start, or None.
    wall_seconds:   from just before the start to the end (monotonic clock).
    exit_status:    what `manifest run` exits with: the command's code, 128 + signal
                    number when a signal ended it (the shells' convention), 126 or 127
                    when it could not start, 130 when interrupted before it started.
    """

    status: str
    returncode: int | None
    signal: str | None
    interrupted_by: str | None
    error: str | None
    wall_seconds: float
    exit_status: int


def signal_name(number: int) -> str:
    """SIGKILL for 9; a real-time signal without a name as `signal 40`."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def in_terminal_foreground() -> bool:
    """Whether this process belongs to its controlling terminal's foreground process
    group: the only case in which a Ctrl-C also reached the command by itself."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


class SignalWatch:
    """Installed for the life of a run: records the stopping signals received and
    forwards them to the child (see the module's note); restores the handlers on exit."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.child: subprocess.Popen[bytes] | None = None
        self._foreground = in_terminal_foreground()
        self._previous: dict[int, object] = {}

    def __enter__(self) -> SignalWatch:
        for s in FORWARDED:
            self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: object) -> None:
        self.received.append(signum)
        child = self.child
        if child is None or child.poll() is not None:
            return
        first_sigint = signum == signal.SIGINT and self.received.count(signum) == 1
        if first_sigint and self._foreground:
            return  # the terminal sent this Ctrl-C to the whole group: the child has it
        child.send_signal(signum)


def run_command(command: list[str], env: dict[str, str], watch: SignalWatch) -> Outcome:
    """Start `command` (no shell), wait for it under `watch`, and classify its end."""
    start = time.monotonic()
    if watch.received:  # stopped while the manifest was being prepared: never started
        name = signal_name(watch.received[0])
        return Outcome(
            status="interrupted",
            returncode=None,
            signal=None,
            interrupted_by=name,
            error=f"{name} received before the command started",
            wall_seconds=0.0,
            exit_status=130,
        )
    try:
        watch.child = subprocess.Popen(command, env=env)
    except OSError as e:
        missing = isinstance(e, FileNotFoundError)
        return Outcome(
            status="failed",
            returncode=None,
            signal=None,
            interrupted_by=None,
            error=f"{'command not found' if missing else 'cannot start'}: {command[0]!r} "
            f"({e.strerror})",
            wall_seconds=time.monotonic() - start,
            exit_status=127 if missing else 126,
        )
    rc = watch.child.wait()
    wall = time.monotonic() - start
    by = signal_name(watch.received[0]) if watch.received else None
    if rc < 0:
        status = "interrupted" if by or -rc in STOPPING else "killed"
        return Outcome(
            status=status,
            returncode=rc,
            signal=signal_name(-rc),
            interrupted_by=by,
            error=None,
            wall_seconds=wall,
            exit_status=128 - rc,
        )
    status = "interrupted" if by else ("ok" if rc == 0 else "failed")
    return Outcome(
        status=status,
        returncode=rc,
        signal=None,
        interrupted_by=by,
        error=None,
        wall_seconds=wall,
        exit_status=rc,
    )
