"""The fine-tuning guide's contribution test, on real data: a small network trained on
scikit-learn's bundled handwritten digits (the source domain), then adapted to the same
digits drawn with thicker strokes (the target domain) by LoRA and by full fine-tuning.

    python docs/data/adaptation/contribution/make_contribution.py [--out DIR] [--check]

Writes, into DIR (default: the folder of this script):

- `target.csv`: id, gold, base, lora, full for the target-test images (thickened digits
  never trained on): the label and each variant's prediction. The prediction comparison
  calculator reads it with `--a-field base --b-field lora` (or `full`).
- `panel.csv`: the same columns for the panel, original digits that trained nothing: what
  the adaptation must not break.
- `summary.json`: the split, the transformation, the model and its layers, the training
  recipe of each variant (the learning rate chosen on the adaptation-validation images
  from a fixed grid), the trainable and total parameter counts, every variant's correct
  answers and accuracy on every set, and the whole learning-rate sweep. No dates and no
  versions, so a rerun with the same libraries on the same machine gives the same bytes.
- `ids.json`: the image ids (indices in `load_digits()`) of each of the five parts, one
  part a line, so that a reader can check that the parts are disjoint and that the panel
  trained nothing.
- `environment.json`: the versions of Python, PyTorch, PEFT, scikit-learn and NumPy
  that made the files (kept apart so that the byte-for-byte check does not fail on a
  version bump that trains identically).

`--check` rebuilds the files in memory and compares them with those in DIR; exit status 1
and the names of the files that differ if any does.

Data: scikit-learn's `load_digits()`, its copy of the test set of the UCI ML hand-written
digits data (E. Alpaydin and C. Kaynak, 1998): 1,797 images of 8x8 pixels, grey levels
0-16, shipped inside the package, so nothing is downloaded. The images are split once,
stratified by digit, into five disjoint parts: the base model's training images, the
panel, and three parts of the target domain (adaptation-train, adaptation-validation,
target-test). The target domain is the transformation `thicken`: a grey-level dilation
with a 3x3 window, every pixel replaced by the largest value among itself and its eight
neighbours, as a broader pen or a scanner whose ink bleeds would draw the digits.

Determinism: fixed seeds, one CPU thread, `torch.use_deterministic_algorithms(True)`, and
float64 arithmetic, so that another CPU's float rounding in the last bits does not move a
prediction. Runs in about 15 s on one core.
"""

from __future__ import annotations

import argparse
import copy
import csv
import io
import json
import logging
import platform
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sklearn
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

HERE = Path(__file__).resolve().parent
COMMAND = "python docs/data/adaptation/contribution/make_contribution.py"
FILES = ("target.csv", "panel.csv", "summary.json", "ids.json")
ENVIRONMENT = "environment.json"

# The split: image counts of each part, the rest training the base model.
SPLIT_SEED = 0
PANEL_IMAGES = 300
TARGET_TEST_IMAGES = 300
ADAPT_TRAIN_IMAGES = 300
ADAPT_VALIDATION_IMAGES = 150
GREY_LEVELS = 16  # load_digits() pixels run from 0 to 16; the networks see pixel / 16

# The network: 64 pixels -> HIDDEN -> HIDDEN -> 10 digits, ReLU between layers. The
# layers are named so that a LoRA configuration can target them by name.
HIDDEN = 64
LAYERS = {"fc1": (64, HIDDEN), "fc2": (HIDDEN, HIDDEN), "head": (HIDDEN, 10)}
DTYPE = torch.float64

# Training: Adam on shuffled mini-batches; a seed draws the initial weights (and LoRA's A
# matrices) and the order of the mini-batches.
BATCH = 32
BASE_SEED = 0
BASE_EPOCHS = 60
BASE_LEARNING_RATE = 1e-3
ADAPT_SEED = 1
ADAPT_EPOCHS = 30
# Each adapted variant takes the learning rate of this grid with the best accuracy on
# the adaptation-validation images (ties: the smaller rate). LoRA usually wants a larger
# rate than full fine-tuning (Biderman et al. 2024, "LoRA Learns Less and Forgets Less",
# arXiv:2405.09673, section 4.6 and appendix B sweep them separately), so each variant
# gets its own choice from the same grid; the panel plays no part in it.
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)

