"""Checks 1 to 3: the loss at initialisation, where the gradients go, and overfitting one
batch. They share one model, built as the reader's step builds it (precision, LoRA,
checkpointing, transformers' class or a local checkpoint), trained by the probes'
`Trainer` on uniformly random tokens.

Random tokens make the expected figures exact: a target drawn uniformly from V tokens
cannot be predicted, so the cross-entropy of any model is at least ln(V) in expectation
(Gibbs' inequality), and a model that knows nothing scores exactly ln(V).

Test hooks (not flags): `inputs_and_targets` makes the (input, target) pair of a token
row and `prepare_model` freezes and wraps the model; tests replace them to plant a loss
on the wrong targets or a tensor frozen by mistake.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from calculators.model.spec import ModelSpec
from probes.preflight.outcome import CheckOutcome
from probes.preflight.settings import PreflightSettings
from probes.setup import Trainer, apply_lora, build, policy
from probes.train_step import StepSettings


def inputs_and_targets(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Next-token prediction: the input is tokens[:, :-1], its target tokens[:, 1:]."""
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def prepare_model(model: nn.Module, s: StepSettings, freeze: tuple[str, ...]) -> None:
    """What the reader's setup does before training: LoRA (which freezes the base), then
    freezing the tensors whose names contain a `--freeze` fragment."""
    if s.lora_rank is not None:
        apply_lora(model, s.lora_rank, s.lora_targets)
    for name, p in model.named_parameters():
        if any(f in name for f in freeze):
            p.requires_grad_(False)


def intended_trainable(names: list[str], s: StepSettings, freeze: tuple[str, ...]) -> set[str]:
    """The tensors that should train, from the settings (not from what the setup left
    trainable): under LoRA the adapters, otherwise every tensor the model built as
    trainable; less those matched by `--freeze`."""
    keep = [n for n in names if "lora_" in n] if s.lora_rank is not None else names
    return {n for n in keep if not any(f in n for f in freeze)}


def uniform_tokens(vocab: int, rows: int, seq_len: int, seed: int) -> torch.Tensor:
    """rows x (seq_len + 1) tokens drawn uniformly from the vocabulary (seeded, on CPU)."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (rows, seq_len + 1), generator=gen)


def uniform_loss(vocab: int) -> float:
    """ln(V): the cross-entropy of the uniform prediction over V tokens, the loss a
    freshly initialised model should start near (Karpathy 2019, "A Recipe for Training
    Neural Networks", "verify loss @ init")."""
    return math.log(vocab)


def init_excess_for_logit_std(sigma: float) -> float:
    """Expected loss above ln(V) when the logits are i.i.d. N(0, sigma^2) and V is large:
    E[logsumexp z] ~ ln(V) + sigma^2 / 2 (the log of V e^(sigma^2/2), the mean of the
    log-normal), and the target's own logit has mean 0. So a tolerance of t ln(V) lets
    the logits at initialisation spread up to sigma = sqrt(2 t ln V)."""
    return sigma * sigma / 2


@dataclass
class Loop:
    """The model, its trainer and the tensor names, shared by checks 1 to 3."""

    model: nn.Module
    trainer: Trainer
    vocab: int
    device: str
    intended: set[str]

    def loss(self, tokens: torch.Tensor, *, grad: bool) -> torch.Tensor:
        ids, labels = inputs_and_targets(tokens)
        ids, labels = ids.to(self.device), labels.to(self.device)
        if grad:
            return self.trainer.forward(ids, labels)
        with torch.no_grad():
            return self.trainer.forward(ids, labels)

    def step(self, tokens: torch.Tensor) -> float:
        self.trainer.zero_grad()
        loss = self.loss(tokens, grad=True)
        self.trainer.backward(loss)
        self.trainer.optimizer_step()
        return loss.item()


def build_loop(
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    p: PreflightSettings,
    device: str,
    hf: bool,
) -> Loop:
    if p.pretrained is not None:
        model = _load_pretrained(p.pretrained, s, device)
    else:
        model = build(
            spec,
            config,
            device=device,
            precision=s.precision,
            attention=s.attention,
            checkpointing=s.checkpointing,
            hf=hf,
            seed=s.seed,
        )
    # what the model itself trains (DeepSeek-V3's routing bias is a frozen parameter)
    built = [n for n, prm in model.named_parameters() if prm.requires_grad]
    prepare_model(model, s, p.freeze)
    if s.lora_rank is not None:  # the adapters exist only now, under the wrapped names
        built = [n for n, _ in model.named_parameters()]
    intended = intended_trainable(built, s, p.freeze)
    trainer = Trainer(
        model,
        precision=s.precision,
        optimizer=s.optimizer,
        optimizer_impl=s.optimizer_impl,
        device=device,
    )
    for group in trainer.optimizer.param_groups:
        group["lr"] = p.lr
    return Loop(model, trainer, spec.vocab_size, device, intended)


def _load_pretrained(folder: str, s: StepSettings, device: str) -> nn.Module:
    try:
        import transformers
    except ImportError:
        raise ValueError("--hf needs transformers installed (pip install transformers)") from None
    dtype = policy(s.precision).model_dtype
    try:  # transformers >= 4.56 names it dtype, older ones torch_dtype
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=dtype, attn_implementation=s.attention
        )
    except TypeError:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, torch_dtype=dtype, attn_implementation=s.attention
        )
    model.to(device)
    if s.checkpointing == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    model.train()
    return model


