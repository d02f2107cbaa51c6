"""A page's calculator blocks as the site's hook reads and computes them, for the tests
that hold a guide's sentences to its figures and for the behaviour record.

The hook's own pattern, reference resolution and option parsing (docs/hooks/kernodeck.py:
`_BLOCK`, `_resolve`, `_options`), not copies of them: a block's values may quote a
committed file or an earlier block's result, and a key given twice is two lines of one
value. Blocks with an id are computed in page order, so that later blocks can read them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from calculators.web import compute

ROOT = Path(__file__).resolve().parents[1]


@cache
def hook() -> Any:
    """The site's hook module, loaded once."""
    spec = importlib.util.spec_from_file_location(
        "kernodeck_hook_blocks", ROOT / "docs" / "hooks" / "kernodeck.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Block:
    """One ```calculator block: its calculator, id (None without one), inputs as computed
    (references resolved, `id` and `show` left out) and, with an id, its result."""

    name: str
    id: str | None
    inputs: dict[str, str]
    result: dict[str, Any] | None


def page_blocks(page: Path) -> list[Block]:
    """Every calculator block of `page`, in order."""
    h = hook()
    where = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)
    results: dict[str, dict[str, Any]] = {}
    out = []
    for m in h._BLOCK.finditer(page.read_text(encoding="utf-8")):
        body = h._REF.sub(
            lambda r: h._resolve(r.group(1), r.group(2), r.group(3), r.group(0), results),
            m.group(2),
        )
        inputs = h._options(body, where)
        block_id = inputs.pop("id", None)
        inputs.pop("show", None)
        result = None
        if block_id:
            result = results[block_id] = compute(m.group(1), inputs)
        out.append(Block(name=m.group(1), id=block_id, inputs=inputs, result=result))
    return out


def results_by_id(page: Path) -> dict[str, dict[str, Any]]:
    """The computed result of every block of `page` that has an id."""
    return {b.id: b.result for b in page_blocks(page) if b.id and b.result is not None}
