"""Records which of the repository's files a notebook's processes read, list and write.

Imported at start-up by every Python process of a notebook run that the notebook cache
(docs/hooks/notebook_cache.py) executes: the kernel, and the processes it starts, since
they inherit PYTHONPATH and the two variables below. Nothing happens unless
KERNODECK_TRACE_DIR is set, so this folder is harmless on any other PYTHONPATH.

Each process appends one line per new path to TRACE_DIR/PID.trace, tab-separated:

    r  PATH   a file opened for reading (a module's bytecode counts as its source)
    w  PATH   a file opened for writing
    l  PATH   a directory listed by the notebook's code (the import system's own
              listings are left out: the modules it finds are recorded as they load)
    x  PATH   a program run by the notebook that is not this Python

PATH is relative to KERNODECK_TRACE_ROOT (the repository) for files inside it; files
outside it are left to the cache's environment key (interpreter and package versions),
except the programs run, recorded by absolute path. Sources: `sys.addaudithook` and the
audit events table of the Python documentation ("open", "os.listdir", "os.scandir",
"subprocess.Popen", "os.exec", "os.posix_spawn").
"""

from __future__ import annotations

import os
import sys

_DIR = os.environ.get("KERNODECK_TRACE_DIR")
_ROOT = os.environ.get("KERNODECK_TRACE_ROOT")
_HERE = os.path.dirname(os.path.abspath(__file__))
_SKIP = ("/.venv/", "/node_modules/", "/.git/", "/site/", "/build/", "/.cache/")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_EVENTS = frozenset(
    {"open", "os.listdir", "os.scandir", "subprocess.Popen", "os.exec", "os.posix_spawn"}
)


class _Trace:
    def __init__(self, directory: str, root: str) -> None:
        self.directory = directory
        self.root = os.path.realpath(root) + os.sep
        self.given = os.path.abspath(root) + os.sep
        self.seen: set[tuple[str, str]] = set()
        self.pid = -1
        self.file = None

    def _write(self, kind: str, path: str) -> None:
        if (kind, path) in self.seen and self.pid == os.getpid():
            return
        if self.pid != os.getpid():  # a forked child writes a file of its own
            self.pid, self.seen = os.getpid(), set()
            self.file = open(  # noqa: SIM115 - kept open for the process's life
                os.path.join(self.directory, f"{self.pid}.trace"), "a", encoding="utf-8"
            )
        self.seen.add((kind, path))
        self.file.write(f"{kind}\t{path}\n")
        self.file.flush()

    def _relative(self, path: object) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        try:
            path = os.fsdecode(os.fspath(path))
        except TypeError:
            return None
        full = os.path.abspath(path)
        for prefix in (self.given, self.root):
            if full.startswith(prefix):
                rel = full[len(prefix) :]
                break
        else:
            return None
        if any(s in "/" + rel for s in _SKIP):
            return None
        if "__pycache__" in rel:  # bytecode stands for its source: pkg/__pycache__/m.*.pyc
            head, _, tail = rel.partition("/__pycache__/")
            if "/" in tail or not tail.endswith(".pyc"):
                return None
            rel = f"{head}/{tail.split('.', 1)[0]}.py" if head else f"{tail.split('.', 1)[0]}.py"
        return rel

    def _propagate(self, env: object) -> None:
        # A process started with an environment of its own (`env={..., "PYTHONPATH": ...}`)
        # would run untraced: put the tracer back into that mapping before it is used.
        if not isinstance(env, dict):
            return
        keys = {k if isinstance(k, str) else os.fsdecode(k) for k in env}
        if "KERNODECK_TRACE_DIR" in keys:
            return
        if any(isinstance(k, bytes) for k in env):
            return
        path = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = f"{path}{os.pathsep}{_HERE}" if path else _HERE
        env["KERNODECK_TRACE_DIR"] = self.directory
        env["KERNODECK_TRACE_ROOT"] = self.given.rstrip(os.sep)

    def _program(self, executable: object, args: object) -> None:
        first = executable
        if first is None and isinstance(args, (list, tuple)) and args:
            first = args[0]
        elif first is None and isinstance(args, (str, bytes)):
            first = args.split()[0] if args.split() else None
        if first is None:
            return
        first = os.fsdecode(first)
        if os.sep not in first:
            import shutil

            first = shutil.which(first) or first
        first = os.path.realpath(first)
        if first == os.path.realpath(sys.executable):
            return  # this Python: covered by the environment key, and traced itself
        rel = self._relative(first)
        self._write("x", rel if rel is not None else first)

    def hook(self, event: str, args: tuple) -> None:
        if event not in _EVENTS:
            return
        try:
            if event == "open":
                path, mode, flags = args
                if mode is None and _relative_to_a_descriptor(path):
                    return
                rel = self._relative(path)
                if rel is None:
                    return
                if mode is None:
                    writes = bool(flags & _WRITE_FLAGS)
                else:
                    writes = any(c in str(mode) for c in "wax+")
                self._write("w" if writes else "r", rel)
            elif event in ("os.listdir", "os.scandir"):
                caller = sys._getframe(1).f_code.co_filename
                if "importlib" in caller or caller.startswith("<frozen"):
                    return
                rel = self._relative(args[0] if args[0] is not None else ".")
                if rel is not None:
                    self._write("l", rel)
            elif event == "subprocess.Popen":
                executable, argv, _cwd, env = args
                self._propagate(env)
                self._program(executable, argv)
            else:  # os.exec, os.posix_spawn: (path, args, env)
                self._propagate(args[2])
                self._program(args[0], args[1])
        except Exception:  # never break the notebook: a missed path only costs a rerun
            return


def _relative_to_a_descriptor(path: object) -> bool:
    """An os.open of a relative name from shutil: rmtree walks by directory descriptor
    (`os.open(name, ..., dir_fd=fd)`), which the audit event does not carry."""
    if not isinstance(path, (str, bytes)) or os.path.isabs(path):
        return False
    frame = sys._getframe(1)
    for _ in range(4):  # this function, the hook, then the caller of os.open
        if frame is None:
            return False
        if frame.f_code.co_filename.endswith("shutil.py"):
            return True
        frame = frame.f_back
    return False


def _chain() -> None:
    """Run the sitecustomize module this one hides, if any."""
    import importlib.machinery
    import importlib.util

    others = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if _DIR and _ROOT:
    sys.addaudithook(_Trace(_DIR, _ROOT).hook)
_chain()
