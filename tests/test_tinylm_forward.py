"""The pure-Python forward of the lessons' model (calculators/generation/tinylm_forward.py)
against torch's (docs/learn/tinylm.py), on the committed export docs/learn/tinylm-weights.json,
and that export against the script that writes it (docs/learn/export_tinylm.py).

The torch parts skip where torch is absent (Pyodide); the file's own checks run everywhere.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import sys
from pathlib import Path

import pytest

from calculators.errors import InputError
from calculators.generation.tinylm_forward import (
    Decoder,
    load_tinylm,
    sequence_logits,
    tinylm_from_json,
)

ROOT = Path(__file__).resolve().parents[1]
LEARN = ROOT / "docs" / "learn"
WEIGHTS = LEARN / "tinylm-weights.json"
# Float64 arithmetic on both sides, on the same float32 weights: only the order of the
# additions differs, which moves a logit by a few units in the 15th digit.
TOLERANCE = 1e-6


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(WEIGHTS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def model():
    return load_tinylm(str(WEIGHTS))


@pytest.fixture(scope="module")
def torch_side(data):
    """torch, tinylm.py and a TinyGPT holding the file's weights."""
    torch = pytest.importorskip("torch")
    tinylm = _module("tinylm", LEARN / "tinylm.py")
    c = data["config"]
    cfg = tinylm.Config(
        vocab_size=c["vocab_size"],
        context=c["context"],
        d_model=c["d_model"],
        n_heads=c["n_heads"],
        n_layers=c["n_layers"],
    )
    net = tinylm.TinyGPT(cfg)
    state = {k: torch.tensor(v, dtype=torch.float32) for k, v in data["tensors"].items()}
    state["head.weight"] = state["tok.weight"]
    net.load_state_dict(state)
    return torch, tinylm, net.eval()


def test_file_is_small_and_every_number_a_float32(data, model) -> None:
    assert WEIGHTS.stat().st_size < 2.5 * 2**20
    row = data["tensors"]["blocks.0.qkv.weight"][0]
    for v in row:
        assert struct.unpack("<f", struct.pack("<f", v))[0] == pytest.approx(v, rel=1e-7)
    count = sum(
        len(r) * len(r[0]) if isinstance(r[0], list) else len(r) for r in data["tensors"].values()
    )
    assert count == 110_144  # tinylm's parameter count (head tied: counted once)
    assert len(model.vocab) == data["config"]["vocab_size"]


def test_the_python_forward_equals_torch_to_1e6(model, torch_side) -> None:
    torch, _, net = torch_side
    text = "The KV cache grows with the context, one token at a time."
    ids = model.encode(text)
    ours = sequence_logits(model, ids)
    with torch.no_grad():
        theirs64 = net.double()(torch.tensor([ids]))[0].tolist()
        theirs32 = net.float()(torch.tensor([ids]))[0].tolist()
    worst64 = max(
        abs(a - b) for r, s in zip(ours, theirs64, strict=True) for a, b in zip(r, s, strict=True)
    )
    worst32 = max(
        abs(a - b) for r, s in zip(ours, theirs32, strict=True) for a, b in zip(r, s, strict=True)
    )
    assert worst64 <= TOLERANCE, f"float64 torch differs by {worst64}"
    # torch in float32 rounds every step to 24 bits: logits of a few units agree to ~1e-5
    assert worst32 <= 1e-4, f"float32 torch differs by {worst32}"


def test_full_context_and_the_refusal_past_it(model, torch_side) -> None:
    torch, _, net = torch_side
    ids = [i % len(model.vocab) for i in range(7, 7 + model.context)]
    ours = sequence_logits(model, ids)
    with torch.no_grad():
        theirs = net.double()(torch.tensor([ids]))[0, -1].tolist()
    assert max(abs(a - b) for a, b in zip(ours[-1], theirs, strict=True)) <= TOLERANCE
    decoder = Decoder(model)
    for i in ids:
        decoder.feed(i)
    with pytest.raises(InputError, match="at most 64"):
        decoder.feed(0)


