"""Markdown that pastes into a wiki or Confluence: GitHub-flavoured pipe tables with one header row
(column groups become a prefix, "1 user Average"), warnings as quotes. Charts are in the HTML output."""

from __future__ import annotations

from folioperf.report.document import Cell, Document, Table


def render(doc: Document, html: str | None = None) -> str:
    """The document as Markdown; `html` names the HTML report holding its charts when one is written."""
    out = [f"# {doc.title}", ""]
    for text in doc.warnings:
        out += [f"> **⚠ Warning:** {_inline(text)}", ">"]
    if doc.warnings:
        out[-1] = ""
    out += [f"- **{key}:** {_inline(value)}" for key, value in doc.facts]
    out.append("")
    charts = 0
    for section in doc.sections:
        out += [f"## {section.title}", ""]
        for paragraph in section.paragraphs:
            out += [_inline(paragraph), ""]
        for table in section.tables:
            out += table_lines(table, show_title=table.title != section.title) + [""]
        charts += len(section.charts)
    if charts:
        where = f"`{html}`" if html else "the HTML version of this report (`-o report.html`)"
        out += [f"_{charts} chart{'s are' if charts > 1 else ' is'} in {where}._", ""]
    return "\n".join(out)


def table_lines(table: Table, show_title: bool = True) -> list[str]:
    out = [f"**{_inline(table.title)}**", ""] if show_title else []
    headers = table.flat_columns()
    out.append("| " + " | ".join(_inline(h) for h in headers) + " |")
    out.append("|" + "|".join("---:" if table.numeric(i) else "---" for i in range(len(headers))) + "|")
    for row in table.rows:
        out.append("| " + " | ".join(_cell(c) for c in row) + " |")
    if table.notes:
        out.append("")
        out += [f"_{_inline(n)}_  " for n in table.notes]
    return out


def _cell(cell: Cell) -> str:
    text = _inline(cell.text)
    if not text:
        return ""
    if cell.style == "code":
        return "`" + text.replace("`", "'") + "`"
    if cell.style in ("strong", "bad", "warn"):
        return f"**{text}**"
    return text


def _inline(text: str) -> str:
    """One line, with the characters that would break a pipe table escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")
