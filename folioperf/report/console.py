"""The report on the terminal with rich: the same tables, column groups as a first header line."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.table import Table as RichTable
from rich.text import Text

from folioperf.report.document import Document, Table

_STYLES = {"good": "green", "bad": "bold red", "muted": "dim", "warn": "bold black on yellow", "strong": "bold",
           "code": "cyan"}


def render(doc: Document, console: Console | None = None, html: str | None = None) -> None:
    """The document on the console; `html` names the HTML report holding its charts when one was written."""
    console = console or Console()
    console.print(Text(doc.title, style="bold underline"))
    for text in doc.warnings:
        console.print(Panel(Text("⚠ " + text, style="bold red"), border_style="red"))
    facts = RichTable.grid(padding=(0, 2))
    for key, value in doc.facts:
        facts.add_row(Text(key, style="bold"), Text(value))
    console.print(facts)
    charts = 0
    for section in doc.sections:
        console.rule(Text(section.title, style="bold"), align="left")
        for paragraph in section.paragraphs:
            console.print(Text(paragraph))
        for table in section.tables:
            for part in fit(table, console.width):
                console.print(rich_table(part, show_title=part.title != section.title))
            for note in table.notes:
                console.print(Text(note, style="dim"))
        charts += len(section.charts)
    if charts:
        where = html or "the HTML report (-o report.html)"
        console.print(Text(f"{charts} chart{'s are' if charts > 1 else ' is'} in {where}.", style="dim"),
                      soft_wrap=True)  # a path stays whole


def fit(table: Table, width: int) -> list[Table]:
    """The table, or one table per column group when all groups side by side would not fit: numbers
    are never folded or cut."""
    if not table.groups or _width(table) <= width:
        return [table]
    parts = []
    start = table.stub
    for label, span in table.groups:
        columns = list(range(table.stub)) + list(range(start, start + span))
        part = Table(f"{table.title} — {label}", [table.columns[i] for i in columns], stub=table.stub)
        part.rows = [[row[i] for i in columns] for row in table.rows]
        parts.append(part)
        start += span
    return parts


def _width(table: Table) -> int:
    widths = [max([len(c)] + [len(row[i].text) for row in table.rows]) for i, c in enumerate(table.columns)]
    return sum(widths) + 3 * len(widths) + 1


def rich_table(table: Table, show_title: bool = True) -> RichTable:
    out = RichTable(title=table.title if show_title else None, title_justify="left", title_style="bold",
                    header_style="bold")
    spans = []
    for label, span in table.groups:
        spans += [label] + [""] * (span - 1)
    for i, column in enumerate(table.columns):
        group_index = i - table.stub
        group = spans[group_index] if 0 <= group_index < len(spans) else ""
        header = f"{group}\n{column}" if table.groups else column
        numeric = table.numeric(i)
        out.add_column(header, justify="right" if numeric else "left", overflow="fold", no_wrap=numeric,
                       max_width=None if numeric else 80)
    for row in table.rows:
        out.add_row(*(Text(c.text, style=_STYLES.get(c.style, "")) for c in row))
    return out
