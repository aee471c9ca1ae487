"""The report as data: sections of paragraphs, tables and charts. `tables` and `compare` build it;
`markdown`, `html` and `console` render it, so every output shows the same numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_NUMERIC = re.compile(r"^(?:–|[+-]?[\d,]*\.?\d+(?:\s?(?:%|ms|s|MB|kB|GB|B|min|h))?(?:\s\[[^\]]*\])?(?:\s[≈~†])?)$")

# Cell styles the renderers know: good (faster), bad (slower, failures), muted (within the margin of
# error), warn (a flagged run), strong (emphasis), code (SQL text).
STYLES = ("", "good", "bad", "muted", "warn", "strong", "code")


@dataclass
class Cell:
    text: str
    style: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass
class Table:
    """Rows of cells under leaf `columns`; `groups` are headers spanning leaf columns after the first
    `stub` ones (the PTF's "1 user | 5 users | ..." over "Average | 50th | 75th | 95th")."""

    title: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    groups: list[tuple[str, int]] = field(default_factory=list)
    stub: int = 1
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: Cell | str) -> None:
        self.rows.append([c if isinstance(c, Cell) else Cell(str(c)) for c in cells])

    def numeric(self, index: int) -> bool:
        """Whether a column holds numbers (right-aligned) rather than text; label columns never do."""
        if index < self.stub:
            return False
        cells = [row[index].text for row in self.rows if index < len(row)]
        return all(_NUMERIC.match(c) for c in cells)

    def flat_columns(self) -> list[str]:
        """Leaf headers prefixed with their group, for outputs without spanning headers."""
        out = list(self.columns[: self.stub])
        i = self.stub
        for label, span in self.groups:
            out += [f"{label} {c}" for c in self.columns[i: i + span]]
            i += span
        return out + self.columns[i:]

    def column(self, header: str) -> list[str]:
        """The texts of one column, by its flat header (for tests and scripts)."""
        idx = self.flat_columns().index(header)
        return [row[idx].text for row in self.rows]

    def row(self, label: str) -> dict[str, str]:
        """One row by its first cell, keyed by flat header."""
        for row in self.rows:
            if row[0].text == label:
                return dict(zip(self.flat_columns(), (c.text for c in row)))
        raise KeyError(label)


@dataclass
class Series:
    name: str
    x: Sequence[float]
    y: list[float]
    dashed: bool = False
    key: str = ""  # series with the same key share a colour (a transaction's average and 95th)


@dataclass
class Chart:
    """Data for one chart; `kind` is "line" (x numeric), "category" (x labels in `categories`) or "stacked"
    (a horizontal bar per category, the series' values stacked along x)."""

    title: str
    x_label: str
    y_label: str
    series: list[Series]
    kind: str = "line"
    categories: list[str] = field(default_factory=list)


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


@dataclass
class Document:
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)  # header: key, value
    warnings: list[str] = field(default_factory=list)  # shown before everything: flagged runs
    sections: list[Section] = field(default_factory=list)

    def table(self, title: str) -> Table:
        """A table by title (for tests and scripts)."""
        for s in self.sections:
            for t in s.tables:
                if t.title == title:
                    return t
        raise KeyError(title)
