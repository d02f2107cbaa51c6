"""The tokens a quant-compare run scores, and their chunks.

A `.txt` file is read as bytes, one token per byte (vocabulary 256), the convention of the
probes' corpus (`probes/data/corpus/README.md`): the tiny configs have no tokenizer. Any
other file holds token ids: a `.json` list of integers, or integers separated by
whitespace; each id must be below the model's vocabulary size.

The tokens are cut into non-overlapping chunks of `ctx` tokens, as llama.cpp's
`llama-perplexity --kl-divergence` does (tools/perplexity/perplexity.cpp, kl_divergence,
commit 050fc7f3): the tail shorter than one chunk is not scored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

BYTE_VOCAB = 256
MAX_FILE_BYTES = 64 * 2**20  # a token file larger than this is refused before it is read
MAX_TOKENS = 2_000_000  # the most tokens a run may score (--max-tokens bound)
MIN_POSITIONS = 100  # llama.cpp prints no statistics on fewer scored positions


@dataclass(frozen=True, kw_only=True)
class Tokens:
    """Token ids read from a file.

    ids:    the tokens, in order (capped at `--max-tokens`).
    scheme: "bytes" (a .txt file, vocabulary 256) or "ids" (token ids).
    vocab:  the vocabulary the ids are checked against.
    total:  tokens in the file before the cap.
    """

    ids: tuple[int, ...]
    scheme: str
    vocab: int
    total: int


def _ids_from_text(path: str, text: str) -> list[int]:
    stripped = text.strip()
    if path.endswith(".json"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise ValueError(f"--tokens {path!r} is not valid JSON: {e}") from None
        if not isinstance(data, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in data
        ):
            raise ValueError(f"--tokens {path!r} must hold a JSON list of integer token ids")
        return data
    out = []
    for i, word in enumerate(stripped.split()):
        try:
            out.append(int(word))
        except ValueError:
            shown = word if len(word) <= 20 else word[:20] + "..."
            raise ValueError(
                f"--tokens {path!r}: item {i} is {shown!r}, not an integer token id "
                "(a .txt file is read as bytes; other files hold token ids)"
            ) from None
    return out


def read_tokens(path: str, *, vocab: int, max_tokens: int) -> Tokens:
    """The tokens of `path`: bytes of a .txt file, else ids below `vocab`; ValueError naming
    --tokens, the file and the bound otherwise."""
    if not os.path.isfile(path):
        raise ValueError(f"--tokens {path!r}: no such file")
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise ValueError(
            f"--tokens {path!r} has {size:,} bytes, more than the {MAX_FILE_BYTES:,} read"
        )
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".txt"):
        ids, scheme, vocab = list(raw), "bytes", BYTE_VOCAB
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"--tokens {path!r} is not UTF-8 text") from None
        ids, scheme = _ids_from_text(path, text), "ids"
        for i, v in enumerate(ids):
            if not 0 <= v < vocab:
                raise ValueError(
                    f"--tokens {path!r}: token {i} is {v}, outside the vocabulary 0..{vocab - 1}"
                )
    if not ids:
        raise ValueError(f"--tokens {path!r} holds no tokens")
    return Tokens(ids=tuple(ids[:max_tokens]), scheme=scheme, vocab=vocab, total=len(ids))


def chunk_count(n_tokens: int, ctx: int) -> int:
    """Whole chunks of `ctx` tokens in `n_tokens` (the tail is dropped)."""
    return n_tokens // ctx


def scored_positions(ctx: int) -> int:
    """Positions scored per chunk: ctx - 1 - ctx // 2, the second half of the chunk, each
    given at least ctx // 2 tokens of context (perplexity.cpp, `first = n_ctx/2`)."""
    return ctx - 1 - ctx // 2


def check_counts(path: str, n_tokens: int, ctx: int) -> int:
    """Chunks to score; ValueError naming --tokens and the bound when there are too few."""
    chunks = chunk_count(n_tokens, ctx)
    positions = chunks * scored_positions(ctx)
    if positions < MIN_POSITIONS:
        raise ValueError(
            f"--tokens {path!r}: {n_tokens:,} tokens make {chunks} chunk(s) of --ctx {ctx}, "
            f"{positions} scored positions; at least {MIN_POSITIONS} are needed (llama.cpp "
            "gives no statistics on fewer): give more tokens or a smaller --ctx"
        )
    return chunks
