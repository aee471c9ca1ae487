"""`folioperf workflows [NAME|FILE]`: the registered workflows, or one workflow's transactions, data and
options. Arguments here; the handler imports the registry (and with it Locust) only when chosen."""

from __future__ import annotations

import argparse
import sys


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("workflows", help="list the workflows folioperf can run, or describe one",
                       description="Built-in workflows, those of installed plugins (entry-point group "
                                   "folioperf.workflows), or the one in a .py file given by path.")
    p.add_argument("workflow", nargs="?", metavar="NAME|FILE", help="describe this workflow")
    p.add_argument("--ui-release", metavar="RELEASE",
                   help="show the calls and pauses of this FOLIO UI release's pages (default: the workflow's)")
    p.set_defaults(handler="folioperf.workflow_cli:show")


def show(args: argparse.Namespace) -> int:
    from folioperf.workflow import find_workflow, is_path, registered

    found, problems = registered()
    if args.workflow is None:
        if not found:
            print("no workflows registered")
        width = max((len(name) for name in found), default=0)
        for name in sorted(found):
            entry = found[name]
            print("\n".join(_wrapped(f"{name:<{width}}  {entry.workflow.description} [{entry.source}]", "",
                                      " " * (width + 4))))
        for problem in problems:
            print(f"folioperf: warning: {problem}", file=sys.stderr)
        return 0
    workflow = find_workflow(args.workflow)
    source = f"file {args.workflow}" if is_path(args.workflow) else found[workflow.name].source
    lines = [*_wrapped(f"{workflow.name}: {workflow.description}", "", "  "), f"  source:       {source}",
             f"  dataset:      {workflow.dataset or '-'}",
             f"  transactions: {', '.join(workflow.transactions) or '-'}"]
    if workflow.pacing:
        lines.append(f"  pacing:       one iteration per {workflow.pacing:g} s per user (x --think-time)")
    if workflow.rate:
        lines.append(f"  rate:         {workflow.rate} for the whole run (open model; --rate overrides)")
    if workflow.spawn_rate:
        lines.append(f"  ramp-up:      {workflow.spawn_rate:g} users/s (one user every {1 / workflow.spawn_rate:g} s)")
    lines += _pools(workflow)
    lines.append("  options:" + ("" if workflow.options else "      -"))
    for option in workflow.options:
        choices = f" {{{','.join(map(str, option.choices))}}}" if option.choices else ""
        default = "" if option.default is None else f" (default {option.default})"
        lines += _wrapped(f"{option.flag}{choices}{default}", "    ", "        ")
        lines += _wrapped(option.help, "        ", "        ")
    lines += _pages(workflow, args.ui_release)
    print("\n".join(lines))
    return 0


def _pools(workflow) -> list[str]:
    """Its pools, their modes, and how they are drawn (folioperf.testdata)."""
    if not workflow.pools:
        return ["  pools:        -"]
    draw = workflow.draw
    how = ("from a pools file (--pools)" if draw is None else "drawn by queries" if not callable(draw)
           else f"drawn by {draw.__module__}.{draw.__qualname__}()")
    width = max(len(name) for name in workflow.pools)
    modes = max(len(mode) for mode in workflow.pools.values())
    lines = [f"  pools:        {how}"]
    for name, mode in workflow.pools.items():
        query = draw[name] if draw is not None and not callable(draw) else None
        forms = "" if query is None else ", ".join(f for f, q in (("SQL", query.sql), ("CQL", query.cql)) if q)
        of = "" if query is None else f"  {query.kind}" + (f" ({forms})" if forms else " (all)")
        lines.append(f"    {name:<{width}}  {mode:<{modes}}{of}".rstrip())
    return lines


def _wrapped(text: str, first: str, rest: str, width: int = 80) -> list[str]:
    """`text` in lines of at most `width` columns, the first indented by `first`, the others by `rest`."""
    import textwrap

    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False) or []


def _pages(workflow, release: str | None) -> list[str]:
    """Each transaction's calls and pauses, for the UI release asked for (or the workflow's default): the pauses
    as JMeter ran the plan (the default, --plan as-run) and as written (--plan as-written, THINK_OFFSET 0)."""
    from folioperf.errors import FolioperfError
    from folioperf.jmeter import AS_RUN, AS_WRITTEN
    from folioperf.page import describe, mean_pause_s

    if not workflow.pages:
        if release:
            raise FolioperfError(f"workflow {workflow.name} has no UI releases to choose from")
        return []
    option = next((o for o in workflow.options if o.name == "ui-release"), None)
    chosen = release or (option.default if option else None)
    variables = {"thinktime_offset": "0"}
    lines: list[str] = []
    for transaction, by_release in workflow.pages.items():
        if chosen not in by_release:
            raise FolioperfError(f"no {chosen!r} release of {transaction}: {', '.join(by_release)}")
        steps = by_release[chosen]
        run, written = (mean_pause_s(steps, mode, variables) for mode in (AS_RUN, AS_WRITTEN))
        lines.append(f"  {transaction} ({chosen}): pauses {run:.1f} s as run, {written:.1f} s as written")
        lines.append("    (each pause is taken right before the call under it)")
        lines += describe(steps, variables, indent="    ")
    return lines
