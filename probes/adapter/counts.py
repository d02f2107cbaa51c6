"""Check 1, what trains: the adapter's trainable and total parameter counts against the
calculators (`calculators.training.lora.lora_parameters` for the adapter, the tensor
inventory for the base) and against PEFT's own `get_nb_trainable_parameters()`."""

from __future__ import annotations

from typing import Any

from torch import nn

from calculators.model.params import parameter_counts
from calculators.model.spec import ModelSpec
from calculators.training.lora import lora_parameters
from probes.adapter.base import expert_parameters, parameter_count, quiet
from probes.adapter.settings import TITLES
from probes.preflight.outcome import CheckOutcome


def calculator_counts(spec: ModelSpec, rank: int, targets: tuple[str, ...]) -> dict[str, int]:
    """The calculators' figures: trainable = sum over wrapped matrices of r (in + out)
    (Hu et al. 2021, arXiv:2106.09685, section 4.1); total = the base's unique parameters
    (`parameter_counts(spec).total`, a tied embedding once) plus the trainable ones."""
    lora = lora_parameters(spec, rank, targets)
    base = parameter_counts(spec).total
    return {"trainable": lora.trainable, "base": base, "total": base + lora.trainable}


def model_counts(model: nn.Module) -> dict[str, int]:
    """Counted on the built model: each unique parameter once (named_parameters drops a
    tied tensor's second name), trainable where requires_grad."""
    trainable = total = 0
    for _, p in model.named_parameters():
        n = parameter_count(p)
        total += n
        trainable += n if p.requires_grad else 0
    return {"trainable": trainable, "total": total}


def counts(
    model: nn.Module, spec: ModelSpec, rank: int, targets: tuple[str, ...], mapped: dict[str, Any]
) -> CheckOutcome:
    """Pass when the calculators, the model and PEFT give the same trainable and total."""
    out = CheckOutcome(number=1, id="counts", title=TITLES["counts"])
    calc = calculator_counts(spec, rank, targets)
    mine = model_counts(model)
    with quiet():
        peft_trainable, peft_total = model.get_nb_trainable_parameters()
    out.measured = {
        "trainable_parameters": mine["trainable"],
        "total_parameters": mine["total"],
        "peft_trainable_parameters": int(peft_trainable),
        "peft_total_parameters": int(peft_total),
        "trainable_fraction": mine["trainable"] / mine["total"],
    }
    out.threshold = {
        "calculators_trainable_parameters": calc["trainable"],
        "calculators_total_parameters": calc["total"],
        "calculators_base_parameters": calc["base"],
    }
    out.units = {k: "parameters" for k in (*out.measured, *out.threshold)}
    out.units["trainable_fraction"] = "ratio"
    out.details = {
        "lora_rank": rank,
        "lora_targets": list(targets),
        "peft_target_modules": mapped["target_modules"],
        "peft_target_parameters": mapped["target_parameters"],
    }
    same_trainable = calc["trainable"] == mine["trainable"] == int(peft_trainable)
    same = same_trainable and calc["total"] == mine["total"] == int(peft_total)
    out.status = "pass" if same else "fail"
    out.summary = (
        f"trainable {mine['trainable']:,} of {mine['total']:,}; calculators "
        f"{calc['trainable']:,} of {calc['total']:,}; PEFT {int(peft_trainable):,} of "
        f"{int(peft_total):,}"
    )
    if not same:
        looks = []
        if mapped["target_parameters"] or expert_parameters(model):
            looks.append(
                "this model stores its experts fused in 3-D parameters (transformers 5): one "
                "adapter on a fused gate_up_proj trains r (in + 2 x intermediate) per expert "
                "where separate gate and up adapters, which the calculators count, train "
                "2 r (in + intermediate)"
            )
        looks.append(
            "a target name that matches modules the calculators do not wrap (the router, "
            "lm_head, a vision tower) or misses some; the base's count differs when the "
            "config builds tensors the calculators' inventory lacks (compare `python -m "
            "probes weights --hf`)"
        )
        out.look_at = "; ".join(looks)
    return out
