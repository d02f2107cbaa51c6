"""The probes, one module each: every module of this package that holds a `PROBE`
(a `probes.commands.declaration.Probe`) is a subcommand of `python -m probes`.

Adding a probe is adding one module here (plus its tests). No torch is imported here.
"""

from __future__ import annotations

import os
from importlib import import_module

from probes.commands.declaration import Probe

__all__ = ["PROBES", "Probe"]


def _declared() -> dict[str, Probe]:
    found = []
    for file in sorted(os.listdir(os.path.dirname(__file__))):
        stem, ext = os.path.splitext(file)
        if ext == ".py" and stem != "__init__":
            probe = getattr(import_module(f"{__name__}.{stem}"), "PROBE", None)
            if probe is not None:
                found.append(probe)
    return {p.name: p for p in sorted(found, key=lambda p: (p.order, p.name))}


PROBES: dict[str, Probe] = _declared()
