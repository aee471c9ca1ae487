"""folioperf as a Locust plugin: its options on Locust's parser and the init listener that builds the run.

Importing it registers two listeners on Locust's events, once per process: `from folioperf import
FolioUser, Workflow, ...` resolves through this module, so a locustfile that defines a workflow (plain
`locust -f workflows/holds.py`) gets exactly what `folioperf run` gets: login, test data, metrics, the
results directory and the exit codes.

- init_command_line_parser: `--workflow`, folioperf's run options (folioperf.options.RUN_OPTIONS, the same
  definitions `folioperf run` parses) and every known workflow's own options; and a worker key for this
  process, inherited by the workers Locust forks with --processes;
- Locust's --csv writer: ended before Locust closes its files (folioperf.locust_csv);
- init: one FolioRun on the environment (`environment.folioperf`); on the master (or a local run) the
  Prometheus metrics served (--prometheus; a port in use ends the run here), the password (environment or
  prompt), one login when --host is known, and the test data read and checked: a wrong password, tenant,
  URL or pools file ends the run here, with one line and exit code 2 (3 for a refused login).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

from locust import argument_parser, events
from locust.argument_parser import get_empty_argument_parser

from folioperf import scenario
from folioperf import web_ui as folioperf_web_ui
from folioperf.distributed import ensure_worker_key
from folioperf.errors import FolioperfError
from folioperf.folio_run import WORKER, FolioRun
from folioperf.locust_csv import end_writer_before_close
from folioperf.options import RUN_OPTIONS, add_options, percent_safe, positive
from folioperf.workflow import (
    FolioSequentialTaskSet,
    FolioTaskSet,
    FolioUser,
    Option,
    Workflow,
    find_workflow,
    is_path,
    registered,
    task,
)

__all__ = ["FolioRun", "FolioSequentialTaskSet", "FolioTaskSet", "FolioUser", "Option", "Workflow", "task"]

log = logging.getLogger("folioperf")
end_writer_before_close()  # --csv: no "I/O operation on closed file" after a good test


def add_arguments(parser: Any) -> None:
    """folioperf's options and the workflows' options, on Locust's parser."""
    parser.formatter_class = percent_safe(parser.formatter_class)
    group = parser.add_argument_group(
        "folioperf", "FOLIO login, workflow and test data. --host is the Okapi (or Kong) URL.")
    workflow = group.add_argument("--workflow", env_var="FOLIOPERF_WORKFLOW", metavar="NAME|FILE",
                                  help="the workflow to run: a name (`folioperf workflows` lists them) or a .py file")
    workflow.include_in_web_ui = False  # chosen when the process starts: its tasks are set before any test
    for flag, kwargs in SCENARIO_ARGUMENTS:
        group.add_argument(flag, **kwargs).include_in_web_ui = False  # read when the locustfile is imported
    add_options(group.add_argument, RUN_OPTIONS, locust=True)
    _add_workflow_options(parser, group)


def _add_workflow_options(parser: Any, group: Any) -> None:
    hint = _workflow_hint()
    chosen = None
    workflows = [entry.workflow for entry in registered()[0].values()]
    stack = list(FolioUser.__subclasses__())  # workflows of the locustfile's own users
    while stack:
        cls = stack.pop()
        stack += cls.__subclasses__()
        if cls.workflow is not None:
            workflows.append(cls.workflow)
            chosen = chosen or cls.workflow
    if hint:
        try:
            chosen = find_workflow(hint)
            if is_path(hint):
                workflows.append(chosen)
        except FolioperfError:
            pass  # reported when the run is configured
    by_flag: dict[str, list[tuple[Any, Any]]] = {}
    for w in workflows:
        for option in w.options:
            by_flag.setdefault(option.flag, []).append((w, option))
    for flag, uses in by_flag.items():
        if flag in parser._option_string_actions:
            log.warning("option %s of workflow %s is ignored: it clashes with an existing option", flag, uses[0][0].name)
            continue
        option = uses[0][1]
        names = ", ".join(sorted({w.name for w, _ in uses}))
        default = "" if option.default is None else f"; default {option.default}"
        action = group.add_argument(flag, dest=option.dest, default=None, env_var=option.env_var,
                                    metavar=option.dest.upper(), help=f"{option.help} (workflow {names}{default})".strip())
        # the web form shows the options of the workflow that runs, not those of every workflow installed
        action.include_in_web_ui = chosen is None or any(w is chosen for w, _ in uses)


SCENARIO_ARGUMENTS = (
    ("--scenario", {"env_var": "FOLIOPERF_SCENARIO", "metavar": "FILE",
                    "help": "run a scenario's groups of users (folioperf.scenario) instead of one workflow"}),
    ("--users-scale", {"env_var": "FOLIOPERF_USERS_SCALE", "type": positive, "default": 1.0, "metavar": "F",
                       "help": "with --scenario: multiply every group's users (at least one each)"}),
)


def _hints() -> Any:
    """--workflow, --scenario and --users-scale as far as they can be known before Locust's parser is built
    (a workflow file brings its options; a scenario its user classes)."""
    parser = get_empty_argument_parser(add_help=False)
    parser.add_argument("--workflow", env_var="FOLIOPERF_WORKFLOW")
    for flag, kwargs in SCENARIO_ARGUMENTS:
        parser.add_argument(flag, **{k: v for k, v in kwargs.items() if k != "help"})
    try:
        return parser.parse_known_args()[0]
    except SystemExit:  # e.g. an unreadable config file: the real parse will say so
        return None


def _workflow_hint() -> str | None:
    hints = _hints()
    return hints.workflow if hints is not None else None


def scenario_users() -> dict[str, type[FolioUser]]:
    """A user class per group of the --scenario given (with a fixed count: the group's users times
    --users-scale); empty without --scenario. For folioperf's locustfile, at import."""
    hints = _hints()
    if hints is None or not hints.scenario:
        return {}
    try:
        chosen = scenario.load(hints.scenario).scaled(hints.users_scale)
    except FolioperfError as exc:
        log.error(str(exc))
        raise SystemExit(exc.exit_code) from None
    classes = {}
    for group in chosen.groups:
        name = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", group.name) if part) + "User"
        classes[name] = type(name, (FolioUser,), {"workflow": find_workflow(group.workflow), "group": group,
                                                  "fixed_count": group.users, "__module__": "folioperf.locustfile"})
    return classes


def _build_locust_defaults_once() -> None:
    """Locust's worker handles each spawn message by rebuilding its whole argument parser once per option
    the master sent (runners.WorkerRunner: `k not in argument_parser.default_args_dict()`, for each of ~80):
    0.1 s of CPU a message, during which its users stand still and the responses that arrive are timed
    late; a ramp-up sends one a second. Locust's defaults never change within a process: build them once."""
    defaults = functools.cache(argument_parser.default_args_dict)
    argument_parser.default_args_dict = lambda: dict(defaults())  # a copy: a caller may change it


_build_locust_defaults_once()  # this module is imported once per Locust process, before any message


@events.init_command_line_parser.add_listener
def _on_parser(parser: Any, **_kwargs: Any) -> None:
    ensure_worker_key()
    add_arguments(parser)


@events.init.add_listener
def _on_init(environment: Any, **_kwargs: Any) -> None:
    run = FolioRun(environment)
    environment.folioperf = run
    try:
        run.configure(required=run.role != WORKER)
        if run.role != WORKER:
            run.serve_metrics()
            run.prepare()
            if environment.web_ui is not None:
                folioperf_web_ui.attach(run, environment.web_ui)
    except FolioperfError as exc:
        log.error(str(exc))
        raise SystemExit(exc.exit_code) from None
