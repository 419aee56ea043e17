"""``peerwire db upgrade --store SPEC``: bring a task store's schema up to date.

Stores migrate themselves when they open, so this is optional: it lets a deployment upgrade
the schema as a step of its own (before rolling out new replicas, or with stores opened with
``migrate=False``). Running it again, or from several machines at once, is harmless.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..delegation import open_ledger_store
from ..server.stores import MemoryTaskStore, SQLiteTaskStore, open_store
from ..server.stores._sql import SCHEMA_VERSION
from ._app import app
from ._session import CommandError, run

db_app = typer.Typer(
    name="db",
    help="Manage the task store's schema.",
    no_args_is_help=True,
)
app.add_typer(db_app)


@db_app.command("upgrade")
def upgrade_command(
    store: Annotated[
        str,
        typer.Option(
            help="The store: postgresql://USER@HOST:PORT/DB[?schema=NAME] or sqlite:PATH.",
            show_default=False,
        ),
    ],
) -> None:
    """Apply the schema migrations the store has not seen yet."""

    async def main() -> int:
        try:
            task_store = open_store(store)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if isinstance(task_store, MemoryTaskStore):
            raise CommandError("a memory store has no schema: nothing to upgrade")
        try:
            if isinstance(task_store, SQLiteTaskStore):
                # The SQLite store migrates in open(), without saying from which version.
                await task_store.open()
                await task_store.close()
                await _upgrade_ledger(store)
                typer.echo(f"peerwire: {task_store.path} is at schema version {SCHEMA_VERSION}")
                return 0
            from ..server.stores.postgres import PostgresTaskStore  # the "postgres" extra

            assert isinstance(task_store, PostgresTaskStore)
            found, now = await task_store.upgrade()
        except RuntimeError as exc:  # a schema written by a newer peerwire
            raise CommandError(str(exc)) from None
        await _upgrade_ledger(store)
        if found == now:
            typer.echo(f"peerwire: schema {task_store.schema} is at version {now}: nothing to do")
        else:
            typer.echo(
                f"peerwire: upgraded schema {task_store.schema} from version {found} to {now}"
            )
        return 0

    run(main)


async def _upgrade_ledger(spec: str) -> None:
    """The delegation ledger beside the tasks (its own table and version) migrates as it
    opens, like the SQLite task store (docs/DELEGATION.md)."""
    ledger = open_ledger_store(spec)
    await ledger.open()
    await ledger.close()
