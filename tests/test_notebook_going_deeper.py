"""The lessons' "Going deeper" blocks (docs/hooks/kernodeck.py, notebook_going_deeper): cells
tagged `going-deeper` are folded into one collapsed note on the site, from the HTML that
mkdocs-jupyter's own converter writes for a small notebook, so that a change of its
template shows here. And what belongs in them: a lesson's tolerances (the allowed gap of
a check, named `..._TOL`) are internals, set in a block, never on the main path (issue 25,
"One idea at a time")."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError
from mkdocs_jupyter.nbconvert2 import nb2html

from tests import page_blocks

ROOT = Path(__file__).resolve().parents[1]
hook = page_blocks.hook()  # the docs hook, loaded as the site loads it

TAG = {"tags": ["going-deeper"]}


def _markdown(text: str, metadata: dict | None = None) -> dict:
    return {"cell_type": "markdown", "metadata": metadata or {}, "source": text}


def _code(text: str, shown: str, metadata: dict | None = None) -> dict:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": metadata or {},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": shown}],
        "source": text,
    }


def _html(tmp_path: Path, cells: list[dict]) -> str:
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for i, c in enumerate(cells):
        c["id"] = f"c{i}"
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return nb2html(str(path), execute=False)


def _details(html: str) -> list[str]:
    return re.findall(r'<details class="note kd-deeper">.*?</details>', html, re.S)


def test_tagged_cells_fold_into_one_block_and_the_rest_stays(tmp_path: Path) -> None:
    html = _html(
        tmp_path,
        [
            _markdown("# Lesson\n\nThe main path."),
            _code("print('main')", "MAIN-OUTPUT\n"),
            _markdown("**Going deeper: the source**\nWhat the tracker does inside.", TAG),
            _code("print('deep')", "DEEP-OUTPUT\n", TAG),
            _markdown("Back on the main path."),
        ],
    )
    out = hook.notebook_going_deeper(html, "learn/x.ipynb")
    blocks = _details(out)
    assert len(blocks) == 1
    block = blocks[0]
    assert "<summary>Going deeper: the source</summary>" in block
    assert "What the tracker does inside." in block and "DEEP-OUTPUT" in block
    assert "MAIN-OUTPUT" not in block and "Back on the main path." not in block
    # the title is the summary, not repeated inside
    assert block.count("Going deeper: the source") == 1
    # every other cell survives unchanged, in order
    assert out.index("MAIN-OUTPUT") < out.index("<details") < out.index("Back on the main path.")
    assert out.count('class="jp-Cell jp-') == html.count('class="jp-Cell jp-')
    # the divs still balance
    assert out.count("<div") == out.count("</div>")


def test_two_blocks_apart_stay_two(tmp_path: Path) -> None:
    html = _html(
        tmp_path,
        [
            _markdown("**Going deeper: one**\nFirst.", TAG),
            _markdown("Between."),
            _markdown("**Going deeper: two**\nSecond.", TAG),
            _code("x = 1", "", TAG),
        ],
    )
    blocks = _details(hook.notebook_going_deeper(html, "learn/x.ipynb"))
    assert [re.search(r"<summary>(.*?)</summary>", b).group(1) for b in blocks] == [
        "Going deeper: one",
        "Going deeper: two",
    ]
    assert "Between." not in "".join(blocks)


def test_an_untitled_block_stops_the_build(tmp_path: Path) -> None:
    html = _html(tmp_path, [_markdown("Main."), _code("print(1)", "1\n", TAG)])
    with pytest.raises(PluginError, match="Going deeper: TITLE"):
        hook.notebook_going_deeper(html, "learn/x.ipynb")


def test_a_notebook_without_tags_is_unchanged(tmp_path: Path) -> None:
    html = _html(tmp_path, [_markdown("**Going deeper: not tagged**\nText."), _code("1", "1\n")])
    assert hook.notebook_going_deeper(html, "learn/x.ipynb") == html


LESSONS = sorted((ROOT / "docs" / "learn").glob("[0-9][0-9]-*.ipynb"))


def tolerances_on_the_main_path(notebook: dict) -> list[str]:
    """`NAME_TOL = ...` (any assignment to a name ending in _TOL) in a code cell that is not
    tagged `going-deeper`, as 'cell id: NAME'."""
    found = []
    for cell in notebook["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] != "code" or hook.DEEPER_TAG in tags:
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for node in ast.walk(ast.parse(source)):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign | ast.AugAssign)
                else []
            )
            names = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            found += [f"{cell['id']}: {n.id}" for n in names if n.id.endswith("_TOL")]
    return found


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_no_tolerance_is_set_on_a_lessons_main_path(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert tolerances_on_the_main_path(notebook) == [], (
        f"{path.name}: move into a Going deeper block"
    )


def test_the_tolerance_check_finds_one_on_the_main_path() -> None:
    notebook = {
        "cells": [
            {"cell_type": "code", "id": "a", "metadata": TAG, "source": "ACC_TOL = 1e-5"},
            {"cell_type": "code", "id": "b", "metadata": {}, "source": "x, LOSS_TOL = 1, 0.1"},
            {"cell_type": "code", "id": "c", "metadata": {}, "source": "assert d < ACC_TOL"},
            {"cell_type": "markdown", "id": "d", "metadata": {}, "source": "GRAD_TOL = 1"},
        ]
    }
    assert tolerances_on_the_main_path(notebook) == ["b: LOSS_TOL"]
