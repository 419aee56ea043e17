"""The checks of one interface: it answers, it negotiates versions, its errors have the shape
and codes of the A2A error mapping, spec §5.4, §9.5, §10, §11.6 (``interfaces.reachable``,
``version.*``, ``errors.*``).

All of them read answers to GetTask of a task that does not exist, sent with ``A2A-Version``
1.0, 1.0.3, none and 9.9: one request shape, so any difference between the answers is the
version negotiation's doing.
"""

from __future__ import annotations

import asyncio

from ..errors import (
    JSONParseError,
    MethodNotFoundError,
    TaskNotFoundError,
    VersionNotSupportedError,
)
from ..types import Binding
from ._findings import Finding, failed, passed
from ._probes import Answer, Prober

__all__ = ["interface_findings"]

# What each binding must answer (A2A spec §5.4, the 1.0.1 mapping).
_NOT_FOUND = {
    Binding.JSONRPC: "JSON-RPC error -32001",
    Binding.HTTP_JSON: "HTTP 404 with ErrorInfo reason TASK_NOT_FOUND",
    Binding.GRPC: "gRPC NOT_FOUND with ErrorInfo reason TASK_NOT_FOUND",
}
_VERSION_REFUSAL = {
    Binding.JSONRPC: "JSON-RPC error -32009",
    Binding.HTTP_JSON: "HTTP 400 with ErrorInfo reason VERSION_NOT_SUPPORTED",
    Binding.GRPC: "gRPC FAILED_PRECONDITION with ErrorInfo reason VERSION_NOT_SUPPORTED",
}


async def interface_findings(prober: Prober) -> tuple[list[Finding], bool]:
    """The findings of one interface, and whether it answered (streams are checked then)."""
    interface = prober.interface
    where = {"interface": interface.label}
    current = await prober.get_task("1.0")
    reachable = _reachable(current, interface.binding, where)
    if not reachable.ok or current.auth_refused:
        return [reachable], False
    patch, missing, unsupported, malformed = await asyncio.gather(
        prober.get_task("1.0.3"),
        prober.get_task(None),
        prober.get_task("9.9"),
        prober.malformed(),
    )
    binding = interface.binding
    findings = [
        reachable,
        _version_current(current, where),
        _unknown_task(current, binding, where),
        _version_patch(patch, current, where),
        _version_missing(missing, where),
        _version_unsupported(unsupported, binding, where),
    ]
    if malformed is not None:
        findings.append(_bad_request(malformed, binding, where))
    return findings, True


def _reachable(answer: Answer, binding: str, where: dict[str, str]) -> Finding:
    rule = "A2A spec §5.1: each interface MUST be reachable at its URL with its binding"
    if answer.auth_refused:
        return failed(
            "interfaces.reachable",
            "warning",
            f"The {binding} interface wants credentials",
            f"GetTask was refused: {answer.describe()}. Give credentials to check the rest "
            "of this interface.",
            rule=rule,
            **where,
        )
    if not answer.reached:
        return failed(
            "interfaces.reachable",
            "error",
            f"The {binding} interface does not answer as {binding}",
            f"GetTask (A2A-Version 1.0): {answer.describe()}. A client that picks this "
            "interface cannot talk to the agent.",
            rule=rule,
            **where,
        )
    return passed(
        "interfaces.reachable",
        f"The {binding} interface answers",
        f"GetTask (A2A-Version 1.0): {answer.describe()}",
        rule=rule,
        **where,
    )


def _version_current(answer: Answer, where: dict[str, str]) -> Finding:
    rule = "A2A spec §3.6: a server MUST process a request with the version it asks for"
    if answer.is_error(VersionNotSupportedError):
        return failed(
            "version.current",
            "error",
            "A2A-Version: 1.0 is refused",
            f"The interface declares 1.0 but answers {answer.describe()}.",
            rule=rule,
            **where,
        )
    return passed(
        "version.current", "A2A-Version: 1.0 is accepted", answer.summary, rule=rule, **where
    )


