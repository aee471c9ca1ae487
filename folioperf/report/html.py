"""A self-contained HTML report: inline CSS, charts embedded as base64 PNG images, no external files."""

from __future__ import annotations

import base64
from html import escape

from folioperf.report import charts
from folioperf.report.document import Cell, Document, Table

_CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 2rem auto;
       max-width: 1180px; color: #222; line-height: 1.4; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .5rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .15rem 1rem; margin: 1rem 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
.warning { border: 2px solid #a4000f; background: #fbe9eb; color: #5c0008; padding: .6rem .9rem;
           margin: .5rem 0; font-weight: 600; }
table { border-collapse: collapse; margin: .3rem 0 .4rem; font-size: .86rem; }
th, td { border: 1px solid #c8c8c8; padding: .25rem .5rem; }
th { background: #f0f0f0; text-align: center; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td.text { text-align: left; }
td.good { color: #196127; } td.bad { color: #a4000f; font-weight: 700; }
td.muted { color: #777; } td.warn { background: #fff1c2; font-weight: 700; }
td.strong { font-weight: 700; }
td.code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .78rem; text-align: left;
          max-width: 46rem; overflow-wrap: anywhere; }
p.note { font-size: .8rem; color: #555; margin: .1rem 0; }
figure { margin: 1rem 0; } figure img { max-width: 100%; border: 1px solid #e2e2e2; }
"""


def render(doc: Document) -> str:
    body = [f"<h1>{escape(doc.title)}</h1>"]
    body += [f'<div class="warning">⚠ {escape(w)}</div>' for w in doc.warnings]
    body.append('<dl class="facts">' + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in doc.facts)
                + "</dl>")
    for section in doc.sections:
        body.append(f"<h2>{escape(section.title)}</h2>")
        body += [f"<p>{escape(p)}</p>" for p in section.paragraphs]
        for table in section.tables:
            body.append(table_html(table, show_title=table.title != section.title))
        for chart in section.charts:
            data = base64.b64encode(charts.png(chart)).decode("ascii")
            body.append(f'<figure class="chart"><img src="data:image/png;base64,{data}" alt="{escape(chart.title)}">'
                        "</figure>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(doc.title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def table_html(table: Table, show_title: bool = True) -> str:
    out = [f"<h3>{escape(table.title)}</h3>"] if show_title else []
    out += ["<table>", "<thead>"]
    if table.groups:
        stub = "".join(f'<th rowspan="2">{escape(c)}</th>' for c in table.columns[: table.stub])
        spanned = sum(span for _, span in table.groups)
        tail = "".join(f'<th rowspan="2">{escape(c)}</th>' for c in table.columns[table.stub + spanned:])
        groups = "".join(f'<th colspan="{span}">{escape(label)}</th>' for label, span in table.groups)
        leaves = "".join(f"<th>{escape(c)}</th>" for c in table.columns[table.stub: table.stub + spanned])
        out += [f"<tr>{stub}{groups}{tail}</tr>", f"<tr>{leaves}</tr>"]
    else:
        out.append("<tr>" + "".join(f"<th>{escape(c)}</th>" for c in table.columns) + "</tr>")
    out += ["</thead>", "<tbody>"]
    numeric = [table.numeric(i) for i in range(len(table.columns))]
    for row in table.rows:
        out.append("<tr>" + "".join(_td(c, numeric[i]) for i, c in enumerate(row)) + "</tr>")
    out += ["</tbody>", "</table>"]
    out += [f'<p class="note">{escape(n)}</p>' for n in table.notes]
    return "\n".join(out)


def _td(cell: Cell, numeric: bool) -> str:
    classes = " ".join(c for c in ("" if numeric else "text", cell.style) if c)
    attr = f' class="{classes}"' if classes else ""
    return f"<td{attr}>{escape(cell.text)}</td>"
