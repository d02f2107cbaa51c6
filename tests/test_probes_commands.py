"""probes.commands: one module per probe, the command line derived from them, no circle."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from probes.cli import PROBES, VERSIONS, build_parser
from probes.commands import PROBES as DECLARED

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_of_the_package_is_a_probe_but_the_shared_ones() -> None:
    folder = ROOT / "probes" / "commands"
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "declaration", "shared"}
    assert {name.replace("-", "_") for name in DECLARED} == modules
    assert tuple(DECLARED) == PROBES
    sub = next(a for a in build_parser()._actions if a.dest == "probe")
    assert list(sub.choices) == list(PROBES)  # type: ignore[union-attr]


def test_measuring_probes_write_versioned_reports_and_compare_runs_on_its_own() -> None:
    assert set(VERSIONS) == set(PROBES) - {"compare", "manifest"}
    assert DECLARED["compare"].main is not None and DECLARED["compare"].body is None


def test_parsing_imports_no_torch_and_no_module_imports_the_cli() -> None:
    code = (
        "import json, sys\n"
        "from probes.cli import build_parser\n"
        "build_parser().parse_args(['train-step', '--config', 'tiny-llama'])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    modules = json.loads(out.stdout)
    assert "torch" not in modules
    # the circle cli -> probes_impl -> cli is gone: nothing under probes imports the CLI
    users = [
        p.name
        for p in (ROOT / "probes").rglob("*.py")
        if p.name not in ("cli.py", "__main__.py")
        and re.search(r"^(from probes\.cli import|import probes\.cli)", p.read_text(), re.M)
    ]
    assert users == []
