"""The lessons' small model (docs/learn/tinylm.py) run forward in pure Python, one token at a
time, from the weights docs/learn/export_tinylm.py writes: no torch, so it runs in Pyodide.

The model is a character-level GPT (token and position embeddings, pre-norm transformer
blocks, a final LayerNorm, an output layer tied to the token embedding). For the token at
position t, with x its vector of width d:

  x    = E[token] + P[t]
  per block:  x = x + W_o · attention(LN1(x)) + b_o
              x = x + W_down · gelu(W_up · LN2(x) + b_up) + b_down
  logits = E · LN(x)                              (tied head: no bias)

  LN(x)_i      = (x_i - mean(x)) / sqrt(var(x) + eps) · g_i + b_i   (var: biased, eps 1e-5)
  gelu(u)      = u/2 · (1 + erf(u / sqrt 2))      (torch's F.gelu default, the exact form)
  attention:   q, k, v = W_qkv · LN1(x) + b_qkv, split in three; each of the H heads takes
               its d/H slice and attends to positions 0..t (causal):
               a_j = softmax_j(q · k_j / sqrt(d/H)),  out = Σ_j a_j v_j

which is what torch computes in tinylm.Block (nn.LayerNorm, nn.Linear,
F.scaled_dot_product_attention with is_causal=True and its default scale, F.gelu).
Each step keeps the keys and values of the positions before it (a KV cache), so a step
costs one position's work rather than the whole sequence's.

Arithmetic is float64 on the file's float32 weights (each read back as its exact float32
value), so the logits equal torch's float64 forward on the same weights to rounding
(tests/test_tinylm_forward.py) and torch's float32 forward to float32's precision.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from operator import mul
from typing import Any

from calculators.errors import InputError, shown

__all__ = ["FORMAT", "Decoder", "TinyLM", "load_tinylm", "sequence_logits", "tinylm_from_json"]

FORMAT = "kernodeck-tinylm-1"
# Bounds on what a weights file may declare, far above the series' model (vocabulary 93,
# context 64, width 64, 4 heads, 2 layers) and low enough that a step stays fast in Pyodide.
MAX_VOCAB = 512
MAX_CONTEXT = 256
MAX_WIDTH = 256
MAX_HEADS = 16
MAX_LAYERS = 8
# The file: the series' export is about 1.3 MB; this bounds what a page hands over.
MAX_FILE_BYTES = 16 * 2**20

Vector = list[float]
Matrix = list[list[float]]


def _float32(value: float) -> float:
    """The float32 nearest `value`, as a Python float (exact)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


@dataclass(frozen=True)
class Block:
    norm1: tuple[Vector, Vector]  # (weight, bias)
    qkv: tuple[Matrix, Vector]  # (weight rows: 3d x d, bias)
    proj: tuple[Matrix, Vector]
    norm2: tuple[Vector, Vector]
    up: tuple[Matrix, Vector]
    down: tuple[Matrix, Vector]


@dataclass(frozen=True)
class TinyLM:
    """The model's weights and sizes, and its vocabulary (token id i is vocab[i])."""

    vocab: str
    context: int
    d_model: int
    n_heads: int
    eps: float
    tok: Matrix  # vocab x d; also the output layer (tied)
    pos: Matrix  # context x d
    blocks: tuple[Block, ...]
    norm: tuple[Vector, Vector]
    training: dict[str, Any]

    def encode(self, text: str, field: str = "prompt") -> list[int]:
        """Token ids of `text`, one per character; InputError naming the first character
        the model does not know."""
        index = {c: i for i, c in enumerate(self.vocab)}
        for c in text:
            if c not in index:
                raise InputError(
                    field,
                    f"{field} holds {shown(c)}, which is not among the model's "
                    f"{len(self.vocab)} characters",
                )
        return [index[c] for c in text]


def _bad(message: str) -> InputError:
    return InputError("weights", f"weights: {message}")


