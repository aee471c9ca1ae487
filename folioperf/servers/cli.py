"""`folioperf server-metrics`: a finished run's server metrics, collected after the fact over its time window
from a source that keeps history (Prometheus, CloudWatch), into its results directory."""

from __future__ import annotations

import argparse
import sys

from folioperf.errors import FolioperfError
from folioperf.options import RUN_OPTIONS, add_options, percent_safe

OPTIONS = ("server_metrics", "server_metrics_step", "server_metrics_queries")


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "server-metrics", help="collect a finished run's server metrics from Prometheus or CloudWatch",
        description="Asks a source that keeps history (prometheus:URL or cloudwatch) for the servers' CPU, memory "
                    "and connections over each run's time window (its run.json's start and end) and writes them "
                    "into its results directory, as `folioperf run --server-metrics` does during a run; "
                    "`folioperf report` then shows them.",
        formatter_class=percent_safe(argparse.HelpFormatter))
    p.add_argument("runs", nargs="*", metavar="RUN_DIR", help="results directory, or a directory of them")
    add_options(p.add_argument, [opt for opt in RUN_OPTIONS if opt.name in OPTIONS])
    p.add_argument("--replace", action="store_true", help="replace server metrics the directory holds already")
    p.add_argument("--default-queries", action="store_true",
                   help="print folioperf's Prometheus queries file, to adapt for --server-metrics-queries, and exit")
    p.set_defaults(handler="folioperf.servers.cli:collect")


def collect(args: argparse.Namespace) -> int:
    from folioperf import results  # noqa: PLC0415
    from folioperf.report.runs import load_runs  # noqa: PLC0415
    from folioperf.servers.collector import collect_window  # noqa: PLC0415
    from folioperf.servers.sources import CLOUDWATCH, PROMETHEUS, make_source, parse  # noqa: PLC0415

    if args.default_queries:
        from folioperf.servers.prometheus import default_queries  # noqa: PLC0415

        print(default_queries(), end="")
        return 0
    if not args.runs:
        raise FolioperfError("which runs? give their results directories (RUN_DIR...)")
    if not args.server_metrics or parse(args.server_metrics).kind not in (PROMETHEUS, CLOUDWATCH):
        raise FolioperfError("give --server-metrics prometheus:URL or cloudwatch: after a run, only a source that "
                             "keeps history has its metrics (the sandbox's are taken during the run)")
    runs = load_runs(args.runs)
    if not args.replace:
        held = [r.path for r in runs if (r.path / results.SERVER_JSON).exists()]
        if held:
            raise FolioperfError(f"{held[0]} has server metrics already (give --replace to collect them again)")
    code = 0
    for run in runs:
        source = make_source(args.server_metrics, queries=args.server_metrics_queries)
        assert source is not None
        data = collect_window(source, run.run.start, run.run.end, args.server_metrics_step)
        for note in data.notes:
            print(f"folioperf: {run.path.name}: {note}", file=sys.stderr)
        if not data.points:
            print(f"folioperf: {run.path}: {source.name} gave no server metrics for "
                  f"{run.run.start:%Y-%m-%d %H:%M:%S} – {run.run.end:%H:%M:%S} UTC: nothing written", file=sys.stderr)
            code = 1
            continue
        results.add_server_metrics(run.path, data, replace=args.replace)
        print(f"{run.path}: {len(data.points)} series from {source.name}, every {data.step_s:g} s")
    return code
