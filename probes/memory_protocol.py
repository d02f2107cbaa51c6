"""Record GPU memory at each phase of a training step: a file to copy into your own code.

The part above the line `# ---- demo` needs only torch and the standard library: copy it
into your training script as it is. Three lines use it:

    log = PhaseLog("cuda")                      # or "cpu"; after this, run your code
    with log.phase("step1/forward"): loss = model(batch).loss   # one `with` per phase
    print(log.table()); log.write_json("memory.json")

`log.mark("name")` records the interval since the previous boundary without a `with`.
Run at least two steps: AdamW creates its states inside the first `optimizer.step()`, so
only the second step shows the memory of a step in the steady state.

What each figure is (CUDA and ROCm: torch's `torch.cuda` API covers both):

  allocated_bytes       bytes of the tensors alive at the end of the phase
                        (`torch.cuda.memory_allocated`)
  peak_allocated_bytes  the highest allocated during the phase
                        (`max_memory_allocated` after `reset_peak_memory_stats` at its start)
  reserved_bytes        what torch's caching allocator holds from the driver: allocated
                        plus the rounding of each block plus freed blocks it keeps for
                        reuse (`memory_reserved`); `peak_reserved_bytes` its highest
  device_used_bytes     total - free from `torch.cuda.mem_get_info`: what the device has in
                        use, including the CUDA context, library workspaces (cuBLAS,
                        cuDNN, NCCL) allocated outside torch, and other processes
  alloc_retries         `num_alloc_retries` from `memory_stats`, counted since the process
                        started: the allocator found no free block, released its cache
                        and tried again (a sign of fragmentation or nearly full memory)
  seconds               wall time of the phase

An out-of-memory error comes when reserved plus what the allocator asks for exceeds what
is free on the device: size against `peak_reserved_bytes` and `device_used_bytes`, not
against the peak of allocated.

What it costs:

  * one `torch.cuda.synchronize` at every boundary (phase entry, phase exit, mark). It is
    what makes the figures belong to the phase: without it the host would read the
    counters while kernels of the phase are still queued. It also removes the overlap
    between the host queuing the next phase's kernels and the device finishing this
    phase's, across that boundary only. Record a few steps, not a whole training run.
  * `reset_peak_memory_stats`, `memory_stats`, `memory_allocated`, `memory_reserved`
    and `mem_get_info` (one driver query) per boundary: host-side calls. Their cost on a
    GPU is not measured in this file; `python -m probes.memory_protocol` prints the median
    time of one `mark()` on the device it runs on (on a GPU, with nothing queued).
  * `start_history()` (optional) makes the allocator record each allocation and free
    with its stack trace, which slows every allocation and keeps up to `max_entries`
    records in host memory; `dump_snapshot(path)` writes them for
    https://pytorch.org/memory_viz. See https://pytorch.org/docs/stable/torch_cuda_memory.html

On the CPU (for tests and for the docs' notebook) there is no caching allocator: the log
counts live tensor storages itself, with a `TorchDispatchMode` that sees every torch
operation and counts each storage it returns once, until the storage is freed. So
`allocated` is the bytes of live CPU tensors, `reserved`, `device_used` and
`alloc_retries` are None, and tensors made before the log opened are not counted unless
given to `log.adopt(tensors)`. Every torch operation then passes through Python: the
training code runs slower while a CPU log is open. Close it (`log.close()`, or use
`with PhaseLog("cpu") as log:`) when done.

A CPU build of torch answers `torch.cuda.memory_allocated()` with 0 and no error. This
log refuses that: `PhaseLog("cuda")` raises when torch sees no CUDA or ROCm device, and
a phase whose peak allocated is 0 on a GPU raises instead of being recorded.
"""

from __future__ import annotations

import json
import statistics
import time
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

