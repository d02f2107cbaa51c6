"""Train the series' small model (tinylm.py) with fixed settings and write its weights as JSON.

The sampling widget (the `generate` calculator, docs/calculators/generate.md) runs this
model in the reader's browser, in pure Python under Pyodide, where there is no torch: it
reads the weights from the file this script writes, `tinylm-weights.json`, next to it.

    python docs/learn/export_tinylm.py            # the committed file (about a minute on 2 cores)
    python docs/learn/export_tinylm.py --steps 20 --out /tmp/w.json   # a quick trial

Training is deterministic on one machine: the weights are drawn from `SEED`, the batches
from a generator seeded with `SEED`, and AdamW runs at most `STEPS` steps at a learning
rate that warms up over `WARMUP` steps and decays along a cosine to a tenth of `LR`.
(Another CPU, thread count or torch version may round differently and give other,
equally good weights.)

Early stopping. The corpus is small (about 50,000 characters) and the model learns it
by heart if trained long enough: its training loss keeps falling while its loss on text
it has not seen turns up. So the last tenth of train.txt is held back as a validation
split; every `EVAL_EVERY` steps the model's loss on the whole of it is measured, the best
weights so far are kept, and training stops once `PATIENCE` measurements in a row have
not improved on the best. The file holds the best weights, the curve of training and
validation losses, and, measured once at the end, the loss on eval.txt (other guides of
the site, never used to choose anything): the figure to quote for the model.

The file holds the model's config, its vocabulary (one character per token id), how it
was trained (settings, final loss, torch version) and every tensor of its state_dict as
nested lists of numbers, rows first, each written as the shortest decimal that reads back
as the same float32. The output layer is tied to the token embedding (one tensor), so
`head.weight` is not written twice: `tied` says to read it from `tok.weight`.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import struct
import sys
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # tinylm.py lives next to this script
import tinylm  # noqa: E402

FORMAT = "kernodeck-tinylm-1"
OUT = HERE / "tinylm-weights.json"
SEED = 0
STEPS = 1500
BATCH = 32  # windows per step
LR = 1e-2
WARMUP = 50
FINAL_LR_FRACTION = 0.1
VALIDATION_SHARE = 0.1  # the last tenth of train.txt: the split that decides when to stop
EVAL_EVERY = 50  # steps between two validation measurements
PATIENCE = 4  # measurements without a new best before training stops


def lr_factor(step: int, steps: int) -> float:
    """The learning rate at `step` (0-based) as a fraction of LR: linear warmup over
    WARMUP steps, then a cosine from 1 down to FINAL_LR_FRACTION at the last step."""
    if step < WARMUP:
        return (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, steps - WARMUP - 1)
    return FINAL_LR_FRACTION + (1 - FINAL_LR_FRACTION) * 0.5 * (1 + math.cos(math.pi * progress))


def split_loss(model: tinylm.TinyGPT, ids: torch.Tensor) -> float:
    """Mean cross-entropy (nats per character) over the whole of `ids`, cut into
    consecutive windows of the model's context (the last partial window left out), in
    eval mode: every character of the split counted once, no sampling noise."""
    context = model.cfg.context
    windows = (len(ids) - 1) // context
    x = ids[: windows * context].view(windows, context)
    y = ids[1 : windows * context + 1].view(windows, context)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
    model.train(was_training)
    return loss


def train(steps: int = STEPS, seed: int = SEED) -> tuple[tinylm.TinyGPT, tinylm.Corpus, dict]:
    """The model at its lowest validation loss within `steps` AdamW steps (module
    docstring), with the curve that chose it and its loss on the held-out eval.txt."""
    corpus = tinylm.load_corpus()
    cut = round(len(corpus.train) * (1 - VALIDATION_SHARE))
    fit, validation = corpus.train[:cut], corpus.train[cut:]
    model = tinylm.make_model(corpus, seed=seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, steps))
    generator = torch.Generator().manual_seed(seed)
    curve: list[list[float]] = []
    best_loss, best_step, best_state, since_best = math.inf, 0, None, 0
    recent: list[float] = []
    for step in range(1, steps + 1):
        x, y = tinylm.get_batch(fit, BATCH, model.cfg.context, generator)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        recent.append(loss.item())
        if step % EVAL_EVERY and step != steps:
            continue
        measured = split_loss(model, validation)
        # the training loss as the batches since the last measurement saw it
        curve.append([step, round(sum(recent) / len(recent), 4), round(measured, 4)])
        recent = []
        if measured < best_loss:
            best_loss, best_step, since_best = measured, step, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            since_best += 1
            if since_best >= PATIENCE:
                break
    assert best_state is not None  # at least one measurement: the last step's
    model.load_state_dict(best_state)
    model.eval()
    training = {
        "seed": seed,
        "steps": steps,
        "batch": BATCH,
        "optimizer": "AdamW (torch defaults)",
        "lr": LR,
        "warmup_steps": WARMUP,
        "final_lr_fraction": FINAL_LR_FRACTION,
        "validation_share": VALIDATION_SHARE,
        "eval_every": EVAL_EVERY,
        "patience": PATIENCE,
        "stopped_at_step": curve[-1][0],
        "best_step": best_step,
        "curve_columns": ["step", "train_loss", "validation_loss"],
        "curve": curve,
        "train_loss": round(split_loss(model, fit), 4),
        "validation_loss": round(best_loss, 4),
        "eval_loss": round(split_loss(model, corpus.eval), 4),
        "torch": torch.__version__.split("+")[0],
    }
    return model, corpus, training


def float32_text(value: float) -> str:
    """The shortest decimal that reads back (rounded to float32) as `value`, a float32."""
    packed = struct.pack("<f", value)
    for digits in range(1, 10):  # 9 significant digits always round-trip a float32
        text = f"{value:.{digits}g}"
        if struct.pack("<f", float(text)) == packed:
            return text
    raise AssertionError(f"no 9-digit decimal reads back as {value!r}")


def _numbers(tensor: torch.Tensor) -> Any:
    """A tensor as nested lists of decimal texts (rows first), float32 values."""
    if tensor.dim() == 1:
        return [float32_text(v) for v in tensor.tolist()]
    return [_numbers(row) for row in tensor]


def weights_json(model: tinylm.TinyGPT, corpus: tinylm.Corpus, training: dict) -> str:
    """The file's text: config, vocabulary, training settings and the tensors."""
    cfg = model.cfg
    state = model.state_dict()
    tied = cfg.tie_weights
    tensors = {
        name: _numbers(t.detach().to(torch.float32))
        for name, t in state.items()
        if not (tied and name == "head.weight")
    }
    header = {
        "format": FORMAT,
        "config": {
            "vocab_size": cfg.vocab_size,
            "context": cfg.context,
            "d_model": cfg.d_model,
            "n_heads": cfg.n_heads,
            "n_layers": cfg.n_layers,
            "layer_norm_eps": model.norm.eps,
        },
        "tied": {"head.weight": "tok.weight"} if tied else {},
        "vocab": corpus.vocab,
        "training": training,
        "source": "docs/learn/export_tinylm.py (model: docs/learn/tinylm.py)",
    }
    # One tensor row per line: the file diffs row by row and stays readable.
    lines = [json.dumps(header, ensure_ascii=True)[:-1] + ', "tensors": {']
    names = list(tensors)
    for n, name in enumerate(names):
        rows = tensors[name]
        if rows and isinstance(rows[0], list):
            body = ",\n".join("[" + ",".join(r) + "]" for r in rows)
            text = f"{json.dumps(name)}: [\n{body}]"
        else:
            text = f"{json.dumps(name)}: [" + ",".join(rows) + "]"
        lines.append(text + ("," if n < len(names) - 1 else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=STEPS, help=f"AdamW steps ({STEPS})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"weights and batches ({SEED})")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the JSON")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    model, corpus, training = train(args.steps, args.seed)
    args.out.write_text(weights_json(model, corpus, training), encoding="utf-8")
    size = args.out.stat().st_size
    print(
        f"{args.out}: {size:,} bytes; best step {training['best_step']} of "
        f"{training['stopped_at_step']}; losses (nats/character): train "
        f"{training['train_loss']}, validation {training['validation_loss']}, "
        f"held-out {training['eval_loss']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
