"""`folioperf report` and `folioperf compare`: arguments here, work in the handlers below (imported when
chosen; numpy and matplotlib load only when a report needs them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from folioperf.options import positive

UNITS = ("s", "ms")


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write Markdown (.md) or self-contained HTML with charts (.html); default: the console")
    p.add_argument("--unit", choices=UNITS, default="s", help="response times in seconds (default, like the PTF) or ms")
    p.add_argument("--slow-threshold", type=positive, default=100.0, metavar="MS",
                   help="list APIs slower than this at the 75th percentile (default 100 ms)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser(
        "report", help="the PTF report of one or more runs",
        description="The PTF report of results directories: response times with a row per user count (the "
                    "PTF's orientation), slow APIs, failures, throughput, hourly longevity figures, the servers and "
                    "the database section. Runs of one workflow at several user counts (e.g. a campaign directory) "
                    "make one report; repeated runs of a user count merge.")
    report.add_argument("runs", nargs="+", metavar="RUN_DIR", help="results directory, or a directory of them")
    _output_options(report)
    report.set_defaults(handler="folioperf.report.cli:report")

    compare = sub.add_parser(
        "compare", help="compare two result sets (release against release)",
        description="The PTF comparison: Delta % = (base - new) / base, positive when NEW is faster; changes "
                    "within ±5 % (--margin) are the margin of error. With histograms or repeated runs on both "
                    "sides each delta gets a 95 % bootstrap confidence interval. Runs of different user counts, "
                    "durations or options are compared with a warning. Gates (--fail-if) make the command exit 1 "
                    "for CI pipelines.",
        # argparse prints an epilog as written (only help strings are %-formats): these gates are copied as is
        epilog="Gates: [NAME:]METRIC OP [+|-]THRESHOLD[%|ms|s], METRIC one of avg p50 p75 p90 p95 p99 failures "
               "rps. A signed threshold limits the Delta, positive when NEW is better as in the tables (faster, "
               "more throughput, fewer failures); the gate fails when the Delta falls below it: 'p95<-5%' (p95 "
               "more than 5 % slower), 'rps<-10%', 'avg<-50ms', 'failures<-0' (any more failures). An unsigned "
               "one limits NEW itself ('p95>800ms', 'failures>0', 'failures>1%', 'rps<20'). A latency "
               "regression whose confidence interval includes no change does not fail. Gates are refused "
               "when the sides ran different tests, unless --force.")
    compare.add_argument("sides", nargs="*", metavar="DIR",
                         help="BASE and NEW: each a results directory or a directory of them (a campaign)")
    compare.add_argument("--base", nargs="+", action="extend", default=[], metavar="DIR",
                         help="results directories of the base side (instead of positional BASE)")
    compare.add_argument("--new", nargs="+", action="extend", default=[], metavar="DIR",
                         help="results directories of the new side (instead of positional NEW)")
    compare.add_argument("--fail-if", action="append", default=[], metavar="GATE",
                         help="exit 1 when the gate is crossed, e.g. 'p95<-5%%' (repeatable)")
    compare.add_argument("--force", action="store_true",
                         help="apply the gates even when the sides ran different tests (user counts, durations, "
                              "options)")
    compare.add_argument("--margin", type=positive, default=5.0, metavar="PERCENT",
                         help="margin of error in %% (default 5)")
    compare.add_argument("--base-label", metavar="LABEL", help="column label of BASE (default: its tag, or 'base')")
    compare.add_argument("--new-label", metavar="LABEL", help="column label of NEW (default: its tag, or 'new')")
    _output_options(compare)
    compare.set_defaults(handler="folioperf.report.cli:compare")


def report(args: argparse.Namespace) -> int:
    from folioperf.report.runs import load_runs
    from folioperf.report.tables import build_report

    fmt = _format(args.output)
    doc = build_report(load_runs(args.runs), unit=args.unit, slow_threshold_ms=args.slow_threshold)
    _emit(doc, fmt, args.output)
    return 0


def compare(args: argparse.Namespace) -> int:
    from folioperf.errors import FolioperfError
    from folioperf.report.compare import build_comparison, check_gates, compare_runs, parse_gate
    from folioperf.report.runs import load_runs
    from folioperf.wording import plural

    gates = [parse_gate(g) for g in args.fail_if]
    fmt = _format(args.output)
    if args.base or args.new:
        if args.sides or not (args.base and args.new):
            raise FolioperfError("give both --base and --new (and no positional directories), or just BASE NEW")
        base_paths, new_paths = args.base, args.new
    elif len(args.sides) == 2:
        base_paths, new_paths = [args.sides[0]], [args.sides[1]]
    else:
        got = plural(len(args.sides), "directory", "directories")
        raise FolioperfError(f"compare needs BASE and NEW (got {got}); for several runs per side use --base DIR... "
                             "--new DIR...")
    cmp = compare_runs(load_runs(base_paths), load_runs(new_paths), args.base_label, args.new_label, args.margin)
    if gates and cmp.mismatch and not args.force:
        raise FolioperfError(f"gates refused: {cmp.mismatch}; compare like with like, or pass --force")
    doc = build_comparison(cmp, unit=args.unit, slow_threshold_ms=args.slow_threshold)
    result = check_gates(cmp, gates, unit=args.unit)
    if cmp.mismatch and fmt != "console":  # the console shows it at the top of the comparison
        print(f"folioperf: warning: {cmp.mismatch}", file=sys.stderr)
    _emit(doc, fmt, args.output)
    for note in result.notes:
        print(f"folioperf: gate passed (noise): {note}", file=sys.stderr)
    for skipped in result.skipped:
        print(f"folioperf: gate not applied: {skipped}", file=sys.stderr)
    for failure in result.failures:
        print(f"folioperf: gate failed: {failure}", file=sys.stderr)
    return 1 if result.failures else 0


def _format(output: str | None) -> str:
    from folioperf.errors import FolioperfError

    if output is None:
        return "console"
    suffix = Path(output).suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix in (".html", ".htm"):
        return "html"
    raise FolioperfError(f"cannot tell the format of {output}: name it .md (Markdown) or .html")


def _emit(doc, fmt: str, output: str | None) -> None:
    if fmt == "console":
        from folioperf.report import console

        console.render(doc)
        return
    from folioperf.files import write_file
    from folioperf.report import html, markdown

    text = (markdown if fmt == "markdown" else html).render(doc)
    assert output is not None  # a file format: the output's name chose it (_format)
    write_file(Path(output), text)
    print(f"wrote {output}", file=sys.stderr)
