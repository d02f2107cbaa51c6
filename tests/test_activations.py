"""Activation workspace of one prefill: each part by hand from the public configs."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.memory.activations import ACTIVATION_BYTES, Workspace, inference_workspace
from calculators.model.presets import load_preset
from calculators.model.spec import LayerSpec, ModelSpec, MoESpec


def _preset(preset_id: str) -> ModelSpec:
    return ModelSpec.from_hf_config(load_preset(preset_id), name=preset_id)


# huggingface.co/meta-llama/Llama-3.1-8B config.json: hidden_size h = 4096, 32 query heads
# H, 8 KV heads K, head_dim d = 4096 / 32 = 128, intermediate_size I = 14336,
# vocab_size V = 128256.
LLAMA = _preset("llama-3.1-8b")
# huggingface.co/mistralai/Mixtral-8x7B-v0.1: h 4096, H 32, K 8, d 128, 8 local experts,
# 2 per token, expert intermediate 14336, vocab 32000.
MIXTRAL = _preset("mixtral-8x7b")
# huggingface.co/deepseek-ai/DeepSeek-V3: h 7168, 128 heads, qk_nope 128, qk_rope 64,
# v_head_dim 128, dense intermediate 18432, 256 routed experts (8 per token) of 2048,
# 1 shared expert of 2048, vocab 129280.
DSV3 = _preset("deepseek-v3")

# Llama-3.1-8B, context 1024, batch 1, T = 1024 tokens, a = 2 bytes:
LLAMA_RESIDUAL = 2 * 1024 * 4096 * 2  # 2 x T x h x a = 16,777,216
LLAMA_ATTENTION = 1024 * (2 * 32 + 2 * 8) * 128 * 2  # T x (2H + 2K) x d x a = 20,971,520
LLAMA_MLP = 3 * 1024 * 14336 * 2  # 3 x T x I x a = 88,080,384
LLAMA_LOGITS = 1 * 128256 * 6  # B x V x (a + 4) = 769,536
LLAMA_SCORES = 32 * 1024 * 1024 * 6  # H x T x L x (a + 4) = 201,326,592


def test_activation_bytes():
    assert ACTIVATION_BYTES == 2


def test_llama_sdpa_by_hand():
    ws = inference_workspace(LLAMA, context=1024, batch=1)
    assert ws == Workspace(
        step_tokens=1024,
        residual=LLAMA_RESIDUAL,
        attention=LLAMA_ATTENTION,
        mlp=LLAMA_MLP,
        scores=0,
        logits=LLAMA_LOGITS,
    )
    assert (LLAMA_RESIDUAL, LLAMA_ATTENTION, LLAMA_MLP, LLAMA_LOGITS) == (
        16_777_216,
        20_971_520,
        88_080_384,
        769_536,
    )
    # residual + max(attention, mlp) + scores + logits: the MLP is the larger here.
    assert ws.total == 16_777_216 + 88_080_384 + 0 + 769_536 == 105_627_136


def test_llama_eager_adds_scores():
    sdpa = inference_workspace(LLAMA, context=1024, batch=1)
    eager = inference_workspace(LLAMA, context=1024, batch=1, attention="eager")
    assert eager.scores == LLAMA_SCORES == 201_326_592
    assert eager.total == sdpa.total + 201_326_592 == 306_953_728
    assert (eager.residual, eager.attention, eager.mlp, eager.logits) == (
        sdpa.residual,
        sdpa.attention,
        sdpa.mlp,
        sdpa.logits,
    )


def test_llama_batch_multiplies_step_tokens():
    # batch 4 x context 1024: T = 4096 tokens, logits for 4 last positions.
    ws = inference_workspace(LLAMA, context=1024, batch=4)
    assert ws.step_tokens == 4096
    assert ws.residual == 4 * LLAMA_RESIDUAL
    assert ws.attention == 4 * LLAMA_ATTENTION
    assert ws.mlp == 4 * LLAMA_MLP
    assert ws.logits == 4 * LLAMA_LOGITS == 3_078_144
    # eager scores per sequence H x L x L: 4 x 201,326,592
    eager = inference_workspace(LLAMA, context=1024, batch=4, attention="eager")
    assert eager.scores == 32 * 4096 * 1024 * 6 == 4 * LLAMA_SCORES


def test_prefill_chunk_caps_step_tokens():
    # vLLM max_num_batched_tokens 256: T = 256 whatever batch x context.
    ws = inference_workspace(LLAMA, context=1024, batch=4, prefill_chunk=256)
    assert ws == Workspace(
        step_tokens=256,
        residual=2 * 256 * 4096 * 2,  # 4,194,304
        attention=256 * 80 * 128 * 2,  # 5,242,880
        mlp=3 * 256 * 14336 * 2,  # 22,020,096
        scores=0,
        logits=4 * 128256 * 6,  # 3,078,144: one last position per sequence
    )
    eager = inference_workspace(LLAMA, context=1024, batch=4, prefill_chunk=256, attention="eager")
    # 256 queries against up to 1024 keys: 32 x 256 x 1024 x 6 = 50,331,648
    assert eager.scores == 50_331_648


def test_prefill_chunk_larger_than_prompt_changes_nothing():
    whole = inference_workspace(LLAMA, context=1024, batch=2)
    chunked = inference_workspace(LLAMA, context=1024, batch=2, prefill_chunk=1_000_000)
    assert chunked == whole
    assert chunked.step_tokens == 2048
    exact = inference_workspace(LLAMA, context=1024, batch=2, prefill_chunk=2048)
    assert exact == whole


def test_mixtral_uses_routed_experts():
    ws = inference_workspace(MIXTRAL, context=1024, batch=1)
    dense = 3 * 1024 * 14336 * 2  # 88,080,384 (one dense MLP of intermediate_size)
    routed = 3 * 1024 * 2 * 14336 * 2  # 3 x T x k x I_e x a = 176,160,768
    router = 1024 * 8 * 4  # T x E x 4 (fp32 router logits) = 32,768
    assert ws.mlp == routed + router == 176_193_536
    assert ws.mlp > dense
    assert ws.attention == 1024 * (64 + 16) * 128 * 2 == 20_971_520
    assert ws.logits == 32000 * 6 == 192_000
    assert ws.total == 2 * 1024 * 4096 * 2 + 176_193_536 + 192_000 == 193_162_752


def test_deepseek_v3_mla_and_shared_expert():
    ws = inference_workspace(DSV3, context=1024, batch=1)
    # MLA prefill: T x H x (2 x (128 + 64) + 2 x 128) x a = 1024 x 128 x 640 x 2
    assert ws.attention == 1024 * 128 * (2 * 192 + 2 * 128) * 2 == 167_772_160
    routed = 3 * 1024 * 8 * 2048 * 2  # 100,663,296
    shared = 3 * 1024 * 2048 * 2  # 12,582,912
    router = 1024 * 256 * 4  # 1,048,576
    assert ws.mlp == routed + shared + router == 114_294_784
    assert ws.mlp > 3 * 1024 * 18432 * 2  # the dense first layers' MLP, 113,246,208
    assert ws.residual == 2 * 1024 * 7168 * 2 == 29_360_128
    assert ws.logits == 129280 * 6 == 775_680
    # attention is the larger of the two here
    assert ws.total == 29_360_128 + 167_772_160 + 775_680 == 197_907_968


def _spec(*, moe: MoESpec | None = None, moe_layers: bool = False) -> ModelSpec:
    return ModelSpec(
        name="tiny",
        model_type="llama",
        vocab_size=100,
        hidden_size=64,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        head_dim=16,
        intermediate_size=1000,
        layers=(LayerSpec(attention="full", moe=moe_layers),) * 2,
        tie_word_embeddings=False,
        moe=moe,
    )


def test_moe_never_below_dense_mlp():
    # A MoE spec whose routed experts are smaller than its dense intermediate: the dense
    # MLP (3 x T x 1000 x 2) is kept as the larger.
    moe = MoESpec(n_routed_experts=4, experts_per_token=1, expert_intermediate_size=10)
    ws = inference_workspace(_spec(moe=moe, moe_layers=True), context=10, batch=1)
    assert ws.mlp == 3 * 10 * 1000 * 2 == 60_000


def test_moe_spec_without_moe_layers_is_dense():
    moe = MoESpec(n_routed_experts=8, experts_per_token=8, expert_intermediate_size=5000)
    ws = inference_workspace(_spec(moe=moe, moe_layers=False), context=10, batch=1)
    assert ws.mlp == 3 * 10 * 1000 * 2


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["context", "batch"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8", None])
def test_context_and_batch_errors(field, bad):
    kwargs = {"context": 16, "batch": 1, field: bad}
    with pytest.raises(
        ValueError, match=re.escape(f"{field} must be a positive integer, got {bad!r}")
    ):
        inference_workspace(LLAMA, **kwargs)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "512"])
def test_prefill_chunk_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"prefill_chunk must be a positive integer, got {bad!r}")
    ):
        inference_workspace(LLAMA, context=16, batch=1, prefill_chunk=bad)


@pytest.mark.parametrize("bad", ["flash", "SDPA", "", None])
def test_attention_errors(bad):
    with pytest.raises(
        ValueError, match=re.escape(f"attention must be sdpa or eager; got {bad!r}")
    ):
        inference_workspace(LLAMA, context=16, batch=1, attention=bad)


# --- properties -----------------------------------------------------------------------

PRESETS = st.sampled_from([LLAMA, MIXTRAL, DSV3])
ATTENTION = st.sampled_from(["sdpa", "eager"])
CHUNK = st.one_of(st.none(), st.integers(min_value=1, max_value=4096))


@given(
    spec=PRESETS,
    attention=ATTENTION,
    chunk=CHUNK,
    batch=st.integers(min_value=1, max_value=8),
    c1=st.integers(min_value=1, max_value=8192),
    c2=st.integers(min_value=1, max_value=8192),
)
@settings(max_examples=50, deadline=None)
def test_monotone_in_context(spec, attention, chunk, batch, c1, c2):
    lo, hi = sorted((c1, c2))
    a = inference_workspace(spec, context=lo, batch=batch, prefill_chunk=chunk, attention=attention)
    b = inference_workspace(spec, context=hi, batch=batch, prefill_chunk=chunk, attention=attention)
    assert a.total <= b.total
    for part in ("step_tokens", "residual", "attention", "mlp", "scores", "logits"):
        assert getattr(a, part) <= getattr(b, part)


@given(
    spec=PRESETS,
    attention=ATTENTION,
    chunk=CHUNK,
    context=st.integers(min_value=1, max_value=8192),
    batch=st.integers(min_value=1, max_value=8),
)
@settings(max_examples=50, deadline=None)
def test_parts_non_negative_and_total(spec, attention, chunk, context, batch):
    ws = inference_workspace(
        spec, context=context, batch=batch, prefill_chunk=chunk, attention=attention
    )
    assert ws.step_tokens == (batch * context if chunk is None else min(chunk, batch * context))
    for part in (ws.residual, ws.attention, ws.mlp, ws.logits):
        assert part > 0
    assert ws.scores >= 0
    assert (ws.scores == 0) == (attention == "sdpa")
    assert ws.total == ws.residual + max(ws.attention, ws.mlp) + ws.scores + ws.logits
    # chunking never raises the workspace
    whole = inference_workspace(spec, context=context, batch=batch, attention=attention)
    assert ws.total <= whole.total