MiB = 2**20
GiB = 2**30  # GiB is 2^30 bytes
CPU_NOTE = (
    "cpu: live tensor storages counted by a TorchDispatchMode; no caching allocator on CPU, "
    "so reserved, device used and allocation retries do not exist (None)"
)


class _LiveStorages(TorchDispatchMode):
    """Bytes of live CPU storages: each counted once when an op first returns it, and
    forgotten when it is freed (a weakref finalizer; torch keeps one Python object per
    storage for the storage's life, so its id is a stable key while it lives)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[int, int]] = {}  # id(storage) -> (serial, bytes)
        self.serial = 0
        self.current = 0
        self.peak = 0

    def add(self, t: object) -> None:
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            return
        try:
            st = t.untyped_storage()
            n = st.nbytes()
        except (RuntimeError, NotImplementedError):  # sparse, nested, wrapper tensors
            return
        if id(st) in self.live:
            return
        self.serial += 1
        self.live[id(st)] = (self.serial, n)
        weakref.finalize(st, self._free, id(st), self.serial)
        self.current += n
        self.peak = max(self.peak, self.current)

    def _free(self, key: int, serial: int) -> None:
        entry = self.live.get(key)
        if entry is not None and entry[0] == serial:
            del self.live[key]
            self.current -= entry[1]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            self.add(t)
        return out


class PhaseLog:
    """Memory figures per phase on a CUDA/ROCm device (the caching allocator's counters)
    or on the CPU (live tensor storages); see the module docstring."""

    def __init__(self, device: str | torch.device = "cuda") -> None:
        self.device = torch.device(device)
        self.records: list[dict[str, Any]] = []
        self._tracker: _LiveStorages | None = None
        self._history = False
        self._open = False
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                if torch.version.hip or torch.version.cuda:
                    build = "a GPU build, but no device is visible"
                else:
                    build = "a CPU-only build"
                raise RuntimeError(
                    f"PhaseLog({str(self.device)!r}): torch.cuda.is_available() is False "
                    f"(torch {torch.__version__}: {build}); torch.cuda.memory_allocated() "
                    "would answer 0, which is not a measurement. Use a CUDA or ROCm build "
                    "of torch on a machine with a GPU, or PhaseLog('cpu')."
                )
            self.backend = "cuda-allocator"
            self.note = "cuda: torch's caching allocator (ROCm uses the same torch.cuda API)"
        elif self.device.type == "cpu":
            self.backend = "cpu-live-storages"
            self.note = CPU_NOTE
            self._tracker = _LiveStorages()
            self._tracker.__enter__()
            self._open = True
        else:
            raise ValueError(f"PhaseLog: device must be cuda or cpu, got {str(self.device)!r}")
        self._boundary()

    # -- the figures -------------------------------------------------------------------
    def _boundary(self) -> None:
        """Start an interval: wait for queued work, reset the peaks."""
        if self._tracker is not None:
            self._tracker.peak = self._tracker.current
        else:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        self._t0 = time.perf_counter()

    def _read(self, name: str) -> dict[str, Any]:
        seconds = time.perf_counter() - self._t0
        if self._tracker is not None:
            return {
                "phase": name,
                "allocated_bytes": self._tracker.current,
                "peak_allocated_bytes": self._tracker.peak,
                "reserved_bytes": None,
                "peak_reserved_bytes": None,
                "device_used_bytes": None,
                "alloc_retries": None,
                "seconds": seconds,
            }
        torch.cuda.synchronize(self.device)  # the phase's kernels have run: its figures
        peak = int(torch.cuda.max_memory_allocated(self.device))
        if peak == 0:
            raise RuntimeError(
                f"phase {name!r}: the allocator reports a peak of 0 bytes on "
                f"{self.device}, which is not a measurement: nothing torch allocated on "
                "this device was alive in this phase (the work ran on another device, "
                "or this is a CPU build of torch)"
            )
        free, total = torch.cuda.mem_get_info(self.device)
        stats = torch.cuda.memory_stats(self.device)
        return {
            "phase": name,
            "allocated_bytes": int(torch.cuda.memory_allocated(self.device)),
            "peak_allocated_bytes": peak,
            "reserved_bytes": int(torch.cuda.memory_reserved(self.device)),
            "peak_reserved_bytes": int(torch.cuda.max_memory_reserved(self.device)),
            "device_used_bytes": int(total - free),
            "alloc_retries": int(stats.get("num_alloc_retries", 0)),
            "seconds": seconds,
        }

    def mark(self, name: str) -> dict[str, Any]:
        """Record the interval since the previous boundary under `name`; start the next."""
        record = self._read(name)
        self.records.append(record)
        self._boundary()
        return record

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """`with log.phase("forward"): ...`: peaks reset at entry, recorded at exit
        (a phase that raises, an out-of-memory error say, is not recorded)."""
        self._boundary()
        yield
        self.mark(name)

    def adopt(self, tensors: Iterable[torch.Tensor]) -> None:
        """CPU: count tensors made before the log opened (a model built earlier).
        On a GPU the allocator knows them already: nothing to do."""
        if self._tracker is not None:
            for t in tensors:
                self._tracker.add(t)

    def close(self) -> None:
        """CPU: stop intercepting torch operations (modes opened later must be closed
        first: they form a stack). The records stay."""
        if self._tracker is not None and self._open:
            self._tracker.__exit__(None, None, None)
            self._open = False

    def __enter__(self) -> PhaseLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the allocator's history (CUDA/ROCm only) --------------------------------------
    def _need_gpu(self, what: str) -> None:
        if self.device.type != "cuda":
            raise RuntimeError(
                f"{what} records the CUDA/ROCm caching allocator's history; "
                f"PhaseLog({str(self.device)!r}) has no caching allocator (no CUDA device)"
            )

    def start_history(self, max_entries: int = 100_000) -> None:
        """Record every allocation and free with its stack trace, up to `max_entries`."""
        self._need_gpu("start_history()")
        torch.cuda.memory._record_memory_history(max_entries=max_entries)
        self._history = True

    def dump_snapshot(self, path: str) -> None:
        """Write the history for https://pytorch.org/memory_viz (a pickle file)."""
        self._need_gpu("dump_snapshot()")
        torch.cuda.memory._dump_snapshot(path)

    def stop_history(self) -> None:
        self._need_gpu("stop_history()")
        torch.cuda.memory._record_memory_history(enabled=None)
        self._history = False

    # -- output ------------------------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        return {
            "device": str(self.device),
            "backend": self.backend,
            "note": self.note,
            "torch": torch.__version__,
            "history_recording": self._history,
            "phases": [dict(r) for r in self.records],
        }

    def write_json(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.as_dict(), f, indent=2)
            f.write("\n")

    def table(self) -> str:
        """The phases as plain text: bytes in MiB (2^20), the peak also in GiB (2^30)."""
        head = [
            "phase",
            "allocated MiB",
            "peak alloc MiB",
            "peak alloc GiB",
            "reserved MiB",
            "peak reserved MiB",
            "device used MiB",
            "alloc retries",
        ]

        def mib(v: int | None) -> str:
            return "-" if v is None else f"{v / MiB:,.2f}"

        rows = [
            [
                r["phase"],
                mib(r["allocated_bytes"]),
                mib(r["peak_allocated_bytes"]),
                f"{r['peak_allocated_bytes'] / GiB:.4f}",
                mib(r["reserved_bytes"]),
                mib(r["peak_reserved_bytes"]),
                mib(r["device_used_bytes"]),
                "-" if r["alloc_retries"] is None else str(r["alloc_retries"]),
            ]
            for r in self.records
        ]
        widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
        lines = [
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in [head, *rows]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join([*lines, f"({self.note})"])


# ---- demo ----------------------------------------------------------------------------
# Below this line: `python -m probes.memory_protocol`, which runs the log above on a tiny
# model of this repository (probes.setup). Copy only the part above.


def mark_cost(device: str | torch.device, calls: int = 1000) -> float:
    """Median seconds of one `mark()` on `device` (a fresh log; on a GPU, nothing queued)."""
    with PhaseLog(device) as log:
        if log.device.type == "cuda":  # a GPU log refuses a phase with nothing allocated
            keep = torch.empty(1, device=log.device)
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            log.mark("x")
            times.append(time.perf_counter() - t0)
        if log.device.type == "cuda":
            del keep
    return statistics.median(times)


def run_demo(
    config: str = "tiny-llama",
    *,
    steps: int = 2,
    device: str = "cpu",
    micro_batch: int = 2,
    seq_len: int = 64,
    snapshot: str | None = None,
    seed: int = 0,
) -> tuple[PhaseLog, torch.nn.Module, torch.optim.Optimizer]:
    """Build the tiny model inside phase `load`, then `steps` fp32 AdamW steps with
    phases stepN/forward, stepN/backward and stepN/optimizer (gradients set to None at the
    end of the optimizer phase). Returns the closed log, the model and the optimizer."""
    from probes.setup import build, load_spec

    spec, cfg = load_spec(config, None)
    gen = torch.Generator().manual_seed(seed)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        row = torch.randint(0, spec.vocab_size, (micro_batch, seq_len + 1), generator=gen)
        return row[:, :-1].to(device), row[:, 1:].to(device)

    with PhaseLog(device) as log:
        if snapshot:
            log.start_history()
        with log.phase("load"):
            model = build(spec, cfg, device=device, precision="fp32", seed=seed)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for step in range(1, steps + 1):
            with log.phase(f"step{step}/forward"):
                loss = model.loss(*batch())  # the batch lives as long as autograd needs it
            with log.phase(f"step{step}/backward"):
                loss.backward()
                del loss
            with log.phase(f"step{step}/optimizer"):
                optimizer.step()  # AdamW creates exp_avg and exp_avg_sq here at step 1
                optimizer.zero_grad(set_to_none=True)
        if snapshot:
            log.dump_snapshot(snapshot)
            log.stop_history()
    return log, model, optimizer


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # one line, exit status 2
            print(f"error: {message}", file=sys.stderr)
            raise SystemExit(2)

    def positive(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
        return n

    p = Parser(prog="python -m probes.memory_protocol", description=__doc__.splitlines()[0])
    p.add_argument("--config", default="tiny-llama", help="a tiny config's name or a path")
    p.add_argument("--steps", type=positive, default=2, help="training steps (>= 1)")
    p.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    p.add_argument("--micro-batch", type=positive, default=2, help="sequences per step")
    p.add_argument("--seq-len", type=positive, default=64, help="tokens per sequence")
    p.add_argument("--out", metavar="FILE", help="write the phases as JSON")
    p.add_argument("--snapshot", metavar="FILE", help="CUDA allocator history for memory_viz")
    args = p.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.snapshot and device != "cuda":
        p.error("--snapshot records the CUDA/ROCm allocator: it needs --device cuda")
    if device == "cuda" and not torch.cuda.is_available():
        p.error(f"--device cuda: torch {torch.__version__} sees no CUDA or ROCm device")
    try:
        log, _, _ = run_demo(
            args.config,
            steps=args.steps,
            device=device,
            micro_batch=args.micro_batch,
            seq_len=args.seq_len,
            snapshot=args.snapshot,
        )
    except (ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1
    print(log.table())
    calls = 1000
    cost = mark_cost(device, calls)
    print(f"mark(): median {cost * 1e6:.1f} µs per call over {calls} calls on {device}")
    if args.out:
        log.write_json(args.out)
    if args.snapshot:
        print(f"snapshot: {args.snapshot} (open it at https://pytorch.org/memory_viz)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