def _unknown_task(answer: Answer, binding: str, where: dict[str, str]) -> Finding:
    rule = "A2A spec §3.1.3, §5.4: GetTask of an unknown id is TaskNotFoundError"
    expected = _NOT_FOUND.get(binding, "TaskNotFoundError")
    if answer.error is None:
        return failed(
            "errors.unknown_task",
            "error",
            "GetTask of a task that does not exist succeeded",
            f"Expected {expected}; got {answer.describe()}.",
            rule=rule,
            **where,
        )
    wrong_code = _not_found_code_problem(answer, binding)
    if not answer.is_error(TaskNotFoundError) or wrong_code:
        name = type(answer.error).__name__
        return failed(
            "errors.unknown_task",
            "error",
            f"An unknown task is answered with {wrong_code or name}, not TaskNotFoundError",
            f"Expected {expected}; got {answer.describe()}. Clients tell a missing task "
            "from other failures by this code.",
            rule=rule,
            **where,
        )
    shape = [*answer.shape, *answer.info]
    if answer.reason is not None and answer.reason != "TASK_NOT_FOUND":
        shape.append(f"its ErrorInfo reason is {answer.reason!r}, not 'TASK_NOT_FOUND'")
    if shape:
        return failed(
            "errors.unknown_task",
            "warning",
            "TaskNotFoundError has the wrong shape",
            "; ".join(shape) + f". Got {answer.describe()}.",
            rule=rule + "; shapes: §9.5, §10, §11.6",
            **where,
        )
    return passed(
        "errors.unknown_task",
        "An unknown task is TaskNotFoundError",
        f"{answer.summary}, as {expected}.",
        rule=rule,
        **where,
    )


def _not_found_code_problem(answer: Answer, binding: str) -> str:
    """The wrong binding-level code of a TaskNotFoundError ('' when it is right)."""
    if binding == Binding.HTTP_JSON and answer.http_status != 404:
        return f"HTTP {answer.http_status}"
    if binding == Binding.GRPC and answer.status_name != "NOT_FOUND":
        return answer.summary
    if binding == Binding.JSONRPC and answer.summary != "JSON-RPC error -32001":
        return answer.summary
    return ""


def _version_patch(answer: Answer, current: Answer, where: dict[str, str]) -> Finding:
    rule = "A2A spec §3.6: patch numbers MUST be ignored when negotiating (1.0.3 is 1.0)"
    if answer.is_error(VersionNotSupportedError) or not answer.reached:
        return failed(
            "version.patch",
            "error",
            "A2A-Version: 1.0.3 is refused",
            f"Got {answer.describe()}. A client that writes its full version is turned away.",
            rule=rule,
            **where,
        )
    if type(answer.error) is not type(current.error):
        return failed(
            "version.patch",
            "warning",
            "A2A-Version: 1.0.3 is answered unlike 1.0",
            f"1.0: {current.describe()}; 1.0.3: {answer.describe()}.",
            rule=rule,
            **where,
        )
    return passed(
        "version.patch", "A2A-Version: 1.0.3 is taken as 1.0", answer.summary, rule=rule, **where
    )


def _version_missing(answer: Answer, where: dict[str, str]) -> Finding:
    rule = (
        "A2A spec §3.6: a missing A2A-Version MUST be treated as 0.3 (a 1.0-only interface "
        "answers VersionNotSupportedError)"
    )
    if answer.is_error(VersionNotSupportedError):
        return passed(
            "version.missing",
            "A request without A2A-Version is taken as 0.3",
            f"It is answered VersionNotSupportedError ({answer.summary}).",
            rule=rule,
            **where,
        )
    if answer.is_error(MethodNotFoundError):
        return passed(
            "version.missing",
            "A request without A2A-Version is taken as 0.3",
            f"0.3 has no GetTask: {answer.summary}.",
            rule=rule,
            **where,
        )
    if answer.error is None or answer.is_error(TaskNotFoundError):
        # A 1.0 client always sends the header, so 1.0 callers do not break; a 0.3 caller
        # (which sends none) is served with 1.0 semantics it does not expect. The draft
        # conformance suite even asks for this leniency: a warning, not an error.
        return failed(
            "version.missing",
            "warning",
            "A request without A2A-Version is served as 1.0",
            f"Got {answer.describe()}. The spec says a missing header means 0.3: answer "
            "VersionNotSupportedError, or serve it as 0.3.",
            rule=rule,
            **where,
        )
    return failed(
        "version.missing",
        "warning",
        "A request without A2A-Version gets an unexpected answer",
        f"Expected VersionNotSupportedError (or a 0.3 answer); got {answer.describe()}.",
        rule=rule,
        **where,
    )