# LoRA (Hu et al. 2021, arXiv:2106.09685): rank 4, alpha = 2 x rank, on every linear
# layer, no dropout. Biderman et al. 2024, section 4.6, recommend alpha = 2r and
# targeting all modules.
LORA_RANK = 4
LORA_ALPHA = 2 * LORA_RANK
LORA_TARGETS = ("fc1", "fc2", "head")

VARIANTS = ("base", "lora", "full")
SETS = ("target_test", "panel", "adapt_validation", "adapt_train", "source_train")


def _quiet_peft_import():
    """PEFT's import loads torchao, whose compiled CUDA extensions cannot load on a CPU
    build of PyTorch: it logs that at WARNING, and torch logs deprecations of its pytree
    registry. Neither concerns a CPU run of a small MLP, so both loggers are raised to
    ERROR and Python warnings are silenced for the import only."""
    for name in ("torchao", "torch.utils._pytree"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import peft
        from peft import LoraConfig, get_peft_model
    return peft, LoraConfig, get_peft_model


peft, LoraConfig, get_peft_model = _quiet_peft_import()


def deterministic() -> None:
    """One thread and deterministic kernels: the sums then have one order."""
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


# ---- data -----------------------------------------------------------------------------------


def thicken(pixels: np.ndarray) -> np.ndarray:
    """The target domain: grey-level dilation of 8x8 images with a 3x3 window.

    out[r, c] = max(in[r + dr, c + dc] for dr, dc in {-1, 0, 1}^2 inside the image)

    `pixels` holds images as rows of 64 values (row-major 8x8, as `load_digits().data`);
    the result has the same shape and the same grey levels. Strokes grow by one pixel on
    every side, as with a broader pen; the labels do not change, so the panel and the
    target set measure the same skill on two kinds of drawing.
    """
    images = pixels.reshape(-1, 8, 8)
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))  # zeros outside: the paper's background
    windows = [padded[:, r : r + 8, c : c + 8] for r in range(3) for c in range(3)]
    return np.maximum.reduce(windows).reshape(pixels.shape)


@dataclass(frozen=True)
class Split:
    """load_digits() pixels and labels, and the sorted image indices of each part."""

    pixels: np.ndarray
    labels: np.ndarray
    source_train: np.ndarray
    panel: np.ndarray
    adapt_train: np.ndarray
    adapt_validation: np.ndarray
    target_test: np.ndarray


def split() -> Split:
    """Five disjoint parts, each stratified by digit with random_state SPLIT_SEED: the
    panel first, then the target pool (cut into adaptation-train, adaptation-validation
    and target-test), and the rest trains the base model."""
    digits = load_digits()
    y = digits.target
    index = np.arange(len(y))
    rest, panel = train_test_split(
        index, test_size=PANEL_IMAGES, stratify=y, random_state=SPLIT_SEED
    )
    pool = ADAPT_TRAIN_IMAGES + ADAPT_VALIDATION_IMAGES + TARGET_TEST_IMAGES
    source, target = train_test_split(
        rest, test_size=pool, stratify=y[rest], random_state=SPLIT_SEED
    )
    adapt_train, held = train_test_split(
        target, train_size=ADAPT_TRAIN_IMAGES, stratify=y[target], random_state=SPLIT_SEED
    )
    adapt_validation, target_test = train_test_split(
        held, test_size=TARGET_TEST_IMAGES, stratify=y[held], random_state=SPLIT_SEED
    )
    return Split(
        pixels=digits.data,
        labels=y,
        source_train=np.sort(source),
        panel=np.sort(panel),
        adapt_train=np.sort(adapt_train),
        adapt_validation=np.sort(adapt_validation),
        target_test=np.sort(target_test),
    )


