"""A protocol checklist (`docs/data/**/…-protocol.json`) as Markdown: on its page, with
links to the guide's sections and the tools' pages, and as a file to download and print.

The JSON is the one source of the checklist: the page and the download are both rendered
from it, so they cannot disagree. Its shape:

    {"title": str, "guide": "adaptation/fine-tuning.md", "about": str,
     "phases": [{"id": str, "title": str,
                 "items": [{"id": str, "text": str, "section": ANCHOR,
                            "tool": {"name": str, "page": PATH.md | "command": str}}]}]}

`section` is an anchor of the guide's headings; `page` is a docs-relative page path.
"""

from __future__ import annotations

import posixpath
from typing import Any

_TOP = ("title", "guide", "about", "phases")


def _need(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict) or not isinstance(obj.get(key), str | list) or not obj[key]:
        raise ValueError(f"{where}: missing or empty field {key!r}")
    return obj[key]


def checked_protocol(data: Any) -> dict[str, Any]:
    """`data` if it has the shape above; ValueError naming the first bad field otherwise
    (ids must be unique, since a reader ticks boxes by id in the JSON download)."""
    for key in _TOP:
        _need(data, key, "protocol")
    seen: set[str] = set()
    for i, phase in enumerate(data["phases"]):
        for key in ("id", "title", "items"):
            _need(phase, key, f"phases[{i}]")
        for j, item in enumerate(phase["items"]):
            where = f"phases[{i}].items[{j}]"
            for key in ("id", "text", "section"):
                _need(item, key, where)
            if item["id"] in seen:
                raise ValueError(f"{where}: id {item['id']!r} used twice")
            seen.add(item["id"])
            tool = item.get("tool")
            if tool is not None:
                _need(tool, "name", f"{where}.tool")
                if not (isinstance(tool.get("page"), str) or isinstance(tool.get("command"), str)):
                    raise ValueError(f"{where}.tool: needs a 'page' or a 'command'")
    return data


def item_count(data: dict[str, Any]) -> int:
    """Boxes on the checklist."""
    return sum(len(p["items"]) for p in data["phases"])


def _rel(target: str, page: str) -> str:
    """Docs-relative `target` as a link from the page `page` (both docs-relative paths)."""
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def protocol_markdown(data: dict[str, Any], *, page: str | None) -> str:
    """The checklist as Markdown task lists, one list per phase.

    page: the docs-relative path of the page it is written into (links are made relative
    to it), or None for the download, whose links are the site's paths written out
    (a downloaded file has no page to be relative to)."""
    data = checked_protocol(data)
    guide = data["guide"]
    out: list[str] = []
    if page is None:
        out += [f"# {data['title']}", "", data["about"], ""]
    n = 0
    for phase in data["phases"]:
        out += [f"{'##' if page is None else '###'} {phase['title']}", ""]
        for item in phase["items"]:
            n += 1
            tool = item.get("tool")
            if page is None:  # the site's URLs: a page `a/b.md` is served at `a/b/`
                parts = [f"guide: {_url(guide)}#{item['section']}"]
                if tool is not None:
                    how = _url(tool["page"]) if "page" in tool else f"`{tool['command']}`"
                    parts.append(f"{tool['name']}: {how}")
            else:
                parts = [f"[section]({_rel(guide, page)}#{item['section']})"]
                if tool is not None:
                    how = (
                        f"[{tool['name']}]({_rel(tool['page'], page)})"
                        if "page" in tool
                        else f"`{tool['command']}`"
                    )
                    parts.append(f"tool: {how}")
            out.append(f"- [ ] **{n}.** {item['text']} ({'; '.join(parts)})")
        out.append("")
    return "\n".join(out)


def _url(page: str) -> str:
    """The site path a docs page is served at (`adaptation/fine-tuning.md` ->
    `adaptation/fine-tuning/`), as MkDocs' directory URLs serve it."""
    return page.removesuffix(".md") + "/"
