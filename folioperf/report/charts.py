"""Charts as PNG images (matplotlib's Agg canvas: no display, no pyplot global state)."""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

from folioperf.report.document import Chart

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WIDTH_IN, HEIGHT_IN, DPI = 9.0, 3.6, 100


def png(chart: Chart) -> bytes:
    buf = io.BytesIO()
    figure(chart).savefig(buf, format="png")
    return buf.getvalue()


def figure(chart: Chart) -> "Figure":
    """The chart as a matplotlib Figure (not yet drawn)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    if chart.kind == "stacked":
        fig.set_figheight(max(HEIGHT_IN, 1.2 + 0.32 * len(chart.categories)))
    ax = fig.add_subplot()
    palette = [f"C{i}" for i in range(10)]
    if chart.kind == "stacked":
        _stacked(ax, chart, palette)
        return fig
    keys: dict[str, str] = {}
    for series in chart.series:
        color = keys.setdefault(series.key or series.name, palette[len(keys) % len(palette)])
        style: dict[str, Any] = {"color": color, "linestyle": "--" if series.dashed else "-", "linewidth": 1.6, "label": series.name}
        if chart.kind == "category":
            ax.plot(series.x, series.y, marker="o", **style)
        else:
            ax.plot(series.x, series.y, **style)
    if chart.kind == "category":
        ax.set_xticks(range(len(chart.categories)), chart.categories)
    else:
        ax.set_xlim(left=0)  # minutes since the test's start: nothing before it
    ax.set_title(chart.title, fontsize=11, loc="left")
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel(chart.y_label)
    ax.set_ylim(bottom=0)
    ax.grid(True, color="#dddddd", linewidth=0.6)
    if any(s.y and not all(math.isnan(v) for v in s.y) for s in chart.series):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def _stacked(ax, chart: Chart, palette: list[str]) -> None:
    """A horizontal bar per category, its series stacked: the first category on top."""
    rows = list(range(len(chart.categories)))
    left = [0.0] * len(rows)
    for i, series in enumerate(chart.series):
        ax.barh(rows, series.y, left=left, color=palette[i % len(palette)], label=series.name, height=0.6)
        left = [a + b for a, b in zip(left, series.y)]
    ax.set_yticks(rows, chart.categories, fontsize=8)
    ax.invert_yaxis()
    ax.set_title(chart.title, fontsize=11, loc="left")
    ax.set_xlabel(chart.x_label)
    ax.set_xlim(left=0)
    ax.grid(True, axis="x", color="#dddddd", linewidth=0.6)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
