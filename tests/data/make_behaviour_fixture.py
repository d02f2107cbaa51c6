"""Record what the calculators answer today, for tests/test_behaviour_kept.py.

    python tests/data/make_behaviour_fixture.py

Writes tests/data/behaviour.json: for every calculator block on a page of docs/ and
every calculator's defaults, the result JSON and the SHA-256 of the result's HTML and of
the whole form (its data-* attributes, names, labels, bounds); for every
`[[command ...]]` directive, the command line it shows; for every `python -m calculators`
command in the README, the JSON of `--json` and the plain-text table. Rerun it only for a
deliberate change of behaviour, and say which in the commit.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shlex
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calculators.cli import main  # noqa: E402
from calculators.model.presets import load_preset  # noqa: E402
from calculators.web import CALCULATORS, compute, evaluate, form_html  # noqa: E402
from calculators.web.forms import argv_for, calculator, clean  # noqa: E402
from calculators.web.page import command_line  # noqa: E402
from tests.page_blocks import page_blocks  # noqa: E402

COMMAND = re.compile(r"^\[\[command ([a-z-]+)([^\]]*)\]\]$", re.M)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def page_examples() -> list[dict[str, Any]]:
    """(page, calculator, inputs) of every calculator block, then each calculator's defaults.

    A value may be a reference (`[[data:...|list]]`, or an earlier block's result): it is
    resolved as the site's hook resolves it, so the record holds the inputs computed with.
    """
    out = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        where = str(path.relative_to(ROOT))
        out += [{"where": where, "name": b.name, "inputs": b.inputs} for b in page_blocks(path)]
    for name in sorted(CALCULATORS):
        out.append({"where": "defaults", "name": name, "inputs": {}})
    return out


def page_record(example: dict[str, Any]) -> dict[str, Any]:
    name, inputs = example["name"], example["inputs"]
    answer = evaluate(name, inputs)
    return {
        **example,
        "result": compute(name, inputs),
        "html_sha256": sha(answer["html"]),
        "command": answer["command"],
        "form_sha256": sha(form_html(name, inputs, form_id="kd-fixture")),
    }


def command_directives() -> list[dict[str, Any]]:
    out = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        for m in COMMAND.finditer(path.read_text(encoding="utf-8")):
            name, rest = m.group(1), m.group(2).strip()
            pairs = dict(p.split("=", 1) for p in rest.split())
            calc = calculator(name)
            out.append(
                {
                    "where": str(path.relative_to(ROOT)),
                    "directive": m.group(0),
                    "command": command_line(argv_for(calc, clean(calc, pairs))),
                }
            )
    return out


def readme_commands() -> list[list[str]]:
    """Every `python -m calculators ...` line of the README (a `a | b | c` line is three)."""
    out = []
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("python -m calculators "):
            continue
        words = shlex.split(line)[3:]
        if "|" in words:
            out += [[w] for w in words if w != "|"]
        else:
            out.append(words)
    return out


def run(argv: list[str]) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(argv)
    assert status == 0, argv
    return out.getvalue()


# The README's placeholder config is Llama 3.1 8B's, written to a temporary file; its path
# is put back in what is recorded, so the record does not depend on where that file is.
PLACEHOLDER = "path/to/config.json"


def readme_record(argv: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps(load_preset("llama-3.1-8b")), encoding="utf-8")
        real = [str(config) if a == PLACEHOLDER else a for a in argv]
        as_json = run([*real, "--json"]).replace(json.dumps(str(config))[1:-1], PLACEHOLDER)
        text = run(real).replace(str(config), PLACEHOLDER)
    return {"argv": argv, "json": json.loads(as_json), "text": text}


def record() -> dict[str, Any]:
    return {
        "pages": [page_record(e) for e in page_examples()],
        "commands": command_directives(),
        "readme": [readme_record(argv) for argv in readme_commands()],
    }


if __name__ == "__main__":
    target = Path(__file__).with_name("behaviour.json")
    target.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")
