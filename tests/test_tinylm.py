"""The lessons' model (docs/learn/tinylm.py): its corpus, its batches and the properties
the lessons state about it (tied weights, GPT-2 initialisation, causal outputs)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("tinylm", ROOT / "docs" / "learn" / "tinylm.py")
assert _spec and _spec.loader
tinylm = importlib.util.module_from_spec(_spec)
sys.modules["tinylm"] = tinylm  # its dataclasses look their module up while being defined
_spec.loader.exec_module(tinylm)


@pytest.fixture(scope="module")
def corpus():
    return tinylm.load_corpus()


def test_corpus_is_the_committed_text_character_for_character(corpus) -> None:
    text = (ROOT / "probes/data/corpus/train.txt").read_text(encoding="utf-8")
    assert corpus.decode(corpus.train) == text
    assert list(corpus.vocab) == sorted(set(corpus.vocab))
    assert torch.equal(corpus.encode(text[:100]), corpus.train[:100])


def test_batches_are_windows_and_their_next_characters(corpus) -> None:
    g = torch.Generator().manual_seed(0)
    x, y = tinylm.get_batch(corpus.train, 4, 16, g)
    assert x.shape == y.shape == (4, 16)
    assert torch.equal(x[:, 1:], y[:, :-1])


def test_head_and_embedding_are_one_tensor_counted_once(corpus) -> None:
    model = tinylm.make_model(corpus)
    assert model.head.weight is model.tok.weight
    untied = tinylm.make_model(corpus, tie_weights=False)
    count = sum(p.numel() for p in model.parameters())
    assert sum(p.numel() for p in untied.parameters()) - count == model.tok.weight.numel()
    assert {"tok.weight", "head.weight"} <= set(model.state_dict())


def test_gpt2_initialisation(corpus) -> None:
    model = tinylm.make_model(corpus, seed=1)
    assert model.tok.weight.std().item() == pytest.approx(0.02, rel=0.05)
    scaled = 0.02 / math.sqrt(2 * model.cfg.n_layers)
    assert model.blocks[0].down.weight.std().item() == pytest.approx(scaled, rel=0.05)


def test_outputs_are_causal_and_seeded(corpus) -> None:
    a, b = tinylm.make_model(corpus, seed=3), tinylm.make_model(corpus, seed=3)
    ids = corpus.train[:32][None]
    changed = ids.clone()
    changed[0, 20] = (changed[0, 20] + 1) % len(corpus.vocab)
    with torch.no_grad():
        out, out2 = a(ids), a(changed)
        assert torch.equal(out, b(ids))
    assert torch.equal(out[0, :20], out2[0, :20]) and not torch.equal(out[0, 20:], out2[0, 20:])


def test_a_sequence_longer_than_the_context_is_refused(corpus) -> None:
    model = tinylm.make_model(corpus)
    with pytest.raises(ValueError, match="at most 64"):
        model(corpus.train[:65][None])
