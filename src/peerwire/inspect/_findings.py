"""What a self-check reports: findings, one per thing checked, and the report that holds them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Finding", "SelfCheckReport", "Severity", "failed", "passed"]

Severity = Literal["error", "warning", "info"]
"""``error``: an interoperating client breaks (a spec MUST, or no way to tell what happened);
``warning``: a SHOULD, or something a careful client works around; ``info``: worth knowing."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One result: ``check`` is its id (``card.fields``, ``errors.unknown_task``, ...), ``ok``
    whether it passed, ``severity`` how much a failure matters (on a passed finding: how much
    it would have), ``title`` one line, ``detail`` what was seen and why it matters.
    ``interface`` names the interface it is about ("JSONRPC http://host/"), empty for the
    card; ``rule`` is the spec rule checked."""

    check: str
    ok: bool
    severity: Severity
    title: str
    detail: str = ""
    interface: str = ""
    rule: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "ok": self.ok,
            "severity": self.severity,
            "title": self.title,
            "detail": self.detail,
            "interface": self.interface,
            "rule": self.rule,
        }


def passed(check: str, title: str, detail: str = "", **where: str) -> Finding:
    """A finding of a check that passed (severity ``info``: nothing to act on)."""
    return Finding(check, True, "info", title, detail, **where)


def failed(check: str, severity: Severity, title: str, detail: str = "", **where: str) -> Finding:
    return Finding(check, False, severity, title, detail, **where)


@dataclass(slots=True)
class SelfCheckReport:
    """Every finding of one self-check of the agent at ``url``, in the order checked."""

    url: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No finding of severity ``error`` failed: an interoperating client would not break."""
        return not any(f.severity == "error" and not f.ok for f in self.findings)

    @property
    def problems(self) -> list[Finding]:
        """The findings that did not pass, errors first."""
        order = {"error": 0, "warning": 1, "info": 2}
        return sorted((f for f in self.findings if not f.ok), key=lambda f: order[f.severity])

    def by_check(self, check: str) -> list[Finding]:
        return [f for f in self.findings if f.check == check]

    def extend(self, findings: Iterable[Finding]) -> None:
        self.findings.extend(findings)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready builtins."""
        counts = {
            severity: sum(1 for f in self.findings if not f.ok and f.severity == severity)
            for severity in ("error", "warning", "info")
        }
        return {
            "url": self.url,
            "ok": self.ok,
            "failed": counts,
            "findings": [f.to_json() for f in self.findings],
        }
