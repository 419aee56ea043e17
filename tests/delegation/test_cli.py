"""``peerwire db upgrade`` migrates the ledger beside the tasks; ``peerwire delegations``
refuses what it cannot do, saying why."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

from peerwire.delegation import EntryStatus, Ledger, SQLiteLedgerStore
from peerwire.types import TaskState

PEERWIRE = Path(sys.executable).with_name("peerwire")


async def _cli(*arguments: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        PEERWIRE, *arguments, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, output.decode()


async def test_db_upgrade_creates_the_ledger_table(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    code, said = await _cli("db", "upgrade", "--store", f"sqlite:{db}")
    assert code == 0, said
    with sqlite3.connect(db) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        (version,) = connection.execute("SELECT version FROM delegation_schema_version").fetchone()
    assert {"tasks", "delegations", "delegation_schema_version"} <= tables
    assert version >= 1


async def test_list_and_retry_refuse_what_they_cannot_do(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    code, said = await _cli("delegations", "list", "--store", "memory")
    assert code != 0 and "memory ledger" in said
    code, said = await _cli("delegations", "list", "--store", f"sqlite:{db}")
    assert code == 0 and "no delegations" in said
    async with Ledger(f"sqlite:{db}") as ledger:
        step = await ledger.delegate("http://127.0.0.1:9", "x", key="k", start=False)
    code, said = await _cli("delegations", "retry", step.entry.id, "--store", f"sqlite:{db}")
    assert code != 0 and "only compensations are retried" in said
    code, said = await _cli("delegations", "retry", "nope", "--store", f"sqlite:{db}")
    assert code != 0 and "no ledger entry" in said
    code, said = await _cli("delegations", "list", "--open", "--store", f"sqlite:{db}")
    assert code == 0 and step.entry.id in said and "intent" in said
    code, said = await _cli("delegations", "list", "--open", "--dead", "--store", f"sqlite:{db}")
    assert code != 0


async def test_list_prints_a_header_above_aligned_rows_and_json_stays_one_object_a_line(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ledger.db"
    async with Ledger(f"sqlite:{db}") as ledger:
        first = await ledger.delegate("http://127.0.0.1:9", "x", key="k", start=False)
        second = await ledger.delegate("http://127.0.0.1:9", "x", key="a-longer-key", start=False)
    code, said = await _cli("delegations", "list", "--store", f"sqlite:{db}")
    assert code == 0, said
    header, *rows = said.splitlines()
    assert header.split() == [
        "ID", "SCOPE", "KEY", "KIND", "AGENT", "SEEN", "STATUS", "REMOTE", "STATE", "REASON"
    ]  # fmt: skip
    assert {row.split()[0] for row in rows} == {first.entry.id, second.entry.id}
    # Every row's status sits under the STATUS heading, whatever the keys' lengths.
    column = header.index("STATUS")
    assert all(row[column:].startswith("intent") for row in rows), said
    code, said = await _cli("delegations", "list", "--json", "--store", f"sqlite:{db}")
    assert code == 0, said
    assert [json.loads(line)["key"] for line in said.splitlines()] == ["k", "a-longer-key"]


async def test_open_and_dead_together_list_every_row_not_settled(tmp_path: Path) -> None:
    """Every compensation status but completed and discarded is unsettled: ``--open`` lists
    it (between runs after a failed one included), ``--dead`` the dead letters; the
    parent's end row is never listed."""
    db = tmp_path / "ledger.db"
    store = SQLiteLedgerStore(db)
    async with Ledger(store, scope="p1") as ledger:
        step = await ledger.delegate("http://127.0.0.1:9", "x", key="k", start=False)
        for status in EntryStatus:
            await step.compensate_with("http://127.0.0.1:9", "undo", key=f"undo-{status}")
            row = await store.find("", "p1", f"undo-{status}")
            assert row is not None
            assert await store.save(row.replace(status=status)) is not None
        await ledger.record_end(TaskState.FAILED)
    code, said = await _cli("delegations", "list", "--open", "--json", "--store", f"sqlite:{db}")
    assert code == 0, said
    listed = {(r["key"], r["status"]) for r in map(json.loads, said.splitlines())}
    settled = {EntryStatus.COMPLETED, EntryStatus.DISCARDED, EntryStatus.DEAD}
    wanted = {(f"undo-{s}", s.value) for s in EntryStatus if s not in settled}
    assert listed == wanted | {("k", "intent")}
    code, said = await _cli("delegations", "list", "--dead", "--json", "--store", f"sqlite:{db}")
    assert [json.loads(line)["key"] for line in said.splitlines()] == ["undo-dead"]
