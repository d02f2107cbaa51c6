"""Precision policies and optimizers as data: bytes per element and per tensor."""

import pytest

from calculators.training.states import (
    OPTIMIZERS,
    PRECISIONS,
    get_optimizer,
    get_precision,
    optimizer_state_bytes,
    step_temporary_bytes,
)
from calculators.training.step import TrainingQuery


def test_tables_have_sources_and_unique_ids():
    for table in (PRECISIONS, OPTIMIZERS):
        ids = [row.id for row in table]
        assert len(ids) == len(set(ids))
        assert all(row.source.strip() for row in table)


def test_mixed_precision_adam_is_16_bytes_a_parameter():
    # ZeRO paper section 3.1: 2 (fp16 params) + 2 (grads) + K = 12 (fp32 copy, m, v).
    p, adam = get_precision("bf16-fp32-master"), get_optimizer("adamw")
    k = p.master_bytes + adam.full_states * p.state_bytes
    assert (p.param_bytes, p.grad_bytes, k) == (2, 2, 12)


def test_adafactor_factors_matrices_not_vectors():
    ada = get_optimizer("adafactor")
    assert optimizer_state_bytes([((1024, 4096), 3), ((4096,), 2)], ada, 4) == 4 * (
        3 * (1024 + 4096) + 2 * 4096
    )


def test_eight_bit_small_tensors_stay_32_bit():
    opt = get_optimizer("adamw-8bit")
    assert optimizer_state_bytes([((4095,), 1)], opt, 4) == 8 * 4095
    assert optimizer_state_bytes([((4096,), 1)], opt, 4) == 2 * (4096 + 4 * 16)


def test_step_scratch_by_implementation():
    adam = get_optimizer("adamw")
    kw = {"trainable": 1000, "largest_tensor": 300, "state_bytes": 4}
    assert step_temporary_bytes(adam, "foreach", **kw) == 4000
    assert step_temporary_bytes(adam, "for-loop", **kw) == 2400
    assert step_temporary_bytes(adam, "fused", **kw) == 0
    assert step_temporary_bytes(get_optimizer("sgd-momentum"), "foreach", **kw) == 0
    with pytest.raises(ValueError, match="optimizer_impl must be one of"):
        step_temporary_bytes(adam, "vectorised", **kw)  # type: ignore[arg-type]


def test_unknown_ids_name_the_field():
    with pytest.raises(ValueError, match=r"precision must be one of .*got 'tf32'"):
        get_precision("tf32")
    with pytest.raises(ValueError, match=r"optimizer must be one of .*got 'lamb'"):
        get_optimizer("lamb")


def test_the_retired_name_bf16_mixed_is_read_as_bf16_fp32_master() -> None:
    # PyTorch Lightning's precision="bf16-mixed" is autocast over fp32 weights
    # (lightning/fabric/plugins/precision/amp.py); this site's old bf16-mixed was bf16
    # weights with an fp32 master, so the id changed and the old one stays an alias
    assert get_precision("bf16-mixed") == get_precision("bf16-fp32-master")
    assert get_precision("bf16-mixed").master_bytes == 4
    assert get_precision("amp-bf16").param_bytes == 4  # Lightning's meaning of the name
    q = TrainingQuery(precision="bf16-mixed")
    assert q.precision == "bf16-fp32-master"


def test_an_old_link_or_command_with_bf16_mixed_still_works() -> None:
    from calculators.cli import main
    from calculators.web import compute, form_html

    inputs = {"model": "llama-3.2-1b", "micro_batch": "2", "seq_len": "512"}
    old = compute("training", {**inputs, "precision": "bf16-mixed"})
    new = compute("training", {**inputs, "precision": "bf16-fp32-master"})
    assert old == new and old["total_bytes"] > 0
    form = form_html("training", {"precision": "bf16-mixed"}, form_id="t")
    assert 'value="bf16-fp32-master" selected' in form
    assert main(["training", "--model", "llama-3.2-1b", "--precision", "bf16-mixed"]) == 0


def test_adamw_states_are_sourced_to_adam_py_since_the_refactor() -> None:
    # pytorch/pytorch#143710 made AdamW a subclass of Adam: the states are created in
    # Adam._init_group (torch/optim/adam.py); adamw.py held its own copy before that PR
    source = get_optimizer("adamw").source
    assert source.startswith("torch/optim/adam.py Adam._init_group: state['exp_avg']")
    assert "pytorch/pytorch#143710" in source
    assert "torch/optim/adamw.py before that PR" in source
    doc = step_temporary_bytes.__doc__ or ""
    assert "`_multi_tensor_adam`" in doc and "_multi_tensor_adamw" not in doc
    assert "pytorch/pytorch#143710" in doc
