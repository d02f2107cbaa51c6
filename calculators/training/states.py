"""Model states of training, as data: precision policies and optimizers, with sources.

Model states (ZeRO paper, Rajbhandari et al. 2020, arXiv:1910.02054, section 3.1) are
the parameters, their gradients and the optimizer states. With mixed-precision Adam
they cost 2 + 2 + K bytes a parameter, K = 12 (an fp32 master copy, momentum and
variance); every policy here is a row of bytes per parameter, so that sum is explicit:

  parameters       = P x param_bytes
  gradients        = P_trainable x grad_bytes
  optimizer states = P_trainable x master_bytes + optimizer_state_bytes(...)

The `step` counter torch.optim keeps per parameter tensor lives on the CPU unless
`capturable` or `fused` is set (torch/optim/adam.py, `_get_scalar_dtype`); it is not
counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import ceil, prod
from typing import Literal

from calculators.checks import one_of

OptimizerImpl = Literal["foreach", "for-loop", "fused"]


@dataclass(frozen=True, kw_only=True)
class PrecisionPolicy:
    """Bytes per element of each model state and of activations under one policy.

    param_bytes:   trainable parameters as stored in the model;
    grad_bytes:    their gradients (same dtype as the parameters in PyTorch);
    master_bytes:  an fp32 master copy kept by the optimizer (0 if none);
    state_bytes:   optimizer states (momentum, variance) per element;
    act_bytes:     activations;
    autocast_copies: torch.autocast casts each weight a matmul reads to 16-bit and
                   the matmul saves that copy for backward (autocast's weight cast
                   cache, `cache_enabled=True`), so 16-bit copies of the matmul weights
                   live from forward to backward.
    """

    id: str
    label: str
    param_bytes: int
    grad_bytes: int
    master_bytes: int
    state_bytes: int
    act_bytes: int
    autocast_copies: bool
    source: str


PRECISIONS: tuple[PrecisionPolicy, ...] = (
    PrecisionPolicy(
        id="fp32",
        label="fp32 everywhere",
        param_bytes=4,
        grad_bytes=4,
        master_bytes=0,
        state_bytes=4,
        act_bytes=4,
        autocast_copies=False,
        source="PyTorch default dtype float32",
    ),
    PrecisionPolicy(
        id="amp-bf16",
        label="fp32 parameters, bf16 autocast",
        param_bytes=4,
        grad_bytes=4,
        master_bytes=0,
        state_bytes=4,
        act_bytes=2,
        autocast_copies=True,
        source="PyTorch AMP docs (torch.amp.autocast, 'Automatic Mixed Precision package'): "
        "parameters and gradients stay fp32, matmul inputs cast to bf16 with a weight "
        "cast cache",
    ),
    PrecisionPolicy(
        id="amp-fp16",
        label="fp32 parameters, fp16 autocast + GradScaler",
        param_bytes=4,
        grad_bytes=4,
        master_bytes=0,
        state_bytes=4,
        act_bytes=2,
        autocast_copies=True,
        source="PyTorch AMP docs (torch.amp.autocast, torch.amp.GradScaler)",
    ),
    PrecisionPolicy(
        id="bf16-fp32-master",
        label="bf16 parameters and gradients, fp32 master and optimizer states",
        param_bytes=2,
        grad_bytes=2,
        master_bytes=4,
        state_bytes=4,
        act_bytes=2,
        autocast_copies=False,
        source="ZeRO paper (arXiv:1910.02054) section 3.1: 2 + 2 + K bytes per parameter, "
        "K = 12 for Adam (fp32 master, momentum, variance); DeepSpeed bf16 optimizer",
    ),
    PrecisionPolicy(
        id="bf16",
        label="bf16 everywhere (no master copy)",
        param_bytes=2,
        grad_bytes=2,
        master_bytes=0,
        state_bytes=2,
        act_bytes=2,
        autocast_copies=False,
        source="model.to(torch.bfloat16) with torch.optim: states take the parameter dtype "
        "(torch/optim/adam.py, zeros_like(p))",
    ),
)


@dataclass(frozen=True, kw_only=True)
class Optimizer:
    """An optimizer's persistent state, per trainable parameter tensor.

    full_states:  full-size state tensors per parameter, in the policy's state dtype
                  (AdamW: exp_avg and exp_avg_sq; SGD with momentum: momentum_buffer);
    factored:     Adafactor's factored second moment (a row and a column vector per
                  matrix, a full vector for 1-D tensors);
    eight_bit:    bitsandbytes 8-bit blockwise states (two uint8 states plus an fp32
                  absmax per block of 256; tensors under min_8bit_size keep fp32 states).
    """

    id: str
    label: str
    full_states: int
    factored: bool = False
    eight_bit: bool = False
    source: str


OPTIMIZERS: tuple[Optimizer, ...] = (
    Optimizer(
        id="adamw",
        label="AdamW",
        full_states=2,
        source="torch/optim/adam.py Adam._init_group: state['exp_avg'], "
        "state['exp_avg_sq'] (zeros_like(p)); AdamW subclasses Adam since "
        "pytorch/pytorch#143710 (torch/optim/adamw.py before that PR)",
    ),
    Optimizer(
        id="adamw-8bit",
        label="AdamW 8-bit (bitsandbytes)",
        full_states=2,
        eight_bit=True,
        source="bitsandbytes/optim/optimizer.py Optimizer2State.init_state: state1/state2 "
        "uint8, absmax1/absmax2 fp32 per 256 elements; min_8bit_size=4096 (Dettmers et al. "
        "2022, arXiv:2110.02861)",
    ),
    Optimizer(
        id="sgd",
        label="SGD (no momentum)",
        full_states=0,
        source="torch/optim/sgd.py: no state when momentum=0",
    ),
    Optimizer(
        id="sgd-momentum",
        label="SGD with momentum",
        full_states=1,
        source="torch/optim/sgd.py: state['momentum_buffer'] (clone of the first gradient)",
    ),
    Optimizer(
        id="adafactor",
        label="Adafactor (factored, no first moment)",
        full_states=0,
        factored=True,
        source="Shazeer & Stern 2018, arXiv:1804.04235, Algorithm 4; torch/optim/_adafactor.py "
        "row_var and col_var for >= 2-D tensors, variance for 1-D",
    ),
)

EIGHT_BIT_BLOCK = 256  # bitsandbytes Optimizer2State blockwise: n // 256 absmax values
EIGHT_BIT_MIN_SIZE = 4096  # bitsandbytes optimizers' default min_8bit_size


# Names this site used before, still accepted (old links, commands and reports) and read as
# the policy they meant. "bf16-mixed" was this site's name for bf16 weights with an fp32
# master; PyTorch Lightning's `precision="bf16-mixed"` means bf16 autocast over fp32
# weights (this site's amp-bf16), so the name was retired for one that cannot be misread.
PRECISION_ALIASES: dict[str, str] = {"bf16-mixed": "bf16-fp32-master"}


def precision_id(policy_id: str) -> str:
    """The current id of `policy_id`: itself, or what a retired name (an alias) meant."""
    return PRECISION_ALIASES.get(policy_id, policy_id)


def get_precision(policy_id: str) -> PrecisionPolicy:
    """The policy called `policy_id` (or a retired alias of it); ValueError naming the
    choices otherwise."""
    policy_id = precision_id(policy_id)
    one_of("precision", policy_id, tuple(p.id for p in PRECISIONS))
    return next(p for p in PRECISIONS if p.id == policy_id)


def get_optimizer(optimizer_id: str) -> Optimizer:
    """The optimizer called `optimizer_id`; ValueError naming the choices otherwise."""
    one_of("optimizer", optimizer_id, tuple(o.id for o in OPTIMIZERS))
    return next(o for o in OPTIMIZERS if o.id == optimizer_id)


def _tensor_state_bytes(shape: tuple[int, ...], opt: Optimizer, state_bytes: int) -> int:
    n = prod(shape)
    if opt.eight_bit:
        if n < EIGHT_BIT_MIN_SIZE:
            return 2 * n * 4  # small tensors keep two fp32 states
        return 2 * (n + ceil(n / EIGHT_BIT_BLOCK) * 4)
    if opt.factored:
        factored = sum(shape[-2:]) * prod(shape[:-2]) if len(shape) >= 2 else n
        return factored * state_bytes
    return opt.full_states * n * state_bytes


def optimizer_state_bytes(
    shapes: Iterable[tuple[tuple[int, ...], int]], opt: Optimizer, state_bytes: int
) -> int:
    """Optimizer state bytes over (shape, count) pairs of trainable tensors.

    AdamW: 2 x n x state_bytes (torch zeros_like states); SGD momentum: 1 x n; SGD: 0;
    Adafactor: (rows + cols) x state_bytes per matrix, n for vectors (Shazeer & Stern 2018);
    8-bit AdamW: 2 x (n + 4 ceil(n / 256)) bytes for tensors of at least 4096 elements,
    2 x 4 x n below (bitsandbytes Optimizer2State). Source per row in OPTIMIZERS.
    """
    return sum(count * _tensor_state_bytes(shape, opt, state_bytes) for shape, count in shapes)


def step_temporary_bytes(
    opt: Optimizer,
    impl: OptimizerImpl,
    *,
    trainable: int,
    largest_tensor: int,
    state_bytes: int,
) -> int:
    """Scratch the optimizer step allocates on top of the states, bytes.

    AdamW runs Adam's code since pytorch/pytorch#143710 (AdamW subclasses Adam with
    decoupled weight decay); before that PR torch/optim/adamw.py held a copy of each
    function below under an `_adamw` name.
    foreach AdamW (torch/optim/adam.py `_multi_tensor_adam`, the default on CUDA):
      `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)` allocates one tensor
      per parameter, the whole group at once: trainable x state_bytes.
    for-loop AdamW (`_single_tensor_adam`): `denom = (exp_avg_sq.sqrt() /
      bias_correction2_sqrt).add_(eps)` one parameter at a time, the sqrt and the
      quotient alive together: 2 x largest_tensor x state_bytes.
    fused AdamW (`_fused_adam`) and bitsandbytes 8-bit: one kernel per tensor list,
      no full-size scratch: 0.
    Adafactor: the update `grad / sqrt(var_estimate)` per tensor, like the for-loop
      variant, or the whole group for foreach (torch/optim/_adafactor.py).
    SGD (momentum or not, weight_decay 0): in-place updates, 0.
    """
    one_of("optimizer_impl", impl, ("foreach", "for-loop", "fused"))
    if opt.eight_bit or impl == "fused" or (opt.full_states < 2 and not opt.factored):
        return 0
    return (trainable if impl == "foreach" else 2 * largest_tensor) * state_bytes
