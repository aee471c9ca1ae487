"""What a run shows on the terminal: a live view while it runs and the summary table at the end.

The live view (refreshed every second): progress over the duration, users running of those asked for, API
calls and transactions counted apart (with their rates), failures, and per transaction its count and p95,
overall and over the last seconds. The summary: the PTF columns (Average, 50th, 75th, 95th) with count,
failures and rate; transactions first, then the open model's latencies from the scheduled start, then API
calls, then tasks' errors.

Both fit the terminal: a name that leaves no room for the numbers gets a line of its own above them, so
nothing is cut mid-word at 80 columns, and a wide terminal shows one line per entry. The summary's number
columns are as wide as their widest value, so numbers never run together. Output to a pipe or a log is laid
out for 200 columns, so API names and paths are never wrapped there.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.file_proxy import FileProxy
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from folioperf.metrics import ERROR, SCHEDULED, SCRIPT, TRANSACTION
from folioperf.wording import plural

NESTED_MARK = " (inside another)"  # a transaction recorded within another: its count is not added to the total
PIPE_WIDTH = 200  # a log or pipe has no width: lay it out wide rather than at rich's default 80
_NUMBERS = ("Requests", "Failures", "Average", "50th", "75th", "95th", "req/s")  # the summary's columns after the name
_GAP = 2  # spaces before each of them
_KINDS = ((TRANSACTION, "Transactions"), (SCHEDULED, "From the scheduled start (open model)"),
          (None, "API calls"), (SCRIPT, "Script steps (JSR223 samplers JMeter counts)"), (ERROR, "Errors in tasks"))


def console(stderr: bool = False) -> Console:
    out = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not out.is_terminal:
        out.width = PIPE_WIDTH
    return out


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return f"{seconds // 60:d}:{seconds % 60:02d}"


def _kind(request_type: str) -> str | None:
    return request_type if request_type in (TRANSACTION, SCHEDULED, SCRIPT, ERROR) else None


def _named(request_type: str, name: str) -> str:
    """An API call by its name (`POST /circulation/...`, which holds the method); the others with their type."""
    return name if _kind(request_type) is None else f"{request_type} {name}"


def summary(entries: Iterable[dict], width: int, header: str) -> Group:
    """The summary table of stats.json-shaped entries at `width` columns (see the module docstring): rich tables
    of one layout, split where a name has a line of its own."""
    by_kind: dict[str | None, list[dict]] = {}
    for e in entries:
        by_kind.setdefault(_kind(e["type"]), []).append(e)
    sections = [(title, sorted(by_kind[kind], key=lambda e: e["name"])) for kind, title in _KINDS if kind in by_kind]
    numbers = {id(e): _numbers(e) for _, group in sections for e in group}
    widths = [max([len(head), *(len(values[k]) for values in numbers.values())]) for k, head in enumerate(_NUMBERS)]
    longest = max((cell_len(e["name"]) + 2 for _, group in sections for e in group), default=0)
    name_width = max(min(longest, width - sum(widths) - _GAP * len(widths)), len(header))

    def table(show_header: bool = False) -> Table:
        table = Table(box=None, show_header=show_header, header_style="bold", pad_edge=False, padding=(0, 0, 0, _GAP))
        table.add_column(header, width=name_width, no_wrap=True)
        for head, column_width in zip(_NUMBERS, widths):
            table.add_column(head, width=column_width, justify="right", no_wrap=True)
        return table

    parts: list[RenderableType] = [table(show_header=True)]
    for title, group in sections:
        parts.append(Text(title, style="bold underline"))
        part = table()
        for e in group:
            name = Text("  " + e["name"], style="bold" if e["type"] == TRANSACTION else "")
            cells = [Text(value, style="red" if k == 1 and e.get("failures") else "")
                     for k, value in enumerate(numbers[id(e)])]
            if name.cell_len <= name_width:
                part.add_row(name, *cells)
                continue
            if part.row_count:  # the name on a line of its own, the numbers under it
                parts.append(part)
                part = table()
            parts.append(name)
            part.add_row("", *cells)
        parts.append(part)
    return Group(*parts)


def _numbers(e: dict) -> list[str]:
    """An entry's cells after its name (_NUMBERS)."""
    return [f"{e['count']:,}", f"{e.get('failures', 0):,}", fmt_ms(e.get("avg")), fmt_ms(e.get("p50")),
            fmt_ms(e.get("p75")), fmt_ms(e.get("p95")), f"{e.get('rps', 0.0):,.2f}"]


def print_summary(snapshot: Any, path: Path | None, flags: Any, code: int, users: int, users_target: int) -> None:
    """The summary at the end of a run (master or local process, `folioperf run`)."""
    out = console()
    entries = [{"type": e.type, "name": _marked(e.type, e.name, snapshot.nested), "count": e.count,
                "failures": e.failures, "avg": e.avg, "p50": e.p50, "p75": e.p75, "p95": e.p95, "rps": e.rps}
               for e in snapshot.entries]
    out.print(summary(entries, out.width, "Results (ms)"))
    reached = plural(users, "user") + ("" if users == users_target else f" of the {users_target:,} asked for")
    out.print(f"{reached} · {plural(sum(e.count for e in snapshot.apis()), 'API call')} · "
              f"{plural(snapshot.transaction_count(), 'transaction')}")
    errors = [f for f in snapshot.failures if f.type != SCHEDULED]  # a Scheduled failure repeats its transaction's
    if errors:
        out.print(Text("Failures", style="bold underline"))
        for f in errors[:10]:
            out.print(f"  {f.occurrences:>7,} × {_named(f.type, f.name)}: {f.error}")
        if len(errors) > 10:
            out.print(f"  ... {len(errors) - 10} more kinds in failures.csv")
    raised = flags.raised()
    if raised:
        out.print(f"[bold red]flags: {', '.join(raised)}[/]")
    if path is not None:
        out.print(f"results: {path}")
        out.print(f"PTF report: folioperf report {path} -o report.md")
    out.print(f"exit code {code}")