def initial_loss(loop: Loop, s: StepSettings, p: PreflightSettings) -> CheckOutcome:
    """Check 1: the first loss on random tokens against ln(V), within init_tolerance ln(V)."""
    out = CheckOutcome(number=1, id="initial-loss", title="Initial loss near ln(V)")
    tokens = uniform_tokens(loop.vocab, s.micro_batch, s.seq_len, s.seed)
    loss = float(loop.loss(tokens, grad=False))
    expected = uniform_loss(loop.vocab)
    band = p.init_tolerance * expected
    out.measured = {"initial_loss": loss}
    out.threshold = {"ln_vocab": expected, "tolerance": band}
    out.units = {"initial_loss": "nats", "ln_vocab": "nats", "tolerance": "nats"}
    out.details = {
        "vocab_size": loop.vocab,
        "largest_logit_std_allowed": math.sqrt(2 * band),
    }
    if p.pretrained is not None:
        out.status = "skipped"
        out.summary = f"loss {loss:.4g} (pretrained weights: ln V = {expected:.4g} is no target)"
        out.look_at = "a pretrained model is meant to beat the uniform guess on real text"
        return out
    ok = math.isfinite(loss) and abs(loss - expected) <= band
    out.status = "pass" if ok else "fail"
    out.summary = f"loss {loss:.4g} vs ln V {expected:.4g} +- {band:.3g}"
    if not ok:
        out.look_at = (
            "above: the initialisation is confidently wrong (init scale, a missing final "
            "norm, logits multiplied instead of divided); below: the targets leak into the "
            "input (label shift, causal mask); not finite: the loss or the precision"
        )
    return out


def _grad_state(loop: Loop) -> dict[str, str]:
    """Per trainable tensor: 'none', 'non-finite', 'zero' or 'ok'."""
    state = {}
    for name, prm in loop.model.named_parameters():
        if not prm.requires_grad:
            continue
        g = prm.grad
        if g is None:
            state[name] = "none"
        elif not bool(torch.isfinite(g).all()):
            state[name] = "non-finite"
        elif not bool(g.any()):
            state[name] = "zero"
        else:
            state[name] = "ok"
    return state


def _updated_tensors(loop: Loop) -> dict[str, torch.Tensor]:
    """The tensor the optimizer writes, per name: bf16-fp32-master's fp32 master (its bf16 copy
    may round an update away), else the parameter itself."""
    out = {n: prm for n, prm in loop.model.named_parameters()}
    masters = dict(zip(map(id, loop.trainer.trainable), loop.trainer.masters, strict=False))
    return {n: masters.get(id(prm), prm) for n, prm in out.items()}


def gradients(loop: Loop, s: StepSettings, p: PreflightSettings) -> CheckOutcome:
    """Check 2: two steps; every intended tensor trainable, with a finite gradient that is
    non-zero at one of the two backward passes, and changed after the steps; every other
    tensor bitwise unchanged.

    Two passes, not one: LoRA's B starts at zero, so A's first gradient is exactly zero
    by design (Hu et al. 2021, arXiv:2106.09685, section 4.1); after one update B is not.
    """
    out = CheckOutcome(number=2, id="gradients", title="Gradients reach what should train")
    params = dict(loop.model.named_parameters())
    before = {n: t.detach().to("cpu", copy=True) for n, t in _updated_tensors(loop).items()}
    seen: dict[str, set[str]] = {}
    losses = []
    for i in range(2):
        tokens = uniform_tokens(loop.vocab, s.micro_batch, s.seq_len, s.seed + 10 + i)
        loop.trainer.zero_grad()
        loss = loop.loss(tokens, grad=True)
        loop.trainer.backward(loss)
        losses.append(loss.item())
        for name, st in _grad_state(loop).items():
            seen.setdefault(name, set()).add(st)
        loop.trainer.optimizer_step()
    after = _updated_tensors(loop)
    changed = {n: not torch.equal(before[n], after[n].detach().cpu()) for n in params}
    trainable = {n for n, prm in params.items() if prm.requires_grad}
    offenders = {
        "should train but frozen": sorted(loop.intended - trainable),
        "trainable but meant frozen": sorted(trainable - loop.intended),
        "no gradient": sorted(n for n, st in seen.items() if st == {"none"}),
        "non-finite gradient": sorted(n for n, st in seen.items() if "non-finite" in st),
        "zero gradient": sorted(n for n, st in seen.items() if "ok" not in st and "none" not in st),
        "trainable but unchanged": sorted(n for n in trainable if not changed[n]),
        "frozen but changed": sorted(n for n in params if n not in trainable and changed[n]),
    }
    out.offenders = {k: v for k, v in offenders.items() if v}
    bad = sum(len(v) for v in out.offenders.values())
    out.measured = {
        "tensors": len(params),
        "trainable_tensors": len(trainable),
        "intended_trainable_tensors": len(loop.intended),
        "offending_tensors": bad,
    }
    out.threshold = {"offending_tensors": 0}
    out.units = dict.fromkeys([*out.measured], "tensors")
    out.details = {"losses": losses, "precision": s.precision}
    out.status = "pass" if bad == 0 else "fail"
    out.summary = (
        f"{len(trainable)} of {len(params)} tensors train, {len(loop.intended)} should; "
        f"{bad} offender(s)"
    )
    if bad:
        out.look_at = (
            "requires_grad set after the optimizer was built, a module bypassed in forward, "
            "a detach() or no_grad() in the path, weight tying, or (pure bf16) updates "
            "smaller than the parameter's rounding step"
        )
    return out


