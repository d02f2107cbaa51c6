"""A tiny training script for the experiment-tracking guide: logistic regression by SGD
on a CSV file, standard library only, so that the guide's three runs take seconds on the
CPU that builds the site.

    python experiment_tracking_train.py --config config.json --seed 0 \
        --out out/RUN --metrics metrics/RUN.json

Reads `data/train.csv` and `data/eval.csv` (features, then a 0/1 label), writes one
checkpoint per epoch into --out (the weights as JSON) and, at the end, the eval loss
(mean binary cross-entropy, nats) and accuracy into --metrics. It has no resume: a run
that is stopped is run again from the start.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random


def read(path: str) -> list[tuple[list[float], int]]:
    with open(path, newline="") as f:
        return [([float(x) for x in row[:-1]], int(row[-1])) for row in csv.reader(f)]


def predict(w: list[float], x: list[float]) -> float:
    z = w[-1] + sum(wi * xi for wi, xi in zip(w, x, strict=False))
    return 1 / (1 + math.exp(-max(min(z, 30.0), -30.0)))


def evaluate(w: list[float], rows: list[tuple[list[float], int]]) -> tuple[float, float]:
    """Mean binary cross-entropy (nats) and accuracy at threshold 0.5."""
    loss = correct = 0.0
    for x, y in rows:
        p = min(max(predict(w, x), 1e-12), 1 - 1e-12)
        loss -= y * math.log(p) + (1 - y) * math.log(1 - p)
        correct += (p >= 0.5) == bool(y)
    return loss / len(rows), correct / len(rows)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--metrics", required=True)
    args = p.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    train, held_out = read("data/train.csv"), read("data/eval.csv")
    rng = random.Random(args.seed)
    w = [0.0] * (len(train[0][0]) + 1)  # weights, then the bias
    os.makedirs(args.out, exist_ok=True)
    for epoch in range(1, cfg["epochs"] + 1):
        rng.shuffle(train)
        for x, y in train:
            g = predict(w, x) - y  # d(cross-entropy)/dz
            for i, xi in enumerate(x):
                w[i] -= cfg["lr"] * (g * xi + cfg["l2"] * w[i])
            w[-1] -= cfg["lr"] * g
        with open(os.path.join(args.out, f"epoch-{epoch:03d}.json"), "w") as f:
            json.dump({"epoch": epoch, "weights": w}, f)
    loss, accuracy = evaluate(w, held_out)
    os.makedirs(os.path.dirname(args.metrics) or ".", exist_ok=True)
    with open(args.metrics, "w") as f:
        json.dump({"eval_loss": loss, "eval_accuracy": accuracy, "epochs": cfg["epochs"]}, f)


if __name__ == "__main__":
    main()
