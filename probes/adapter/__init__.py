"""adapter: four checks of a LoRA adapter built with PEFT on transformers' own model,
before it is trained for real (`python -m probes adapter`).

1 counts  trainable and total parameters equal the calculators' and PEFT's (`counts`)
2 update  two steps change every adapter matrix and no base tensor (`update`)
3 reload  saved, reloaded onto a fresh base in a new process: the same logits; an
          adapter saved for another base is refused, naming both config hashes (`reload`)
4 merge   merge_and_unload against the unmerged adapter: max |diff| and mean KL (`merge`)

Each check reports pass, fail or skipped with what it measured against what threshold
(`probes.preflight.outcome`); a failed check fails the run (exit 1). With `--adapter DIR`
a saved adapter is checked instead of a fresh one: its base record is verified first
(a different base ends the run, exit 2), and the update check is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

import torch

from calculators.model.spec import ModelSpec
from probes.adapter import base
from probes.adapter.counts import calculator_counts
from probes.adapter.counts import counts as counts_check
from probes.adapter.merge import merge as merge_check
from probes.adapter.reload import reload_check, save_adapter
from probes.adapter.settings import CHECKS, TITLES, AdapterSettings, read_settings
from probes.adapter.update import update as update_check
from probes.preflight.outcome import (
    CheckOutcome,
    errored_outcome,
    failed,
    render_outcomes,
    skipped_outcome,
)
from probes.report import Phases

VERSION = "1"


def _skipped(check: str, why: str) -> CheckOutcome:
    return skipped_outcome(CHECKS, TITLES, check, why)


def _errored(check: str, e: Exception) -> CheckOutcome:
    return errored_outcome(CHECKS, TITLES, check, e)


def _saved_settings(s: AdapterSettings, record: dict[str, Any]) -> AdapterSettings:
    """--adapter: rank, alpha and targets come from the adapter's record; a --lora-rank
    that disagrees with it is an error."""
    rank = record.get("lora_rank")
    if s.lora_rank is not None and rank != s.lora_rank:
        raise ValueError(f"lora-rank {s.lora_rank} differs from the adapter's rank {rank}")
    return replace(
        s,
        lora_rank=rank,
        lora_alpha=record.get("lora_alpha"),
        lora_targets=tuple(record.get("lora_targets") or s.lora_targets),
    )


def adapter_probe(
    args: argparse.Namespace,
    spec: ModelSpec,
    config: dict[str, Any],
    name: str,
    device: str,
    phases: Phases,
) -> dict[str, Any]:
    """Build, run the four checks in order; the report's sections, one entry per check."""
    s = read_settings(args)
    base.libraries()
    outcomes: list[CheckOutcome] = []
    mapped: dict[str, Any] = {"target_modules": [], "target_parameters": []}
    record: dict[str, Any] | None = None
    why_not = base.quantized_unavailable(s, device)
    if why_not is not None:
        outcomes = [_skipped(c, why_not) for c in CHECKS]
        return sections(args, spec, s, name, config, device, outcomes, mapped, None)
    with contextlib.ExitStack() as stack:
        work = stack.enter_context(tempfile.TemporaryDirectory(prefix="kd-adapter-"))
        phases.current = "build"
        model = base.build_base(config, s, device)
        here = base.base_record(config, name, s, model)
        if s.adapter is not None:
            saved = base.verify_base(s.adapter, here)  # a different base ends the run here
            s = _saved_settings(s, saved)
            model = base.load_adapter(model, s.adapter)
            for n, p in model.named_parameters():  # counted as trainable, as when trained
                p.requires_grad_(is_adapter(n))
            peft_config = model.peft_config["default"]
            mapped = {
                "target_modules": sorted(peft_config.target_modules or []),
                "target_parameters": sorted(peft_config.target_parameters or []),
            }
            folder = s.adapter
            record = saved
        else:
            model, mapped = base.attach_adapter(model, spec, s, name, s.seed + 1)
            folder = s.save_adapter or os.path.join(work, "adapter")
            record = base.base_record(config, name, s, model.get_base_model())
        ids = base.fixed_batch(spec.vocab_size, s)
        assert s.lora_rank is not None

        def run(check: str, fn: Callable[[], CheckOutcome]) -> None:
            phases.current = check
            t0 = time.perf_counter()
            try:
                o = fn()
            except torch.OutOfMemoryError as e:
                o = _errored(check, e)
                o.look_at = f"out of memory: {o.look_at}"
            except Exception as e:  # one broken check must not hide the others' results
                o = _errored(check, e)
            o.seconds = time.perf_counter() - t0
            outcomes.append(o)

        run("counts", lambda: counts_check(model, spec, s.lora_rank, s.lora_targets, mapped))
        if s.adapter is None:
            run("update", lambda: update_check(model, spec.vocab_size, s, device))
            save_adapter(model, folder, record)
        else:
            outcomes.append(
                _skipped("update", "--adapter: a saved adapter is checked, not trained")
            )
        run("reload", lambda: reload_check(model, config, s, device, ids, folder, record, work))
        holder: dict[str, Any] = {}

        def merged() -> CheckOutcome:
            o, holder["model"] = merge_check(model, s, device, ids)
            return o

        run("merge", merged)
        phases.current = "done"
        if s.save_adapter is None and s.adapter is None:
            folder = None
    return sections(args, spec, s, name, config, device, outcomes, mapped, folder)


