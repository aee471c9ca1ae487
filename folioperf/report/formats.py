"""How reports write numbers, durations and column headers: one place, so every table agrees."""

from __future__ import annotations

from folioperf.report.runs import Group
from folioperf.results import RunInfo

MISSING = "–"


def fmt_time(ms: float | None, unit: str) -> str:
    """Seconds with 3 decimals like the PTF reports, or milliseconds."""
    if ms is None:
        return MISSING
    if unit == "s":
        return f"{ms / 1000:.3f}"
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}"


def unit_name(unit: str) -> str:
    return "seconds" if unit == "s" else "ms"


def fmt_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{h} h" if h else "", f"{m} min" if m else "", f"{s} s" if s and not h else ""]
    return " ".join(p for p in parts if p) or "0 s"


def fmt_run_length(runs: list[RunInfo]) -> str:
    """What ran: the test duration asked for ("20 s", "20 s each") and, when the runs took a second or more
    longer from start to the last user's stop, that wall time too; runs without a set duration (stopped
    by hand) by their wall time alone. A partial record (a checkpoint) says how much of its test it holds."""
    partial = [r for r in runs if r.partial]
    if partial:
        return "; ".join(fmt_partial(r) for r in partial) + (f"; {fmt_run_length([r for r in runs if not r.partial])}"
                                                              if len(partial) < len(runs) else "")
    asked = sorted({r.duration_s for r in runs if r.duration_s})
    walls = sorted(r.elapsed_s for r in runs)
    wall = " – ".join(dict.fromkeys((fmt_duration(walls[0]), fmt_duration(walls[-1]))))
    if not asked:
        return wall
    text = " / ".join(fmt_duration(a) for a in asked) + (" each" if len(runs) > 1 and len(asked) == 1 else "")
    if any(not r.duration_s or is_longer(r) for r in runs):
        text += f" ({wall} wall time, until every user stopped)"
    return text


def fmt_partial(run: RunInfo) -> str:
    """A checkpoint's length: "1 min 2 s of 1 min 30 s (partial: a checkpoint)"."""
    of = f" of {fmt_duration(run.duration_s)}" if run.duration_s else ""
    return f"{fmt_duration(run.elapsed_s)}{of} (partial: a checkpoint)"


def fmt_bytes(n: float) -> str:
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{sign}{n:,.0f} {unit}" if unit == "B" else f"{sign}{n:,.1f} {unit}"
        n /= 1024
    return ""  # unreachable


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def group_header(group: Group) -> str:
    """A group's column header; a flagged group is marked so its numbers never look clean."""
    return group.label + (" ⚠" if group.flags else "")



def is_longer(run: RunInfo) -> bool:
    """Whether the run took a second or more longer than its set duration (a set one only)."""
    return bool(run.duration_s and round(run.elapsed_s) > round(run.duration_s))
