"""MkDocs hook: execute the site's notebooks once per change of what they use, two at a time.

mkdocs-jupyter executes every notebook on every build (`execute: true`), and its own cache
is keyed by the notebook's bytes alone: edit a calculator a notebook imports and it serves
the old outputs. This hook puts a cache of executed notebooks in front of its executor,
keyed by everything the run depended on:

- the notebook's bytes;
- every file of the repository the run's Python processes opened, listed or wrote
  (traced by docs/hooks/nbtrace/sitecustomize.py: modules imported, data read, scripts
  copied, in the kernel and in the processes it started) and every program it ran, each
  by its SHA-256 (a directory by its listing, a missing file as missing);
- the environment: the interpreter, the installed distributions and their versions, the
  kernel, the platform and processor, the thread and seed variables;
- the repository's path, if the outputs print it.

A cached notebook is reused only when all of these are unchanged, so a hit is the page an
execution would give (up to what the notebook measures, such as timings). What the trace
cannot see is said here: files read by compiled code without Python's `open` and files
outside the repository (the environment key stands for those). Set
KERNODECK_NOTEBOOK_CACHE=off to execute everything, or to a folder to move the cache
(default: $XDG_CACHE_HOME/kernodeck/notebooks, else ~/.cache/kernodeck/notebooks).
KERNODECK_NOTEBOOK_JOBS (default: the number of CPUs) notebooks execute at once, each in a
kernel of its own, longest first, while MkDocs renders the Markdown pages.

Each notebook's execution time is kept with its entry: `python -m benchmarks.test_profile`
prints them. Run as a script, this file executes one notebook (the cache's worker).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TRACER = Path(__file__).resolve().parent / "nbtrace"
FORMAT = 1  # bumped when an entry's meaning changes
KEEP = 4  # entries kept per notebook: the current one and a few to switch back to
ENV_PREFIXES = ("OMP_", "MKL_", "OPENBLAS_", "KMP_", "CUDA", "TORCH", "PYTHONHASHSEED")
# Two kernels whose OpenMP pools each take every core spin against each other: measured on
# 2 cores, the ablations notebook took 13 s alone and 232 s beside another. Each kernel gets
# one thread, and waiting threads sleep instead of spinning (libgomp's OMP_WAIT_POLICY),
# unless the caller set either; the values are part of the cache key.
KERNEL_DEFAULTS = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}

log = logging.getLogger("mkdocs.hooks.notebook_cache")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of IPython's tracebacks


class NotebookError(Exception):
    """A notebook failed to execute: its path and the failing cell's error."""


def cache_dir() -> Path | None:
    """Where executed notebooks are kept, or None when KERNODECK_NOTEBOOK_CACHE=off."""
    setting = os.environ.get("KERNODECK_NOTEBOOK_CACHE", "")
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernodeck" / "notebooks"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _kernel_argv(kernel_name: str) -> list[str]:
    """The kernel's command line, with this interpreter's path written as a word: a clean
    clone in another folder has its own venv, the same Python and the same packages (which
    the key holds), and may reuse the executions of this one."""
    from jupyter_client.kernelspec import KernelSpecManager

    try:
        argv = KernelSpecManager().get_kernel_spec(kernel_name or "python3").argv
    except Exception as error:  # no such kernel: the execution will say so
        return [f"unavailable: {error}"]
    return ["{this python}" if a in (sys.executable, "python", "python3") else a for a in argv]


def kernel_variables() -> dict[str, str]:
    """The environment the kernels run in: this process's, with KERNEL_DEFAULTS added."""
    return {**KERNEL_DEFAULTS, **os.environ}