def _vector(data: Any, name: str, size: int) -> Vector:
    if not isinstance(data, list) or len(data) != size:
        raise _bad(f"{name} must be a list of {size} numbers")
    out = []
    for v in data:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise _bad(f"{name} holds {shown(v)}, not a finite number")
        out.append(_float32(v))
    return out


def _matrix(data: Any, name: str, rows: int, cols: int) -> Matrix:
    if not isinstance(data, list) or len(data) != rows:
        raise _bad(f"{name} must have {rows} rows of {cols} numbers")
    return [_vector(r, name, cols) for r in data]


def _size(config: dict[str, Any], key: str, most: int) -> int:
    v = config.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= most:
        raise _bad(f"config.{key} must be a whole number from 1 to {most}, got {shown(v)}")
    return v


def tinylm_from_json(data: Any) -> TinyLM:
    """The model from the parsed file; InputError on the field `weights` when the file
    is not one export_tinylm.py writes (format, sizes, shapes, finite numbers)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _bad(f"not a tinylm export (format {FORMAT!r}, from docs/learn/export_tinylm.py)")
    config = data.get("config")
    if not isinstance(config, dict):
        raise _bad("config is missing")
    v = _size(config, "vocab_size", MAX_VOCAB)
    n = _size(config, "context", MAX_CONTEXT)
    d = _size(config, "d_model", MAX_WIDTH)
    h = _size(config, "n_heads", MAX_HEADS)
    layers = _size(config, "n_layers", MAX_LAYERS)
    if d % h:
        raise _bad(f"config.d_model ({d}) must be a multiple of config.n_heads ({h})")
    eps = config.get("layer_norm_eps")
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < 1:
        raise _bad(f"config.layer_norm_eps must be between 0 and 1, got {shown(eps)}")
    vocab = data.get("vocab")
    if not isinstance(vocab, str) or len(vocab) != v or len(set(vocab)) != v:
        raise _bad(f"vocab must be {v} distinct characters, one per token")
    if data.get("tied") != {"head.weight": "tok.weight"}:
        raise _bad("the output layer must be tied to tok.weight")
    t = data.get("tensors")
    if not isinstance(t, dict):
        raise _bad("tensors are missing")

    def linear(name: str, rows: int, cols: int) -> tuple[Matrix, Vector]:
        return _matrix(t.get(f"{name}.weight"), name, rows, cols), _vector(
            t.get(f"{name}.bias"), name, rows
        )

    def norm(name: str) -> tuple[Vector, Vector]:
        return _vector(t.get(f"{name}.weight"), name, d), _vector(t.get(f"{name}.bias"), name, d)

    blocks = tuple(
        Block(
            norm1=norm(f"blocks.{i}.norm1"),
            qkv=linear(f"blocks.{i}.qkv", 3 * d, d),
            proj=linear(f"blocks.{i}.proj", d, d),
            norm2=norm(f"blocks.{i}.norm2"),
            up=linear(f"blocks.{i}.up", 4 * d, d),
            down=linear(f"blocks.{i}.down", d, 4 * d),
        )
        for i in range(layers)
    )
    training = data.get("training")
    return TinyLM(
        vocab=vocab,
        context=n,
        d_model=d,
        n_heads=h,
        eps=float(eps),
        tok=_matrix(t.get("tok.weight"), "tok", v, d),
        pos=_matrix(t.get("pos.weight"), "pos", n, d),
        blocks=blocks,
        norm=norm("norm"),
        training=training if isinstance(training, dict) else {},
    )


def load_tinylm(path: str) -> TinyLM:
    """The model from a file export_tinylm.py wrote. A file read before (the same bytes)
    is not parsed again: the page's worker hands the file over on every recompute."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InputError("weights", f"weights: cannot read {shown(path)}: {e.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise _bad(f"the file is larger than {MAX_FILE_BYTES // 2**20} MiB")
    digest = hashlib.sha256(raw).digest()
    if digest not in _LOADED:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise _bad(f"not JSON ({e})") from None
        model = tinylm_from_json(data)
        if len(_LOADED) >= 2:
            _LOADED.pop(next(iter(_LOADED)))  # the oldest
        _LOADED[digest] = model
    return _LOADED[digest]