def tensors(s: Split, part: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A part's inputs (pixel / 16, thickened for the target-domain parts) and labels."""
    ids = getattr(s, part)
    x = s.pixels[ids]
    if part in ("adapt_train", "adapt_validation", "target_test"):
        x = thicken(x)
    inputs = torch.tensor(x / GREY_LEVELS, dtype=DTYPE)
    return inputs, torch.tensor(s.labels[ids], dtype=torch.long)


# ---- the network and its training ------------------------------------------------------


class DigitMLP(nn.Module):
    """64 pixels -> fc1 -> ReLU -> fc2 -> ReLU -> head -> 10 logits (LAYERS)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(*LAYERS["fc1"], dtype=DTYPE)
        self.fc2 = nn.Linear(*LAYERS["fc2"], dtype=DTYPE)
        self.head = nn.Linear(*LAYERS["head"], dtype=DTYPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def steps_per_epoch(images: int) -> int:
    """Optimizer steps in one pass over `images` in mini-batches of BATCH (the last one
    may be smaller)."""
    return -(-images // BATCH)


def train(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, lr: float, epochs: int, seed: int
) -> nn.Module:
    """Adam (PyTorch defaults besides the rate) on cross-entropy over the parameters that
    require a gradient, `epochs` passes in an order drawn from `seed`."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    order = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=order)
        for start in range(0, len(y), BATCH):
            batch = perm[start : start + BATCH]
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def predict(model: nn.Module, x: torch.Tensor) -> np.ndarray:
    """The predicted digit of each image (the largest logit)."""
    with torch.no_grad():
        return model(x).argmax(dim=1).numpy()


def base_model(s: Split) -> DigitMLP:
    """The base: trained from seed BASE_SEED on the source-domain training images only."""
    torch.manual_seed(BASE_SEED)
    model = DigitMLP()
    x, y = tensors(s, "source_train")
    return train(model, x, y, lr=BASE_LEARNING_RATE, epochs=BASE_EPOCHS, seed=BASE_SEED)


def lora_config() -> LoraConfig:
    return LoraConfig(
        r=LORA_RANK,
        lora_alpha=LORA_ALPHA,
        target_modules=list(LORA_TARGETS),
        lora_dropout=0.0,
        bias="none",
    )


def lora_model(base: DigitMLP, s: Split, lr: float) -> nn.Module:
    """A copy of the base with LoRA adapters on LORA_TARGETS, only the adapters trained
    (PEFT freezes the rest; its B matrices start at zero, so training starts from the
    base's function exactly)."""
    torch.manual_seed(ADAPT_SEED)  # draws the A matrices
    model = get_peft_model(copy.deepcopy(base), lora_config())
    x, y = tensors(s, "adapt_train")
    return train(model, x, y, lr=lr, epochs=ADAPT_EPOCHS, seed=ADAPT_SEED)


def full_model(base: DigitMLP, s: Split, lr: float) -> nn.Module:
    """A copy of the base with every parameter trained."""
    torch.manual_seed(ADAPT_SEED)
    model = copy.deepcopy(base)
    x, y = tensors(s, "adapt_train")
    return train(model, x, y, lr=lr, epochs=ADAPT_EPOCHS, seed=ADAPT_SEED)


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Trainable and total parameters (PEFT's own count for a PEFT model)."""
    if hasattr(model, "get_nb_trainable_parameters"):
        trainable, total = model.get_nb_trainable_parameters()
    else:
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
    return {"trainable": int(trainable), "total": int(total)}


# ---- the run -----------------------------------------------------------------------------


def _score(predicted: np.ndarray, gold: np.ndarray) -> dict[str, int | float]:
    correct = int((predicted == gold).sum())
    return {"correct": correct, "total": len(gold), "accuracy": correct / len(gold)}


@dataclass(frozen=True)
class Run:
    """Everything the files are written from."""

    split: Split
    predictions: dict[str, dict[str, np.ndarray]]  # variant -> set -> predicted digits
    learning_rate: dict[str, float]  # variant -> the rate chosen on adapt_validation
    sweep: list[dict[str, object]]
    counts: dict[str, dict[str, int]]


def run() -> Run:
    """Train the base, sweep LEARNING_RATES for LoRA and full fine-tuning, keep each
    variant's best on the adaptation-validation images, and predict every set."""
    deterministic()
    s = split()
    data = {part: tensors(s, part) for part in SETS}
    base = base_model(s)
    predictions = {"base": {part: predict(base, data[part][0]) for part in SETS}}
    counts = {"base": parameter_counts(base)}
    build = {"lora": lora_model, "full": full_model}
    sweep: list[dict[str, object]] = []
    learning_rate: dict[str, float] = {}
    for variant, make in build.items():
        best = None
        for lr in LEARNING_RATES:
            model = make(base, s, lr)
            predicted = {part: predict(model, data[part][0]) for part in SETS}
            scores = {part: _score(predicted[part], data[part][1]) for part in SETS}
            sweep.append(
                {
                    "variant": variant,
                    "learning_rate": lr,
                    **{part: scores[part]["accuracy"] for part in SETS},
                }
            )
            validation = scores["adapt_validation"]["correct"]
            if best is None or validation > best[0]:  # strictly better: ties keep the smaller
                best = (validation, lr, predicted, parameter_counts(model))
        _, learning_rate[variant], predictions[variant], counts[variant] = best
    for sweep_row in sweep:
        sweep_row["chosen"] = sweep_row["learning_rate"] == learning_rate[sweep_row["variant"]]
    return Run(
        split=s, predictions=predictions, learning_rate=learning_rate, sweep=sweep, counts=counts
    )


def predictions_csv(r: Run, part: str) -> str:
    """One row per image of `part`, ordered by id: id, gold, and each variant's digit."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "gold", *VARIANTS])
    ids = getattr(r.split, part)
    columns = [r.predictions[v][part] for v in VARIANTS]
    for row, i in enumerate(ids):
        writer.writerow([int(i), int(r.split.labels[i]), *(int(c[row]) for c in columns)])
    return out.getvalue()


def summary(r: Run) -> dict[str, object]:
    s = r.split
    sizes = {part: len(getattr(s, part)) for part in SETS}
    steps = steps_per_epoch(sizes["adapt_train"]) * ADAPT_EPOCHS
    scores = {
        v: {part: _score(r.predictions[v][part], s.labels[getattr(s, part)]) for part in SETS}
        for v in VARIANTS
    }
    return {
        "generated_by": COMMAND,
        "source": "scikit-learn's load_digits(): its copy of the test set of the UCI ML "
        "hand-written digits data, Optical Recognition of Handwritten Digits (E. Alpaydin "
        "and C. Kaynak, 1998, https://archive.ics.uci.edu/dataset/80), 1,797 images of 8x8 "
        "pixels with grey levels 0-16",
        "target_domain": {
            "name": "thickened strokes",
            "how": "grey-level dilation with a 3x3 window: every pixel takes the largest "
            "value among itself and its eight neighbours (zeros outside the image); the "
            "labels are unchanged",
            "applied_to": ["adapt_train", "adapt_validation", "target_test"],
        },
        "split": {
            "how": f"disjoint parts, each cut with train_test_split(stratify=digit, "
            f"random_state={SPLIT_SEED}): the panel from all images, then the target pool "
            "from the rest (cut into adapt_train, then adapt_validation and target_test), "
            "and the remaining images train the base",
            "images": sizes,
            "used_for": {
                "source_train": "training the base (original digits)",
                "panel": "nothing but the final check: original digits that must not degrade",
                "adapt_train": "training the adapted variants (thickened)",
                "adapt_validation": "choosing each adapted variant's learning rate (thickened)",
                "target_test": "the final check of the adaptation (thickened)",
            },
        },
        "model": {
            "what": "DigitMLP: fc1 -> ReLU -> fc2 -> ReLU -> head, float64; inputs pixel / 16",
            "layers": {name: {"in": i, "out": o} for name, (i, o) in LAYERS.items()},
            "parameters": r.counts["base"]["total"],
        },
        "training": {
            "optimizer": "torch.optim.Adam, PyTorch defaults besides the learning rate, "
            "cross-entropy loss, shuffled mini-batches",
            "batch": BATCH,
            "base": {
                "seed": BASE_SEED,
                "epochs": BASE_EPOCHS,
                "steps": steps_per_epoch(sizes["source_train"]) * BASE_EPOCHS,
                "learning_rate": BASE_LEARNING_RATE,
            },
            "adaptation": {
                "seed": ADAPT_SEED,
                "epochs": ADAPT_EPOCHS,
                "steps": steps,
                "same_for": "lora and full: the same seed, mini-batch order, epochs and "
                "steps; each its own learning rate from learning_rates",
                "learning_rates": list(LEARNING_RATES),
                "chosen_by": "the best accuracy on adapt_validation (ties: the smaller "
                "rate); the panel plays no part",
            },
            "seed_drives": "torch.manual_seed(seed) draws the base's initial weights and "
            "LoRA's A matrices; a torch.Generator seeded with it draws the order of the "
            "mini-batches in every epoch",
        },
        "variants": {
            "base": {
                "what": "the base, not adapted",
                **r.counts["base"],
            },
            "lora": {
                "what": "the base with LoRA adapters (PEFT), only the adapters trained",
                "rank": LORA_RANK,
                "alpha": LORA_ALPHA,
                "dropout": 0.0,
                "targets": list(LORA_TARGETS),
                "learning_rate": r.learning_rate["lora"],
                "counted_by": "PeftModel.get_nb_trainable_parameters()",
                **r.counts["lora"],
            },
            "full": {
                "what": "the base with every parameter trained (full fine-tuning)",
                "learning_rate": r.learning_rate["full"],
                **r.counts["full"],
            },
        },
        "scores": scores,
        "gain_on_target_test": {
            v: scores[v]["target_test"]["accuracy"] - scores["base"]["target_test"]["accuracy"]
            for v in ("lora", "full")
        },
        "change_on_panel": {
            v: scores[v]["panel"]["accuracy"] - scores["base"]["panel"]["accuracy"]
            for v in ("lora", "full")
        },
        "sweep": r.sweep,
        "files": {
            "target.csv": "target_test images: id (index in load_digits()), gold, and the "
            "prediction of base, lora and full",
            "panel.csv": "panel images: the same columns",
            "ids.json": "the ids of every part of the split",
        },
    }


def ids_json(s: Split) -> str:
    """The ids of each part, one part a line (compact: 1,797 ids in all)."""
    lines = [
        f" {json.dumps(part)}: {json.dumps([int(i) for i in getattr(s, part)])}" for part in SETS
    ]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def environment() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "peft": peft.__version__,
        "scikit-learn": sklearn.__version__,
        "numpy": np.__version__,
    }


def files(r: Run) -> dict[str, str]:
    """The text of the compared files (FILES), by name."""
    return {
        "target.csv": predictions_csv(r, "target_test"),
        "panel.csv": predictions_csv(r, "panel"),
        "summary.json": json.dumps(summary(r), indent=1, allow_nan=False) + "\n",
        "ids.json": ids_json(r.split),
    }


def build() -> dict[str, str]:
    """Every file's text, by name: FILES, then ENVIRONMENT."""
    return {**files(run()), ENVIRONMENT: json.dumps(environment(), indent=1) + "\n"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write the files into")
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare a rebuild with the files in --out instead of writing",
    )
    args = parser.parse_args(argv)
    made = build()
    if args.check:
        differ = [
            name
            for name in FILES
            if not (args.out / name).is_file()
            or (args.out / name).read_bytes() != made[name].encode("utf-8")
        ]
        for name in differ:
            print(f"{args.out / name}: differs from a rebuild", file=sys.stderr)
        if not differ:
            print(f"{', '.join(FILES)}: identical to a rebuild")
        return 1 if differ else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in made.items():
        (args.out / name).write_bytes(text.encode("utf-8"))
        print(f"{args.out / name}: {len(text.encode('utf-8')):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
