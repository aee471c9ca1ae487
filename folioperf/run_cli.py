"""`folioperf run` and `folioperf worker`: arguments here, the work in folioperf/runner.py."""

from __future__ import annotations

import argparse
import re

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def duration(text: str) -> int:
    """'90', '90s', '30m', '1h30m' → seconds (as Locust's --run-time)."""
    value = text.strip().lower()
    if value.isdigit():
        seconds = int(value)
    else:
        match = _DURATION.match(value)
        if not value or not match:
            raise argparse.ArgumentTypeError(f"invalid duration {text!r}: e.g. 90, 90s, 30m or 1h30m")
        h, m, s = (int(g or 0) for g in match.groups())
        seconds = h * 3600 + m * 60 + s
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: it must be longer than 0 s")
    return seconds


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return value


def positive(text: str) -> float:
    """A number above 0 (argparse type; the report commands use it too)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number above 0")
    return value


def _user_counts(text: str) -> list[int]:
    counts = [_positive_int(part.strip()) for part in text.split(",") if part.strip()]
    if not counts:
        raise argparse.ArgumentTypeError(f"no user counts in {text!r}: e.g. 1,5,8,20")
    return counts


def add_commands(sub: argparse._SubParsersAction) -> None:
    from folioperf.recorder import parse_rate_threshold

    p = sub.add_parser(
        "run", help="run a workflow: sandbox (or your FOLIO), data, Locust, results",
        description="Run WORKFLOW with N virtual users and write a results directory. By default against the "
                    "built-in sandbox on a free port, seeded with the workflow's dataset and stopped afterwards; "
                    "with --okapi-url against your FOLIO (the password comes from FOLIOPERF_PASSWORD or a prompt). "
                    "Options a workflow defines (e.g. holds' --variant) are accepted after the workflow's name.",
        epilog="Exit codes: 0 clean run; 1 unexpected failures above --fail-on-error-rate; 2 bad input or set-up; "
               "3 stopped early (test data exhausted, login refused); 4 target rate missed; 5 a worker was lost; "
               "6 a load generator was CPU-saturated; 130 interrupted.")
    p.add_argument("workflow", metavar="WORKFLOW", help="a workflow name (`folioperf workflows`) or a .py file")
    load = p.add_argument_group("load")
    load.add_argument("-u", "--users", type=_positive_int, required=True, metavar="N", help="virtual users")
    ramp = load.add_mutually_exclusive_group()
    ramp.add_argument("--ramp-up", type=positive, metavar="SECONDS", help="start the users evenly over this time")
    ramp.add_argument("--spawn-rate", type=positive, metavar="R",
                      help="users started per second (default: the workflow's, else all within a second)")
    load.add_argument("-t", "--duration", type=duration, default=duration("1m"), metavar="TIME",
                      help="how long the test runs once started: 90s, 30m, 1h30m (default 1m)")
    load.add_argument("--stop-timeout", type=float, default=30.0, metavar="SECONDS",
                      help="at the end, let users finish the iteration they are in for up to this long, so every "
                           "request sent is counted (default 30; 0 cuts them off)")
    load.add_argument("--rate", metavar="N/s", help="open model: iterations per second for the whole run (rih: 3/s normal, 20/s high)")
    load.add_argument("--think-time", type=float, metavar="FACTOR", help="scale of the workflow's think times (0 = none, 1 = PTF's)")
    dist = p.add_argument_group("distributed load")
    dist.add_argument("--workers", type=_positive_int, metavar="K", help="a master and K worker processes on this machine")
    dist.add_argument("--master", action="store_true", help="be the master of workers on other machines (`folioperf worker`)")
    dist.add_argument("--expect-workers", type=_positive_int, default=1, metavar="K", help="with --master: start once K workers are connected (default 1)")
    dist.add_argument("--master-bind-host", default="*", metavar="HOST", help="with --master: interface the workers connect to (default all)")
    dist.add_argument("--master-port", type=_positive_int, default=5557, metavar="PORT", help="with --master: port (default 5557)")
    dist.add_argument("--web", action="store_true", help="Locust's web UI with the workflow loaded: start and stop tests there")
    dist.add_argument("--web-port", type=_positive_int, default=8089, metavar="PORT", help="web UI port (default 8089)")
    target = p.add_argument_group("target")
    target.add_argument("--okapi-url", metavar="URL", help="your FOLIO's Okapi (or Kong) URL; default: the built-in sandbox")
    target.add_argument("--tenant", metavar="T", help="tenant (default diku)")
    target.add_argument("--username", metavar="U", help="the user the virtual users log in as (default diku_admin)")
    target.add_argument("--auth", choices=("expiry", "legacy", "auto"), help="login mode (default expiry)")
    target.add_argument("--login", choices=("per-user", "shared"), help="a login per virtual user (default) or per process")
    target.add_argument("--latency-profile", metavar="NAME|FILE", help="sandbox only: answer with a real FOLIO's response times (e.g. lotus)")
    data = p.add_argument_group("test data")
    data.add_argument("--db", metavar="DSN", help="PostgreSQL: the sandbox's (default $FOLIOPERF_DB, else folioperf's "
                                                   "own cluster: `folioperf db status`) or your FOLIO's "
                                                   "(to seed, reset, build pools and report on the database)")
    data.add_argument("--dataset", metavar="NAME|FILE", help="dataset to seed (default: the workflow's)")
    data.add_argument("--scale", type=positive, default=1.0, metavar="F", help="dataset size factor (default 1)")
    data.add_argument("--no-seed", action="store_true", help="sandbox: use the data as it is (no seed, no reset)")
    data.add_argument("--seed", action="store_true", help="your FOLIO: seed the dataset and reset it before the run (needs --db)")
    data.add_argument("--pools", metavar="FILE", help="test data for the virtual users (`folioperf pools`); default: "
                                                       "built from the database, or through the API")
    out = p.add_argument_group("results")
    out.add_argument("--results", default="results", metavar="DIR", help="where results directories go (default results/)")
    out.add_argument("--tag", metavar="TEXT", help="a label stored with the results (e.g. the release under test)")
    out.add_argument("--fail-on-error-rate", type=parse_rate_threshold, default=0.0, metavar="RATE",
                     help="exit 1 when unexpected failures exceed this share of requests, e.g. 1%% (default 0%%: any)")
    out.add_argument("-v", "--verbose", action="store_true", help="show Locust's and folioperf's log lines")
    p.set_defaults(handler="folioperf.runner:run", accepts_extra=True)

    c = sub.add_parser(
        "campaign", help="run a workflow at several user counts and write one combined PTF report",
        description="Runs `folioperf run WORKFLOW --users N` for each user count (each --repeat times) into one "
                    "campaign directory, then writes its report (report.md and report.html there, with a column "
                    "group per user count, repeated runs merged). Every other option is a `folioperf run` option "
                    "and applies to each run. Against the sandbox each run starts from the dataset's seeded "
                    "state; against your FOLIO --reset-between does that (with --db).")
    c.add_argument("workflow", metavar="WORKFLOW", help="a workflow name or a .py file")
    c.add_argument("-u", "--users", type=_user_counts, required=True, metavar="N,N,...", help="user counts, e.g. 1,5,8,20")
    c.add_argument("--repeat", type=_positive_int, default=1, metavar="N", help="runs per user count (default 1)")
    c.add_argument("--reset-between", action="store_true",
                   help="your FOLIO: seed or reset the dataset before each run (needs --db; the sandbox always does)")
    c.add_argument("--results", default="results", metavar="DIR", help="where the campaign directory goes (default results/)")
    c.add_argument("--unit", choices=("s", "ms"), default="s", help="report response times in seconds (default) or ms")
    c.set_defaults(handler="folioperf.campaign:campaign", accepts_extra=True)

    w = sub.add_parser("worker", help="a Locust worker for a `folioperf run --master` elsewhere",
                       description="Connects to a `folioperf run --master` and runs its users; workflow, options, "
                                   "test data and password come from the master.")
    w.add_argument("--master-host", default="127.0.0.1", metavar="HOST", help="the master's address (default 127.0.0.1)")
    w.add_argument("--master-port", type=_positive_int, default=5557, metavar="PORT", help="the master's port (default 5557)")
    w.add_argument("--processes", type=int, metavar="N", help="fork N worker processes (-1: one per core)")
    w.set_defaults(handler="folioperf.runner:worker")
