"""What every training probe sets up the same way: the spec, the model, precision,
optimizer, LoRA and the data, from the same settings the calculators take.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from calculators.model.presets import get_preset, load_preset
from calculators.model.spec import ModelSpec
from calculators.training.states import precision_id
from probes.model import ReferenceDecoder, build_model

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "configs")
# bf16-fp32-master was called bf16-mixed here; that name is still read
# (calculators.training.states.PRECISION_ALIASES says why it was retired)
PRECISIONS = ("fp32", "amp-bf16", "amp-fp16", "bf16-fp32-master", "bf16")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "sgd-momentum", "adafactor")
OPTIMIZER_IMPLS = ("foreach", "for-loop", "fused")
LR = 1e-3  # any positive rate: memory and bitwise equality do not depend on it


def load_config(config: str | None, model: str | None) -> tuple[dict[str, Any], str]:
    """config.json dict and a name: a path, a shipped tiny config name, or a preset."""
    if (config is None) == (model is None):
        raise ValueError("give exactly one of --config and --model")
    if config is not None:
        path = config
        if not os.path.exists(path):
            shipped = os.path.join(CONFIG_DIR, config + ".json")
            if not os.path.exists(shipped):
                raise ValueError(f"config {config!r} is neither a file nor a shipped tiny config")
            path = shipped
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f), os.path.splitext(os.path.basename(path))[0]
        except json.JSONDecodeError as e:
            raise ValueError(f"config {config!r} is not valid JSON: {e}") from None
    assert model is not None
    get_preset(model)
    return load_preset(model), model


def load_spec(config: str | None, model: str | None) -> tuple[ModelSpec, dict[str, Any]]:
    data, name = load_config(config, model)
    return ModelSpec.from_hf_config(data, name=name), data


@dataclass(frozen=True)
class Policy:
    """How one precision id of `calculators.training.states.PRECISIONS` runs in torch."""

    model_dtype: torch.dtype
    autocast: torch.dtype | None
    master: bool  # an fp32 copy the optimizer updates (bf16-fp32-master)
    scaler: bool  # GradScaler (fp16 autocast)


POLICIES = {
    "fp32": Policy(torch.float32, None, False, False),
    "amp-bf16": Policy(torch.float32, torch.bfloat16, False, False),
    "amp-fp16": Policy(torch.float32, torch.float16, False, True),
    "bf16-fp32-master": Policy(torch.bfloat16, None, True, False),
    "bf16": Policy(torch.bfloat16, None, False, False),
}


def policy(precision: str) -> Policy:
    precision = precision_id(precision)
    if precision not in POLICIES:
        raise ValueError(f"precision must be one of {', '.join(POLICIES)}, got {precision!r}")
    return POLICIES[precision]


class LoRALinear(nn.Module):
    """y = W x + (alpha / r) B A x with W frozen (Hu et al. 2021, arXiv:2106.09685, eq. 3).

    A is (r, in) with Kaiming-uniform init, B is (out, r) zeros, as peft's LoraLayer.
    """

    def __init__(self, base: nn.Linear, rank: int, alpha: float | None = None) -> None:
        super().__init__()
        self.base = base
        base.weight.requires_grad_(False)
        if base.bias is not None:
            base.bias.requires_grad_(False)
        dev, dt = base.weight.device, base.weight.dtype
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, device=dev, dtype=dt))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, device=dev, dtype=dt))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scale = (alpha or rank) / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + F.linear(F.linear(x, self.lora_A), self.lora_B) * self.scale


def apply_lora(model: nn.Module, rank: int, targets: tuple[str, ...]) -> int:
    """Freeze everything, wrap the nn.Linear modules named in `targets`; returns trainable.

    `all-linear` wraps every linear of the decoder layers (not lm_head, not the MoE
    router), as peft does; `all-attention` every attention projection (the calculators'
    default); stacked experts get one adapter per expert.
    """
    from probes.model import Experts

    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = 0
    for name, module in list(model.named_modules()):
        if isinstance(module, Experts):  # peft matches expert projections by name too
            for proj in module.names:
                if "all-linear" in targets or proj in targets:
                    module.add_lora(proj, rank)
                    wrapped += 1
            continue
        if not isinstance(module, nn.Linear) or ".layers." not in f".{name}":
            continue
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "gate" or leaf == "shared_expert_gate":
            continue
        attention = ".self_attn." in f".{name}."
        if "all-linear" in targets or leaf in targets or ("all-attention" in targets and attention):
            parent = model.get_submodule(name.rsplit(".", 1)[0])
            setattr(parent, leaf, LoRALinear(module, rank))
            wrapped += 1
    if wrapped == 0:
        raise ValueError(f"lora_targets {targets!r} match no linear layer")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def make_optimizer(params: list[nn.Parameter], optimizer: str, impl: str) -> torch.optim.Optimizer:
    """The optimizer of `calculators.training.states.OPTIMIZERS` with the step variant."""
    if impl not in OPTIMIZER_IMPLS:
        raise ValueError(
            f"optimizer_impl must be one of {', '.join(OPTIMIZER_IMPLS)}, got {impl!r}"
        )
    kw: dict[str, Any] = {"foreach": impl == "foreach"}
    if impl == "fused":
        kw = {"fused": True}
    if optimizer == "adamw":
        return torch.optim.AdamW(params, lr=LR, **kw)
    if optimizer in ("sgd", "sgd-momentum"):
        if impl == "fused":
            kw = {"fused": True}
        return torch.optim.SGD(
            params, lr=LR, momentum=0.9 if optimizer == "sgd-momentum" else 0.0, **kw
        )
    if optimizer == "adafactor":
        if not hasattr(torch.optim, "Adafactor"):
            raise ValueError("optimizer adafactor needs torch >= 2.5 (torch.optim.Adafactor)")
        if impl == "fused":
            raise ValueError("optimizer_impl fused is not available for adafactor")
        return torch.optim.Adafactor(params, lr=LR, foreach=impl == "foreach")
    if optimizer == "adamw-8bit":
        try:
            import bitsandbytes as bnb  # type: ignore[import-not-found]
        except ImportError:
            raise ValueError("optimizer adamw-8bit needs bitsandbytes installed") from None
        return bnb.optim.AdamW8bit(params, lr=LR)
    raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")


class Trainer:
    """One model, its precision policy and optimizer; `step(batch)` runs one update.

    bf16-fp32-master keeps an fp32 master copy of the trainable parameters: after backward
    each bf16 gradient is cast to an fp32 gradient of its master, the optimizer steps
    the masters, and the bf16 parameters are copied from them.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        precision: str,
        optimizer: str,
        optimizer_impl: str,
        device: str,
    ) -> None:
        self.model, self.device = model, device
        self.policy = policy(precision)
        self.trainable = [p for p in model.parameters() if p.requires_grad]
        if self.policy.master:
            self.masters = [p.detach().float().clone().requires_grad_() for p in self.trainable]
            self.optimizer = make_optimizer(self.masters, optimizer, optimizer_impl)
        else:
            self.masters = []
            self.optimizer = make_optimizer(self.trainable, optimizer, optimizer_impl)
        dev_type = torch.device(device).type
        self.scaler = torch.amp.GradScaler(dev_type) if self.policy.scaler else None
        self.dev_type = dev_type
        # called with the fp32 master gradients while they exist (the probes' categories)
        self.observe: Callable[[list[torch.Tensor]], None] | None = None

    def autocast(self):  # type: ignore[no-untyped-def]
        if self.policy.autocast is None:
            return nullcontext()
        return torch.autocast(self.dev_type, dtype=self.policy.autocast)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor, denominator: int | None = None):  # type: ignore[no-untyped-def]
        """Loss of one micro-batch: token sum / denominator (None: the mean)."""
        with self.autocast():
            if denominator is None:
                return model_loss(self.model, ids, labels, "mean")
            return model_loss(self.model, ids, labels, "sum") / denominator

    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler is not None else loss).backward()

    def optimizer_step(self) -> None:
        if self.policy.master:
            for p, m in zip(self.trainable, self.masters, strict=True):
                m.grad = None if p.grad is None else p.grad.float()
                p.grad = None
            if self.observe is not None:
                self.observe([m.grad for m in self.masters if m.grad is not None])
            self.optimizer.step()
            with torch.no_grad():
                for p, m in zip(self.trainable, self.masters, strict=True):
                    p.copy_(m)
                    m.grad = None
            return
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        for p in self.trainable:
            p.grad = None

    def state_tensors(self) -> Iterator[torch.Tensor]:
        for state in self.optimizer.state.values():
            for v in state.values():
                if isinstance(v, torch.Tensor):
                    yield v
        yield from self.masters


