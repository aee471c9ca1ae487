"""`folioperf run`, `folioperf campaign` and `folioperf worker`: arguments here, the work in folioperf/launch.py
and folioperf/campaign.py.

`folioperf run` reads its options as Locust does, later wins: `~/.locust.conf`, `./locust.conf`,
`./pyproject.toml` ([tool.locust]), `--config FILE`, environment variables (LOCUST_* for Locust's own
names, FOLIOPERF_* for folioperf's), the command line. Its run options are folioperf.options's, the same
definitions Locust's parser gets from folioperf's plugin.
"""

from __future__ import annotations

import argparse
import tomllib
from collections import OrderedDict
from typing import Any

import configargparse

from folioperf.options import CLI_OPTIONS, RUN_OPTIONS, Opt, add_options, percent_safe, positive, positive_int

CONFIG_FILES = ("~/.locust.conf", "locust.conf", "pyproject.toml")
EXIT_CODES = ("Exit codes: 0 clean run; 1 unexpected failures above --fail-on-error-rate; 2 bad input or set-up "
              "(nothing ran); 3 stopped early (test data exhausted, login refused); 4 target rate missed; 5 a worker "
              "was lost; 6 a load generator was CPU-saturated; 7 fewer users ran than asked; 8 the results could not "
              "be written; 9 the target stopped answering; 130 interrupted.")


class _LocustToml(configargparse.TomlConfigParser):
    """pyproject.toml's [tool.locust], as Locust reads it; any other file falls back to `key = value` lines."""

    def __init__(self) -> None:
        super().__init__(["tool.locust"])

    def parse(self, stream: Any) -> OrderedDict:
        if not stream.name.endswith(".toml"):
            raise configargparse.ConfigFileParserException("not a TOML file")
        try:
            config = tomllib.loads(stream.read())
        except tomllib.TOMLDecodeError as exc:
            raise configargparse.ConfigFileParserException(f"cannot parse {stream.name}: {exc}") from None
        section = config.get("tool", {}).get("locust", {})
        return OrderedDict((k, v if isinstance(v, list) else str(v)) for k, v in section.items() if v is not None)


class ConfigParser(configargparse.CompositeConfigParser):
    def __init__(self) -> None:
        super().__init__([_LocustToml, configargparse.DefaultConfigFileParser])


def _add_grouped(parser: Any, options: tuple[Opt, ...]) -> None:
    groups: dict[str, Any] = {}
    for opt in options:
        group = groups.get(opt.group)
        if group is None:
            group = groups[opt.group] = parser.add_argument_group(opt.group)
        add_options(group.add_argument, (opt,))


def add_commands(sub: argparse._SubParsersAction) -> None:
    config: dict[str, Any] = {"default_config_files": list(CONFIG_FILES), "config_file_parser_class": ConfigParser,
              "ignore_unknown_config_file_keys": True,  # Locust's own keys there are for the Locust processes
              "formatter_class": percent_safe(argparse.HelpFormatter)}
    p = sub.add_parser(
        "run", help="run a workflow: sandbox (or your FOLIO), data, Locust, results",
        description="Run WORKFLOW with N virtual users and write a results directory. By default against the "
                    "built-in sandbox on a free port, seeded with the workflow's dataset and stopped afterwards; "
                    "with --okapi-url against your FOLIO (the password comes from FOLIOPERF_PASSWORD or a prompt). "
                    "Options a workflow defines (e.g. holds' --variant) are accepted after the workflow's name. "
                    "Options also come from, later winning: ~/.locust.conf, ./locust.conf, ./pyproject.toml's "
                    "[tool.locust], --config FILE, the variables named below, the command line.",
        epilog=EXIT_CODES, **config)
    p.add_argument("workflow", nargs="?", metavar="WORKFLOW", help="a workflow name (`folioperf workflows`) or a .py file")
    p.add_argument("--config", is_config_file_arg=True, metavar="FILE", help="read options from this file too")
    _add_grouped(p, CLI_OPTIONS)
    _add_grouped(p, RUN_OPTIONS)
    p.set_defaults(handler="folioperf.launch:run", accepts_extra=True, results_dir="results")

    c = sub.add_parser(
        "campaign", help="run a workflow at several user counts and write one combined PTF report",
        description="Runs `folioperf run WORKFLOW --users N` for each user count (each --repeat times) into one "
                    "campaign directory, then writes its report (report.md and report.html there, with a row "
                    "per user count, repeated runs merged). Every other option is a `folioperf run` option "
                    "and applies to each run. Against the sandbox each run starts from the dataset's seeded "
                    "state; against your FOLIO --reset-between does that (with --db).")
    c.add_argument("workflow", metavar="WORKFLOW", help="a workflow name or a .py file")
    c.add_argument("-u", "--users", type=_user_counts, required=True, metavar="N,N,...", help="user counts, e.g. 1,5,8,20")
    c.add_argument("--repeat", type=positive_int, default=1, metavar="N", help="runs per user count (default 1)")
    c.add_argument("--reset-between", action="store_true",
                   help="your FOLIO: seed or reset the dataset before each run (needs --db; the sandbox always does)")
    c.add_argument("--results", default="results", metavar="DIR", help="where the campaign directory goes (default results/)")
    c.add_argument("--unit", choices=("s", "ms"), default="s", help="report response times in seconds (default) or ms")
    c.set_defaults(handler="folioperf.campaign:campaign", accepts_extra=True)

    w = sub.add_parser("worker", help="a Locust worker for a `folioperf run --master` elsewhere",
                       description="Connects to a `folioperf run --master` and runs its users; workflow, options, "
                                   "test data and password come from the master, once this worker has proved it "
                                   "holds the master's key (FOLIOPERF_WORKER_KEY, the same secret on both sides).")
    w.add_argument("--master-host", default="127.0.0.1", metavar="HOST", help="the master's address (default 127.0.0.1)")
    w.add_argument("--master-port", type=positive_int, default=5557, metavar="PORT", help="the master's port (default 5557)")
    w.add_argument("--processes", type=int, metavar="N", help="fork N worker processes (-1: one per core)")
    w.add_argument("--scenario", metavar="FILE", help="the master runs this scenario: its file, here too")
    w.add_argument("--users-scale", type=positive, default=1.0, metavar="F", help="the master's --users-scale")
    w.set_defaults(handler="folioperf.launch:worker")


def _user_counts(text: str) -> list[int]:
    counts = [positive_int(part.strip()) for part in text.split(",") if part.strip()]
    if not counts:
        raise argparse.ArgumentTypeError(f"no user counts in {text!r}: e.g. 1,5,8,20")
    return counts
