"""Model presets: public Hugging Face config.json files shipped with the package.

Each `<id>.json` beside this module is the model's config.json as published;
`index.json` names its repository, where the config was read, and the model's
published parameter count with its source. Presets are read as files beside this
module: the package is always installed as files (a wheel, a source tree, or the zip the
site unpacks into Pyodide's filesystem). importlib.resources would also read a zipped
package, but importing it costs 10 ms of a page's start in Pyodide.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

from calculators.errors import InputError, shown

_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True, kw_only=True)
class Preset:
    """A shipped config and where it came from."""

    id: str
    hf_repo: str
    config_source: str
    published_parameters: int | None
    published_parameters_source: str


def _read(name: str) -> Any:
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        return json.load(f)


@cache
def presets() -> dict[str, Preset]:
    """All presets by id, from index.json."""
    index = _read("index.json")
    return {
        pid: Preset(
            id=pid,
            hf_repo=entry["hf_repo"],
            config_source=entry["config_source"],
            published_parameters=entry.get("published_parameters"),
            published_parameters_source=entry.get("published_parameters_source") or "",
        )
        for pid, entry in index.items()
    }


def preset_ids() -> tuple[str, ...]:
    """Preset ids, sorted."""
    return tuple(sorted(presets()))


def get_preset(preset_id: str) -> Preset:
    """The preset `preset_id`; ValueError naming the model and the known ids otherwise."""
    try:
        return presets()[preset_id]
    except KeyError:
        raise InputError(
            "model", f"model must be one of {', '.join(preset_ids())}; got {shown(preset_id)}"
        ) from None


def load_preset(preset_id: str) -> dict[str, Any]:
    """The config.json dict of preset `preset_id` (a fresh copy each call)."""
    get_preset(preset_id)
    return _read(f"{preset_id}.json")
