"""The machine a run ran on, read without importing torch: Python, the installed packages,
torch's build (from its `version.py`), the GPUs and the driver (from `nvidia-smi` or
`rocm-smi`, each in a subprocess with a timeout).

Importing torch takes seconds and may initialise a GPU the reader's command is about to
use; reading `torch/version.py` gives the same strings `torch.__version__`,
`torch.version.cuda` and `torch.version.hip` hold. Everything is read from the
interpreter that runs the manifest: run it from the environment the command uses.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
from typing import Any

SMI_TIMEOUT_S = 10.0  # a wedged driver makes nvidia-smi hang; the run must not wait on it
VISIBLE_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def torch_build() -> dict[str, str | None]:
    """torch's version and the CUDA or HIP version it was built for, from the literal
    assignments of `torch/version.py`; all None when torch is not installed."""
    found: dict[str, str | None] = {"torch": None, "torch_cuda": None, "torch_hip": None}
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return found
    path = os.path.join(next(iter(spec.submodule_search_locations)), "version.py")
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return found
    names = {"__version__": "torch", "cuda": "torch_cuda", "hip": "torch_hip"}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id in names and isinstance(value, ast.Constant):
            found[names[target.id]] = value.value if isinstance(value.value, str) else None
    return found


def packages() -> dict[str, str]:
    """Every distribution installed for this interpreter, name (normalised as PEP 503
    does) to version, sorted by name."""
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[re.sub(r"[-_.]+", "-", name).lower()] = dist.version
    return dict(sorted(out.items()))


def _run(cmd: list[str]) -> str | None:
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=False
        )
    except (FileNotFoundError, PermissionError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def nvidia_gpus() -> tuple[list[dict[str, Any]], dict[str, str | None]] | None:
    """GPUs and driver as `nvidia-smi` lists them (every GPU of the machine, whatever
    CUDA_VISIBLE_DEVICES says), or None without nvidia-smi or an answer."""
    query = "index,name,uuid,memory.total,driver_version"
    out = _run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"])
    if out is None:
        return None
    gpus, driver = [], None
    for line in out.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 5:
            continue
        index, name, uuid, memory, driver = cells
        gpus.append(
            {
                "index": int(index) if index.isdigit() else None,
                "name": name,
                "uuid": uuid,
                "memory_mib": int(memory) if memory.isdigit() else None,
            }
        )
    header = _run(["nvidia-smi"]) or ""
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", header)
    return gpus, {"driver": driver, "driver_cuda": cuda.group(1) if cuda else None}


def rocm_gpus() -> tuple[list[dict[str, Any]], dict[str, str | None]] | None:
    """GPUs and driver as `rocm-smi --json` lists them, read leniently (its keys differ
    between ROCm releases), or None without rocm-smi or an answer."""
    out = _run(["rocm-smi", "--showproductname", "--showdriverversion", "--json"])
    if out is None:
        return None
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        return None
    gpus, driver = [], None
    for key, fields in data.items() if isinstance(data, dict) else ():
        if not isinstance(fields, dict):
            continue
        if key.startswith("card"):
            name = fields.get("Card Series") or fields.get("Card series") or fields.get("Card SKU")
            gpus.append(
                {
                    "index": int(key[4:]) if key[4:].isdigit() else None,
                    "name": name,
                    "uuid": fields.get("Unique ID"),
                    "memory_mib": None,
                }
            )
        driver = driver or fields.get("Driver version")
    rocm = None
    try:
        with open("/opt/rocm/.info/version", encoding="utf-8") as f:
            rocm = f.read().strip() or None
    except OSError:
        pass
    return gpus, {"driver": driver, "rocm": rocm}


def visible_count(gpus: list[dict[str, Any]], env: dict[str, str]) -> int:
    """GPUs the command can use: those listed, or as many as the first *_VISIBLE_DEVICES
    variable set names (an empty value hides them all).

    Assumes each entry names one GPU; entries are not matched against the list, since
    they may be indices, UUIDs or MIG instances.
    """
    for key in VISIBLE_ENV:
        if key in env:
            return len([e for e in env[key].split(",") if e.strip()])
    return len(gpus)


def machine(env: dict[str, str] | None = None) -> dict[str, Any]:
    """Python, platform, packages, torch's build, the GPUs, their driver and how many the
    command sees. Fields that cannot be read are None, never guessed."""
    env = dict(os.environ if env is None else env)
    found = nvidia_gpus()
    source = "nvidia-smi"
    if found is None:
        found, source = rocm_gpus(), "rocm-smi"
    gpus, driver = found if found is not None else ([], {})
    return {
        "python": platform.python_version(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        **torch_build(),
        "gpu_source": source if found is not None else None,
        "gpus": gpus,
        "gpu_count": visible_count(gpus, env),
        "driver": driver.get("driver"),
        "driver_cuda": driver.get("driver_cuda"),
        "rocm": driver.get("rocm"),
        "visible_devices": {k: env[k] for k in VISIBLE_ENV if k in env},
        "packages": packages(),
    }