def overfit(loop: Loop, s: StepSettings, p: PreflightSettings) -> CheckOutcome:
    """Check 3: overfit_steps steps on one fixed batch; the loss must fall below
    overfit_fraction of its start (Karpathy 2019, "overfit one batch"). A batch can be
    learnt whatever its targets, so two more conditions: every target is the next input
    token (`target_alignment`), and a fresh random batch's loss stays at or above
    ln(V)(1 - init_tolerance): on uniform targets nothing beats ln(V) in expectation, so
    a lower loss means the model sees its targets (a non-causal mask)."""
    out = CheckOutcome(number=3, id="overfit", title="Overfit one batch")
    tokens = uniform_tokens(loop.vocab, s.micro_batch, s.seq_len, s.seed + 1)
    losses = [loop.step(tokens) for _ in range(p.overfit_steps)]
    last = float(loop.loss(tokens, grad=False))
    losses.append(last)
    start = losses[0]
    target = p.overfit_fraction * start
    reached = next((i for i, v in enumerate(losses) if v < target), None)
    fresh = float(
        loop.loss(uniform_tokens(loop.vocab, s.micro_batch, s.seq_len, s.seed + 2), grad=False)
    )
    floor = uniform_loss(loop.vocab) * (1 - p.init_tolerance)
    aligned = target_alignment(tokens)
    learns = reached is not None
    honest = math.isfinite(fresh) and fresh >= floor and aligned == 1.0
    out.measured = {
        "start_loss": start,
        "final_loss": last,
        "steps_to_target": reached,
        "fresh_batch_loss": fresh,
        "targets_aligned": aligned,
    }
    out.threshold = {
        "targets_aligned": 1.0,
        "target_loss": target,
        "overfit_fraction": p.overfit_fraction,
        "overfit_steps": p.overfit_steps,
        "fresh_batch_floor": floor,
    }
    out.units = {
        "start_loss": "nats",
        "final_loss": "nats",
        "steps_to_target": "steps",
        "fresh_batch_loss": "nats",
        "target_loss": "nats",
        "overfit_fraction": "ratio",
        "overfit_steps": "steps",
        "fresh_batch_floor": "nats",
        "targets_aligned": "ratio",
    }
    out.details = {"losses": losses, "lr": p.lr}
    out.status = "pass" if learns and honest else "fail"
    out.summary = (
        f"loss {start:.4g} -> {last:.4g} in {p.overfit_steps} steps (target < {target:.4g}); "
        f"fresh batch {fresh:.4g} (floor {floor:.4g}); targets aligned {aligned:.3g}"
    )
    looks = []
    if not learns:
        looks.append(
            "the loss does not fall: learning rate (--lr), frozen tensors (check 2), the "
            "loss's reduction, an optimizer that is not stepped; LoRA learns slower (raise "
            "--overfit-steps or --overfit-fraction)"
        )
    if not honest:
        looks.append(
            "the target is not the next token (targets aligned below 1: labels not shifted "
            "by one, or shifted twice) or is visible to the model (a fresh random batch "
            "scores below ln V: a non-causal attention mask)"
        )
    out.look_at = "; ".join(looks) or None
    return out


def target_alignment(tokens: torch.Tensor) -> float:
    """The fraction of scored positions whose target is the next input token:
    target[t] == input[t + 1]. On uniform random tokens a correct shift scores 1 and any
    other alignment about 1/V. Positions whose target is -100 (ignored) are not scored."""
    ids, labels = inputs_and_targets(tokens)
    ids, labels = ids.cpu(), labels.cpu()
    scored = labels[:, :-1] != -100
    hits = (labels[:, :-1] == ids[:, 1:]) & scored
    return float(hits.sum()) / max(1, int(scored.sum()))


def timed(fn, *a: Any) -> CheckOutcome:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    o = fn(*a)
    o.seconds = time.perf_counter() - t0
    return o