def model_loss(model: nn.Module, ids: torch.Tensor, labels: torch.Tensor, reduction: str):  # type: ignore[no-untyped-def]
    """Cross-entropy in fp32 over the logits, as transformers' ForCausalLMLoss."""
    inner = getattr(model, "module", model)  # DDP / FSDP wrappers
    if isinstance(inner, ReferenceDecoder) and model is inner:
        return inner.loss(ids, labels, reduction)
    out = model(ids)
    logits = out.logits if hasattr(out, "logits") else out
    return F.cross_entropy(
        logits.float().view(-1, logits.shape[-1]),
        labels.reshape(-1),
        ignore_index=-100,
        reduction=reduction,
    )


def build(
    spec: ModelSpec,
    config: dict[str, Any],
    *,
    device: str,
    precision: str,
    attention: str = "sdpa",
    checkpointing: str = "none",
    hf: bool = False,
    seed: int = 0,
) -> nn.Module:
    """The reference decoder (or, with `hf`, transformers' own class) on `device`."""
    dtype = policy(precision).model_dtype
    if attention not in ("sdpa", "eager"):
        raise ValueError(f"attention must be sdpa or eager, got {attention!r}")
    if checkpointing not in ("none", "full", "selective"):
        raise ValueError(f"checkpointing must be none, full or selective, got {checkpointing!r}")
    if hf:
        return build_hf(
            config,
            device=device,
            dtype=dtype,
            attention=attention,
            checkpointing=checkpointing,
            seed=seed,
        )
    model = build_model(spec, device=device, dtype=dtype, seed=seed)
    model.attention = attention  # type: ignore[assignment]
    # selective: recompute only the s x s attention core (eager); SDPA keeps nothing s x s
    model.checkpointing = checkpointing  # type: ignore[assignment]
    for layer in model.model.layers:
        layer.self_attn.selective = checkpointing == "selective"
    model.train()
    return model