def environment(kernel_name: str, allow_errors: bool) -> dict[str, Any]:
    """What the outputs depend on besides the repository's files."""
    from importlib import metadata

    # a set: `python -m mkdocs` run from the repository finds the project's own egg-info
    # twice (through the current folder and the editable install), `mkdocs` once
    dists = sorted(
        {f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions() if d.metadata}
    )
    return {
        "format": FORMAT,
        "python": sys.version,
        "implementation": sys.implementation.cache_tag,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _processor(),
        "cpus": os.cpu_count(),
        "distributions": _sha256("\n".join(dists).encode()),
        "variables": {
            k: v for k, v in sorted(kernel_variables().items()) if k.startswith(ENV_PREFIXES)
        },
        "kernel": _kernel_argv(kernel_name),
        "allow_errors": allow_errors,
    }


def fingerprint(kind: str, path: str, root: Path = ROOT) -> str:
    """The state of one traced dependency: a file's SHA-256, a directory's listing's."""
    target = Path(path) if kind == "x" and Path(path).is_absolute() else root / path
    if kind == "l":
        if not target.is_dir():
            return "absent"
        names = sorted(p.name for p in target.iterdir() if p.name != "__pycache__")
        return "listing:" + _sha256("\n".join(names).encode())
    if target.is_dir():
        return "directory"
    try:
        return _sha256(target.read_bytes())
    except FileNotFoundError:
        return "absent"
    except OSError as error:
        return f"unreadable: {error.strerror}"


def read_traces(trace_dir: Path) -> set[tuple[str, str]]:
    """The (kind, path) pairs of every traced process; a write also counts as a read."""
    seen: set[tuple[str, str]] = set()
    for trace in trace_dir.glob("*.trace"):
        for line in trace.read_text(encoding="utf-8").splitlines():
            kind, _, path = line.partition("\t")
            if kind in ("r", "w"):
                seen.add(("f", path))
            elif kind in ("l", "x"):
                seen.add((kind, path))
    return seen


@dataclass(frozen=True)
class Entry:
    """One cached execution: where it lies and what it was keyed by."""

    meta: Path
    notebook: Path
    data: dict[str, Any]

    def valid(self, env_key: str, nb_sha: str, root: Path) -> bool:
        d = self.data
        if d.get("environment") != env_key or d.get("notebook_sha256") != nb_sha:
            return False
        if d.get("root") is not None and d["root"] != str(root):
            return False
        return all(fingerprint(k, p, root) == want for k, p, want in d["dependencies"])


