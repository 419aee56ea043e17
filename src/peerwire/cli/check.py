"""``peerwire check URL``: the inspector's self-check from the command line — what about the
agent would break an interoperating client (docs/INSPECTOR.md, "Self-check")."""

from __future__ import annotations

import json as json_module
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ._app import app
from ._auth import CallerAuth, caller_auth
from ._exits import EXIT_ERROR, EXIT_OK
from ._options import ApiKeyOption, BearerOption, HeaderOption, UrlArgument
from ._render import console
from ._session import run

# (mark, style) of a finding: passed, or failed at its severity.
_MARKS = {
    "ok": ("✓", "green"),
    "error": ("✗", "bold red"),
    "warning": ("!", "yellow"),
    "info": ("i", "blue"),
}


@app.command(
    "check",
    epilog="Exit codes: 0 when no check failed with severity error, 1 otherwise (and when "
    "the self-check cannot run); 2 for bad usage.",
)
def check_command(
    url: UrlArgument,
    json: Annotated[
        bool,
        typer.Option("--json", help="Print the report as one JSON document."),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.001,
            help="Seconds each request (and each stream) to the agent may take.",
        ),
    ] = 10.0,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="Check the card only and send the agent no request: no message, no task, "
            "nothing it refuses. Default: the interfaces are probed and messages sent.",
        ),
    ] = False,
    header: HeaderOption = None,
    bearer: BearerOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Check an agent the way an interoperating client meets it, and report what would break.

    Its card (fields, interfaces, skills, security, signature, caching), every 1.0
    interface on its own binding (reachable, A2A-Version negotiation with 1.0, 1.0.3, none
    and 9.9, the errors for an unknown task and a malformed body) and, if it streams, one
    streamed message per binding (a Task first, its updates, a closing state). It sends
    nothing else: GetTask of random ids, one body that is not JSON per HTTP interface, one
    short message per binding (a task left unfinished is canceled).

    By default this acts on the agent: the messages create tasks on it, and the requests it
    refuses count in its error metrics. --read-only checks the card only and sends nothing.
    """
    auth = caller_auth(header, bearer, api_key)

    async def main() -> int:
        from ..inspect import run_self_check

        credentials = auth.credentials.credentials if auth.credentials is not None else ()
        report = await run_self_check(
            url,
            credentials=credentials,
            timeout=timeout,
            headers=auth.headers,
            read_only=read_only,
        )
        document = report.to_json()
        document["read_only"] = read_only
        if json:
            typer.echo(auth.redact(json_module.dumps(document, ensure_ascii=False)))
        else:
            _print_report(console(), document, auth, read_only)
        return EXIT_OK if report.ok else EXIT_ERROR

    run(main, auth)


def _print_report(
    out: Console, document: dict[str, object], auth: CallerAuth, read_only: bool
) -> None:
    findings = document["findings"]
    assert isinstance(findings, list)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("interface", no_wrap=True)
    table.add_column("finding")
    for finding in findings:
        mark, style = _MARKS["ok" if finding["ok"] else finding["severity"]]
        where = finding["interface"].split(" ", 1)[0] if finding["interface"] else "card"
        table.add_row(
            Text(mark, style=style),
            finding["check"],
            where,
            Text(auth.redact(finding["title"])),
        )
    out.print(Text(f"Self-check of {document['url']}", style="bold"))
    out.print(
        Text(
            "read-only: the card only, nothing sent to the agent"
            if read_only
            else "probing: requests and one message per binding were sent to the agent "
            "(--read-only sends none)",
            style="dim",
        )
    )
    out.print(table)
    problems = [f for f in findings if not f["ok"]]
    if problems:
        out.print()
    for finding in problems:
        mark, style = _MARKS[finding["severity"]]
        heading = Text(f"{mark} {finding['check']}", style=style)
        if finding["interface"]:
            heading.append(f"  {finding['interface']}", style="dim")
        out.print(heading)
        out.print(Text("  " + auth.redact(finding["title"]), style="bold"))
        if finding["detail"]:
            out.print(Text("  " + auth.redact(finding["detail"])))
        if finding["rule"]:
            out.print(Text("  rule: " + finding["rule"], style="dim"))
    failed = document["failed"]
    assert isinstance(failed, dict)
    passed = sum(1 for f in findings if f["ok"])
    summary = Text(
        f"\n{passed} passed, {failed['error']} error(s), {failed['warning']} warning(s), "
        f"{failed['info']} note(s): "
    )
    if document["ok"]:
        summary.append("nothing found that breaks an interoperating client.", style="green")
    else:
        summary.append("an interoperating client would break.", style="bold red")
    out.print(summary)
