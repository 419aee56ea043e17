"""SQLite off the event loop: one writer thread with group commit, and a pool of readers.

The writer owns the only writing connection. Work queued while it commits one transaction is
committed together in the next one, so concurrent tasks share each commit (and, with
``synchronous=FULL``, each fsync). Every piece of work runs inside its own savepoint: one that
raises (a lost compare-and-swap) is undone without taking the rest of its batch down. A piece
of work's ``then`` callback runs on the event loop once its transaction is durable, in commit
order, before its future resolves, so in-memory state follows the database even when the
coroutine that asked for the write was cancelled meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import anyio.to_thread

from ._sql import MIGRATIONS, SCHEMA_VERSION, ddl

__all__ = ["GroupCommitWriter", "ReaderPool", "connect", "migrate", "wait_durable"]

log = logging.getLogger("peerwire.stores.sqlite")

T = TypeVar("T")
Then = Callable[[Any, BaseException | None], None]

_MAX_BATCH = 1024


def connect(path: str, *, synchronous: str, read_only: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable from any thread."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    # WAL: readers never block the writer. NORMAL: a commit is in the OS page cache when it
    # returns (survives the process being killed); FULL also fsyncs it (survives power loss).
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(f"PRAGMA synchronous={synchronous}")
    if read_only:
        connection.execute("PRAGMA query_only=ON")
    return connection


def migrate(connection: sqlite3.Connection) -> int:
    """Bring the schema to ``SCHEMA_VERSION`` in one transaction; return the version found."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = connection.execute("SELECT version FROM schema_version").fetchone()
        found = 0 if row is None else int(row[0])
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"this task store was written by a newer peerwire (schema version {found}); "
                f"this version understands up to {SCHEMA_VERSION}: upgrade peerwire"
            )
        for statements in MIGRATIONS[found:]:
            for statement in statements:
                connection.execute(ddl(statement, blob="BLOB", bigint="INTEGER"))
        if row is None:
            connection.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif found != SCHEMA_VERSION:
            connection.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return found


class _Job(Generic[T]):
    __slots__ = ("future", "then", "work")

    def __init__(
        self, work: Callable[[sqlite3.Connection], T], then: Then | None, future: asyncio.Future[T]
    ) -> None:
        self.work = work
        self.then = then
        self.future = future

    def finish(self, result: Any, error: BaseException | None) -> None:
        """On the event loop: update memory first, then wake whoever waits."""
        try:
            if self.then is not None:
                self.then(result, error)
        finally:
            if not self.future.done():
                if error is None:
                    self.future.set_result(result)
                else:
                    self.future.set_exception(error)


_STOP = object()


class GroupCommitWriter:
    """The one writing connection, on its own thread; ``submit`` work, await it durable."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.commits = 0
        """Transactions committed so far (work items per commit tell how well batching works)."""

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._run, name="peerwire-sqlite-writer", daemon=True
        )
        self._thread.start()

    def submit(
        self, work: Callable[[sqlite3.Connection], T], then: Then | None = None
    ) -> asyncio.Future[T]:
        """Run ``work`` in the next transaction. ``then(result, error)`` runs on the loop first."""
        if self._loop is None or self._thread is None:
            raise RuntimeError("the SQLite task store is not open")
        future: asyncio.Future[T] = self._loop.create_future()
        self._queue.put(_Job(work, then, future))
        return future

    async def stop(self) -> None:
        """Commit what is queued, then stop the thread and close the connection."""
        thread = self._thread
        if thread is None:
            return
        self._queue.put(_STOP)
        await anyio.to_thread.run_sync(thread.join)
        self._thread = None

    def _run(self) -> None:
        try:
            while True:
                batch = [self._queue.get()]
                while len(batch) < _MAX_BATCH:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                jobs = [job for job in batch if job is not _STOP]
                if jobs:
                    self._commit(jobs)
                if len(jobs) != len(batch):
                    return
        finally:
            self._connection.close()

    def _commit(self, jobs: list[_Job[Any]]) -> None:
        connection = self._connection
        outcomes: list[tuple[_Job[Any], Any, BaseException | None]] = []
        try:
            connection.execute("BEGIN IMMEDIATE")
            for job in jobs:
                connection.execute("SAVEPOINT job")
                try:
                    result = job.work(connection)
                except Exception as exc:
                    connection.execute("ROLLBACK TO job")
                    connection.execute("RELEASE job")
                    outcomes.append((job, None, exc))
                else:
                    connection.execute("RELEASE job")
                    outcomes.append((job, result, None))
            connection.execute("COMMIT")
            self.commits += 1
        except Exception as exc:  # the whole batch failed: every waiter hears why
            log.error("peerwire: the SQLite task store could not commit: %s", exc)
            with contextlib.suppress(sqlite3.Error):
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
            outcomes = [(job, None, exc) for job in jobs]
        loop = self._loop
        assert loop is not None
        try:
            # One wake-up of the loop per batch, not per write.
            loop.call_soon_threadsafe(_finish_all, outcomes)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            return


def _finish_all(outcomes: list[tuple[_Job[Any], Any, BaseException | None]]) -> None:
    for job, result, error in outcomes:
        try:
            job.finish(result, error)
        except Exception:  # one broken callback must not strand the rest of the batch
            log.exception("peerwire: updating memory after a commit failed")


async def wait_durable(future: asyncio.Future[T]) -> T:
    """Await a submitted write. Cancelling the waiter does not cancel the write."""
    try:
        await asyncio.wait((future,))
    except asyncio.CancelledError:
        future.add_done_callback(_consume)
        raise
    return future.result()


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug("peerwire: a write whose caller went away failed: %s", future.exception())


class ReaderPool:
    """A few read-only connections; each read runs in a worker thread in its own transaction."""

    def __init__(self, connections: list[sqlite3.Connection]) -> None:
        self._idle: asyncio.Queue[sqlite3.Connection] = asyncio.Queue()
        self._all = list(connections)
        for connection in connections:
            self._idle.put_nowait(connection)

    async def run(self, read: Callable[[sqlite3.Connection], T]) -> T:
        connection = await self._idle.get()
        try:
            # Not cancellable: the connection goes back only once its thread is done with it.
            return await anyio.to_thread.run_sync(_in_transaction, connection, read)
        finally:
            self._idle.put_nowait(connection)

    async def close(self) -> None:
        for connection in self._all:
            await anyio.to_thread.run_sync(connection.close)
        self._all.clear()


def _in_transaction(connection: sqlite3.Connection, read: Callable[[sqlite3.Connection], T]) -> T:
    # One read transaction: every statement of ``read`` sees the same committed state.
    connection.execute("BEGIN")
    try:
        return read(connection)
    finally:
        connection.execute("COMMIT")
