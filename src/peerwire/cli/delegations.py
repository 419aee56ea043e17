"""``peerwire delegations list|retry --store SPEC``: what the delegation ledger holds.

The ledger is the one beside a server's tasks (the same ``--store`` spec as ``peerwire
serve``: ``sqlite:PATH`` or ``postgresql://...``) or a ``Ledger``'s own file. ``list --dead``
is the dead-letter list: compensations that failed every attempt; ``retry ID`` runs one of
them once more from this process and records what came of it.
"""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

from ..delegation import (
    Connector,
    Delegations,
    EntryStatus,
    LedgerEntry,
    LedgerStore,
    MemoryLedgerStore,
    describe_entry,
    open_ledger_store,
)
from ..delegation.entries import unsettled
from ._app import app
from ._exits import EXIT_ERROR
from ._session import CommandError, run

delegations_app = typer.Typer(
    name="delegations",
    help="List the delegation ledger (open calls, dead letters) and retry dead letters.",
    no_args_is_help=True,
)
app.add_typer(delegations_app)

StoreOption = Annotated[
    str,
    typer.Option(
        help="The ledger: the server's store (sqlite:PATH, postgresql://...) or a Ledger's file.",
        show_default=False,
    ),
]


def _store(spec: str) -> LedgerStore:
    try:
        store = open_ledger_store(spec)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if isinstance(store, MemoryLedgerStore):
        raise CommandError("a memory ledger lives in its process only: nothing to list here")
    return store


@delegations_app.command("list")
def list_command(
    store: StoreOption,
    open_: Annotated[
        bool,
        typer.Option(
            "--open",
            help="Only what is not settled: steps still open, compensations registered, "
            "due, running or between runs.",
        ),
    ] = False,
    dead: Annotated[
        bool, typer.Option("--dead", help="Only dead letters (compensations that gave up).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List the ledger's entries, by scope (the parent task, or the job) and order."""
    if open_ and dead:
        raise typer.BadParameter("--open and --dead exclude each other")
    statuses = {EntryStatus.DEAD} if dead else None

    async def main() -> int:
        ledger = _store(store)
        await ledger.open()
        try:
            found = await ledger.entries(statuses=statuses)
        finally:
            await ledger.close()
        # (A parent's end row records a decision, not a delegation: the store leaves it out.)
        entries = [e for e in found if not open_ or unsettled(e)]
        if as_json:
            for entry in entries:
                typer.echo(json.dumps(_as_json(entry)))
        elif entries:
            for line in _table(entries):
                typer.echo(line)
        else:
            typer.echo("peerwire: no delegations" + (" open" if open_ else " dead" if dead else ""))
        return 0

    run(main)


@delegations_app.command("retry")
def retry_command(
    entry_id: Annotated[str, typer.Argument(help="The entry's id (see `list --dead`).")],
    store: StoreOption,
) -> None:
    """Run a dead (or failed) compensation once more and record its outcome."""

    async def main() -> int:
        ledger = _store(store)
        await ledger.open()
        connector = Connector()
        try:
            entry = await ledger.get(entry_id)
            if entry is None:
                raise CommandError(f"no ledger entry with id {entry_id!r}")
            if entry.kind != "compensation":
                raise CommandError(
                    f"{entry_id} is a step, not a compensation: only compensations are retried"
                )
            scope = Delegations(ledger, connector, scope=entry.scope, tenant=entry.tenant)
            outcome = await scope.retry_compensation(entry_id)
            after = await ledger.get(entry_id)
        finally:
            await connector.aclose()
            await ledger.close()
        typer.echo(f"peerwire: {outcome.describe()}")
        if after is not None:
            typer.echo(_line(after))
        return 0 if outcome.ok else EXIT_ERROR

    run(main)


def _seen(entry: LedgerEntry) -> str:
    if not entry.observed_at:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(entry.observed_at))


def _line(entry: LedgerEntry) -> str:
    """One entry on its own (after a retry): labelled fields, no table to read it against."""
    return (
        f"{entry.id}  {entry.scope}  {entry.key}  {entry.kind}  {entry.agent}  "
        f"seen={_seen(entry)}  {describe_entry(entry)}"
    )


_COLUMNS = ("ID", "SCOPE", "KEY", "KIND", "AGENT", "SEEN", "STATUS", "REMOTE", "STATE", "REASON")


def _table(entries: list[LedgerEntry]) -> list[str]:
    """The listing: a header row, then one row per entry, columns padded to line up."""
    rows = [_COLUMNS] + [
        (
            entry.id,
            entry.scope,
            entry.key,
            entry.kind,
            entry.agent,
            _seen(entry),
            entry.status.value,
            entry.remote_task_id or "-",
            entry.remote_state.removeprefix("TASK_STATE_").lower() or "-",
            " ".join(entry.reason.split()) or "-",
        )
        for entry in entries
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
        + "  "
        + row[-1]
        for row in rows
    ]


def _as_json(entry: LedgerEntry) -> dict[str, object]:
    return {
        "id": entry.id,
        "tenant": entry.tenant,
        "scope": entry.scope,
        "key": entry.key,
        "kind": entry.kind,
        "agent": entry.agent,
        "status": entry.status.value,
        "remoteTaskId": entry.remote_task_id,
        "remoteState": entry.remote_state,
        "observedAt": entry.observed_at,
        "messageId": entry.message_id,
        "contextId": entry.context_id,
        "follow": entry.follow,
        "reason": entry.reason,
        "cause": entry.cause,
        "compensates": entry.compensates,
        "runs": entry.runs,
    }