class NotebookCache:
    """Executed notebooks, looked up by notebook and validated against their traces."""

    def __init__(self, directory: Path | None, kernel_name: str, allow_errors: bool) -> None:
        self.directory = directory
        self.kernel_name = kernel_name
        self.allow_errors = allow_errors
        env = environment(kernel_name, allow_errors)
        self.env_key = _sha256(json.dumps(env, sort_keys=True).encode())

    def _folder(self, rel: str) -> Path:
        assert self.directory is not None
        return self.directory / _sha256(rel.encode())[:24]

    def entries(self, rel: str) -> list[Entry]:
        if self.directory is None or not self._folder(rel).is_dir():
            return []
        found = []
        for meta in sorted(self._folder(rel).glob("*.json")):
            try:
                data = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            found.append(Entry(meta, meta.with_suffix(".ipynb"), data))
        return found

    def lookup(self, nb_path: Path, root: Path = ROOT) -> Entry | None:
        rel = _relative(nb_path, root)
        nb_sha = _sha256(nb_path.read_bytes())
        for entry in self.entries(rel):
            if entry.notebook.is_file() and entry.valid(self.env_key, nb_sha, root):
                os.utime(entry.meta)  # most recently used: kept by the pruning
                return entry
        return None

    def last_seconds(self, nb_path: Path, root: Path = ROOT) -> float:
        """The newest recorded execution time of this notebook (0 when never executed)."""
        rel = _relative(nb_path, root)
        times = [(e.meta.stat().st_mtime, e.data.get("seconds", 0.0)) for e in self.entries(rel)]
        return max(times)[1] if times else 0.0

    def execute(self, nb_path: Path, root: Path = ROOT) -> tuple[Path, float]:
        """Execute in a fresh kernel; keep the result when a cache is set. (path, seconds)"""
        nb_path = nb_path.resolve()
        rel = _relative(nb_path, root)
        nb_bytes = nb_path.read_bytes()
        work = Path(tempfile.mkdtemp(prefix="kd-notebook-"))
        traces = work / "traces"
        traces.mkdir()
        out = work / nb_path.name
        started = time.perf_counter()
        proc = subprocess.run(
            [
                *(sys.executable, __file__, "execute", str(nb_path), str(out), str(traces)),
                *(self.kernel_name, "1" if self.allow_errors else "0", str(root)),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        if proc.returncode != 0:
            error = work / "error.txt"
            why = error.read_text(encoding="utf-8") if error.exists() else proc.stderr
            shutil.rmtree(work, ignore_errors=True)
            raise NotebookError(f"{rel}: {_ANSI.sub('', why).strip() or 'the executor failed'}")
        if self.directory is None:
            return out, seconds
        deps = sorted(read_traces(traces))
        executed = out.read_text(encoding="utf-8")
        data = {
            "notebook": rel,
            "notebook_sha256": _sha256(nb_bytes),
            "environment": self.env_key,
            "root": str(root) if str(root) in executed else None,
            "dependencies": [[k, p, fingerprint(k, p, root)] for k, p in deps],
            "seconds": round(seconds, 3),
            "executed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if _sha256(nb_path.read_bytes()) != data["notebook_sha256"]:
            return out, seconds  # edited while it ran: shown once, not cached
        name = _sha256(json.dumps([data["environment"], data["dependencies"]]).encode())[:24]
        folder = self._folder(rel)
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_write(folder / f"{name}.ipynb", executed)
        _atomic_write(folder / f"{name}.json", json.dumps(data, indent=1))
        shutil.rmtree(work, ignore_errors=True)
        self._prune(rel)
        return folder / f"{name}.ipynb", seconds

    def _prune(self, rel: str) -> None:
        entries = sorted(self.entries(rel), key=lambda e: e.meta.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            old.meta.unlink(missing_ok=True)
            old.notebook.unlink(missing_ok=True)


def _relative(nb_path: Path, root: Path) -> str:
    """The notebook's path in the repository (absolute when it lies outside)."""
    full = nb_path.resolve()
    return full.relative_to(root).as_posix() if full.is_relative_to(root) else full.as_posix()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run_notebook(
    nb_path: Path, out: Path, traces: Path, kernel_name: str, allow_errors: bool, root: Path
) -> None:
    """Execute one notebook as mkdocs-jupyter's ExecutePreprocessor would, traced."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(nb_path, as_version=4)
    env = kernel_variables()
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = f"{TRACER}{os.pathsep}{path}" if path else str(TRACER)
    env["KERNODECK_TRACE_DIR"] = str(traces)
    env["KERNODECK_TRACE_ROOT"] = str(root)
    client = NotebookClient(
        nb,
        kernel_name=kernel_name,
        allow_errors=allow_errors,
        store_widget_state=True,
        resources={"metadata": {"path": str(nb_path.parent)}},
    )
    client.execute(env=env)
    nbformat.write(nb, out)


def _main(argv: list[str]) -> int:
    if len(argv) != 7 or argv[0] != "execute":
        usage = "usage: notebook_cache.py execute NOTEBOOK OUT TRACES KERNEL 0|1 ROOT"
        print(usage, file=sys.stderr)
        return 2
    _, nb, out, traces, kernel, allow, root = argv
    try:
        run_notebook(Path(nb), Path(out), Path(traces), kernel, allow == "1", Path(root))
    except Exception as error:  # a cell's error: its message, not the executor's traceback
        message = f"{type(error).__name__}: {error}"
        Path(out).with_name("error.txt").write_text(message, encoding="utf-8")
        print(message, file=sys.stderr)
        return 1
    return 0


# ---- the MkDocs side ------------------------------------------------------------------


class _Executions:
    """The notebooks of one build, started together and waited for one by one."""

    def __init__(self, cache: NotebookCache, jobs: int) -> None:
        self.cache = cache
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        self.futures: dict[Path, concurrent.futures.Future[Path]] = {}

    def start(self, notebooks: list[Path]) -> None:
        # longest first, by their last recorded time: the build waits for the slowest
        for nb in sorted(notebooks, key=self.cache.last_seconds, reverse=True):
            self.futures[nb.resolve()] = self.pool.submit(self._one, nb.resolve())

    def _one(self, nb: Path) -> Path:
        rel = _relative(nb, ROOT)
        hit = self.cache.lookup(nb)
        if hit is not None:
            when = hit.data["executed_at"]
            log.info("notebook %s: inputs unchanged, outputs of %s reused", rel, when)
            return hit.notebook
        path, seconds = self.cache.execute(nb)
        log.info("notebook %s: executed in %.1f s", rel, seconds)
        return path

    def result(self, nb: Path) -> Path:
        future = self.futures.get(nb.resolve())
        if future is None:
            future = self.futures[nb.resolve()] = self.pool.submit(self._one, nb.resolve())
        return future.result()


_state: dict[str, Any] = {"executions": None}


def _jupyter_config(config: Any) -> Any | None:
    plugin = config["plugins"].get("mkdocs-jupyter")
    return None if plugin is None else plugin.config


def on_config(config: Any) -> Any:
    from mkdocs.exceptions import PluginError
    from mkdocs_jupyter import convert

    jupyter = _jupyter_config(config)
    if jupyter is None:
        return config
    if jupyter["cache"]:
        raise PluginError(
            "mkdocs-jupyter's own cache is keyed by the notebook alone and serves stale "
            "outputs when imported code changes: set `cache: false` (this hook caches)"
        )
    original = getattr(convert.nb2html, "__wrapped__", convert.nb2html)

    def nb2html(nb_path: str, execute: bool = False, **options: Any) -> str:
        if not execute:
            return original(nb_path, execute=False, **options)
        executions = _state["executions"]
        try:
            executed = executions.result(Path(nb_path))
        except NotebookError as error:
            raise PluginError(f"notebook failed: {error}") from None
        # rendered from a copy under the notebook's own name, as the executor would
        with tempfile.TemporaryDirectory(prefix="kd-render-") as tmp:
            copy = Path(tmp) / Path(nb_path).name
            shutil.copyfile(executed, copy)
            return original(str(copy), execute=False, **options)

    nb2html.__wrapped__ = original  # type: ignore[attr-defined]
    convert.nb2html = nb2html
    return config


def on_files(files: Any, config: Any) -> Any:
    jupyter = _jupyter_config(config)
    if jupyter is None or not jupyter["execute"]:
        return files
    previous = _state["executions"]
    if previous is not None:
        previous.pool.shutdown(wait=True)
    cache = NotebookCache(cache_dir(), jupyter["kernel_name"], jupyter["allow_errors"])
    jobs = int(os.environ.get("KERNODECK_NOTEBOOK_JOBS") or os.cpu_count() or 1)
    executions = _Executions(cache, max(1, jobs))
    ignored = jupyter["execute_ignore"] or []
    notebooks = [
        Path(f.abs_src_path)
        for f in files.documentation_pages()
        if f.src_uri.endswith(".ipynb") and not any(Path(f.abs_src_path).match(p) for p in ignored)
    ]
    executions.start(notebooks)
    _state["executions"] = executions
    return files


def on_post_build(config: Any) -> None:
    executions = _state["executions"]
    if executions is not None:
        executions.pool.shutdown(wait=True)
        _state["executions"] = None


def on_build_error(error: Exception) -> None:
    executions = _state["executions"]
    if executions is not None:  # the notebooks not yet started are not started
        executions.pool.shutdown(wait=True, cancel_futures=True)
        _state["executions"] = None


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
