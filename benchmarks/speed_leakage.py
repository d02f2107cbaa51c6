"""Speed and recall of the leakage audit (`calculators.evaluation.leakage`) on generated
text: 20,000 train and 5,000 eval texts of about 60 words (the issue's target: under 20 s
in CPython on 2 cores), and 5,000 x 1,000 (the size the page audits in the browser).

The texts are drawn, with a fixed seed and the standard library only, from a vocabulary
of 20,000 made-up words with Zipf-like frequencies (weight 1/rank), so that common words
repeat as in real text while two unrelated texts share almost no 5-word shingle. Planted
in the eval set: exact copies of train texts (case and spacing changed) and near copies,
made by random word edits (substitute, insert or delete one word) until the Jaccard
similarity of 5-shingles comes within 0.025 of a target of 0.95, 0.9 or 0.85 (edits that
overshoot are not kept); each planted pair's true Jaccard is then computed exactly.
Recall is over the planted pairs whose true Jaccard is at or above the threshold:
found / planted. Precision needs no measurement: every
reported pair is confirmed by its exact Jaccard, so it is 1.0 by construction (a reported
pair that is not planted is still a real pair at or above the threshold).

Run: `.venv/bin/python -m benchmarks.speed_leakage`. Medians of a few runs (shared,
noisy machines).
"""

from __future__ import annotations

import json
import random
import time
from datetime import date, timedelta
from pathlib import Path
from statistics import median

from calculators.evaluation.leakage import AuditSettings, Item, audit
from calculators.evaluation.text import jaccard, normalise, shingles, words

SEED = 20240613
VOCABULARY = 20_000
WORDS_PER_TEXT = (55, 65)
LEVELS = (0.95, 0.9, 0.85)
REPEATS = 3
# How close to its target level a near copy's similarity is brought, and how hard.
TOLERANCE = 0.025
MAX_EDITS = 400


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = sorted({"".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(VOCABULARY)})
    rng.shuffle(vocab)
    weights = [1 / rank for rank in range(1, len(vocab) + 1)]
    return vocab, weights


def _text(rng: random.Random, vocab: list[str], cum: list[float]) -> list[str]:
    return rng.choices(vocab, cum_weights=cum, k=rng.randint(*WORDS_PER_TEXT))


def _similarity(a: list[str], b: list[str], k: int) -> float:
    return jaccard(shingles(a, k), shingles(b, k))


def _near_copy(
    rng: random.Random, source: list[str], target: float, vocab: list[str], k: int
) -> list[str]:
    """Random one-word edits (substitute, insert, delete) until the similarity to
    `source` is within TOLERANCE above `target`; an edit that would take it more than
    TOLERANCE below is not kept (one edit in the middle of a 60-word text already costs up
    to k shingles), and after MAX_EDITS tries the copy is kept as it is."""
    out = list(source)
    for _ in range(MAX_EDITS):
        if _similarity(source, out, k) <= target + TOLERANCE:
            break
        trial = list(out)
        op = rng.randrange(3)
        i = rng.randrange(len(trial))
        if op == 0:
            trial[i] = rng.choice(vocab)
        elif op == 1:
            trial.insert(i, rng.choice(vocab))
        elif len(trial) > 10:
            del trial[i]
        if _similarity(source, trial, k) >= target - TOLERANCE:
            out = trial
    return out


def _shout(text: list[str], rng: random.Random) -> str:
    """The same words, with case and spacing changed: an exact duplicate after
    normalisation."""
    return "  ".join(w.upper() if rng.random() < 0.3 else w for w in text) + " \t"


