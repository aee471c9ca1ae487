"""The COPY pipeline: a child process generates records while this one streams them into PostgreSQL's
COPY, table by table, inside the caller's transaction — generation and loading use a core each. A small
job (a scaled-down dataset, a reset's loans) is generated here instead, as the COPY reads it.

Secondary indexes of a table that grows by more than it holds are dropped before its COPY and rebuilt
right after it (still in the transaction: a failure or interrupt restores them with everything else),
while the generator runs ahead into a buffer. Building an index once over all rows is several times
cheaper than maintaining it row by row.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

import psycopg
from psycopg import sql
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Column
from rich.text import Text

from folioperf.errors import FolioperfError
from folioperf.seed import generate
from folioperf.seed.layout import LoadPlan, drop_indexes, set_triggers

BUFFER_CHUNKS = 256  # messages of up to generate.CHUNK_CHARS each: at most ~128 MB buffered
# A job up to this many rows is generated in the caller's process: a generator process costs more to start
# (an interpreter and its imports, ~0.3 CPU-s and as long in wall time) than its core saves on so few rows.
INLINE_ROWS = 20_000


@dataclass
class TableStats:
    key: str
    label: str
    rows: int
    seconds: float
    bypass_triggers: bool
    indexes_rebuilt: int = 0
    index_seconds: float = 0.0


class RowsPerSecond(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:>9,.0f} rows/s" if speed else "", style="progress.data.speed")


def progress_bar(console: Console) -> Progress:
    """A bar per table, within the console's width (80 columns too): the figures keep their widths, the table's
    name (`{tenant}_{module}.{table}`, up to 52 characters) gets what is left, cut with … when it must be."""
    figures = (("M/N", 15), ("bar", 10), ("rate", 16), ("time", 7))
    name = min(52, max(12, console.width - sum(w for _, w in figures) - len(figures)))
    return Progress(
        TextColumn("{task.description}", table_column=Column(width=name, no_wrap=True, overflow="ellipsis")),
        BarColumn(bar_width=10), MofNCompleteColumn(table_column=Column(width=15, justify="right", no_wrap=True)),
        RowsPerSecond(table_column=Column(width=16, no_wrap=True)),
        TimeElapsedColumn(table_column=Column(width=7, no_wrap=True)),
        console=console, transient=True,  # the summary table replaces the bars; an error stays one line
    )


def generator(rows: int) -> GeneratorProcess | InlineGenerator:
    """What generates a job of about `rows` records: this process when it is small, else a generator
    process, started now so that its imports overlap with the caller's database work."""
    return InlineGenerator() if rows <= INLINE_ROWS else GeneratorProcess()


class InlineGenerator:
    """A small job's records, generated in this process as the COPY asks for them (Ctrl-C interrupts
    the generation like the COPY)."""

    def messages(self, job: generate.Job) -> Iterator[tuple]:
        return generate.messages(job)

    def close(self) -> None:
        pass


class GeneratorProcess:
    """The record generator in a spawned process (it inherits no database connection or thread). It
    ignores Ctrl-C: the parent handles it (rolls back) and stops the child. As with any spawned
    multiprocessing child, a script using it needs `if __name__ == "__main__":`."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=generate.child_main, args=(child,), name="folioperf-seed-generator", daemon=True)
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None  # the child inherits "ignore"
        try:
            self._proc.start()
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        child.close()
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None

    def messages(self, job: generate.Job) -> Iterator[tuple]:
        """The job's messages. A reader thread drains the pipe into a buffer of up to BUFFER_CHUNKS chunks,
        so the generator runs ahead while PostgreSQL is busy (e.g. building a table's indexes)."""
        self._conn.send(job)
        buffer: queue.Queue = queue.Queue(BUFFER_CHUNKS)
        stop = self._stop

        def pump() -> None:  # ends at "done", at the generator's end (EOF) or when told to stop
            while not stop.is_set():
                try:
                    msg = self._conn.recv()
                except Exception:
                    msg = ("error", f"the record generator stopped unexpectedly (exit code {self._proc.exitcode})")
                while not stop.is_set():
                    try:
                        buffer.put(msg, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if msg[0] in ("done", "error"):
                    return

        self._reader = threading.Thread(target=pump, name="folioperf-seed-reader", daemon=True)
        self._reader.start()
        try:
            while True:
                msg = buffer.get()
                if msg[0] == "error":
                    raise FolioperfError(f"generating records failed: {msg[1]}")
                yield msg
                if msg[0] == "done":
                    return
        finally:
            stop.set()

    def close(self) -> None:
        """Stop the generator, then the reader (the generator's exit ends its recv), then the pipe."""
        self._stop.set()
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=10)
        self._conn.close()


def copy_tables(conn: psycopg.Connection, plans: dict[str, LoadPlan], messages: Iterable[tuple],
                progress: Progress | None = None) -> list[TableStats]:
    """COPY every table the messages carry, in their order, with each table's plan (triggers, indexes)."""
    stats: list[TableStats] = []
    cursor = conn.cursor()
    it = iter(messages)
    bypassing = False  # the session starts with triggers on; only a superuser may switch them
    for msg in it:
        if msg[0] == "done":
            break
        _, key, total = msg
        plan = plans[key]
        if plan.bypass_triggers != bypassing:
            set_triggers(conn, plan.bypass_triggers)
            bypassing = plan.bypass_triggers
        if plan.rebuild_indexes:
            drop_indexes(conn, plan)
        task = progress.add_task(plan.info.label, total=total) if progress else None
        started = time.perf_counter()
        rows = 0
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            plan.info.ident, sql.SQL(", ").join(map(sql.Identifier, plan.columns))
        )
        with cursor.copy(statement) as copy:
            for msg in it:
                if msg[0] == "end":
                    break
                copy.write(msg[3])
                rows += msg[2]
                if progress and task is not None:
                    progress.advance(task, msg[2])
        table = TableStats(key, plan.info.label, rows, time.perf_counter() - started, plan.bypass_triggers)
        stats.append(table)
        rebuild_indexes(conn, plan, table)  # meanwhile the generator runs ahead into the buffer
    if bypassing:
        set_triggers(conn, False)
    return stats


def rebuild_indexes(conn: psycopg.Connection, plan: LoadPlan, table: TableStats) -> None:
    """Recreate the indexes `copy_tables` dropped (a duplicate key fails here, inside the transaction)."""
    if not plan.dropped:
        return
    conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
    started = time.perf_counter()
    for _, ddl in plan.dropped:
        conn.execute(ddl)
    table.indexes_rebuilt = len(plan.dropped)
    table.index_seconds = time.perf_counter() - started
    plan.dropped.clear()


def analyze(conn: psycopg.Connection, plans: dict[str, LoadPlan]) -> None:
    """Fresh planner statistics for the loaded tables (FOLIO's count estimates and plans rely on them)."""
    for plan in plans.values():
        if plan.info.owned:  # PostgreSQL lets only the owner analyze (FOLIO's module roles own their tables)
            conn.execute(sql.SQL("ANALYZE {}").format(plan.info.ident))
