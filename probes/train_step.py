"""train-step: memory of one training step, phase by phase, against `training_memory`.

Phases (the ids of `calculators.training.step.PHASES`), measured on step `steps` (>= 2, so
the optimizer states exist), gradients set to None between steps:

  after_load      live bytes at the start of the step (parameters, optimizer states,
                  master copy)
  after_forward   live bytes when the loss is computed (+ activations kept for backward)
  backward_peak   the highest live bytes during backward
  optimizer_step  the highest live bytes during the optimizer step
  peak            the highest of the step

On CPU the tracker also splits each phase's peak into parameters, gradients, optimizer
states (master copy included), activations and temporaries; `measured` then carries
`parameters`, `gradients`, `optimizer_states` and `activations` under the names of the
estimate's `per_gpu_bytes`.
"""

from __future__ import annotations

import gc
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

from calculators.model.spec import ModelSpec
from calculators.training.states import precision_id
from calculators.training.step import DEFAULT_LORA_TARGETS, TrainingQuery, training_memory
from probes.memory import CPUBackend, CudaBackend, PhaseMeasurement, storage_bytes
from probes.report import Phases
from probes.setup import Trainer, apply_lora, batches, build, policy

VERSION = "1"


@dataclass(frozen=True, kw_only=True)
class StepSettings:
    micro_batch: int = 2
    seq_len: int = 128
    precision: str = "fp32"
    optimizer: str = "adamw"
    optimizer_impl: str = "foreach"
    checkpointing: str = "none"
    attention: str = "sdpa"
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    steps: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 2:
            raise ValueError(
                f"steps must be at least 2 (the optimizer state exists from step 2), "
                f"got {self.steps!r}"
            )
        policy(self.precision)  # names the policies this probe can run
        # the current name, whatever name was given (reports print it)
        object.__setattr__(self, "precision", precision_id(self.precision))
        self.query()  # the calculators' own checks name any other bad shared field

    def query(self, *, zero_stage: int = 0, gpus: int = 1) -> TrainingQuery:
        """The same step as the calculators describe it."""
        return TrainingQuery(
            micro_batch=self.micro_batch,
            seq_len=self.seq_len,
            precision=self.precision,
            optimizer=self.optimizer,
            optimizer_impl=self.optimizer_impl,
            checkpointing=self.checkpointing,
            attention=self.attention,
            lora_rank=self.lora_rank,
            lora_targets=self.lora_targets,
            zero_stage=zero_stage,
            gpus=gpus,
        )


def estimate(spec: ModelSpec, s: StepSettings, *, zero_stage: int = 0, gpus: int = 1):  # type: ignore[no-untyped-def]
    """The calculators' `training_memory` for the same step."""
    return training_memory(spec, s.query(zero_stage=zero_stage, gpus=gpus))


def estimate_entries(r: Any) -> dict[str, int]:
    out = {p.id: p.bytes for p in r.phases}
    out.update(r.per_gpu_bytes)
    return out


