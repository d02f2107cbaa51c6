"""One preflight check's outcome (pass, fail or skipped, with what was measured against
what threshold) and the plain-text table of all of them. No torch: the report and its
rendering are read on machines that measured nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calculators.render import table

STATUSES = ("pass", "fail", "skipped")


@dataclass(kw_only=True)
class CheckOutcome:
    """What one check found.

    number, id, title: its place in the order (1 to 8), its `--checks` name, its heading.
    status:    pass | fail | skipped (a check that could not run never passes).
    measured:  {name: number or None}, what the check measured (None: not measurable here).
    threshold: {name: number or text}, what `measured` is held against.
    units:     {name: unit} for the numbers in measured and threshold.
    summary:   one line: the verdict with its figures.
    look_at:   for a failure, where the fault usually is; for a skip, why it was skipped.
    offenders: tensors, batches or pieces that broke the check, by name.
    details:   anything else worth keeping (per-step losses, the reused probe's figures).
    """

    number: int
    id: str
    title: str
    status: str = "skipped"
    measured: dict[str, Any] = field(default_factory=dict)
    threshold: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    look_at: str | None = None
    offenders: dict[str, list[str]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "measured": self.measured,
            "threshold": self.threshold,
            "units": self.units,
            "summary": self.summary,
            "look_at": self.look_at,
            "offenders": self.offenders,
            "details": self.details,
            "seconds": self.seconds,
        }


def skipped_outcome(
    checks: tuple[str, ...], titles: dict[str, str], check: str, why: str
) -> CheckOutcome:
    """`check` (one of `checks`, in order) skipped, `why` as its summary and its look-at."""
    return CheckOutcome(
        number=checks.index(check) + 1, id=check, title=titles[check], summary=why, look_at=why
    )


def errored_outcome(
    checks: tuple[str, ...], titles: dict[str, str], check: str, e: Exception
) -> CheckOutcome:
    """`check` failed because it raised `e`: a check that stopped never passes."""
    o = skipped_outcome(checks, titles, check, "")
    o.status = "fail"
    o.summary = f"the check stopped: {type(e).__name__}"
    o.look_at = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return o


def failed(outcomes: list[CheckOutcome]) -> list[CheckOutcome]:
    return [o for o in outcomes if o.status == "fail"]


def render_outcomes(outcomes: list[CheckOutcome]) -> str:
    """The checks as a table, then what to look at for each failure or skip."""
    rows = [[str(o.number), o.id, o.status.upper(), o.summary] for o in outcomes]
    lines = [table(["#", "check", "status", "measured against threshold"], rows)]
    for o in outcomes:
        for kind, names in o.offenders.items():
            if names:
                shown = ", ".join(names[:8]) + (
                    f" (+{len(names) - 8} more)" if len(names) > 8 else ""
                )
                lines.append(f"{o.number} {o.id}: {kind}: {shown}")
        if o.look_at and o.status != "pass":
            word = "look at" if o.status == "fail" else "why"
            lines.append(f"{o.number} {o.id}: {word}: {o.look_at}")
    n_fail = len(failed(outcomes))
    verdict = "all checks that ran passed" if not n_fail else f"{n_fail} check(s) FAILED"
    skipped = sum(o.status == "skipped" for o in outcomes)
    lines.append(f"preflight: {verdict}; {skipped} skipped")
    return "\n".join(lines)