def is_adapter(name: str) -> bool:
    """A LoRA matrix, from PEFT's parameter names."""
    return ".lora_A." in name or ".lora_B." in name


def sections(
    args: argparse.Namespace,
    spec: ModelSpec,
    s: AdapterSettings,
    name: str,
    config: dict[str, Any],
    device: str,
    outcomes: list[CheckOutcome],
    mapped: dict[str, Any],
    folder: str | None,
) -> dict[str, Any]:
    """The report: one entry per check under details.checks; the calculators' counts
    against the model's in estimate/measured; each check's numbers in measured, named
    CHECK.NAME."""
    measured: dict[str, Any] = {}
    units: dict[str, str] = {}
    estimate: dict[str, Any] = {}
    for o in outcomes:
        for k, v in o.measured.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                measured[f"{o.id}.{k}"] = v
                units[f"{o.id}.{k}"] = o.units.get(k, "")
    one = next((o for o in outcomes if o.id == "counts" and o.measured), None)
    if one is not None and s.lora_rank is not None:
        calc = calculator_counts(spec, s.lora_rank, s.lora_targets)
        for k in ("trainable", "total"):
            estimate[f"{k}_parameters"] = calc[k]
            measured[f"{k}_parameters"] = one.measured[f"{k}_parameters"]
            units[f"{k}_parameters"] = "parameters"
    bad = failed(outcomes)
    details: dict[str, Any] = {
        "checks": [o.as_dict() for o in outcomes],
        "passed": [o.id for o in outcomes if o.status == "pass"],
        "failed": [o.id for o in bad],
        "skipped": [o.id for o in outcomes if o.status == "skipped"],
        "adapter_saved_to": folder,
        # counts, not memory: no allocator or tracker measured anything (probes.margins)
        "backend": "none",
    }
    if bad:
        details["status"] = "error"
        details["error"] = "failed checks: " + ", ".join(f"{o.number} {o.id}" for o in bad)
    inputs = {
        **{k: v for k, v in asdict(s).items() if k != "lora_targets"},
        "lora_alpha": s.alpha if s.lora_rank is not None else s.lora_alpha,
        "lora_targets": list(s.lora_targets),
        "peft_target_modules": mapped["target_modules"],
        "peft_target_parameters": mapped["target_parameters"],
        "model": name,
        "model_type": spec.model_type,
        "config_sha256": base.config_sha256(config),
        "device": device,
        "hf": bool(args.hf),
        "peft": _version("peft"),
        "transformers": _version("transformers"),
    }
    text = render_outcomes(outcomes).rsplit("\n", 1)[0]
    verdict = f"{len(bad)} check(s) FAILED" if bad else "all checks that ran passed"
    text += f"\nadapter: {verdict}; {sum(o.status == 'skipped' for o in outcomes)} skipped"
    return {
        "inputs": inputs,
        "estimate": estimate,
        "measured": measured,
        "units": units,
        "details": details,
        "text": text,
    }


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # not installed: the report says so with null
        return None


__all__ = ["CHECKS", "VERSION", "AdapterSettings", "adapter_probe", "read_settings"]
