"""Check 2, an update changes what it should: two AdamW steps on random tokens; every
adapter matrix changes, every base tensor stays bitwise the same.

Why two steps, and what each one shows. PEFT initialises lora_B to zero and lora_A at
random (Hu et al. 2021, arXiv:2106.09685, section 4.1; peft/tuners/lora/layer.py,
`reset_lora_parameters`), so the adapter's output B A x is zero at first and the
gradient of A, s B^T (dL/dy) x^T, is exactly zero at the first backward pass. A first
step therefore changes every lora_B and leaves every lora_A bitwise unchanged; that is
by design, and the check requires it rather than reporting it as a dead gradient. The
second step, with B no longer zero, must change every lora_A.

The optimizer is AdamW with weight decay 0: decoupled decay (Loshchilov and Hutter 2019,
arXiv:1711.05101) moves a parameter whose gradient is zero, which would make a lora_A
that never receives a gradient look trained.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from probes.adapter.base import quiet
from probes.adapter.settings import TITLES, AdapterSettings
from probes.preflight.outcome import CheckOutcome


def adapter_role(name: str) -> str | None:
    """lora_A, lora_B, or None for a base tensor, from PEFT's parameter names."""
    for role in ("lora_A", "lora_B"):
        if f".{role}." in name:
            return role
    return None


def random_tokens(vocab: int, s: AdapterSettings, step: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(s.seed + 10 + step)
    return torch.randint(0, vocab, (s.micro_batch, s.seq_len + 1), generator=gen)


def _step(model: nn.Module, opt: torch.optim.Optimizer, tokens: torch.Tensor, device: str) -> float:
    ids, labels = tokens[:, :-1].to(device), tokens[:, 1:].to(device)
    opt.zero_grad(set_to_none=True)
    with quiet():
        out = model(input_ids=ids)
    logits = out.logits.float()
    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.reshape(-1))
    loss.backward()
    return loss.item()


def _grad_state(p: nn.Parameter) -> str:
    if p.grad is None:
        return "none"
    if not bool(torch.isfinite(p.grad).all()):
        return "non-finite"
    return "ok" if bool(p.grad.any()) else "zero"


def update(model: nn.Module, vocab: int, s: AdapterSettings, device: str) -> CheckOutcome:
    """Two steps; pass when (step 1) every lora_B has a non-zero finite gradient and
    changes while every lora_A has a zero gradient and stays the same, (step 2) every
    lora_A changes, and no base tensor changes at all."""
    out = CheckOutcome(number=2, id="update", title=TITLES["update"])
    params = dict(model.named_parameters())
    trainable = {n for n, p in params.items() if p.requires_grad}
    roles = {n: adapter_role(n) for n in params}
    # a copy of every tensor on the CPU: the comparison is bitwise, whatever the dtype
    start = {n: p.detach().to("cpu", copy=True) for n, p in params.items()}
    opt = torch.optim.AdamW([params[n] for n in sorted(trainable)], lr=s.lr, weight_decay=0.0)
    model.train()
    losses = [_step(model, opt, random_tokens(vocab, s, 0), device)]
    first_grad = {n: _grad_state(params[n]) for n in trainable}
    opt.step()
    after_one = {n: not torch.equal(start[n], params[n].detach().cpu()) for n in trainable}
    losses.append(_step(model, opt, random_tokens(vocab, s, 1), device))
    second_grad = {n: _grad_state(params[n]) for n in trainable}
    opt.step()
    opt.zero_grad(set_to_none=True)
    model.eval()
    changed = {n: not torch.equal(start[n], p.detach().cpu()) for n, p in params.items()}
    a = sorted(n for n in trainable if roles[n] == "lora_A")
    b = sorted(n for n in trainable if roles[n] == "lora_B")
    offenders = {
        "trainable but not an adapter": sorted(n for n in trainable if roles[n] is None),
        "adapter but frozen": sorted(n for n in params if roles[n] and n not in trainable),
        "lora_B without a gradient at step 1": [n for n in b if first_grad[n] != "ok"],
        "lora_B unchanged after step 1": [n for n in b if not after_one[n]],
        "lora_A with a gradient at step 1 (B did not start at zero)": [
            n for n in a if first_grad[n] != "zero"
        ],
        "lora_A changed at step 1": [n for n in a if after_one[n]],
        "lora_A without a gradient at step 2": [n for n in a if second_grad[n] != "ok"],
        "lora_A unchanged after step 2": [n for n in a if not changed[n]],
        "base changed": sorted(n for n in params if roles[n] is None and changed[n]),
    }
    out.offenders = {k: v for k, v in offenders.items() if v}
    bad = len({n for v in out.offenders.values() for n in v})
    base = [n for n in params if roles[n] is None]
    out.measured = {
        "lora_A_tensors": len(a),
        "lora_B_tensors": len(b),
        "lora_B_changed_after_step_1": sum(after_one[n] for n in b),
        "lora_A_zero_gradient_at_step_1": sum(first_grad[n] == "zero" for n in a),
        "lora_A_changed_after_step_1": sum(after_one[n] for n in a),
        "lora_A_changed_after_step_2": sum(changed[n] for n in a),
        "base_tensors": len(base),
        "base_tensors_changed": sum(changed[n] for n in base),
        "offending_tensors": bad,
    }
    out.threshold = {"base_tensors_changed": 0, "offending_tensors": 0}
    out.units = dict.fromkeys([*out.measured, *out.threshold], "tensors")
    out.details = {
        "losses": losses,
        "optimizer": "adamw",
        "weight_decay": 0.0,
        "lr": s.lr,
        "why_two_steps": (
            "lora_B starts at zero, so lora_A's first gradient is exactly zero and only "
            "lora_B moves at step 1; lora_A must move at step 2"
        ),
    }
    out.status = "pass" if bad == 0 and (a or b) else "fail"
    out.summary = (
        f"step 1: {out.measured['lora_B_changed_after_step_1']} of {len(b)} lora_B changed, "
        f"{out.measured['lora_A_changed_after_step_1']} of {len(a)} lora_A (B starts at 0); "
        f"step 2: {out.measured['lora_A_changed_after_step_2']} of {len(a)} lora_A changed; "
        f"{out.measured['base_tensors_changed']} of {len(base)} base tensors changed"
    )
    if out.status == "fail":
        out.look_at = (
            "a base tensor left trainable or written in place (requires_grad, an in-place "
            "op on a frozen weight), an adapter outside the forward path (a target that "
            "wraps a module the model never calls), or an optimizer built before the adapter"
        )
    return out