def run_step(
    model: torch.nn.Module,
    trainer: Trainer,
    backend: CPUBackend | CudaBackend,
    s: StepSettings,
    vocab: int,
    device: str,
    phases: Phases,
) -> dict[str, PhaseMeasurement]:
    """Run `s.steps` steps; measure the phases of the last one."""
    data = batches(vocab, s.micro_batch, s.seq_len, device, seed=s.seed)
    out: dict[str, PhaseMeasurement] = {}
    cats = backend.categories
    cats.parameters |= backend.ids(model.parameters()) | backend.ids(model.buffers())
    trainer.observe = lambda grads: cats.gradients.update(backend.ids(grads))
    for step in range(1, s.steps + 1):
        last = step == s.steps
        ids, labels = next(data)
        trainer.zero_grad()
        if last:
            # tensors of earlier steps caught in reference cycles (autograd graphs, FSDP's
            # hooks) stay alive until the collector runs, at a moment that depends on what
            # else allocated; collecting here makes the start of the step what the program
            # holds (a rank of the FSDP test once read 1.21x its states without it, in a
            # clean-clone run on a loaded machine)
            gc.collect()
            phases.current = "after_load"
            backend.start()
            out["after_load"] = backend.end("after_load")
            out["after_load"].current_bytes = backend.current()
            # alive before the step (DDP buckets too): never an activation of this step
            persistent = (
                set(backend.tracker.snapshot()) if isinstance(backend, CPUBackend) else set()
            )
            backend.start()
        phases.current = "forward"
        loss = trainer.forward(ids, labels)
        if last:
            # FSDP's freed all-gather buffers can sit in reference cycles until the cyclic
            # collector runs: collect now, or what is alive depends on its timing
            gc.collect()
            out["forward"] = backend.end("forward")
            if isinstance(backend, CPUBackend):
                live = backend.tracker.snapshot()
                known = cats.parameters | cats.optimizer_states | persistent
                cats.activations = {k for k in live if k not in known}
                out["forward"].extra["activation_bytes"] = sum(live[k] for k in cats.activations)
            else:  # the allocator: what forward added and kept (block rounding included)
                out["forward"].extra["activation_bytes"] = (
                    out["forward"].current_bytes - out["after_load"].current_bytes
                )
            backend.start()
        phases.current = "backward"
        trainer.backward(loss)
        del loss
        if last:
            out["backward"] = backend.end("backward")
            grads = [p.grad for p in trainer.trainable if p.grad is not None]
            cats.gradients |= backend.ids(grads)
            out["backward"].extra["gradient_bytes"] = storage_bytes(grads)
            del grads  # bf16-fp32-master frees each 16-bit gradient in the step: hold none here
            backend.start()
        phases.current = "optimizer_step"
        trainer.optimizer_step()
        if last:
            out["optimizer"] = backend.end("optimizer")
            # model states by their tensors, on the device measured (AdamW's `step`
            # counters live on the CPU unless fused or capturable)
            dev = torch.device(device).type
            on_device = [t for t in trainer.state_tensors() if t.device.type == dev]
            out["optimizer"].extra["optimizer_state_bytes"] = storage_bytes(on_device)
            tensors = [*model.parameters(), *model.buffers()]
            out["optimizer"].extra["parameter_bytes"] = storage_bytes(tensors)
        cats.optimizer_states |= backend.ids(trainer.state_tensors())
    cats.activations -= cats.parameters | cats.gradients | cats.optimizer_states
    for m in out.values():
        backend.categorize(m)
    phases.current = "done"
    return out


def measured_entries(ph: dict[str, PhaseMeasurement]) -> dict[str, int]:
    """The phases under the estimate's names, plus the per-category split on CPU."""
    m = {
        "after_load": ph["after_load"].current_bytes,
        "after_forward": ph["forward"].current_bytes,
        "backward_peak": ph["backward"].peak_bytes,
        "optimizer_step": ph["optimizer"].peak_bytes,
    }
    m["peak"] = max(m["after_load"], ph["forward"].peak_bytes, *list(m.values())[2:])
    cat = ph["forward"].by_category
    # the estimate's per_gpu_bytes: model states by their tensors; on CPU the tracker's
    # categories (which also count CPU-side `step` counters), on a GPU the device's tensors
    m["parameters"] = cat["parameters"] if cat else ph["optimizer"].extra["parameter_bytes"]
    m["optimizer_states"] = (
        cat["optimizer_states"] if cat else ph["optimizer"].extra["optimizer_state_bytes"]
    )
    m["activations"] = ph["forward"].extra["activation_bytes"]
    # the model's gradients when backward ends (bf16-fp32-master's fp32 copies are step scratch)
    m["gradients"] = ph["backward"].extra["gradient_bytes"]
    return m


def train_step(
    spec: ModelSpec,
    config: dict[str, Any],
    s: StepSettings,
    *,
    device: str,
    backend: CPUBackend | CudaBackend,
    phases: Phases,
    hf: bool = False,
    model_wrapper: Any = None,
) -> dict[str, Any]:
    """Build, train `s.steps` steps, measure; returns the report's probe sections."""
    t0 = time.perf_counter()
    phases.current = "load"
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
    total = sum(p.numel() for p in model.parameters())
    if s.lora_rank is not None:
        apply_lora(model, s.lora_rank, s.lora_targets)
    if model_wrapper is not None:
        model = model_wrapper(model)
    trainer = Trainer(
        model,
        precision=s.precision,
        optimizer=s.optimizer,
        optimizer_impl=s.optimizer_impl,
        device=device,
    )
    ph = run_step(model, trainer, backend, s, spec.vocab_size, device, phases)
    measured = measured_entries(ph)
    return {
        "inputs": {
            **asdict(s),
            "model": spec.name,
            "model_type": spec.model_type,
            "device": device,
            "hf": hf,
        },
        "measured": measured,
        "details": {
            "backend": backend.kind,
            "parameters_built": total,
            "trainable_parameters": sum(p.numel() for p in trainer.trainable),
            "phases": {k: v.as_dict() for k, v in ph.items()},
            "seconds": time.perf_counter() - t0,
            **({"context": backend.context} if isinstance(backend, CudaBackend) else {}),
        },
    }
