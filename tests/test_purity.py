"""The calculators package imports nothing outside the standard library.

Importing every module runs in a fresh interpreter. Modules that interpreter start-up
already loaded from site-packages (.pth hooks such as _distutils_hack) are dropped from
sys.modules first, so that anything calculators imports, even a module start-up had
loaded, shows up afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_IMPORT_ALL = r"""
import importlib, json, pkgutil, sys
allowed = set(sys.stdlib_module_names) | {"__main__"}
for name in [n for n in sys.modules if n.split(".")[0] not in allowed]:
    del sys.modules[name]
sys.path[:0] = sys.argv[1:]
import calculators
imported = []
for info in pkgutil.walk_packages(calculators.__path__, "calculators."):
    if info.name.rsplit(".", 1)[-1] == "__main__":
        continue  # `python -m calculators`: importing it runs the CLI
    importlib.import_module(info.name)
    imported.append(info.name)
print(json.dumps({"imported": imported, "modules": sorted(sys.modules)}))
"""

# The same run with one more import, as a calculators module importing numpy would do.
_WITH_VIOLATION = _IMPORT_ALL.replace("print(json.dumps", "import numpy\nprint(json.dumps")


def third_party(modules: list[str]) -> list[str]:
    """Modules that are neither calculators.* nor in the standard library."""
    allowed = set(sys.stdlib_module_names) | {"__main__", "calculators"}
    return sorted(name for name in modules if name.split(".")[0] not in allowed)


def _import_everything(code: str = _IMPORT_ALL, *extra_paths: Path) -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-I", "-c", code, str(ROOT), *map(str, extra_paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_calculators_loads_only_the_standard_library():
    report = _import_everything()
    expected = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "calculators").rglob("*.py")
        if p.stem != "__main__" and p.parent.name != "__pycache__"
    } - {"calculators"}
    assert expected <= set(report["imported"])
    assert "calculators.model.spec" in report["modules"]
    assert third_party(report["modules"]) == []


def test_checker_flags_third_party_modules():
    modules = ["json", "os.path", "calculators", "calculators.model.spec", "__main__"]
    assert third_party(modules) == []
    assert third_party([*modules, "numpy", "numpy.linalg", "torch._C"]) == [
        "numpy",
        "numpy.linalg",
        "torch._C",
    ]
    # a stdlib-looking prefix is not enough
    assert third_party(["jsonschema", "calculatorsx"]) == ["calculatorsx", "jsonschema"]


def test_run_catches_a_loaded_third_party_module(tmp_path):
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text("import numpy.linalg\n")
    (fake / "linalg.py").write_text("")
    report = _import_everything(_WITH_VIOLATION, tmp_path)
    assert third_party(report["modules"]) == ["numpy", "numpy.linalg"]