def make_sets(
    train_size: int, eval_size: int, *, near: int, exact: int, k: int = 5, seed: int = SEED
) -> tuple[list[Item], list[Item], list[tuple[str, str, float]]]:
    """Train and eval items, and the planted pairs (train id, eval id, true Jaccard)."""
    rng = random.Random(seed)
    vocab, weights = _vocabulary(rng)
    cum = []
    total = 0.0
    for w in weights:
        total += w
        cum.append(total)
    train_words = [_text(rng, vocab, cum) for _ in range(train_size)]
    train = [Item(id=f"t{i}", text=" ".join(t), line=i + 1) for i, t in enumerate(train_words)]
    planted: list[tuple[str, str, float]] = []
    eval_texts: list[str] = []
    sources = rng.sample(range(train_size), near + exact)
    for n, s in enumerate(sources[:near]):
        copy = _near_copy(rng, train_words[s], LEVELS[n % len(LEVELS)], vocab, k)
        planted.append((f"t{s}", f"e{len(eval_texts)}", _similarity(train_words[s], copy, k)))
        eval_texts.append(" ".join(copy))
    for s in sources[near:]:
        planted.append((f"t{s}", f"e{len(eval_texts)}", 1.0))
        eval_texts.append(_shout(train_words[s], rng))
    while len(eval_texts) < eval_size:
        eval_texts.append(" ".join(_text(rng, vocab, cum)))
    eval_items = [Item(id=f"e{i}", text=t, line=i + 1) for i, t in enumerate(eval_texts)]
    return train, eval_items, planted


def write_corpus(folder: Path, *, train: int, eval: int, seed: int = SEED) -> tuple[Path, Path]:
    """The generated sets as the files a reader would audit (train.jsonl, eval.jsonl with
    `id`, `text`, `user` and `date`), with a tenth of the eval set planted as near and
    exact copies: the page's benchmark and the browser test upload these. Users differ
    between the files and every eval date follows the last train date, so the group and
    time checks run in full and flag nothing."""
    train_items, eval_items, _ = make_sets(
        train, eval, near=eval // 10 - eval // 50, exact=eval // 50, seed=seed
    )
    paths = []
    for name, items in (("train.jsonl", train_items), ("eval.jsonl", eval_items)):
        path = folder / name
        side = name.removesuffix(".jsonl")
        start = date(2023, 1, 1) if side == "train" else date(2025, 1, 1)
        lines = (
            json.dumps(
                {
                    "id": i.id,
                    "text": i.text,
                    "user": f"{side}-user-{n % 500}",
                    "date": (start + timedelta(days=n % 700)).isoformat(),
                }
            )
            for n, i in enumerate(items)
        )
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def measure(train_size: int, eval_size: int, near: int, exact: int) -> None:
    settings = AuditSettings()
    train, eval_items, planted = make_sets(train_size, eval_size, near=near, exact=exact)
    times = []
    report = None
    for _ in range(REPEATS):
        start = time.perf_counter()
        report = audit(train, eval_items, settings)
        times.append(time.perf_counter() - start)
    assert report is not None
    found = {(p.train, p.eval) for p in report.near.pairs}
    due = [(t, e) for t, e, j in planted if j >= settings.threshold]
    hit = sum((t, e) in found for t, e in due)
    words_total = sum(len(words(normalise(i.text))) for i in (*train, *eval_items))
    print(f"## {train_size:,} train x {eval_size:,} eval ({words_total:,} words)")
    print(
        f"- median wall time of {REPEATS} runs: {median(times):.2f} s (runs: "
        + ", ".join(f"{t:.2f}" for t in times)
        + ")"
    )
    print(
        f"- LSH: {report.bands} bands x {report.rows} rows; "
        f"{report.confirmations:,} candidate pairs confirmed by exact Jaccard"
    )
    print(
        f"- planted pairs: {len(planted):,}; at or above the threshold "
        f"{settings.threshold}: {len(due):,}; found: {hit:,}; recall {hit / len(due):.4f}"
    )
    for low, high in ((0.8, 0.85), (0.85, 0.9), (0.9, 0.95), (0.95, 1.0), (1.0, 1.01)):
        band = [(t, e) for t, e, j in planted if low <= j < high]
        if band:
            got = sum(p in found for p in band)
            print(
                f"  - true Jaccard in [{low}, {min(high, 1.0)}{']' if high > 1 else ')'}: "
                f"{got}/{len(band)} found"
            )
    below = sum(j < settings.threshold for _, _, j in planted)
    print(f"- planted pairs below the threshold (edits overshot): {below}")
    print(
        f"- near pairs reported: {report.near.pairs_total:,} (precision 1.0 by "
        "construction: each is confirmed by its exact Jaccard)"
    )
    print(
        f"- exact pairs: {report.exact.pairs_total:,}; n-gram flagged eval items: "
        f"{len(report.ngram.matches):,}"
    )


def main() -> None:
    measure(20_000, 5_000, near=1_500, exact=300)
    measure(5_000, 1_000, near=300, exact=60)


if __name__ == "__main__":
    main()