class LiveView:
    """Renders the run as it goes, from folioperf's metrics (`snapshot()`) and Locust's runner."""

    def __init__(self, environment: Any, snapshot: Callable[[], Any], title: str, users_target: int,
                 duration_s: float | None, out: Console | None = None) -> None:
        self.environment = environment
        self.snapshot = snapshot
        self.title = title
        self.users_target = users_target
        self.duration_s = duration_s
        self.console = out or console(stderr=True)
        self.started = time.monotonic()
        self.over = False  # the test has ended: the last frame
        self._live = Live(console=self.console, auto_refresh=False, transient=False, redirect_stdout=False,
                          redirect_stderr=False)
        self._streams: list[tuple[logging.StreamHandler, Any, logging.Formatter | None]] = []

    def _logs_above(self) -> None:
        """While the view runs, log lines go through its console, above it: the handlers Locust set up hold
        the terminal's stream itself, and a line written there would land inside the view and push its
        frame down a line at every refresh. They read as folioperf's other lines there, without Locust's
        timestamp and host. A log or pipe gets no frame but the last, at the end: its lines are left alone
        there (the console would wrap them at its width)."""
        if not self.console.is_terminal:
            return
        terminal = {id(sys.stderr), id(sys.__stderr__), id(sys.stdout), id(sys.__stdout__)}
        for logger in (logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))):
            for handler in getattr(logger, "handlers", ()):
                if type(handler) is logging.StreamHandler and id(handler.stream) in terminal:
                    self._streams.append((handler, handler.setStream(FileProxy(self.console, handler.stream)),
                                          handler.formatter))
                    handler.setFormatter(_OneLine())

    def start(self) -> None:
        self.started = time.monotonic()
        self._live.start()
        self._logs_above()

    def stop(self) -> None:
        self.over = True
        self.update()
        self._live.stop()
        for handler, stream, formatter in self._streams:
            handler.setStream(stream)
            handler.setFormatter(formatter)
        self._streams = []
        if not self.console.is_terminal:  # a log or pipe gets the last frame without its line end
            self.console.line()

    def update(self) -> None:
        self._live.update(self.render(), refresh=True)

    def render(self) -> Group:
        width = self.console.width
        elapsed = time.monotonic() - self.started
        parts: list[Any] = [Text(self.title, style="bold", overflow="ellipsis", no_wrap=True)]
        if self.duration_s:
            clock = f" {_clock(min(elapsed, self.duration_s))} / {_clock(self.duration_s)}"
            bar = ProgressBar(total=self.duration_s, completed=min(elapsed, self.duration_s),
                              width=max(10, min(40, width - len(clock) - 1)))
            parts.append(Group(bar, Text(clock)) if width < 60 else _beside(bar, clock))
            if elapsed > self.duration_s:  # --stop-timeout: users waiting for an answer get it
                parts.append(Text(f"stopping: users finish their requests (+{_clock(elapsed - self.duration_s)})"))
        else:
            parts.append(Text(f"elapsed {_clock(elapsed)}"))
        snap = self.snapshot()
        stats = self.environment.stats
        calls = sum(e.count for e in snap.apis())
        call_rps = sum(e.current_rps for e in stats.entries.values() if _kind(e.method) is None)
        failures = sum(e.failures for e in snap.apis()) + sum(e.failures for e in snap.transactions()) + \
            sum(e.count for e in snap.errors())
        users = self.environment.runner.user_count
        over = self.over or bool(self.duration_s and elapsed > self.duration_s)
        if over and snap.duration_s > 0:  # the current rate fades as users stop: the run's average instead
            rate = f"{calls / snap.duration_s:,.1f}/s average"
        else:
            rate = f"{call_rps:,.1f}/s"
        parts.append(Text.assemble(
            f"users {users}/{self.users_target}   API calls {calls:,} ({rate})   "
            f"transactions {snap.transaction_count():,}   ",
            (f"failures {failures:,}", "red" if failures else "green")))
        lines = []
        for e in snap.transactions():
            current = stats.get(e.name, TRANSACTION).get_current_response_time_percentile(0.95)
            lines.append((_marked(TRANSACTION, e.name, snap.nested), e.count, e.failures, current, e.p95))
        if lines:
            name_width = max(12, min(max(len(n) for n, *_ in lines), width - 46))
            parts.append(Text(f"{'Transaction':<{name_width}} {'Count':>8} {'Failures':>9} {'p95 10s':>9} {'p95 (ms)':>9}",
                              style="bold"))
            for name, count, failed, current, overall in lines:
                shown = name if len(name) <= name_width else name[: name_width - 1] + "…"
                parts.append(Text(f"{shown:<{name_width}} {count:>8,} {failed:>9,} {fmt_ms(current):>9} {fmt_ms(overall):>9}"))
        return Group(*parts)


def _marked(request_type: str, name: str, nested: Iterable[str]) -> str:
    """A transaction that ran inside another, so marked: its row and its parent's are not two counts to add."""
    return name + NESTED_MARK if request_type == TRANSACTION and name in nested else name


class _OneLine(logging.Formatter):
    """`folioperf: warning: ...` (the logger's package, the level): a log line above the live view."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.name.split('.')[0]}: {record.levelname.lower()}: {super().format(record)}"


def _beside(bar: ProgressBar, clock: str) -> Table:
    grid = Table.grid()
    grid.add_row(bar, clock)
    return grid