def test_committed_file_matches_the_script(data) -> None:
    pytest.importorskip("torch")
    export = _module("export_tinylm", LEARN / "export_tinylm.py")
    tinylm = sys.modules["tinylm"]
    corpus = tinylm.load_corpus()
    cfg = tinylm.Config(vocab_size=len(corpus.vocab))
    assert data["format"] == export.FORMAT
    assert data["vocab"] == corpus.vocab
    assert data["config"] == {
        "vocab_size": cfg.vocab_size,
        "context": cfg.context,
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "n_layers": cfg.n_layers,
        "layer_norm_eps": 1e-5,
    }
    t = data["training"]
    assert (t["seed"], t["steps"], t["batch"], t["lr"]) == (
        export.SEED,
        export.STEPS,
        export.BATCH,
        export.LR,
    )
    assert (t["validation_share"], t["eval_every"], t["patience"]) == (
        export.VALIDATION_SHARE,
        export.EVAL_EVERY,
        export.PATIENCE,
    )
    # trained: well below a fresh model's ln(vocabulary) on held-out text
    assert t["eval_loss"] < math.log(cfg.vocab_size) - 1.5
    # stopped early: the weights are the best validation measurement's, training went on
    # for PATIENCE measurements past it and stopped before its last step (issue 25: the
    # model trained to the end learned its text by heart, 0.72 train vs 2.21 held out)
    curve = [dict(zip(t["curve_columns"], row, strict=True)) for row in t["curve"]]
    best = min(curve, key=lambda r: r["validation_loss"])
    assert (best["step"], best["validation_loss"]) == (t["best_step"], t["validation_loss"])
    assert curve[-1]["step"] == t["stopped_at_step"] < t["steps"]
    assert len([r for r in curve if r["step"] > best["step"]]) == export.PATIENCE
    assert [r["step"] for r in curve] == list(
        range(export.EVAL_EVERY, curve[-1]["step"] + 1, export.EVAL_EVERY)
    )


def test_a_short_export_round_trips(tmp_path, torch_side) -> None:
    """The script end to end with a few steps: its file loads, and the Python forward of
    the file equals the trained torch model it came from."""
    torch, _, _ = torch_side
    export = sys.modules.get("export_tinylm") or _module(
        "export_tinylm", LEARN / "export_tinylm.py"
    )
    net, corpus, training = export.train(steps=3)
    out = tmp_path / "w.json"
    out.write_text(export.weights_json(net, corpus, training), encoding="utf-8")
    ours = load_tinylm(str(out))
    ids = ours.encode("min-p")
    with torch.no_grad():
        theirs = net.double()(torch.tensor([ids]))[0].tolist()
    got = sequence_logits(ours, ids)
    assert (
        max(abs(a - b) for r, s in zip(got, theirs, strict=True) for a, b in zip(r, s, strict=True))
        <= TOLERANCE
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="other"), "not a tinylm export"),
        (lambda d: d["config"].update(n_heads=5), "multiple of"),
        (lambda d: d["config"].update(vocab_size=10_000), "vocab_size"),
        (lambda d: d["tensors"]["norm.bias"].pop(), "norm"),
        (lambda d: d["tensors"]["norm.bias"].__setitem__(0, "x"), "not a finite number"),
        (lambda d: d.update(vocab=d["vocab"][:-1] + "a"), "distinct"),
    ],
)
def test_a_bad_file_is_refused_naming_the_weights(data, change, message) -> None:
    broken = json.loads(json.dumps(data))
    change(broken)
    with pytest.raises(InputError, match=message) as e:
        tinylm_from_json(broken)
    assert e.value.field == "weights"


def test_unknown_characters_are_refused(model) -> None:
    with pytest.raises(InputError, match="not among"):
        model.encode("café")
