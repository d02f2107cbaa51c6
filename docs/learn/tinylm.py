"""The lessons' small language model: a character-level GPT, its corpus and its batches.

Every lesson of "Learn PyTorch" trains or inspects this one model, so that the last lesson
samples from a model the reader watched being built. It is deliberately small (about
a hundred thousand parameters) so that a lesson trains it in seconds on a laptop CPU, and
it is a real decoder: token and position embeddings, pre-norm transformer blocks with
causal self-attention and an MLP, a final norm and an output layer tied to the token
embedding (Press and Wolf 2017). The initialisation is GPT-2's: normal with standard
deviation 0.02, and the projections that write into the residual stream scaled by
1/sqrt(2 x layers) (Radford et al. 2019, section 2.3).

The corpus is this project's own writing (probes/data/corpus: the Markdown of some of
the site's guides, frozen), read as characters. Nothing is downloaded. The site serves a
copy in corpus/ next to this file, which a downloaded copy reads; in a clone it is read
where it lies.

Lesson notebooks print the parts they use with `inspect.getsource`, so nothing here is
hidden from the reader; the file itself is served next to the lessons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

_HERE = Path(__file__).resolve().parent
# the site's copy beside this file (a download), else the repository's (a clone)
CORPUS = (
    _HERE / "corpus"
    if (_HERE / "corpus" / "train.txt").exists()
    else _HERE.parents[1] / "probes" / "data" / "corpus"
)


@dataclass(frozen=True)
class Config:
    """The model's sizes. vocab_size comes from the corpus (`load_corpus`)."""

    vocab_size: int
    context: int = 64  # characters the model sees at once
    d_model: int = 64  # width of every token's vector
    n_heads: int = 4
    n_layers: int = 2
    tie_weights: bool = True  # output layer shares the token embedding's tensor


@dataclass(frozen=True)
class Corpus:
    """The text as token ids: one id per character, in `vocab` order."""

    vocab: str
    train: torch.Tensor  # int64, 1-D
    eval: torch.Tensor

    def encode(self, text: str) -> torch.Tensor:
        index = {c: i for i, c in enumerate(self.vocab)}
        return torch.tensor([index[c] for c in text], dtype=torch.long)

    def decode(self, ids: torch.Tensor | list[int]) -> str:
        return "".join(self.vocab[int(i)] for i in ids)


def load_corpus() -> Corpus:
    """train.txt and eval.txt as character ids; the vocabulary is every character that
    appears in either file, sorted, so that the same files always give the same ids."""
    train = (CORPUS / "train.txt").read_text(encoding="utf-8")
    held_out = (CORPUS / "eval.txt").read_text(encoding="utf-8")
    vocab = "".join(sorted(set(train) | set(held_out)))
    corpus = Corpus(vocab=vocab, train=torch.empty(0), eval=torch.empty(0))
    return Corpus(vocab=vocab, train=corpus.encode(train), eval=corpus.encode(held_out))


def get_batch(
    ids: torch.Tensor, batch: int, context: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch` random windows of `context` characters (inputs) and the same windows
    shifted by one (targets: the next character at every position)."""
    starts = torch.randint(len(ids) - context - 1, (batch,), generator=generator)
    x = torch.stack([ids[s : s + context] for s in starts.tolist()])
    y = torch.stack([ids[s + 1 : s + 1 + context] for s in starts.tolist()])
    return x, y


class Block(nn.Module):
    """One transformer block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)  # writes into the residual stream
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.up = nn.Linear(cfg.d_model, 4 * cfg.d_model)
        self.down = nn.Linear(4 * cfg.d_model, cfg.d_model)  # writes into the residual stream

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=2)
        # (b, t, d) -> (b, heads, t, d / heads): each head attends on its own slice
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyGPT(nn.Module):
    """Character-level GPT: logits for the next character at every position."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.context, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.head.weight = self.tok.weight  # one tensor, used at both ends
        self.apply(self._init)
        for block in self.blocks:  # GPT-2: residual writers scaled by 1/sqrt(2 x layers)
            for lin in (block.proj, block.down):
                nn.init.normal_(lin.weight, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        if t > self.cfg.context:
            raise ValueError(f"ids: {t} positions, the model sees at most {self.cfg.context}")
        x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def make_model(corpus: Corpus, seed: int = 0, **sizes: int | bool) -> TinyGPT:
    """A fresh model for `corpus`, its weights drawn from `seed`."""
    torch.manual_seed(seed)
    return TinyGPT(Config(vocab_size=len(corpus.vocab), **sizes))
