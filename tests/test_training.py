"""Training-step memory: published model-state figures, phases, sharding, fit, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.memory.gpus import get_gpu
from calculators.model.params import parameter_counts
from calculators.model.presets import load_preset
from calculators.model.spec import ModelSpec
from calculators.training.step import (
    PHASES,
    TrainingQuery,
    max_micro_batch,
    training_fit,
    training_memory,
)
from tests.strategies import specs


def preset(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(name), name=name)


def model_states(r) -> int:
    b = r.per_gpu_bytes
    return b["parameters"] + b["gradients"] + b["optimizer_states"]


# ZeRO paper (Rajbhandari et al., arXiv:1910.02054), Table 1: per-device model-state
# memory of a 7.5B model on 64 GPUs with mixed-precision Adam (K = 12), in GB:
# baseline 120, P_os 31.4, P_os+g 16.6, P_os+g+p 1.9.
@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_table_1(stage, gb):
    q = TrainingQuery(precision="bf16-fp32-master", optimizer="adamw", zero_stage=stage, gpus=64)
    r = training_memory(None, q, params=7_500_000_000)
    assert round(model_states(r) / 1e9, 1) == gb


def test_zero_paper_gpt2_xl_needs_24_gb():
    # ZeRO paper section 3.1: a 1.5B-parameter GPT-2 needs at least 24 GB for its model
    # states under mixed-precision Adam (16 bytes a parameter).
    r = training_memory(None, TrainingQuery(precision="bf16-fp32-master"), params=1_500_000_000)
    assert model_states(r) == 24 * 10**9


def test_contract_keys_are_integers():
    r = training_memory(preset("llama-3.2-1b"), TrainingQuery(micro_batch=2, seq_len=512))
    assert set(r.per_gpu_bytes) == {
        "parameters",
        "gradients",
        "optimizer_states",
        "activations",
        "peak",
    }
    assert all(isinstance(v, int) and v > 0 for v in r.per_gpu_bytes.values())
    assert tuple(p.id for p in r.phases) == PHASES
    assert r.peak_bytes == max(p.bytes for p in r.phases) == r.phase(r.peak_phase)


def test_full_fine_tune_states_by_policy():
    spec = preset("llama-3.1-8b")
    n = 8_030_261_248  # meta-llama/Llama-3.1-8B safetensors metadata
    per_param = {
        # policy: (parameters, gradients, optimizer states incl. master) bytes per parameter
        "fp32": (4, 4, 8),
        "amp-bf16": (4, 4, 8),
        "bf16-fp32-master": (2, 2, 12),
        "bf16": (2, 2, 4),
    }
    for policy, (p, g, o) in per_param.items():
        r = training_memory(spec, TrainingQuery(precision=policy, seq_len=128))
        b = r.per_gpu_bytes
        assert (b["parameters"], b["gradients"], b["optimizer_states"]) == (n * p, n * g, n * o)


def test_optimizers_state_bytes():
    n = 1_000_000
    got = {
        opt: training_memory(
            None, TrainingQuery(precision="fp32", optimizer=opt), params=n
        ).per_gpu_bytes["optimizer_states"]
        for opt in ("adamw", "sgd", "sgd-momentum", "adamw-8bit")
    }
    assert got["adamw"] == 8 * n
    assert got["sgd"] == 0
    assert got["sgd-momentum"] == 4 * n
    # bitsandbytes: two uint8 states plus an fp32 absmax per 256 elements for each.
    assert got["adamw-8bit"] == 2 * (n + 4 * -(-n // 256))
    # 8-bit Adam keeps about a quarter of 32-bit Adam's state (Dettmers et al. 2022, 75%).
    assert 0.25 < got["adamw-8bit"] / got["adamw"] < 0.26


def test_adafactor_is_factored():
    spec = preset("gpt2")
    r = training_memory(spec, TrainingQuery(precision="fp32", optimizer="adafactor", seq_len=64))
    # A rows x cols matrix keeps rows + cols fp32 values (Shazeer & Stern 2018): far below
    # one full state, above zero.
    n = parameter_counts(spec).total
    assert 0 < r.per_gpu_bytes["optimizer_states"] < 0.05 * 4 * n


def test_foreach_scratch_and_fused():
    spec = preset("qwen2.5-0.5b")
    steps = {
        impl: training_memory(
            spec, TrainingQuery(precision="fp32", optimizer_impl=impl, seq_len=64)
        )
        .line("step_temporaries")
        .bytes
        for impl in ("foreach", "for-loop", "fused")
    }
    n = parameter_counts(spec).total
    assert steps["foreach"] == 4 * n  # torch._foreach_sqrt over all exp_avg_sq
    # sqrt and quotient of the largest tensor, the embedding, alive together
    assert steps["for-loop"] == 2 * 4 * 151_936 * 896
    assert steps["fused"] == 0


def test_korthikanti_equation_1():
    # Korthikanti et al. 2022 (arXiv:2205.05198) eq. 1: a GPT layer in 16-bit with dropout
    # keeps s b h (34 + 5 a s / h) bytes; our terms add only LayerNorm's fp32 mean and rstd.
    spec = preset("gpt2")
    s, b, h, heads = 512, 2, spec.hidden_size, spec.num_heads
    q = TrainingQuery(micro_batch=b, seq_len=s, precision="bf16", attention="eager", dropout=True)
    r = training_memory(spec, q)
    layers = r.line("layer_activations").bytes
    stats = spec.num_layers * 2 * 8 * s * b
    assert layers - stats == spec.num_layers * s * b * h * (34 + 5 * heads * s // h)


def test_korthikanti_checkpointing():
    spec = preset("gpt2")
    s, b, h, layers = 256, 4, spec.hidden_size, spec.num_layers

    def kept(ckpt: str) -> int:
        q = TrainingQuery(
            micro_batch=b,
            seq_len=s,
            precision="bf16",
            attention="eager",
            dropout=True,
            checkpointing=ckpt,
        )
        return training_memory(spec, q).line("layer_activations").bytes

    # Full recomputation keeps each layer's input, 2 s b h (section 4.2).
    assert kept("full") == layers * 2 * s * b * h
    # Selective recomputation drops the 5 a s^2 b attention terms (section 4.3).
    assert kept("none") - kept("selective") == layers * 5 * spec.num_heads * s * s * b


def test_sdpa_keeps_no_scores():
    spec = preset("llama-3.2-1b")
    none = training_memory(spec, TrainingQuery(seq_len=1024, attention="sdpa"))
    selective = training_memory(
        spec, TrainingQuery(seq_len=1024, attention="sdpa", checkpointing="selective")
    )
    eager = training_memory(spec, TrainingQuery(seq_len=1024, attention="eager"))
    assert none.per_gpu_bytes["activations"] == selective.per_gpu_bytes["activations"]
    assert eager.per_gpu_bytes["activations"] > none.per_gpu_bytes["activations"]


def test_logits_are_the_peak_for_a_large_vocabulary():
    # Gemma 2 2B: vocabulary 256,000 against hidden 2,304; the loss's fp32 log-softmax
    # outweighs all 26 layers' saved tensors at full checkpointing, and backward through
    # the loss (two more fp32 tensors of that size) is the step's peak.
    spec = preset("gemma-2-2b")
    r = training_memory(
        spec, TrainingQuery(seq_len=4096, checkpointing="full", zero_stage=3, gpus=8)
    )
    assert r.line("logits").bytes == 4096 * 256_000 * 4
    assert r.line("logits").bytes > r.line("layer_activations").bytes
    assert r.peak_phase == "backward_peak"
    assert r.phase("backward_peak") - r.phase("after_forward") >= 2 * r.line("logits").bytes


def test_amp_keeps_16_bit_weight_copies():
    spec = preset("llama-3.2-1b")
    r = training_memory(spec, TrainingQuery(precision="amp-bf16", seq_len=128))
    # Every matmul weight: all 2-D tensors but the embedding lookup, plus the tied head.
    n = parameter_counts(spec)
    assert r.line("autocast_weight_copies").bytes == 2 * (n.total - n.by_line["norms"])
    r32 = training_memory(spec, TrainingQuery(precision="fp32", seq_len=128))
    assert r32.line("autocast_weight_copies").bytes == 0


def test_lora_llama2_7b_matches_peft():
    # peft print_trainable_parameters() for meta-llama/Llama-2-7b-hf with
    # LoraConfig(r=8, target_modules=["q_proj", "v_proj"]):
    # "trainable params: 4,194,304 || all params: 6,742,609,920".
    spec = preset("llama-2-7b")
    q = TrainingQuery(lora_rank=8, lora_targets=("q_proj", "v_proj"), seq_len=128)
    r = training_memory(spec, q)
    assert r.trainable_parameters == 4_194_304
    assert r.total_parameters + r.trainable_parameters == 6_742_609_920
    # Adapters train in bf16 with an fp32 master and AdamW states: 12 bytes each.
    assert r.per_gpu_bytes["optimizer_states"] == 12 * 4_194_304
    assert r.per_gpu_bytes["gradients"] == 2 * 4_194_304


def test_qlora_base_is_four_bit():
    spec = preset("llama-3.1-8b")
    bf16 = training_memory(spec, TrainingQuery(lora_rank=16, seq_len=256))
    nf4 = training_memory(spec, TrainingQuery(lora_rank=16, seq_len=256, base_format="nf4-dq"))
    assert nf4.per_gpu_bytes["parameters"] < 0.4 * bf16.per_gpu_bytes["parameters"]
    assert nf4.trainable_parameters == bf16.trainable_parameters


def test_ddp_buckets_and_bucket_view():
    spec = preset("qwen2.5-0.5b")
    ddp = training_memory(spec, TrainingQuery(gpus=8, seq_len=128))
    view = training_memory(spec, TrainingQuery(gpus=8, seq_len=128, ddp_bucket_view=True))
    assert ddp.line("ddp_buckets").bytes == ddp.per_gpu_bytes["gradients"]
    assert view.line("ddp_buckets").bytes == 0
    single = training_memory(spec, TrainingQuery(gpus=1, seq_len=128))
    assert single.line("ddp_buckets").bytes == 0


def test_zero3_gathers_units():
    spec = preset("llama-3.1-8b")
    r = training_memory(spec, TrainingQuery(zero_stage=3, gpus=8, seq_len=128))
    # The root unit (embedding 128256 x 4096, lm_head, final norm) stays gathered in bf16
    # from forward to backward; one decoder layer is gathered and one prefetched.
    assert r.line("gathered_root").bytes == 2 * (2 * 128_256 * 4096 + 4096)
    # q and o 4096 x 4096, k and v 1024 x 4096, MLP 3 x 4096 x 14336, two norms
    layer = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    assert r.line("gathered_parameters").bytes == 2 * 2 * layer
    # After forward the root is still gathered; the layers are resharded.
    acts = r.per_gpu_bytes["activations"]
    assert r.phase("after_forward") == r.phase("after_load") + acts + r.line("gathered_root").bytes


def test_fit_against_card_and_largest_micro_batch():
    spec = preset("qwen2.5-0.5b")
    q = TrainingQuery(seq_len=2048, precision="bf16-fp32-master")
    fit = training_fit(spec, q, gpu="l4")
    assert fit.visible_bytes == get_gpu("l4").visible_bytes
    assert fit.total_bytes == fit.memory.peak_bytes + sum(r.bytes for r in fit.reserves)
    largest = max_micro_batch(spec, q, gpu="l4")
    assert largest >= 1
    assert training_fit(spec, _mb(q, largest), gpu="l4").fits
    assert not training_fit(spec, _mb(q, largest + 1), gpu="l4").fits


def test_largest_micro_batch_is_zero_when_states_do_not_fit():
    spec = preset("llama-3.1-8b")
    assert max_micro_batch(spec, TrainingQuery(seq_len=512), gpu="rtx-4090") == 0


def _mb(q: TrainingQuery, mb: int) -> TrainingQuery:
    from dataclasses import replace

    return replace(q, micro_batch=mb)


# --- properties --------------------------------------------------------------------


QUERY_SETTINGS = settings(max_examples=40, deadline=None)
policies = st.sampled_from(["fp32", "amp-bf16", "amp-fp16", "bf16-fp32-master", "bf16"])
optimizers = st.sampled_from(["adamw", "adamw-8bit", "sgd", "sgd-momentum"])


@QUERY_SETTINGS
@given(
    params=st.integers(1, 10**12),
    gpus=st.integers(1, 1024),
    policy=policies,
    opt=optimizers,
)
def test_higher_zero_stage_never_raises_model_states(params, gpus, policy, opt):
    states = [
        model_states(
            training_memory(
                None,
                TrainingQuery(precision=policy, optimizer=opt, zero_stage=z, gpus=gpus),
                params=params,
            )
        )
        for z in range(4)
    ]
    assert states == sorted(states, reverse=True)


@QUERY_SETTINGS
@given(params=st.integers(1, 10**12), gpus=st.integers(1, 512), stage=st.integers(1, 3))
def test_more_gpus_never_raise_sharded_states(params, gpus, stage):
    def per_gpu(n: int) -> int:
        q = TrainingQuery(zero_stage=stage, gpus=n)
        return model_states(training_memory(None, q, params=params))

    assert per_gpu(gpus + 1) <= per_gpu(gpus)


@QUERY_SETTINGS
@given(
    spec=specs(),
    mb=st.integers(1, 4),
    s=st.integers(1, 256),
    attention=st.sampled_from(["sdpa", "eager"]),
    policy=policies,
)
def test_checkpointing_never_raises_activations(spec, mb, s, attention, policy):
    acts = [
        training_memory(
            spec,
            TrainingQuery(
                micro_batch=mb, seq_len=s, attention=attention, precision=policy, checkpointing=c
            ),
        ).per_gpu_bytes["activations"]
        for c in ("none", "selective", "full")
    ]
    assert acts == sorted(acts, reverse=True)


@QUERY_SETTINGS
@given(spec=specs(), rank=st.integers(1, 8))
def test_lora_trains_fewer_parameters_than_full(spec, rank):
    r = training_memory(spec, TrainingQuery(lora_rank=rank, lora_targets=("all-linear",)))
    # rank r on an out x in matrix trains r (in + out) < in x out when r < min/2.
    small = min(min(t) for t in _wrapped_shapes(spec))
    if 2 * rank < small:
        assert r.trainable_parameters < r.total_parameters
    assert r.trainable_parameters > 0


def _wrapped_shapes(spec: ModelSpec):
    from calculators.training.lora import wrapped_tensors

    return [t.shape for t in wrapped_tensors(spec, ("all-linear",))]


@QUERY_SETTINGS
@given(spec=specs(), mb=st.integers(1, 8), s=st.integers(1, 128), policy=policies)
def test_activations_are_affine_in_micro_batch(spec, mb, s, policy):
    # Per-sequence tensors scale with the micro-batch; RoPE tables, window masks and
    # autocast's weight copies do not: equal steps of micro-batch add equal bytes.
    def acts(b: int) -> int:
        q = TrainingQuery(micro_batch=b, seq_len=s, precision=policy)
        return training_memory(spec, q).per_gpu_bytes["activations"]

    step = acts(2 * mb) - acts(mb)
    assert step > 0
    assert acts(3 * mb) - acts(2 * mb) == step


@QUERY_SETTINGS
@given(spec=specs(), mb=st.integers(1, 4), s=st.integers(1, 128), opt=optimizers)
def test_peak_is_the_largest_phase_and_covers_states(spec, mb, s, opt):
    r = training_memory(spec, TrainingQuery(micro_batch=mb, seq_len=s, optimizer=opt))
    assert r.peak_bytes == max(p.bytes for p in r.phases)
    assert r.phase("after_forward") >= r.phase("after_load")
    assert r.phase("optimizer_step") >= r.phase("after_load") + r.per_gpu_bytes["gradients"]


# --- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"micro_batch": 0}, "micro_batch must be a positive integer, got 0"),
        ({"seq_len": -1}, "seq_len must be a positive integer, got -1"),
        ({"precision": "fp8"}, "precision must be one of .*got 'fp8'"),
        ({"optimizer": "lion"}, "optimizer must be one of .*got 'lion'"),
        ({"optimizer_impl": "magic"}, "optimizer_impl must be one of"),
        ({"optimizer": "adafactor", "optimizer_impl": "fused"}, "fused is not available"),
        ({"checkpointing": "some"}, "checkpointing must be one of"),
        ({"attention": "flash3"}, "attention must be one of"),
        ({"capacity_factor": 0.5}, "capacity_factor must be a number in \\[1, 64\\]"),
        ({"lora_rank": 0}, "lora_rank must be a positive integer, got 0"),
        ({"base_format": "nf4-dq"}, "base_format is the frozen base under LoRA"),
        ({"lora_rank": 4, "base_format": "int3"}, "int3"),
        ({"zero_stage": 4}, "zero_stage must be one of 0, 1, 2, 3; got 4"),
        ({"gpus": 0}, "gpus must be a positive integer, got 0"),
        ({"prefetch": -1}, "prefetch must be a non-negative integer, got -1"),
        ({"reserves": {"nope": 1}}, "reserve must be one of"),
        ({"lora_targets": ()}, "lora_targets must be a non-empty tuple"),
    ],
)
def test_bad_query(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainingQuery(**kwargs)


def test_bad_calls():
    spec = preset("gpt2")
    with pytest.raises(ValueError, match="give exactly one of spec and params"):
        training_memory(spec, TrainingQuery(), params=10)
    with pytest.raises(ValueError, match="params must be a positive integer, got 0"):
        training_memory(None, TrainingQuery(), params=0)
    with pytest.raises(ValueError, match="adafactor needs the model's tensor shapes"):
        training_memory(None, TrainingQuery(optimizer="adafactor"), params=10)
    with pytest.raises(ValueError, match="lora_rank needs the model's layer shapes"):
        training_memory(None, TrainingQuery(lora_rank=4), params=10)
    with pytest.raises(ValueError, match="'c_attn' matches no linear layer of gpt2"):
        training_memory(spec, TrainingQuery(lora_rank=4, lora_targets=("c_attn",)))
    with pytest.raises(ValueError, match="visible_bytes must be a positive integer"):
        training_fit(spec, TrainingQuery(), gpu=None, visible_bytes=0)


def test_prefetch_is_capped_at_the_layers_that_exist():
    # Llama 3.1 8B has 32 layers: one gathered plus at most 31 prefetched. A prefetch of
    # 500 kept adding gathered layers before (400+ GiB for an 8B model).
    spec = preset("llama-3.1-8b")
    at = {p: training_memory(spec, TrainingQuery(zero_stage=3, gpus=8, prefetch=p, seq_len=128))
          for p in (31, 500)}  # fmt: skip
    layer = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    assert at[500].line("gathered_parameters").bytes == 32 * 2 * layer
    assert at[500].peak_bytes == at[31].peak_bytes
    assert "capped" in at[500].line("gathered_parameters").basis
