"""The code's state from git: commit, branch, remote, tracked changes and their diff.

Read with the `git` program in a bounded subprocess; no git library. A folder outside any
repository, or a machine without git, is recorded as such (commit None), never refused.

Untracked files (new files never `git add`-ed, outside .gitignore) do not make the tree
dirty: outputs, caches and earlier manifests usually lie there. They are listed (the
first MAX_LISTED) so that a new script the command ran shows up in the record; add it to
git to make it part of the code's state.
"""

from __future__ import annotations

import subprocess
from typing import Any
from urllib.parse import urlsplit, urlunsplit

TIMEOUT_S = 60.0  # `git status` on a large repository on a network disk can be slow
MAX_LISTED = 200  # paths listed per kind (changed, untracked); the count is always whole


def _git(args: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, timeout=timeout, check=False
    )


def _out(done: subprocess.CompletedProcess[bytes]) -> str | None:
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else None


def public_remote(url: str | None) -> str | None:
    """The remote's URL without a user name or token (`https://user:token@host/x` is
    recorded as `https://host/x`); scp-like `git@host:path` is kept as it is."""
    if not url or "://" not in url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _paths(raw: bytes, status: bool) -> list[str]:
    """Paths from `-z` output; `status` lines start with two status letters and a space."""
    entries = [e.decode("utf-8", "replace") for e in raw.split(b"\0") if e]
    if not status:
        return entries
    paths = []
    skip = False
    for e in entries:
        if skip:  # the source path of a rename follows its entry in -z output
            skip = False
            continue
        paths.append(e[3:])
        skip = e[0] in "RC"
    return paths


def git_state(cwd: str, *, timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """The repository holding `cwd`: its root, commit (None before the first commit),
    branch (None when detached), remote `origin` without credentials, whether tracked
    files differ from the commit (staged or not), which, and the untracked files."""
    state: dict[str, Any] = {
        "repository": None,
        "commit": None,
        "branch": None,
        "remote": None,
        "dirty": None,
        "changed": [],
        "changed_count": 0,
        "untracked": [],
        "untracked_count": 0,
        "diff_file": None,
        "diff_sha256": None,
        "error": None,
    }
    try:
        root = _out(_git(["rev-parse", "--show-toplevel"], cwd, timeout))
        if root is None:
            state["error"] = "not a git repository"
            return state
        state["repository"] = root
        state["commit"] = _out(_git(["rev-parse", "--verify", "-q", "HEAD"], root, timeout))
        state["branch"] = _out(_git(["symbolic-ref", "--short", "-q", "HEAD"], root, timeout))
        state["remote"] = public_remote(
            _out(_git(["config", "--get", "remote.origin.url"], root, timeout))
        )
        status = _git(["status", "--porcelain=v1", "-z", "--untracked-files=no"], root, timeout)
        if status.returncode != 0:
            state["error"] = "git status failed: " + status.stderr.decode(errors="replace")
            return state
        changed = _paths(status.stdout, status=True)
        untracked = _paths(
            _git(["ls-files", "--others", "--exclude-standard", "-z"], root, timeout).stdout,
            status=False,
        )
    except FileNotFoundError:
        state["error"] = "git is not installed"
        return state
    except subprocess.TimeoutExpired:
        state["error"] = f"git did not answer within {timeout:g} s"
        return state
    state["dirty"] = bool(changed)
    state["changed"], state["changed_count"] = changed[:MAX_LISTED], len(changed)
    state["untracked"], state["untracked_count"] = untracked[:MAX_LISTED], len(untracked)
    return state


def write_diff(state: dict[str, Any], path: str, *, timeout: float = TIMEOUT_S) -> None:
    """Write the tracked changes against the commit (staged and not) to `path` as a
    binary patch that `git apply` restores on a checkout of the commit. Before the first
    commit the base is the empty tree. Streamed to the file: any size in bounded memory."""
    root = state["repository"]
    base = state["commit"]
    if base is None:
        empty = _git(["hash-object", "-t", "tree", "/dev/null"], root, timeout)
        base = empty.stdout.decode().strip()
    with open(path, "wb") as f:
        done = subprocess.run(
            ["git", "diff", "--binary", "--no-ext-diff", "--no-textconv", base, "--"],
            cwd=root,
            stdout=f,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    if done.returncode != 0:
        raise ValueError(f"git diff failed: {done.stderr.decode(errors='replace').strip()}")
