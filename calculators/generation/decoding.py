"""Generating text one token at a time from the lessons' small model
(`calculators.generation.tinylm_forward`), through a library's sampling stages
(`calculators.generation.sampling`), with a seeded draw.

Each step: the model's logits for the next token, given every token so far (prompt and
generated); the distribution after the library's stages, with every token so far as the
repetition penalty's previous ids; one draw from it; the drawn token appended. The draw
inverts the cumulative distribution: with u uniform in [0, 1), the token is the first, in
id order, whose running sum of probabilities exceeds u, so a token of probability p is
drawn for a share p of the values of u.

u comes from Python's `random.Random(seed)` (the Mersenne Twister, the same stream in
CPython and Pyodide), one number per step, so the same seed, prompt and settings give the
same text. The libraries draw otherwise: transformers with `torch.multinomial` on torch's
generator, llama.cpp with `std::discrete_distribution` on a `std::mt19937`
(`llama_sample_dist` in src/llama-sampling.cpp): the same seed there gives another text.
The model's arithmetic is float64 in the standard library only; `math.exp` and `math.erf`
come from the platform's C library, so two platforms could differ in the last bit of a
probability, which moves a draw only when u falls within that bit of a boundary.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from calculators.errors import InputError, shown
from calculators.generation.sampling import (
    NextTokenLogits,
    SamplingResult,
    SamplingSettings,
    sampling_distribution,
)
from calculators.generation.tinylm_forward import Decoder, TinyLM

__all__ = ["MAX_SEED", "GeneratedToken", "Generation", "drawn_token", "generate_tokens"]

MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class GeneratedToken:
    """One step: the token drawn, the uniform number that drew it, its probability in the
    distribution sampled from and in the model's own, and that distribution's size."""

    token: int
    u: float
    probability: float
    model_probability: float
    kept: int
    entropy_bits: float


@dataclass(frozen=True)
class Generation:
    """The prompt's ids, every step, and the first step's stages in full."""

    prompt: tuple[int, ...]
    steps: tuple[GeneratedToken, ...]
    first: SamplingResult

    @property
    def ids(self) -> tuple[int, ...]:
        return self.prompt + tuple(s.token for s in self.steps)


def drawn_token(probabilities: Sequence[float], u: float) -> int:
    """The first token id whose running sum of probabilities exceeds u (0 <= u < 1),
    skipping tokens of probability 0; the last token with probability above 0 when
    rounding leaves the total just under u."""
    running = 0.0
    last = -1
    for token, p in enumerate(probabilities):
        if p > 0:
            running += p
            last = token
            if u < running:
                return token
    if last < 0:
        raise ValueError("probabilities: no token has a probability above 0")
    return last


def generate_tokens(
    model: TinyLM, prompt: Sequence[int], tokens: int, settings: SamplingSettings, seed: int
) -> Generation:
    """`tokens` tokens after `prompt`, each drawn from the library's distribution
    (`sampling_distribution`) with u from random.Random(seed)."""
    if not prompt:
        raise InputError("prompt", "prompt must hold at least one character")
    room = model.context - len(prompt)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= room:
        raise InputError(
            "tokens",
            f"tokens must be from 1 to {room} for a prompt of {len(prompt)} characters "
            f"(the model sees {model.context} at once), got {shown(tokens)}",
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InputError(
            "seed", f"seed must be a whole number from 0 to {MAX_SEED}, got {shown(seed)}"
        )
    rng = random.Random(seed)
    decoder = Decoder(model)
    logits: list[float] = []
    for token in prompt:
        logits = decoder.feed(token)
    ids = list(prompt)
    steps = []
    first = None
    for step in range(tokens):
        result = sampling_distribution(
            NextTokenLogits(logits=tuple(logits), previous=tuple(ids)), settings
        )
        first = first or result
        u = rng.random()
        token = drawn_token(result.probabilities, u)
        steps.append(
            GeneratedToken(
                token=token,
                u=u,
                probability=result.probabilities[token],
                model_probability=result.stages[0].probabilities[token],
                kept=result.kept,
                entropy_bits=result.entropy_bits,
            )
        )
        ids.append(token)
        if step < tokens - 1:  # the last token drawn needs no logits after it
            logits = decoder.feed(token)
    assert first is not None
    return Generation(prompt=tuple(prompt), steps=tuple(steps), first=first)
