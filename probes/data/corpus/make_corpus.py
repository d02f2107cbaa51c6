"""Rebuild the time-to-quality corpus (train.txt, eval.txt) from the site's own guides.

    python probes/data/corpus/make_corpus.py          # rewrite train.txt and eval.txt
    python probes/data/corpus/make_corpus.py --check  # exit 1 if they differ from the docs

Each file is the Markdown of the listed guides, as written, in this order, joined by
one blank line; newlines are normalised to "\\n". Train and eval come from different
guides, so the eval text is held out. Standard library only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SOURCES = {
    "train.txt": (
        "docs/memory/sizing-gpu-memory.md",
        "docs/memory/estimate-vs-peak.md",
        "docs/memory/kv-cache.md",
        "docs/contributing.md",
    ),
    "eval.txt": (
        "docs/calculators/gap.md",
        "docs/calculators/seeds.md",
        "docs/calculators/envelope.md",
    ),
}
LIMIT = 64 * 1024  # bytes per file: small enough to commit and to train on in CI


def build(name: str) -> str:
    parts = []
    for source in SOURCES[name]:
        text = (ROOT / source).read_text(encoding="utf-8")
        parts.append(text.replace("\r\n", "\n").strip("\n") + "\n")
    text = "\n".join(parts)
    size = len(text.encode("utf-8"))
    if size > LIMIT:
        raise SystemExit(f"{name} would be {size:,} bytes, over {LIMIT:,}: list fewer guides")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for name in SOURCES:
        text, path = build(name), HERE / name
        if args.check:
            if not path.exists() or path.read_bytes() != text.encode("utf-8"):
                stale.append(name)
        else:
            path.write_bytes(text.encode("utf-8"))
            print(f"{path.relative_to(ROOT)}: {len(text.encode('utf-8')):,} bytes")
    if stale:
        print(f"differ from the docs: {', '.join(stale)} (rerun without --check)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