def build_hf(
    config: dict[str, Any],
    *,
    device: str,
    dtype: torch.dtype,
    attention: str,
    checkpointing: str,
    seed: int,
) -> nn.Module:
    """transformers' AutoModelForCausalLM.from_config: the user's own architecture, no weights."""
    try:
        import transformers
    except ImportError:
        raise ValueError("--hf needs transformers installed (pip install transformers)") from None
    cfg = transformers.AutoConfig.for_model(**config)
    torch.manual_seed(seed)
    with torch.device(device):
        try:  # transformers >= 4.56 names it dtype, older ones torch_dtype
            model = transformers.AutoModelForCausalLM.from_config(
                cfg, dtype=dtype, attn_implementation=attention
            )
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(
                cfg, torch_dtype=dtype, attn_implementation=attention
            )
    if checkpointing == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    model.train()
    return model


def batches(
    vocab: int, micro_batch: int, seq_len: int, device: str, seed: int = 0
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless random (input_ids, labels) micro-batches from a seeded CPU generator."""
    gen = torch.Generator().manual_seed(seed)
    while True:
        row = torch.randint(0, vocab, (micro_batch, seq_len + 1), generator=gen)
        pair = row[:, :-1].contiguous().to(device), row[:, 1:].contiguous().to(device)
        del row  # not kept alive by this frame while the step runs
        yield pair