# Models parsed, by the SHA-256 of their file's bytes (at most two kept).
_LOADED: dict[bytes, TinyLM] = {}


# ---- the layers -------------------------------------------------------------------------


def _dot(a: Vector, b: Vector) -> float:
    """Σ a_i b_i, correctly rounded (`math.fsum`): the same bits on every Python version
    (the built-in `sum` of floats changed algorithm in 3.12) and in Pyodide."""
    return math.fsum(map(mul, a, b))


def _linear(x: Vector, layer: tuple[Matrix, Vector]) -> Vector:
    """W x + b, W stored as torch stores it: one row per output."""
    weight, bias = layer
    return [_dot(row, x) + b for row, b in zip(weight, bias, strict=True)]


def _layer_norm(x: Vector, layer: tuple[Vector, Vector], eps: float) -> Vector:
    weight, bias = layer
    mean = math.fsum(x) / len(x)
    centred = [v - mean for v in x]
    scale = 1.0 / math.sqrt(math.fsum(c * c for c in centred) / len(x) + eps)
    return [c * scale * w + b for c, w, b in zip(centred, weight, bias, strict=True)]


_SQRT_HALF = math.sqrt(0.5)


def _gelu(x: Vector) -> Vector:
    return [0.5 * u * (1.0 + math.erf(u * _SQRT_HALF)) for u in x]


class Decoder:
    """The model's state after the tokens fed so far: the keys and values of every layer
    at every position. `feed(token)` returns the logits for the token after it."""

    def __init__(self, model: TinyLM) -> None:
        self.model = model
        self.keys: list[list[Vector]] = [[] for _ in model.blocks]
        self.values: list[list[Vector]] = [[] for _ in model.blocks]

    @property
    def length(self) -> int:
        return len(self.keys[0]) if self.keys else 0

    def feed(self, token: int) -> Vector:
        m = self.model
        t = self.length
        if t >= m.context:
            raise InputError("tokens", f"the model sees at most {m.context} characters at once")
        if not 0 <= token < len(m.vocab):
            raise InputError("prompt", f"token id {token} is not in the vocabulary")
        d, h = m.d_model, m.n_heads
        size = d // h
        scale = 1.0 / math.sqrt(size)
        x = [a + b for a, b in zip(m.tok[token], m.pos[t], strict=True)]
        for layer, block in enumerate(m.blocks):
            qkv = _linear(_layer_norm(x, block.norm1, m.eps), block.qkv)
            q, k, v = qkv[:d], qkv[d : 2 * d], qkv[2 * d :]
            keys, values = self.keys[layer], self.values[layer]
            keys.append(k)
            values.append(v)
            attended: Vector = []
            for head in range(h):
                lo, hi = head * size, (head + 1) * size
                qh = q[lo:hi]
                scores = [_dot(qh, kj[lo:hi]) * scale for kj in keys]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = math.fsum(weights)
                out = [0.0] * size
                for w, vj in zip(weights, values, strict=True):
                    a = w / total
                    out = [o + a * u for o, u in zip(out, vj[lo:hi], strict=True)]
                attended += out
            x = [a + b for a, b in zip(x, _linear(attended, block.proj), strict=True)]
            hidden = _gelu(_linear(_layer_norm(x, block.norm2, m.eps), block.up))
            x = [a + b for a, b in zip(x, _linear(hidden, block.down), strict=True)]
        final = _layer_norm(x, m.norm, m.eps)
        return [_dot(row, final) for row in m.tok]  # tied head, no bias


def sequence_logits(model: TinyLM, ids: Sequence[int]) -> list[Vector]:
    """The logits at every position of `ids` (what tinylm.TinyGPT returns for them)."""
    decoder = Decoder(model)
    return [decoder.feed(i) for i in ids]
