"""The calculators on the site: forms derived from their declarations, one compute path,
HTML/SVG rendering.

Pure standard library: the same code prerenders the pages at build time and runs in
the browser under Pyodide.

The names below are loaded on first use (PEP 562): a calculator's module imports
`calculators.web.render` for its HTML while the calculators are still being declared,
and that import must not start the forms, which are derived from those declarations.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_FROM = {
    "CALCULATORS": "calculators.web.forms",
    "Calculator": "calculators.web.forms",
    "Field": "calculators.web.forms",
    "FieldError": "calculators.web.forms",
    "compute": "calculators.web.forms",
    "evaluate": "calculators.web.page",
    "form_html": "calculators.web.page",
    "render_result": "calculators.web.page",
    "run_json": "calculators.web.page",
    "to_csv": "calculators.web.render",
}

__all__ = sorted(_FROM)


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_FROM[name]), name)
