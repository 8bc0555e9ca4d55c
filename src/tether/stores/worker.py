"""A thread that owns one SQLite connection and runs jobs for the event loop. Appends queued
together (from any session of the process) share one transaction and so one fsync: each still
returns only once its transaction is committed."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Job", "Worker"]

_BATCH = 512  # appends committed together at most
_LOCKED_RETRIES = 50  # "database is locked" after busy_timeout: tries before giving up

Outcome = tuple[Any, BaseException | None]  # a job's result, or what it raised


@dataclass(slots=True)
class Job:
    """``run(connection)`` on the worker's thread; ``grouped`` jobs share a transaction."""

    run: Callable[[sqlite3.Connection], Any]
    grouped: bool
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop = field(repr=False)


class Worker:
    """One connection, one thread; ``submit`` from the event loop, await the returned future."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], name: str) -> None:
        self._connect = connect
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def submit(self, run: Callable[[sqlite3.Connection], Any], *, grouped: bool = False) -> Any:
        """Queue ``run``; an awaitable of its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._jobs.put(Job(run, grouped, future, loop))
        return future

    def close(self) -> None:
        """Finish the queued jobs, then close the connection and end the thread."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()

    # -- on the worker's thread -------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            connection = self._connect()
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while (job := self._jobs.get()) is not None:
                if not job.grouped:
                    _settle(job, *_attempt(lambda: job.run(connection)))
                    continue
                batch, stop = self._more(job)
                self._commit(connection, batch)
                if stop:
                    break
        finally:
            connection.close()

    def _more(self, first: Job) -> tuple[list[Job], bool]:
        """``first`` and the grouped jobs queued behind it (a job of another kind is run at
        once after the group, keeping the queue's order)."""
        batch = [first]
        while len(batch) < _BATCH:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:
                return batch, True
            if not job.grouped:
                self._jobs.put(job)  # rare: a read behind writes; it runs after this group
                break
            batch.append(job)
        return batch, False

    def _commit(self, connection: sqlite3.Connection, batch: list[Job]) -> None:
        """Run the batch in one transaction. Jobs run without savepoints first (the common
        case: none fails); if one fails, the batch runs again with one savepoint per job, so
        only the failed job's writes are undone."""
        outcomes, failure = _attempt(lambda: _transaction(connection, batch, savepoints=False))
        if failure is None and outcomes is None:
            outcomes, failure = _attempt(lambda: _transaction(connection, batch, savepoints=True))
        if failure is not None:
            outcomes = [(None, failure)] * len(batch)
        _settle_all(batch, outcomes)


def _transaction(
    connection: sqlite3.Connection, batch: list[Job], *, savepoints: bool
) -> list[Outcome] | None:
    """Each job's outcome, committed; None (rolled back) if a job failed without savepoints
    and others would go with it."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        outcomes = [_run_job(connection, job, savepoint=savepoints) for job in batch]
        failed = any(failure is not None for _, failure in outcomes)
        if failed and not savepoints:
            connection.execute("ROLLBACK")
            return outcomes if len(batch) == 1 else None
        connection.execute("COMMIT")
        return outcomes
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _run_job(connection: sqlite3.Connection, job: Job, *, savepoint: bool) -> Outcome:
    """One job's result or failure; with ``savepoint``, a failed job's writes are undone alone."""
    if savepoint:
        connection.execute("SAVEPOINT job")
    try:
        result = job.run(connection)
    except sqlite3.OperationalError:
        raise  # the database, not the job: the whole transaction is retried
    except Exception as exc:
        if savepoint:
            connection.execute("ROLLBACK TO job")
            connection.execute("RELEASE job")
        return None, exc
    if savepoint:
        connection.execute("RELEASE job")
    return result, None


def _attempt(run: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """``run()``, retried while another process holds the database locked (bounded)."""
    for attempt in range(_LOCKED_RETRIES):
        try:
            return run(), None
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                return None, _disk_error(exc) or exc
            time.sleep(min(0.001 * 2**attempt, 0.05))
        except Exception as exc:
            return None, exc
    return None, TimeoutError("the database stayed locked by another process")


_IOERR, _FULL = 10, 13  # SQLite's primary result codes for a failed write to the disk


def _disk_error(exc: sqlite3.OperationalError) -> OSError | None:
    """A full disk or a failed write as the ``OSError`` it is (as FileStore raises it)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code not in (_IOERR, _FULL):
        return None
    number = errno.ENOSPC if code == _FULL else errno.EIO
    failure = OSError(number, f"SQLite could not write: {exc}")
    failure.__cause__ = exc
    return failure


def _settle(job: Job, value: Any, failure: BaseException | None) -> None:
    _settle_all([job], [(value, failure)])


def _settle_all(jobs: list[Job], outcomes: list[Outcome]) -> None:
    """Hand the outcomes to the jobs' event loops: one wake-up per loop, not one per job."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Job, Outcome]]] = {}
    for job, outcome in zip(jobs, outcomes, strict=True):
        by_loop.setdefault(job.loop, []).append((job, outcome))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_resolve, settled)


def _resolve(settled: list[tuple[Job, Outcome]]) -> None:
    for job, (value, failure) in settled:
        if job.future.done():
            continue  # the caller stopped waiting; the work itself is done (or failed) anyway
        if failure is not None:
            job.future.set_exception(failure)
        else:
            job.future.set_result(value)
