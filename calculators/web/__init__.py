"""The calculators on the site: declared inputs, one compute path, HTML/SVG rendering.

Pure standard library: the same code prerenders the pages at build time and runs in
the browser under Pyodide.
"""

from calculators.web.compute import FieldError, compute
from calculators.web.forms import CALCULATORS, Calculator, Field
from calculators.web.page import evaluate, form_html, run_json
from calculators.web.render import render_result, to_csv

__all__ = [
    "CALCULATORS",
    "Calculator",
    "Field",
    "FieldError",
    "compute",
    "evaluate",
    "form_html",
    "render_result",
    "run_json",
    "to_csv",
]
