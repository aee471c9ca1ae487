"""What a run shows on the terminal: a rich live view while it runs (progress over the duration, users,
requests/s, failures, p95 of each transaction over the last seconds), and the summary table at the end
with the PTF columns (Average, 50th, 75th, 95th) plus count, failures and requests/s — transactions
first, then APIs."""

from __future__ import annotations

import time
from typing import Any, Iterable

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

TRANSACTION = "Transaction"
LIVE_REFRESH_SECONDS = 1.0


def _fmt_ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


class LiveView:
    """Renders Locust's (merged) stats of the master or local runner; call `update()` periodically."""

    def __init__(self, environment: Any, title: str, duration_s: float | None, console: Console | None = None) -> None:
        self.environment = environment
        self.title = title
        self.duration_s = duration_s
        self.console = console or Console(stderr=True)
        self.started = time.monotonic()
        self._live = Live(console=self.console, auto_refresh=False, transient=False, redirect_stdout=False,
                          redirect_stderr=False)

    def start(self) -> None:
        self.started = time.monotonic()
        self._live.start()

    def stop(self) -> None:
        self.update()
        self._live.stop()
        if not self.console.is_terminal:  # a log or pipe gets the last frame without its line end
            self.console.line()

    def update(self) -> None:
        self._live.update(self.render(), refresh=True)

    def render(self) -> Group:
        runner = self.environment.runner
        stats = self.environment.stats
        total = stats.total
        elapsed = time.monotonic() - self.started
        parts: list[Any] = [Text(self.title, style="bold")]
        if self.duration_s:
            bar = ProgressBar(total=self.duration_s, completed=min(elapsed, self.duration_s), width=40)
            clock = f"{_clock(min(elapsed, self.duration_s))} / {_clock(self.duration_s)}"
            if elapsed > self.duration_s:  # --stop-timeout: users finish the iteration they are in
                clock += f"   stopping: users finish their iteration (+{_clock(elapsed - self.duration_s)})"
            parts.append(Group(bar, Text(clock)))
        else:
            parts.append(Text(f"elapsed {_clock(elapsed)}"))
        failures = total.num_failures
        ratio = (failures / total.num_requests * 100) if total.num_requests else 0.0
        style = "red" if failures else "green"
        parts.append(
            Text.assemble(
                f"users {runner.user_count}   requests {total.num_requests:,}   req/s {total.current_rps:,.1f}   ",
                (f"failures {failures:,} ({ratio:.2f} %)", style),
            )
        )
        table = Table(box=None, header_style="bold", pad_edge=False)
        for col, justify in (("Transaction", "left"), ("Count", "right"), ("Failures", "right"),
                             ("p95 last 10 s (ms)", "right"), ("p95 (ms)", "right")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for entry in sorted(stats.entries.values(), key=lambda e: e.name):
            if entry.method != TRANSACTION:
                continue
            current = entry.get_current_response_time_percentile(0.95)
            overall = entry.get_response_time_percentile(0.95) if entry.num_requests else None
            table.add_row(entry.name, f"{entry.num_requests:,}", f"{entry.num_failures:,}", _fmt_ms(current), _fmt_ms(overall))
        if table.row_count:
            parts.append(table)
        return Group(*parts)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else f"{seconds // 60:d}:{seconds % 60:02d}"


def summary_table(entries: Iterable[dict], title: str = "Results (ms)") -> Table:
    """The PTF columns for stats.json-shaped entries: transactions first, then latencies from the
    scheduled start (open model), then APIs by name (their names start with the method)."""
    table = Table(title=title, header_style="bold", title_justify="left")
    table.add_column("Name", ratio=1, overflow="fold")  # the name gives way on a narrow terminal, not the numbers
    for col in ("Requests", "Failures", "Average", "50th", "75th", "95th", "req/s"):
        table.add_column(col, justify="right", no_wrap=True)
    rows = sorted(entries, key=lambda e: (e["type"] != TRANSACTION, e["type"] != "Scheduled", e["name"]))
    previous = None
    for e in rows:
        kind = e["type"] if e["type"] in (TRANSACTION, "Scheduled") else "API"
        if previous is not None and kind != previous:
            table.add_section()
        previous = kind
        name = e["name"] if kind != "Scheduled" else f"{e['name']} (from scheduled start)"
        failed = e.get("failures", 0)
        table.add_row(
            Text(name, style="bold" if kind == TRANSACTION else ""),
            f"{e['count']:,}",
            Text(f"{failed:,}", style="red" if failed else ""),
            _fmt_ms(e.get("avg")),
            _fmt_ms(e.get("p50")),
            _fmt_ms(e.get("p75")),
            _fmt_ms(e.get("p95")),
            f"{e.get('rps', 0.0):,.2f}",
        )
    return table