def _version_unsupported(answer: Answer, binding: str, where: dict[str, str]) -> Finding:
    rule = "A2A spec §3.6: a version the interface does not support MUST be refused"
    expected = _VERSION_REFUSAL.get(binding, "VersionNotSupportedError")
    if not answer.is_error(VersionNotSupportedError):
        if answer.error is None or answer.is_error(TaskNotFoundError):
            title = "A2A-Version: 9.9 is served as if it were 1.0"
        else:
            title = "A2A-Version: 9.9 is not refused with VersionNotSupportedError"
        return failed(
            "version.unsupported",
            "error",
            title,
            f"Expected {expected}; got {answer.describe()}. A client asking for a version "
            "the agent lacks cannot tell it got another.",
            rule=rule,
            **where,
        )
    problems = [*answer.shape, *answer.info]
    if binding == Binding.JSONRPC and answer.summary != "JSON-RPC error -32009":
        problems.append(f"it is {answer.summary}, not -32009")
    if binding == Binding.HTTP_JSON and answer.http_status != 400:
        problems.append(f"it is HTTP {answer.http_status}, not 400")
    if binding == Binding.GRPC and answer.status_name != "FAILED_PRECONDITION":
        problems.append(
            f"it is {answer.summary}, not FAILED_PRECONDITION (1.0.0 used "
            "UNIMPLEMENTED; 1.0.1 FAILED_PRECONDITION)"
        )
    if problems:
        return failed(
            "version.unsupported",
            "warning",
            "VersionNotSupportedError has the wrong shape",
            "; ".join(problems) + f". Got {answer.describe()}.",
            rule=rule,
            **where,
        )
    return passed(
        "version.unsupported",
        "A2A-Version: 9.9 is refused",
        f"VersionNotSupportedError: {answer.summary}.",
        rule=rule,
        **where,
    )


def _bad_request(answer: Answer, binding: str, where: dict[str, str]) -> Finding:
    if binding == Binding.JSONRPC:
        rule = "JSON-RPC 2.0 / A2A spec §9.5: a body that is not JSON is -32700, id null"
        expected = "-32700 (JSONParseError) in an HTTP 200 envelope with id null"
        if not answer.reached:
            return failed(
                "errors.bad_request",
                "error",
                "A malformed body gets no JSON-RPC error",
                f"Expected {expected}; got {answer.describe()}.",
                rule=rule,
                **where,
            )
        if not answer.is_error(JSONParseError):
            got = type(answer.error).__name__ if answer.error else "a result"
            return failed(
                "errors.bad_request",
                "warning",
                f"A malformed body is answered with {got}",
                f"Expected {expected}; got {answer.describe()}.",
                rule=rule,
                **where,
            )
    else:
        rule = "A2A spec §11.6: a malformed body is HTTP 400 with a google.rpc.Status"
        expected = 'HTTP 400 {"error": {code: 400, status: INVALID_ARGUMENT, message, details}}'
        status = answer.http_status
        if status is None or status >= 500 or not answer.reached:
            return failed(
                "errors.bad_request",
                "error",
                "A malformed body gets no A2A error",
                f"Expected {expected}; got {answer.describe()}. A server error tells the "
                "client to retry what can never succeed.",
                rule=rule,
                **where,
            )
        if status != 400:
            return failed(
                "errors.bad_request",
                "warning",
                f"A malformed body is answered HTTP {status}",
                f"Expected {expected}; got {answer.describe()}.",
                rule=rule,
                **where,
            )
    # Only the structure: a malformed body is no A2A error, so no ErrorInfo reason is due.
    shape = list(answer.shape)
    if binding == Binding.HTTP_JSON and answer.status_name not in ("", "INVALID_ARGUMENT"):
        shape.append(f"error.status is {answer.status_name}, not INVALID_ARGUMENT")
    if shape:
        return failed(
            "errors.bad_request",
            "warning",
            "The malformed-body error has the wrong shape",
            "; ".join(shape) + f". Got {answer.describe()}.",
            rule=rule,
            **where,
        )
    return passed(
        "errors.bad_request",
        "A malformed body gets the right error",
        f"{answer.summary}.",
        rule=rule,
        **where,
    )
