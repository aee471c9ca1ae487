"""The report on the terminal with rich: the same tables, column groups as a first header line."""

from __future__ import annotations

from rich.cells import cell_len
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
    """The table, or one table per column group when all groups side by side would not fit, and a part still
    too wide split between its columns, each part keeping the row labels: numbers are never folded or cut."""
    if _width(table) <= width:
        return [table]
    packs: list[list[tuple[str, range]]] = []  # consecutive groups side by side while they fit
    start = table.stub
    for label, span in table.groups:
        group = (label, range(start, start + span))
        if packs and _width(_grouped(table, packs[-1] + [group])) <= width:
            packs[-1].append(group)
        else:
            packs.append([group])
        start += span
    parts = [_grouped(table, pack) for pack in packs] or [table]
    return [piece for part in parts for piece in ([part] if _width(part) <= width else _split(part, width))]


def _grouped(table: Table, groups: list[tuple[str, range]]) -> Table:
    """Some of the table's column groups, with the row labels; one group alone is named in the title."""
    title = f"{table.title} — {groups[0][0]}" if len(groups) == 1 else table.title
    part = _part(table, title, [i for _, columns in groups for i in columns])
    if len(groups) > 1:
        part.groups = [(label, len(columns)) for label, columns in groups]
    return part


def _part(table: Table, title: str, columns: range | list[int]) -> Table:
    keep = list(range(table.stub)) + list(columns)
    part = Table(title, [table.columns[i] for i in keep], stub=table.stub)
    part.rows = [[row[i] for i in keep] for row in table.rows]
    return part


def _split(table: Table, width: int) -> list[Table]:
    """A table without groups in as few parts as fit `width`, its columns in order, each with the row labels."""
    parts: list[list[int]] = []
    for i in range(table.stub, len(table.columns)):
        if parts and _width(_part(table, "", parts[-1] + [i])) <= width:
            parts[-1].append(i)
        else:
            parts.append([i])
    if len(parts) <= 1:
        return [table]  # one column too wide alone: rich folds its text
    return [_part(table, table.title + (" (continued)" if n else ""), columns) for n, columns in enumerate(parts)]


def _width(table: Table) -> int:
    """The width rich gives the table: each column as wide as its widest cell, header or group label (which
    stands over its group's first column), in terminal cells (⚠ takes two), plus borders and padding."""
    widths = [max([cell_len(c)] + [cell_len(row[i].text) for row in table.rows]) for i, c in enumerate(table.columns)]
    start = table.stub
    for label, span in table.groups:
        if start < len(widths):
            widths[start] = max(widths[start], cell_len(label))
        start += span
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
