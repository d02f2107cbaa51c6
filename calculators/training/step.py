"""Training-step memory per GPU, phase by phase: what a step needs before it runs out.

A training step allocates in phases (step 2 or later, so the optimizer states exist,
with `zero_grad(set_to_none=True)`, PyTorch's default, so gradients are freed between
steps):

  after_load      = parameters + optimizer states (+ fp32 master) + persistent buffers
  after_forward   = after_load + activations kept for backward
  backward_peak   = max over three moments of backward:
                      at the loss:        + loss_backward (two fp32 logits-sized tensors)
                      at the last layer:  the loss's log-softmax freed, + gradients of
                                          lm_head, final norm and that layer's MLP,
                                          + its transient (+ the layer recomputed, with
                                          checkpointing)
                      at the first layer: only that layer's activations left, + every
                                          gradient but the embedding's and that
                                          layer's attention, + its transient
                    (memory is linear in the layer index between the two ends, so the
                    maximum over layers is at one of them)
  optimizer_step  = after_load + gradients (cast to fp32 for an fp32 master)
                    + the step's temporaries
  peak            = the largest phase

Data parallelism (ZeRO paper, Rajbhandari et al. 2020, arXiv:1910.02054, section 5 and
Table 1; FSDP is ZeRO-3 when FULL_SHARD and ZeRO-2 when SHARD_GRAD_OP, Zhao et al. 2023,
arXiv:2304.11277, section 3) divides per GPU, for N GPUs:
  stage 1: optimizer states (and the fp32 master) / N
  stage 2: + gradients / N, with one unit's unsharded gradients alive during backward
  stage 3: + parameters / N, with (1 + prefetch) layer units gathered in forward and
           backward, and the root unit (embeddings, final norm, lm_head) gathered from
           forward to the end of backward (FSDP2 does not reshard the root after forward)
Stage 0 with N > 1 is DDP: a full replica, plus gradient buckets the size of all
gradients unless `gradient_as_bucket_view=True` (PyTorch DDP docs: "the saved memory
size will be equal to the total gradients size"). Activations are per GPU and do not
shrink with data parallelism.

Every term is a named line; the reserves are those of the inference envelope
(`calculators.memory.reserves`), charged on top of the peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import ceil
from typing import Literal

from calculators.checks import non_negative_int, one_of, positive_int
from calculators.errors import InputError, shown
from calculators.limits import (
    CONFIG_MAX,
    MAX_GPUS,
    MAX_LORA_RANK,
    MAX_MICRO_BATCH,
    MAX_SEQUENCE_TOKENS,
)
from calculators.memory.formats import get_format
from calculators.memory.gpus import get_gpu
from calculators.memory.reserves import Line, check_reserve_overrides, reserve_lines
from calculators.memory.weights import weight_bytes
from calculators.model.params import parameter_counts
from calculators.model.spec import ModelSpec, position_warnings
from calculators.model.tensors import model_tensors
from calculators.training.activations import (
    ActivationSettings,
    kept_layer_bytes,
    layer_backward_transient,
    layer_bytes,
    loss_backward_bytes,
    outside_layers_bytes,
)
from calculators.training.lora import (
    ALL_ATTENTION,
    ALL_LINEAR,
    lora_parameters,
    module_name,
    wrapped_tensors,
)
from calculators.training.states import (
    get_optimizer,
    get_precision,
    optimizer_state_bytes,
    precision_id,
    step_temporary_bytes,
)

PHASES = ("after_load", "after_forward", "backward_peak", "optimizer_step")
PHASE_LABELS = {
    "after_load": "After load (start of a step)",
    "after_forward": "End of forward",
    "backward_peak": "Peak during backward",
    "optimizer_step": "During the optimizer step",
}
# Every attention projection, however the model names them (the LoRA paper, section 7.1).
DEFAULT_LORA_TARGETS = (ALL_ATTENTION,)
Runtime = Literal["cuda", "hip"]


@dataclass(frozen=True, kw_only=True)
class TrainingQuery:
    """One training step on one GPU of a data-parallel group.

    micro_batch, seq_len: sequences per forward/backward and tokens per sequence.
    precision:      fp32 | amp-bf16 | amp-fp16 | bf16-fp32-master | bf16 (`PRECISIONS`;
                    the retired name bf16-mixed is read as bf16-fp32-master).
    optimizer:      adamw | adamw-8bit | sgd | sgd-momentum | adafactor (`OPTIMIZERS`).
    optimizer_impl: foreach (torch's default on CUDA) | for-loop | fused.
    checkpointing:  none | full | selective (per decoder layer).
    attention:      sdpa (flash / memory-efficient: no s x s scores) | eager.
    dropout:        True when attention and residual dropout are on (GPT-2's 0.1).
    capacity_factor: MoE expert capacity (None: dropless).
    lora_rank, lora_targets: LoRA adapters (None: full fine-tuning).
    base_format:    with LoRA, the frozen base's format from the formats table (QLoRA:
                    nf4-dq); None: the policy's parameter dtype.
    zero_stage, gpus: ZeRO stage 0-3 across `gpus` data-parallel ranks (0 with gpus > 1
                    is DDP; FSDP FULL_SHARD is 3, SHARD_GRAD_OP is 2).
    ddp_bucket_view: DDP's gradient_as_bucket_view (no separate bucket copy).
    prefetch:       ZeRO-3/FSDP units gathered ahead of the one computing.
    reserves:       overrides of the reserve lines by id.
    """

    micro_batch: int = 1
    seq_len: int = 2048
    precision: str = "bf16-fp32-master"
    optimizer: str = "adamw"
    optimizer_impl: str = "foreach"
    checkpointing: str = "none"
    attention: str = "sdpa"
    dropout: bool = False
    capacity_factor: float | None = None
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    base_format: str | None = None
    zero_stage: int = 0
    gpus: int = 1
    ddp_bucket_view: bool = False
    prefetch: int = 1
    reserves: dict[str, int | float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        positive_int("micro_batch", self.micro_batch, maximum=MAX_MICRO_BATCH)
        positive_int("seq_len", self.seq_len, maximum=MAX_SEQUENCE_TOKENS)
        opt = get_optimizer(self.optimizer)
        get_precision(self.precision)
        # the current name, whatever name the query used (results and reports print it)
        object.__setattr__(self, "precision", precision_id(self.precision))
        one_of("optimizer_impl", self.optimizer_impl, ("foreach", "for-loop", "fused"))
        if self.optimizer_impl == "fused" and (opt.factored or opt.eight_bit):
            raise InputError(
                "optimizer_impl", f"optimizer_impl fused is not available for {self.optimizer}"
            )
        one_of("checkpointing", self.checkpointing, ("none", "full", "selective"))
        one_of("attention", self.attention, ("sdpa", "eager"))
        one_of("dropout", self.dropout, (True, False))
        if self.capacity_factor is not None and not (
            isinstance(self.capacity_factor, int | float)
            and not isinstance(self.capacity_factor, bool)
            and 1 <= self.capacity_factor <= 64
        ):
            raise InputError(
                "capacity_factor",
                f"capacity_factor must be a number in [1, 64] or None, "
                f"got {shown(self.capacity_factor)}",
            )
        if self.lora_rank is not None:
            positive_int("lora_rank", self.lora_rank, maximum=MAX_LORA_RANK)
        if not isinstance(self.lora_targets, tuple) or not self.lora_targets:
            raise InputError(
                "lora_targets",
                f"lora_targets must be a non-empty tuple, got {shown(self.lora_targets)}",
            )
        if self.base_format is not None:
            if self.lora_rank is None:
                raise InputError(
                    "base_format",
                    f"base_format is the frozen base under LoRA; set lora_rank too "
                    f"(got base_format={shown(self.base_format)})",
                )
            try:
                get_format(self.base_format)
            except InputError as e:
                raise e.renamed("base_format", "base_format") from None
        one_of("zero_stage", self.zero_stage, (0, 1, 2, 3))
        positive_int("gpus", self.gpus, maximum=MAX_GPUS)
        one_of("ddp_bucket_view", self.ddp_bucket_view, (True, False))
        # A prefetch past the model's depth gathers nothing more: capped where it is used.
        non_negative_int("prefetch", self.prefetch, maximum=CONFIG_MAX["num_hidden_layers"])
        check_reserve_overrides(self.reserves)


@dataclass(frozen=True, kw_only=True)
class TrainingPhase:
    """Bytes allocated on one GPU at one moment of the step."""

    id: str
    label: str
    bytes: int


@dataclass(frozen=True, kw_only=True)
class TrainingMemory:
    """Per-GPU training memory: model-state lines, buffers, activations and phases.

    per_gpu_bytes: parameters, gradients, optimizer_states (fp32 master included),
                   activations (kept at the end of forward) and peak (largest phase).
    lines:         every named line (model states, buffers, activation groups, the
                   step's temporaries), for tables and charts.
    warnings:      a sequence length past the model's max_position_embeddings.
    """

    query: TrainingQuery
    total_parameters: int
    trainable_parameters: int
    per_gpu_bytes: dict[str, int]
    lines: tuple[Line, ...]
    phases: tuple[TrainingPhase, ...]
    peak_phase: str
    tokens_per_micro_batch: int
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def phase(self, phase_id: str) -> int:
        """Bytes of the phase called `phase_id`."""
        for p in self.phases:
            if p.id == phase_id:
                return p.bytes
        raise KeyError(phase_id)

    def line(self, line_id: str) -> Line:
        """The line called `line_id`."""
        for line in self.lines:
            if line.id == line_id:
                return line
        raise KeyError(line_id)

    @property
    def peak_bytes(self) -> int:
        return self.per_gpu_bytes["peak"]


@dataclass(frozen=True, kw_only=True)
class _States:
    """Whole-model (unsharded) model states and what sizing the buffers needs."""

    total: int
    trainable: int
    param_bytes: int
    grad_bytes: int
    master_bytes: int
    optimizer_bytes: int
    largest_trainable_tensor: int
    unit_param_bytes: int  # largest ZeRO-3/FSDP layer unit (a decoder layer)
    root_param_bytes: int  # the root unit: embeddings, final norm, lm_head
    unit_grad_bytes: int
    top_grad_bytes: int  # allocated when the last layer's backward peaks
    bottom_grad_bytes: int  # allocated when the first layer's backward peaks
    dequant_bytes: int  # a quantised base matrix dequantised to 16-bit for its matmul
    matmul_parameters: int  # weights matmuls read (autocast casts a copy of each)
    head_matmul_parameters: int  # lm_head's (outside the checkpointed layers)
    layer_matmul_parameters: int  # the largest layer's
    notes: tuple[str, ...]


def _spec_states(spec: ModelSpec, q: TrainingQuery) -> _States:
    pol, opt = get_precision(q.precision), get_optimizer(q.optimizer)
    tensors = [t for t in model_tensors(spec) if not t.mtp]
    total = parameter_counts(spec).total
    layer_params: dict[int | None, int] = {}
    for t in tensors:
        layer_params[t.layer] = layer_params.get(t.layer, 0) + t.parameters
    last = spec.num_layers - 1
    matmul = sum(
        t.parameters
        for t in tensors
        if t.is_matrix and t.category not in ("embedding", "position_embedding")
    )
    if spec.tie_word_embeddings:
        matmul += spec.vocab_size * spec.hidden_size  # the tied embedding is lm_head too
    head_matmul = spec.vocab_size * spec.hidden_size  # lm_head, or the tied embedding
    layer_matmul = max(
        sum(t.parameters for t in tensors if t.layer == i and t.is_matrix)
        for i in range(spec.num_layers)
    )
    notes = []
    if spec.mtp_layers:
        notes.append("MTP modules are not trained here (main model only)")
    if q.lora_rank is None:
        trainable = total
        shapes = [(t.shape, t.count) for t in tensors]
        param_bytes = total * pol.param_bytes
        largest = max(t.numel for t in tensors)
        unit_params = max(v for k, v in layer_params.items() if k is not None)
        # Gradients allocated when a layer's backward peaks in its MLP: lm_head (the tied
        # embedding), the final norm and, of the layer itself, all but its attention; the
        # embedding's own gradient comes last, after the first layer's attention.
        head = sum(
            t.parameters
            for t in tensors
            if t.layer is None
            and (t.category != "embedding" or spec.tie_word_embeddings)
            and t.category != "position_embedding"
        )
        attention = {
            i: sum(t.parameters for t in tensors if t.layer == i and t.category == "attention")
            for i in (0, last)
        }
        top = head + layer_params[last] - attention[last]
        bottom = total - (layer_params[None] - head) - attention[0]
        unit_trainable = unit_params
        dequant = 0
    else:
        lora = lora_parameters(spec, q.lora_rank, q.lora_targets)
        trainable, shapes = lora.trainable, list(lora.shapes)
        base_id = q.base_format or ("fp32" if pol.param_bytes == 4 else "bf16")
        base = weight_bytes(spec, base_id).main_bytes
        param_bytes = base + trainable * pol.param_bytes
        largest = max(s[0] * s[1] for s, _ in shapes)
        unit_params = ceil(max(v for k, v in layer_params.items() if k is not None) * base / total)
        unit_trainable = top = ceil(trainable / spec.num_layers)
        bottom = trainable
        fmt = get_format(base_id)
        quantised = fmt.family not in ("float",)
        dequant = max(t.numel for t in tensors if t.is_matrix) * 2 if quantised else 0
        notes.append(
            f"LoRA rank {q.lora_rank} on {', '.join(q.lora_targets)}: frozen base in {base_id}"
            + (", one matrix dequantised to bf16 at a time" if dequant else "")
        )
        if quantised:  # 4-bit matmuls dequantise themselves; autocast has no weight to cast
            matmul = layer_matmul = 0
    return _States(
        total=total,
        trainable=trainable,
        param_bytes=param_bytes,
        grad_bytes=trainable * pol.grad_bytes,
        master_bytes=trainable * pol.master_bytes,
        optimizer_bytes=optimizer_state_bytes(shapes, opt, pol.state_bytes),
        largest_trainable_tensor=largest,
        unit_param_bytes=unit_params * (pol.param_bytes if q.lora_rank is None else 1),
        root_param_bytes=ceil(layer_params[None] * param_bytes / total),
        unit_grad_bytes=unit_trainable * pol.grad_bytes,
        top_grad_bytes=top * pol.grad_bytes,
        bottom_grad_bytes=bottom * pol.grad_bytes,
        dequant_bytes=dequant,
        matmul_parameters=matmul,
        head_matmul_parameters=min(head_matmul, matmul),
        layer_matmul_parameters=layer_matmul,
        notes=tuple(notes),
    )


def _count_states(params: int, q: TrainingQuery) -> _States:
    pol, opt = get_precision(q.precision), get_optimizer(q.optimizer)
    if opt.factored:
        raise InputError(
            "optimizer", "optimizer adafactor needs the model's tensor shapes: give a model"
        )
    if q.lora_rank is not None:
        raise InputError(
            "lora_rank", "lora_rank needs the model's layer shapes: give a model, not params"
        )
    notes = ["parameter count only: model states, no activations (give a model for those)"]
    if opt.eight_bit:
        notes.append("8-bit states: every tensor assumed to have at least 4096 elements")
    if q.optimizer_impl == "for-loop":
        notes.append("for-loop step scratch needs tensor shapes: not counted")
    return _States(
        total=params,
        trainable=params,
        param_bytes=params * pol.param_bytes,
        grad_bytes=params * pol.grad_bytes,
        master_bytes=params * pol.master_bytes,
        optimizer_bytes=optimizer_state_bytes([((params,), 1)], opt, pol.state_bytes)
        if opt.eight_bit
        else opt.full_states * params * pol.state_bytes,
        largest_trainable_tensor=0,
        unit_param_bytes=0,
        root_param_bytes=0,
        unit_grad_bytes=0,
        top_grad_bytes=0,
        bottom_grad_bytes=params * pol.grad_bytes,
        dequant_bytes=0,
        matmul_parameters=0,
        head_matmul_parameters=0,
        layer_matmul_parameters=0,
        notes=tuple(notes),
    )


def _shard(n_bytes: int, sharded: bool, gpus: int) -> int:
    return ceil(n_bytes / gpus) if sharded else n_bytes


def training_memory(
    spec: ModelSpec | None, query: TrainingQuery, *, params: int | None = None
) -> TrainingMemory:
    """Per-GPU memory of one training step of `spec` (or of `params` parameters).

    With `spec`, every line; with `params` only (spec None), model states and the
    optimizer step, no activations. See the module docstring for the phases and
    sharding, `calculators.training.states` for bytes per parameter and
    `calculators.training.activations` for the saved tensors.
    """
    q = query
    if (spec is None) == (params is None):
        raise InputError("params", "give exactly one of spec and params")
    if spec is None:
        # 10^18 parameters: far past any model, and the bytes stay exact integers
        positive_int("params", params, maximum=10**18)
        assert params is not None
        st = _count_states(params, q)
    else:
        st = _spec_states(spec, q)
    return _training_memory(spec, q, st)


def _training_memory(spec: ModelSpec | None, q: TrainingQuery, st: _States) -> TrainingMemory:
    pol, opt = get_precision(q.precision), get_optimizer(q.optimizer)
    n, z = q.gpus, q.zero_stage
    shard_note = f"/ {n} GPUs (ZeRO-{z})"
    parameters = _shard(st.param_bytes, z >= 3, n)
    gradients = _shard(st.grad_bytes, z >= 2, n)
    master = _shard(st.master_bytes, z >= 1, n)
    opt_states = _shard(st.optimizer_bytes, z >= 1, n)
    buckets = st.grad_bytes if n > 1 and z == 0 and not q.ddp_bucket_view else 0
    sharded = z >= 3 and n > 1
    # FSDP2 keeps the root unit (embeddings, final norm, lm_head) unsharded from forward
    # to the end of backward (the root is not resharded after forward); a layer unit is
    # gathered for its forward and its backward, with `prefetch` more ahead of it.
    root = st.root_param_bytes if sharded else 0
    # A unit can only prefetch the layers that exist after it: at most all of them.
    layers = spec.num_layers if spec is not None else 1
    prefetched = min(q.prefetch, layers - 1)
    gathered = (1 + prefetched) * st.unit_param_bytes if sharded else 0
    unsharded_grads = st.unit_grad_bytes if z >= 2 and n > 1 else 0
    # With an fp32 master the step reads fp32 gradients: each 16-bit gradient is cast and
    # freed (Apex O2 / torch.amp-style master weights; measured so on CPU).
    master_grads = _shard(st.trainable * pol.master_bytes, z >= 2, n)
    temporaries = step_temporary_bytes(
        opt,
        q.optimizer_impl,  # type: ignore[arg-type]
        trainable=_shard(st.trainable, z >= 1, n),
        largest_tensor=st.largest_trainable_tensor,
        state_bytes=pol.state_bytes,
    )
    lines = [
        Line(
            id="parameters",
            label=f"Parameters ({pol.label})",
            bytes=parameters,
            basis=f"{st.total:,} parameters"
            + (f", {st.trainable:,} trainable" if st.trainable != st.total else "")
            + (f" {shard_note}" if z >= 3 and n > 1 else ""),
            source=pol.source,
        ),
        Line(
            id="gradients",
            label="Gradients",
            bytes=gradients,
            basis=f"{st.trainable:,} x {pol.grad_bytes} bytes"
            + (f" {shard_note}" if z >= 2 and n > 1 else ""),
            source=pol.source,
        ),
        Line(
            id="master_weights",
            label="fp32 master weights",
            bytes=master,
            basis=f"{st.trainable:,} x {pol.master_bytes} bytes"
            + (f" {shard_note}" if z >= 1 and n > 1 else ""),
            source=pol.source,
        ),
        Line(
            id="optimizer_states",
            label=f"Optimizer states ({opt.label})",
            bytes=opt_states,
            basis=f"{opt.full_states or 'factored'} state(s), {pol.state_bytes}-byte elements"
            + (f" {shard_note}" if z >= 1 and n > 1 else ""),
            source=opt.source,
        ),
        Line(
            id="ddp_buckets",
            label="DDP gradient buckets",
            bytes=buckets,
            basis="a copy of all gradients (gradient_as_bucket_view=False)",
            source="torch.nn.parallel.DistributedDataParallel docs, gradient_as_bucket_view",
        ),
        Line(
            id="gathered_root",
            label="ZeRO-3 / FSDP root unit, gathered",
            bytes=root,
            basis="embeddings, final norm and lm_head, unsharded from forward to backward",
            source="torch.distributed.fsdp.fully_shard docs: the root's reshard_after_forward "
            "defaults to False",
        ),
        Line(
            id="gathered_parameters",
            label="ZeRO-3 / FSDP gathered layers",
            bytes=gathered,
            basis=f"(1 + prefetch {prefetched}) x the largest layer's parameters"
            + (
                f" (prefetch {q.prefetch} capped: the model has {layers} layers)"
                if prefetched < q.prefetch
                else ""
            ),
            source="ZeRO paper section 5.3; FSDP paper (arXiv:2304.11277) section 3.3",
        ),
        Line(
            id="unsharded_gradients",
            label="One unit's unsharded gradients (backward)",
            bytes=unsharded_grads,
            basis="gradients of the largest unit before its reduce-scatter",
            source="ZeRO paper section 5.2; FSDP paper section 3.3",
        ),
        Line(
            id="step_temporaries",
            label=f"Optimizer step scratch ({q.optimizer_impl})",
            bytes=temporaries,
            basis="foreach: one state-sized tensor per parameter; for-loop: the largest; "
            "fused: none",
            source="calculators.training.states.step_temporary_bytes",
        ),
        Line(
            id="master_gradients",
            label="fp32 gradients of the master copy (optimizer step)",
            bytes=master_grads,
            basis="each 16-bit gradient cast to fp32 for the step, the 16-bit one freed"
            + (f" {shard_note}" if z >= 2 and n > 1 else ""),
            source="mixed-precision practice: Micikevicius et al. 2018 (arXiv:1710.03740) "
            "section 3.1; DeepSpeed and Megatron keep fp32 gradients for the fp32 master",
        ),
    ]
    base = parameters + master + opt_states + buckets
    act_lines, stages = _activation_lines(spec, q, st) if spec is not None else ([], None)
    lines += act_lines
    activations = sum(line.bytes for line in act_lines)
    grads_all = gradients
    if stages is None:
        backward = base + grads_all
    else:
        loss_stage, top_free, top_extra, bottom_kept, layer_extra = stages
        top_grads = min(grads_all, _shard(st.top_grad_bytes, z >= 2, n))
        bottom_grads = min(grads_all, _shard(st.bottom_grad_bytes, z >= 2, n))
        backward = max(
            base + activations + root + loss_stage,
            base
            + activations
            - top_free
            + top_extra
            + top_grads
            + root
            + gathered
            + unsharded_grads,
            base + bottom_kept + layer_extra + bottom_grads + root + gathered + unsharded_grads,
        )
    phases = (
        TrainingPhase(id="after_load", label=PHASE_LABELS["after_load"], bytes=base),
        TrainingPhase(
            id="after_forward",
            label=PHASE_LABELS["after_forward"],
            bytes=base + activations + root,
        ),
        TrainingPhase(id="backward_peak", label=PHASE_LABELS["backward_peak"], bytes=backward),
        TrainingPhase(
            id="optimizer_step",
            label=PHASE_LABELS["optimizer_step"],
            bytes=base + (master_grads or grads_all) + temporaries,
        ),
    )
    peak = max(phases, key=lambda p: p.bytes)
    return TrainingMemory(
        query=q,
        total_parameters=st.total,
        trainable_parameters=st.trainable,
        per_gpu_bytes={
            "parameters": parameters,
            "gradients": gradients,
            "optimizer_states": master + opt_states,
            "activations": activations,
            "peak": peak.bytes,
        },
        lines=tuple(lines),
        phases=phases,
        peak_phase=peak.id,
        tokens_per_micro_batch=q.micro_batch * q.seq_len,
        assumptions=st.notes + (spec.assumptions if spec is not None else ()),
        warnings=position_warnings(spec, seq_len=q.seq_len) if spec is not None else (),
    )


def _activation_settings(spec: ModelSpec, q: TrainingQuery) -> ActivationSettings:
    pol = get_precision(q.precision)
    # Llama-style eager attention and autocast run softmax in fp32; pure 16-bit GPT-2
    # (the Megatron setting of Korthikanti et al.) keeps it in the activation dtype.
    softmax = pol.act_bytes if spec.model_type == "gpt2" and not pol.autocast_copies else 4
    targets = matrices = None
    if q.lora_rank is not None:
        wrapped = {module_name(t) for t in wrapped_tensors(spec, q.lora_targets)}
        targets = frozenset(wrapped)
        matrices = len(wrapped)
    return ActivationSettings(
        act_bytes=pol.act_bytes,
        residual_bytes=pol.param_bytes if pol.autocast_copies else pol.act_bytes,
        softmax_bytes=softmax,
        attention=q.attention,  # type: ignore[arg-type]
        dropout=q.dropout,
        capacity_factor=q.capacity_factor,
        lora_targets=targets,
        lora_rank=q.lora_rank or 0,
        lora_matrices=matrices or 0,
    )


def _activation_lines(
    spec: ModelSpec, q: TrainingQuery, st: _States
) -> tuple[list[Line], tuple[int, int, int, int, int]]:
    """Activation lines at the end of forward, and the backward stages' extra bytes."""
    pol = get_precision(q.precision)
    settings = _activation_settings(spec, q)
    b, s, t = q.micro_batch, q.seq_len, q.micro_batch * q.seq_len
    ckpt = q.checkpointing
    frozen_below = q.lora_rank is not None  # nothing before layer 0 needs a gradient
    kept = [
        kept_layer_bytes(
            spec,
            layer,
            b,
            s,
            settings,
            ckpt,  # type: ignore[arg-type]
            input_requires_grad=not (frozen_below and i == 0),
        )
        for i, layer in enumerate(spec.layers)
    ]
    full = [layer_bytes(spec, layer, b, s, settings) for layer in spec.layers]
    outside = outside_layers_bytes(spec, b, s, settings)
    copied = st.matmul_parameters
    transient = layer_backward_transient(spec, b, s, settings) + st.dequant_bytes
    recompute = 0
    if ckpt == "full":
        # a recomputed layer saves its input again only as the checkpoint's own copy; its
        # autocast weight copies die with its forward and come back with the recompute
        copied = st.head_matmul_parameters
        recompute = max(full) - t * spec.hidden_size * settings.residual_bytes
        recompute += st.layer_matmul_parameters * pol.act_bytes if pol.autocast_copies else 0
    copies = copied * pol.act_bytes if pol.autocast_copies else 0
    label = {"none": "no checkpointing", "full": "full checkpointing: layer inputs only"}.get(
        ckpt, "selective checkpointing: attention scores recomputed"
    )
    lines = [
        Line(
            id="layer_activations",
            label=f"Decoder layers' saved tensors, {label}",
            bytes=sum(kept),
            basis=f"{spec.num_layers} layers x {t:,} tokens",
            source="calculators.training.activations (Korthikanti et al. 2022, eq. 1)",
        ),
        Line(
            id="embedding_and_norm",
            label="Token ids, RoPE tables, final norm and lm_head input",
            bytes=outside["embedding"] + outside["final_norm"],
            basis=f"{t:,} tokens",
            source="calculators.training.activations.outside_layers_bytes",
        ),
        Line(
            id="logits",
            label="The loss's fp32 log-softmax",
            bytes=outside["loss"],
            basis=f"{t:,} tokens x vocabulary {spec.vocab_size:,} x 4 bytes",
            source="transformers ForCausalLMLoss (logits.float()); aten log_softmax saves "
            "its output",
        ),
        Line(
            id="autocast_weight_copies",
            label="Autocast 16-bit weight copies",
            bytes=copies,
            basis=f"{copied:,} matmul weights x {pol.act_bytes} bytes"
            + (" (lm_head; the layers' copies are recomputed)" if ckpt == "full" else ""),
            source="torch.amp.autocast weight cast cache; each matmul saves its casted weight",
        ),
    ]
    stages = (
        loss_backward_bytes(spec, b, s),
        outside["loss"],
        transient + recompute,
        kept[0] + outside["embedding"] + copies,
        transient + recompute,
    )
    return lines, stages


@dataclass(frozen=True, kw_only=True)
class TrainingFit:
    """The step's peak plus the reserve lines, against one card's visible memory."""

    memory: TrainingMemory
    reserves: tuple[Line, ...]
    total_bytes: int
    visible_bytes: int
    headroom_bytes: int

    @property
    def fits(self) -> bool:
        return self.headroom_bytes >= 0


def training_fit(
    spec: ModelSpec | None,
    query: TrainingQuery,
    *,
    gpu: str | None = "h100-sxm",
    visible_bytes: int | None = None,
    runtime: Runtime = "cuda",
    params: int | None = None,
) -> TrainingFit:
    """`training_memory` plus the runtime's reserve lines, against a card.

    total = peak + runtime context + framework overhead + fragmentation x peak.
    Either `gpu` (a catalog id) or, with gpu=None, `visible_bytes` and `runtime`.
    """
    visible, runtime = _card(gpu, visible_bytes, runtime)
    memory = training_memory(spec, query, params=params)
    return _fit(memory, visible, runtime)


def _fit(memory: TrainingMemory, visible: int, runtime: Runtime) -> TrainingFit:
    query = memory.query
    reserves = reserve_lines(
        runtime, memory.peak_bytes, query.reserves, demand_label="the step's peak"
    )
    total = memory.peak_bytes + sum(r.bytes for r in reserves)
    return TrainingFit(
        memory=memory,
        reserves=tuple(reserves),
        total_bytes=total,
        visible_bytes=visible,
        headroom_bytes=visible - total,
    )


def _card(gpu: str | None, visible_bytes: int | None, runtime: Runtime) -> tuple[int, Runtime]:
    """Visible bytes and runtime of a catalog card, or of the card the caller describes."""
    if gpu is not None:
        card = get_gpu(gpu)
        return card.visible_bytes, card.runtime
    positive_int("visible_bytes", visible_bytes)
    assert visible_bytes is not None
    one_of("runtime", runtime, ("cuda", "hip"))
    return visible_bytes, runtime


# The largest micro-batch the search reports: beyond any card's memory at one token.
MICRO_BATCH_SEARCH_CAP = 1 << 16


def max_micro_batch(
    spec: ModelSpec,
    query: TrainingQuery,
    *,
    gpu: str | None = "h100-sxm",
    visible_bytes: int | None = None,
    runtime: Runtime = "cuda",
) -> int:
    """The largest micro-batch (at `query.seq_len`) whose step fits the card, by bisection.

    0 when even one sequence does not fit (model states or one sequence's activations
    exceed the card); capped at MICRO_BATCH_SEARCH_CAP. The total grows with the micro-batch
    (activations are linear in it, model states constant), so bisection is exact.
    """

    visible, runtime = _card(gpu, visible_bytes, runtime)
    states = _spec_states(spec, query)  # model states do not depend on the micro-batch

    def fits(mb: int) -> bool:
        q = replace(query, micro_batch=mb)
        return _fit(_training_memory(spec, q, states), visible, runtime).fits

    if not fits(1):
        return 0
    lo, hi = 1, MICRO_BATCH_SEARCH_CAP
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


__all__ = [
    "ALL_ATTENTION",
    "ALL_LINEAR",
    "DEFAULT_LORA_TARGETS",
    "PHASES",
    "TrainingFit",
    "TrainingMemory",
    "TrainingPhase",
    "TrainingQuery",
    "max_micro_batch",
    "training_fit",
    "training_memory",
]
