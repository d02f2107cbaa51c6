"""LoRA adapters: which linear layers they wrap and how many parameters they train.

A LoRA adapter of rank r on a linear layer W (out x in) adds A (r x in) and B (out x r)
(Hu et al. 2021, arXiv:2106.09685, section 4.1), so it trains

  r x (in + out) parameters per wrapped matrix,

counted once per stacked expert when the experts are wrapped (peft matches module
names by suffix, so `gate_proj` wraps every expert's gate_proj as well). Targets are
module names of the tensor inventory (`calculators.model.tensors`), whose names follow the
Llama layout: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, and the
fused qkv_proj / gate_up_proj, c_fc / c_proj of GPT-2 and Phi-3, MLA's q_a_proj,
q_b_proj, kv_a_proj_with_mqa and kv_b_proj. `all-linear` wraps every linear layer of
the decoder layers but not lm_head, as peft's `target_modules="all-linear"` does
(peft/tuners/tuners_utils.py, `_maybe_include_all_linear_layers`, which excludes the
output layer); `all-attention` wraps every attention projection, whatever the model
names them (the LoRA paper's choice, section 4.2 and 7.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from calculators.checks import positive_int
from calculators.errors import InputError, shown
from calculators.model.spec import ModelSpec
from calculators.model.tensors import Tensor, model_tensors

ALL_LINEAR = "all-linear"
ALL_ATTENTION = "all-attention"
_LAYER_CATEGORIES = ("attention", "mlp", "experts", "shared_experts")


def module_name(t: Tensor) -> str:
    """Last component of the tensor's module: `model.layers.0.self_attn.q_proj` -> q_proj."""
    return t.name.rsplit(".", 2)[-2]


def _is_wrappable(t: Tensor) -> bool:
    # peft wraps nn.Linear modules; routers (ffn_gate_inp) are linears too but are never
    # named by the usual targets and stay excluded from all-linear here, as in Unsloth.
    return (
        t.is_matrix
        and t.layer is not None
        and t.category in _LAYER_CATEGORIES
        and t.name.endswith(".weight")
        and not t.mtp
    )


def linear_module_names(spec: ModelSpec) -> tuple[str, ...]:
    """The module names a LoRA target may use for this model, in inventory order."""
    seen: dict[str, None] = {}
    for t in model_tensors(spec):
        if _is_wrappable(t):
            seen.setdefault(module_name(t))
    return tuple(seen)


def wrapped_tensors(spec: ModelSpec, targets: tuple[str, ...]) -> tuple[Tensor, ...]:
    """The weight tensors that `targets` wrap; ValueError for a target that matches none."""
    if not targets:
        raise InputError("lora_targets", "lora_targets must name at least one module, got ()")
    names = linear_module_names(spec)
    for target in targets:
        if target not in (*names, ALL_LINEAR, ALL_ATTENTION):
            raise InputError(
                "lora_targets",
                f"lora_targets: {shown(target)} matches no linear layer of {spec.name}; "
                f"choose from {', '.join(names)}, {ALL_ATTENTION} or {ALL_LINEAR}",
            )
    return tuple(
        t
        for t in model_tensors(spec)
        if _is_wrappable(t)
        and (
            ALL_LINEAR in targets
            or module_name(t) in targets
            or (ALL_ATTENTION in targets and t.category == "attention")
        )
    )


@dataclass(frozen=True, kw_only=True)
class LoRACount:
    """Trainable LoRA parameters and the adapter tensors' shapes.

    shapes: (shape, count) pairs of the A and B matrices, for optimizer-state sizing.
    wrapped_parameters: elements of the frozen matrices the adapters wrap.
    """

    rank: int
    trainable: int
    wrapped_parameters: int
    shapes: tuple[tuple[tuple[int, ...], int], ...]


def lora_parameters(spec: ModelSpec, rank: int, targets: tuple[str, ...]) -> LoRACount:
    """Trainable parameters of rank-`rank` LoRA on `targets`: sum of r x (in + out)."""
    positive_int("lora_rank", rank)
    shapes: list[tuple[tuple[int, ...], int]] = []
    trainable = wrapped = 0
    for t in wrapped_tensors(spec, targets):
        out_f, in_f = t.shape[0], t.shape[1]
        shapes += [((rank, in_f), t.count), ((out_f, rank), t.count)]
        trainable += rank * (in_f + out_f) * t.count
        wrapped += t.parameters
    return LoRACount(
        rank=rank, trainable=trainable, wrapped_parameters=wrapped, shapes=tuple(shapes)
    )


def adapter_parameters_or_none(spec: ModelSpec, rank: int | None, targets: str) -> int | None:
    """The adapter's trained parameters for a rank and comma-separated `targets` as typed,
    or None without a rank (every parameter trains): what the throughput and budget
    calculators pass to `training_time` to choose 4N + 6 N_a over 6N per token."""
    if rank is None:
        return None
    return lora_parameters(spec, rank, tuple(t for t in targets.split(",") if t)).trainable
