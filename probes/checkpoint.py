"""checkpoint: save after N steps, resume in a new process, train M more, compare bitwise.

The training loop uses every source of state a real one does: AdamW (optimizer state),
a warmup LR schedule (scheduler), a dataset read in order (data position), torch's CPU
RNG (label dropout), the CUDA RNG on a GPU (the same mask is drawn there), Python's
`random` (row order) and numpy's global RNG (the crop length of each step). A complete
checkpoint holds all of them plus the step; it is written to a temporary file in the
checkpoint folder and renamed (atomic on POSIX), and loaded with `weights_only=True`
(numpy's state is stored as plain lists so that the safe loader accepts it).

The driver trains N + M steps uninterrupted, then N steps and saves, then starts
`python -m probes checkpoint --role resume` in a new process, which loads, trains M
steps and saves its final weights; the driver compares them bitwise. With
`--omit PIECE` that piece is left out of the checkpoint, and the report says whether
equality broke; `--omit all` runs one resumed process per piece and lists each.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np
import torch

from calculators.model.spec import ModelSpec
from probes.model import build_model
from probes.report import Phases

VERSION = "1"
PIECES = (
    "model",
    "optimizer",
    "scheduler",
    "step",
    "torch_rng",
    "cuda_rng",
    "python_rng",
    "numpy_rng",
    "data_position",
)
DATASET_ROWS = 64
WARMUP = 4  # LinearLR warmup steps, so the schedule changes over the run


class Run:
    """Model, optimizer, scheduler and data cursor of the probe's training loop."""

    def __init__(self, spec: ModelSpec, args: argparse.Namespace, device: str) -> None:
        self.device, self.args = device, args
        self.model = build_model(spec, device=device, seed=args.seed)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.scheduler = torch.optim.lr_scheduler.LinearLR(
            self.optimizer, start_factor=0.1, total_iters=WARMUP
        )
        gen = torch.Generator().manual_seed(args.seed + 1)
        self.data = torch.randint(
            0, spec.vocab_size, (DATASET_ROWS, args.seq_len + 1), generator=gen
        )
        self.position = 0
        self.step = 0

    def train(self, steps: int) -> None:
        mb = self.args.micro_batch
        for _ in range(steps):
            rows = [(self.position + i) % DATASET_ROWS for i in range(mb)]
            self.position = (self.position + mb) % DATASET_ROWS
            random.shuffle(rows)  # Python RNG
            crop = int(np.random.randint(self.args.seq_len // 2, self.args.seq_len + 1))  # numpy
            batch = self.data[rows].to(self.device)
            ids, labels = batch[:, :crop], batch[:, 1 : crop + 1].clone()
            drop = torch.rand(labels.shape, device=self.device) < 0.1  # torch (CUDA) RNG
            drop |= torch.rand(labels.shape).to(self.device) < 0.05  # torch CPU RNG
            labels[drop] = -100
            self.optimizer.zero_grad(set_to_none=True)
            self.model.loss(ids, labels).backward()
            self.optimizer.step()
            self.scheduler.step()
            self.step += 1

    def state(self, omit: str | None) -> dict[str, Any]:
        legacy = np.random.get_state(legacy=True)
        assert isinstance(legacy, tuple)
        full: dict[str, Any] = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "python_rng": _py_state(random.getstate()),
            "numpy_rng": [legacy[0], legacy[1].tolist(), *legacy[2:]],
            "data_position": self.position,
        }
        if omit is not None:
            del full[omit]
        return full

    def load(self, state: dict[str, Any]) -> None:
        if "model" in state:
            self.model.load_state_dict(state["model"])
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        if "scheduler" in state:
            self.scheduler.load_state_dict(state["scheduler"])
        self.step = state.get("step", 0)
        if "torch_rng" in state:
            torch.set_rng_state(state["torch_rng"])
        if state.get("cuda_rng"):
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        if "python_rng" in state:
            v, internal, gauss = state["python_rng"]
            random.setstate((v, tuple(internal), gauss))
        if "numpy_rng" in state:
            name, keys, pos, has_gauss, cached = state["numpy_rng"]
            np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
        self.position = state.get("data_position", 0)


def _py_state(s: tuple[Any, ...]) -> list[Any]:
    return [s[0], list(s[1]), s[2]]


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def save_atomic(obj: Any, path: str) -> None:
    """torch.save to a temporary file in the same folder, fsync, then rename over `path`."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ckpt-", suffix=".pt", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _check(args: argparse.Namespace) -> None:
    for name in ("micro_batch", "seq_len", "steps", "more_steps"):
        v = getattr(args, name)
        if v < 1:
            raise ValueError(f"{name.replace('_', '-')} must be a positive integer, got {v}")
    if args.seq_len < 2:
        raise ValueError(f"seq-len must be at least 2 for the checkpoint probe, got {args.seq_len}")
    omit = args.omit or None
    if omit is not None and omit != "all" and omit not in PIECES:
        raise ValueError(f"omit must be one of {', '.join(PIECES)} or all, got {omit!r}")


def resume(args: argparse.Namespace, spec: ModelSpec, device: str) -> dict[str, Any]:
    """The child: a fresh process loads the checkpoint, trains M steps, saves weights."""
    seed_all(args.seed + 1000)  # a different process start: nothing carried over by luck
    run = Run(spec, args, device)
    seed_all(args.seed + 2000)
    state = torch.load(os.path.join(args.dir, "checkpoint.pt"), weights_only=True)
    run.load(state)
    run.train(args.more_steps)
    save_atomic(run.model.state_dict(), os.path.join(args.dir, "final.pt"))
    return {"inputs": {"role": "resume"}, "details": {"steps_done": run.step}}


def _child(args: argparse.Namespace, folder: str, device: str) -> None:
    cmd = [
        sys.executable,
        "-m",
        "probes",
        "checkpoint",
        "--role",
        "resume",
        "--dir",
        folder,
        "--device",
        device,
        "--micro-batch",
        str(args.micro_batch),
        "--seq-len",
        str(args.seq_len),
        "--steps",
        str(args.steps),
        "--more-steps",
        str(args.more_steps),
        "--seed",
        str(args.seed),
    ]
    cmd += ["--config", args.config] if args.config else ["--model", args.model]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"resumed process failed ({r.returncode}): {r.stderr.strip()[-500:]}")


def _compare(reference: dict[str, torch.Tensor], path: str) -> tuple[bool, float]:
    resumed = torch.load(path, weights_only=True)
    equal = all(torch.equal(reference[k], resumed[k]) for k in reference)
    diff = max(float((reference[k].float() - resumed[k].float()).abs().max()) for k in reference)
    return equal, diff


def checkpoint_probe(
    args: argparse.Namespace, spec: ModelSpec, config: dict[str, Any], device: str, phases: Phases
) -> dict[str, Any]:
    _check(args)
    if args.role == "resume":
        phases.current = "resume"
        return resume(args, spec, device)
    if device.startswith("cuda"):
        torch.use_deterministic_algorithms(True)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    phases.current = "uninterrupted"
    seed_all(args.seed)
    full = Run(spec, args, device)
    full.train(args.steps + args.more_steps)
    reference = {k: v.detach().clone() for k, v in full.model.state_dict().items()}
    del full
    omits = [None, *PIECES] if args.omit == "all" else [args.omit or None]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or tmp
        os.makedirs(folder, exist_ok=True)
        for omit in omits:
            phases.current = f"save (omit {omit})" if omit else "save"
            seed_all(args.seed)
            run = Run(spec, args, device)
            run.train(args.steps)
            save_atomic(run.state(omit), os.path.join(folder, "checkpoint.pt"))
            phases.current = "resume in a new process"
            _child(args, folder, device)
            equal, diff = _compare(reference, os.path.join(folder, "final.pt"))
            results[omit or "nothing"] = {"bitwise_equal": equal, "max_abs_diff": diff}
    breaking = [k for k, v in results.items() if k != "nothing" and not v["bitwise_equal"]]
    measured = {
        f"bitwise_equal_omit_{k}" if k != "nothing" else "bitwise_equal": int(v["bitwise_equal"])
        for k, v in results.items()
    }
    details: dict[str, Any] = {
        "results": results,
        "pieces": list(PIECES),
        "breaks_equality": breaking,
    }
    complete = results.get("nothing")
    if complete is not None and not complete["bitwise_equal"]:
        details["status"] = "error"
        details["error"] = (
            "a complete checkpoint did not resume bitwise "
            f"(max abs diff {complete['max_abs_diff']:.3g})"
        )
    lines = [
        f"omit {k}: {'bitwise equal' if v['bitwise_equal'] else 'DIFFERS'} "
        f"(max abs diff {v['max_abs_diff']:.3g})"
        for k, v in results.items()
    ]
    return {
        "inputs": {
            "model": spec.name,
            "model_type": spec.model_type,
            "micro_batch": args.micro_batch,
            "seq_len": args.seq_len,
            "steps": args.steps,
            "more_steps": args.more_steps,
            "omit": args.omit or None,
            "device": device,
        },
        # a complete checkpoint must resume bitwise; what an omission does is measured only
        "estimate": {"bitwise_equal": 1} if complete is not None else {},
        "measured": measured,
        "units": {k: "boolean" for k in measured},
        "details": details,
        "text": "\n".join(lines),
    }
