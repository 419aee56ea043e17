"""SQLite off the event loop: one writer thread with group commit, and a pool of readers.

The writer owns the only writing connection. Work queued while it commits one transaction is
committed together in the next one, so concurrent tasks share each commit (and, with
``synchronous=FULL``, each fsync). A batch first runs as one plain transaction; if a piece of
work raises (a lost compare-and-swap), the batch is rolled back and run again with each piece
in its own savepoint, so the failure is undone without taking the rest of its batch down (work
must therefore be safe to run twice: it only reads and writes through the connection). A piece
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

__all__ = [
    "Checkpointer",
    "GroupCommitWriter",
    "ReaderPool",
    "connect",
    "leave_checkpoints_to_thread",
    "migrate",
]

log = logging.getLogger("peerwire.stores.sqlite")

T = TypeVar("T")
Then = Callable[[Any, BaseException | None], None]

_MAX_BATCH = 1024
# Commits between two nudges of the checkpointer: about 400 pages of log at a dozen pages each.
_CHECKPOINT_EVERY = 32
# The writer's own automatic checkpoint, a backstop (SQLite's default is 1000 pages).
_BACKSTOP_PAGES = 4000
# A log this long has outrun both: the checkpointer restarts it (see ``Checkpointer``).
_RESTART_PAGES = _BACKSTOP_PAGES


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


def leave_checkpoints_to_thread(writer: sqlite3.Connection) -> None:
    """Keep only a backstop of SQLite's automatic checkpoint on the writing connection: the
    ``Checkpointer`` thread does the copying (see there). When the log restarts, the file is
    cut back to the backstop's size: one long stretch without a restart does not leave it
    large for good."""
    writer.execute(f"PRAGMA wal_autocheckpoint={_BACKSTOP_PAGES}")
    (page_size,) = writer.execute("PRAGMA page_size").fetchone()
    writer.execute(f"PRAGMA journal_size_limit={_BACKSTOP_PAGES * int(page_size)}")


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
            future = self.future
            if not future.done():
                if error is None:
                    future.set_result(result)
                else:
                    future.set_exception(error)
            elif error is not None:  # its waiter was cancelled: nobody else will hear of it
                log.debug("peerwire: a write whose caller went away failed: %s", error)


class _JobFailed(Exception):
    """A piece of work raised in a batch run without savepoints: run the batch again."""


_STOP = object()
_Outcome = tuple[_Job[Any], Any, BaseException | None]


class Checkpointer:
    """Copies the write-ahead log into the database file, on a thread of its own.

    SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that
    commit, and every write queued behind it, waited while the log was copied and the database
    file fsynced. Here the writer nudges this thread every ``_CHECKPOINT_EVERY`` commits and a
    PASSIVE checkpoint copies the log alongside later commits (WAL lets them run at once). The
    log restarts from its beginning only after a checkpoint that finished before the next write
    began, which a steady stream of commits rarely allows: so the writer keeps an automatic
    checkpoint of its own at ``_BACKSTOP_PAGES``, which finds the log mostly copied already and
    lets it restart, bounding the file (about 16 MB at 4 KB pages). Under load the two can
    keep missing each other (the backstop is skipped while this thread holds the checkpoint
    lock, through a slow fsync): past ``_RESTART_PAGES`` this thread restarts the log itself.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        # A connection of its own, with the writer's ``synchronous``: a checkpoint fsyncs the log
        # before copying it and the database file after, as that setting says.
        self._connection = connection
        self._due = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name="peerwire-sqlite-checkpointer", daemon=True
        )
        self._thread.start()

    def nudge(self) -> None:
        """From the writer thread: enough was committed since the last checkpoint."""
        self._due.set()

    async def stop(self) -> None:
        """Stop the thread and close the connection (SQLite checkpoints as the last one goes)."""
        thread = self._thread
        if thread is None:
            self._connection.close()
            return
        self._stopping = True
        self._due.set()
        await anyio.to_thread.run_sync(thread.join)
        self._thread = None

    def _run(self) -> None:
        try:
            while True:
                self._due.wait()
                self._due.clear()
                if self._stopping:
                    return
                try:
                    self._checkpoint()
                except sqlite3.Error as exc:  # the writer's backstop checkpoint still runs
                    log.warning("peerwire: a SQLite checkpoint failed: %s", exc)
        finally:
            self._connection.close()

    def _checkpoint(self) -> None:
        (_, frames, _) = self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if frames > _RESTART_PAGES:
            # The log has outgrown the backstop without restarting: every checkpoint ended
            # after the next write had begun. RESTART waits for the write in progress, copies
            # the little that is left and holds new writes back only for that, so the next
            # write starts the log from its beginning (and cuts the file back).
            self._connection.execute("PRAGMA wal_checkpoint(RESTART)")


class GroupCommitWriter:
    """The one writing connection, on its own thread; ``submit`` work, await it durable.

    The future ``submit`` returns is its caller's alone: awaiting it directly is cheap, and
    cancelling it (the caller going away) does not stop the write or its ``then`` callback.
    """

    def __init__(
        self, connection: sqlite3.Connection, checkpointer: Checkpointer | None = None
    ) -> None:
        self._connection = connection
        self._checkpointer = checkpointer
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.commits = 0
        """Transactions committed so far (work items per commit tell how well batching works)."""

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._checkpointer is not None:
            self._checkpointer.start()
        self._thread = threading.Thread(
            target=self._run, name="peerwire-sqlite-writer", daemon=True
        )
        self._thread.start()

    def submit(
        self, work: Callable[[sqlite3.Connection], T], then: Then | None = None
    ) -> asyncio.Future[T]:
        """Run ``work`` in the next transaction. ``then(result, error)`` runs on the loop first."""
        loop = self._loop
        if loop is None or self._thread is None:
            raise RuntimeError("the SQLite task store is not open")
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(_Job(work, then, future))
        return future

    async def stop(self) -> None:
        """Commit what is queued, then stop the threads and close the connections."""
        thread = self._thread
        if thread is None:
            return
        self._queue.put(_STOP)
        await anyio.to_thread.run_sync(thread.join)
        self._thread = None
        if self._checkpointer is not None:
            await self._checkpointer.stop()

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
        try:
            try:
                outcomes = self._run_plain(jobs)
            except _JobFailed:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                outcomes = self._run_isolated(jobs)
            connection.execute("COMMIT")
            self.commits += 1
            if self._checkpointer is not None and self.commits % _CHECKPOINT_EVERY == 0:
                self._checkpointer.nudge()
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

    def _run_plain(self, jobs: list[_Job[Any]]) -> list[_Outcome]:
        """The batch in one transaction, no savepoints: two statements fewer per job, and
        SQLite keeps no undo copy of the pages each job touches. Raises ``_JobFailed``."""
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")
        outcomes: list[_Outcome] = []
        for job in jobs:
            try:
                outcomes.append((job, job.work(connection), None))
            except Exception as exc:
                raise _JobFailed from exc
        return outcomes

    def _run_isolated(self, jobs: list[_Job[Any]]) -> list[_Outcome]:
        """The batch again, each job in a savepoint: a failing one is undone on its own."""
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")
        outcomes: list[_Outcome] = []
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
        return outcomes


def _finish_all(outcomes: list[_Outcome]) -> None:
    for job, result, error in outcomes:
        try:
            job.finish(result, error)
        except Exception:  # one broken callback must not strand the rest of the batch
            log.exception("peerwire: updating memory after a commit failed")


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
