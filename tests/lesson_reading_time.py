"""How long a lesson takes, measured from its notebook rather than guessed.

    minutes = words / 200 + code cells / 2

words: every whitespace-separated word of the Markdown and code cells; 200 words a minute
is below the 238 that Brysbaert (2019, "How many words do we read per minute? A review
and meta-analysis of reading rate", Journal of Memory and Language 109, 104047) found for
silent reading of non-fiction, because a lesson's text is technical and its code is read
slowly. Half a minute per code cell: to run it and read what it printed. The main path
and the collapsed "Going deeper" blocks (cells tagged `going-deeper`) are counted apart;
each is stated rounded up to a multiple of five minutes.

Each lesson states it in its first cell, as
`**Time:** about N minutes to read and run (K more with the Going deeper blocks).`
(the parenthesis only where the lesson has such blocks); tests/test_lessons_reading_time.py
holds every lesson to it, and `python -m tests.lesson_reading_time --write` rewrites the
sentence after a lesson changes.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

LEARN = Path(__file__).resolve().parents[1] / "docs" / "learn"
WORDS_PER_MINUTE = 200
MINUTES_PER_CODE_CELL = 0.5
STEP = 5  # stated minutes are rounded up to a multiple of this
DEEPER_TAG = "going-deeper"
SENTENCE = re.compile(
    r"\*\*Time:\*\* about (\d+) minutes to read and run"
    r"(?: \((\d+) more with the Going deeper blocks\))?\."
)


def _text(cell: dict) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def measured_minutes(notebook: dict) -> tuple[float, float]:
    """(main path, Going deeper blocks) in minutes, by the module docstring's formula."""
    totals = {False: 0.0, True: 0.0}
    for cell in notebook["cells"]:
        deeper = DEEPER_TAG in cell.get("metadata", {}).get("tags", [])
        minutes = len(_text(cell).split()) / WORDS_PER_MINUTE
        if cell["cell_type"] == "code":
            minutes += MINUTES_PER_CODE_CELL
        totals[deeper] += minutes
    return totals[False], totals[True]


def stated(minutes: float) -> int:
    """Minutes as a lesson states them: rounded up to a multiple of STEP (0 stays 0)."""
    return STEP * math.ceil(minutes / STEP - 1e-9)


def sentence(notebook: dict) -> str:
    main, deeper = measured_minutes(notebook)
    extra = f" ({stated(deeper)} more with the Going deeper blocks)" if deeper else ""
    return f"**Time:** about {stated(main)} minutes to read and run{extra}."


def lessons() -> list[Path]:
    return sorted(LEARN.glob("[0-9][0-9]-*.ipynb"))


def rewrite(path: Path) -> bool:
    """Put the measured sentence in the lesson's first cell (replacing the stated one);
    True if the file changed. A first cell without the sentence is an error."""
    raw = path.read_text(encoding="utf-8")
    notebook = json.loads(raw)
    first = notebook["cells"][0]
    text = _text(first)
    if not SENTENCE.search(text):
        raise SystemExit(f"{path.name}: the first cell states no '**Time:** about N minutes'")
    # the sentence is itself part of what is counted: settle it (it converges at once)
    for _ in range(3):
        text = SENTENCE.sub(lambda _: sentence(notebook), text, count=1)
        first["source"] = text.splitlines(keepends=True)
    new = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    if new != raw:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite each lesson's sentence")
    args = parser.parse_args()
    for path in lessons():
        notebook = json.loads(path.read_text(encoding="utf-8"))
        main_path, deeper = measured_minutes(notebook)
        changed = rewrite(path) if args.write else False
        print(
            f"{path.name}: {main_path:.1f} min main path, {deeper:.1f} min Going deeper"
            + (" (rewritten)" if changed else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
