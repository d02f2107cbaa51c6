"""Check 3, the adapter reloads: saved with PEFT's `save_pretrained` and a record of its
base (`kernodeck_base.json`), loaded onto a freshly built base in a new process, it gives
the same logits on a fixed batch; and loading it onto a different base is refused.

The new process is this module run as `python -m probes.adapter.reload REQUEST.json`: it
builds the base from the same config and seed (or checkpoint), refuses an adapter whose
record names another base (exit 2, one line naming both hashes), loads the adapter,
and writes the logits with torch.save.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from typing import Any

import torch
from torch import nn

from probes.adapter.base import (
    BASE_RECORD,
    base_record,
    build_base,
    config_sha256,
    load_adapter,
    logits,
    verify_base,
)
from probes.adapter.settings import TITLES, AdapterSettings
from probes.preflight.outcome import CheckOutcome

# On CUDA the reloaded adapter's logits may differ from the saving process's in the last
# bits: the same weights and kernels, but cuBLAS picks its algorithm per process
# (heuristics, workspace, split-K), which changes the order of a dot product's sums. Each
# logit is a sum of products in the compute dtype, so a few units in the last place of
# the logits' own dtype bounds it: RELOAD_CUDA_ULPS x eps(dtype) x max |logit|. On the
# CPU the same build gives bitwise the same logits, and the check requires it.
RELOAD_CUDA_ULPS = 4
CHILD_TIMEOUT_S = 1800  # a real checkpoint loads from disk in the child


def save_adapter(model: nn.Module, folder: str, record: dict[str, Any]) -> None:
    """PEFT's files (adapter_config.json with base_model_name_or_path, the weights), and
    the base record next to them."""
    from probes.adapter.base import quiet

    with quiet():
        # the embeddings are not adapted: without this PEFT looks the base up on the Hub
        # to see whether the vocabulary grew (peft/utils/save_and_load.py)
        model.save_pretrained(folder, save_embedding_layers=False)
    with open(os.path.join(folder, BASE_RECORD), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


def different_config(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A deliberately different base for the refusal: one layer fewer, or with a single
    layer, a larger hidden size (MoE configs keep their per-layer lists consistent)."""
    other = dict(config)
    layers = config.get("num_hidden_layers")
    if isinstance(layers, int) and layers > 1:
        other["num_hidden_layers"] = layers - 1
        for key in ("layer_types", "mlp_only_layers"):  # per-layer lists shrink with it
            if isinstance(other.get(key), list) and len(other[key]) == layers:
                other[key] = other[key][:-1]
        return other, f"num_hidden_layers {layers} -> {layers - 1}"
    hidden = int(config.get("hidden_size", 64))
    other["hidden_size"] = hidden * 2
    return other, f"hidden_size {hidden} -> {hidden * 2}"


def child_command(request_path: str) -> list[str]:
    return [sys.executable, "-m", "probes.adapter.reload", request_path]


def run_child(request: dict[str, Any], folder: str) -> subprocess.CompletedProcess[str]:
    path = os.path.join(folder, f"request-{len(os.listdir(folder))}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(request, f)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        child_command(path), capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env
    )


def reload_check(
    model: nn.Module,
    config: dict[str, Any],
    s: AdapterSettings,
    device: str,
    ids: torch.Tensor,
    adapter_dir: str,
    record: dict[str, Any],
    work: str,
) -> CheckOutcome:
    """Logits here against logits of the adapter loaded in a new process; then the
    refusal of a different base, demonstrated by the guard the loader calls."""
    out = CheckOutcome(number=3, id="reload", title=TITLES["reload"])
    here = logits(model, ids, device)
    batch = os.path.join(work, "batch.pt")
    torch.save(ids, batch)
    result = os.path.join(work, "child-logits.pt")
    request = {
        "config": config,
        "settings": asdict(s),
        "device": device,
        "adapter": adapter_dir,
        "batch": batch,
        "out": result,
        "model_id": record["model_id"],
    }
    p = run_child(request, work)
    if p.returncode != 0:
        out.status = "fail"
        last = (p.stderr.strip().splitlines() or ["no message"])[-1]
        out.summary = f"the new process could not load the adapter (exit {p.returncode})"
        out.look_at = last
        out.details = {"stderr_tail": p.stderr[-2000:]}
        return out
    there = torch.load(result, weights_only=True)
    diff = float((here - there).abs().max())
    bitwise = bool(torch.equal(here, there))
    dtype = next(model.parameters()).dtype
    eps = torch.finfo(dtype if dtype.is_floating_point else torch.bfloat16).eps
    scale = float(here.abs().max())
    on_cuda = device.startswith("cuda")
    tolerance = RELOAD_CUDA_ULPS * eps * scale if on_cuda else 0.0
    refused, refusal = _refusal(adapter_dir, config, record)
    out.measured = {
        "bitwise_equal": int(bitwise),
        "max_abs_diff": diff,
        "different_base_refused": int(refused),
    }
    out.threshold = {"max_abs_diff": tolerance, "different_base_refused": 1}
    out.units = {
        "bitwise_equal": "boolean",
        "max_abs_diff": "logit",
        "different_base_refused": "boolean",
    }
    with open(os.path.join(adapter_dir, "adapter_config.json"), encoding="utf-8") as f:
        peft_base = json.load(f).get("base_model_name_or_path")
    out.details = {
        "logits_shape": list(here.shape),
        "max_abs_logit": scale,
        "tolerance_rule": (
            f"{RELOAD_CUDA_ULPS} x eps({str(dtype).removeprefix('torch.')}) x max |logit| on CUDA"
            if on_cuda
            else "bitwise on CPU"
        ),
        "base_record": record,
        "peft_base_model_name_or_path": peft_base,
        "refusal": refusal,
    }
    ok = (bitwise if not on_cuda else diff <= tolerance) and refused
    out.status = "pass" if ok else "fail"
    equal = "bitwise equal" if bitwise else f"max |diff| {diff:.3g} (limit {tolerance:.3g})"
    out.summary = (
        f"logits in a new process {equal}; a different base "
        f"({refusal['change']}) {'refused' if refused else 'NOT refused'}"
    )
    if not ok:
        out.look_at = (
            "a base built differently in the new process (seed, dtype, attention kernel), "
            "adapter weights missing from the saved file (modules_to_save, a target PEFT "
            "does not save), or a base record that does not change with the config"
        )
    return out


def _refusal(
    adapter_dir: str, config: dict[str, Any], record: dict[str, Any]
) -> tuple[bool, dict[str, Any]]:
    other, change = different_config(config)
    wrong = {**record, "config_sha256": config_sha256(other)}
    try:
        verify_base(adapter_dir, wrong)
    except ValueError as e:
        return True, {"change": change, "message": str(e)}
    return False, {"change": change, "message": None}


def child(request_path: str) -> int:
    """The new process: build the base, refuse a different one, load, write the logits."""
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    settings = request["settings"]
    s = AdapterSettings(**{**settings, "lora_targets": tuple(settings["lora_targets"])})
    model = build_base(request["config"], s, request["device"])
    # this process's own record of the base it built, not the saving process's word
    verify_base(request["adapter"], base_record(request["config"], request["model_id"], s, model))
    model = load_adapter(model, request["adapter"])
    ids = torch.load(request["batch"], weights_only=True)
    torch.save(logits(model, ids, request["device"]), request["out"])
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m probes.adapter.reload REQUEST.json", file=sys.stderr)
        return 2
    try:
        return child(argv[0])
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
